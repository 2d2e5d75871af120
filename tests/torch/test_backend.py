"""graft.torch.backend: torch.compile with graft's partition of the
forward and the backward, run eagerly and under inductor, on a conv net
with batch norms (running statistics the step mutates), dropout, and a
residual add; its gradients and statistics against eager's, its saved bytes
against the budget and torch's default partition."""
import pytest
import torch
import torch._inductor.config as inductor_config
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.compilers import nop
from torch._functorch.partitioners import default_partition

import graft.torch
from conftest import recording_default_partition


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.drop = torch.nn.Dropout(0.25)
        self.head = torch.nn.Linear(16 * 16 * 16, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = y + self.drop(torch.relu(self.bn2(self.conv2(y))))  # residual
        return self.head(y.flatten(1)).square().mean()


def step(model, backend, x):
    compiled = model if backend is None else torch.compile(model, backend=backend)
    torch.manual_seed(7)  # dropout's draws
    compiled(x).backward()
    return [p.grad.clone() for p in model.parameters()], [b.clone() for b in model.buffers()]


def close(a, b):
    return all(torch.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(a, b))


@pytest.fixture
def net_and_input():
    torch.manual_seed(0)
    return Net().train(), torch.randn(4, 3, 16, 16)


def default_saved_bytes(model, x):
    """What torch's default partition saves for backward (inputs not counted)."""
    saved = []
    torch._dynamo.reset()
    step(model, recording_default_partition(saved), x)
    model.zero_grad()
    return sum(saved)


def run(model, x, backend):
    state = {k: v.clone() for k, v in model.state_dict().items()}
    want = step(model, None, x)
    model.load_state_dict(state)
    model.zero_grad()
    torch._dynamo.reset()
    before = len(graft.torch.partition_reports())
    got = step(model, backend, x)
    reports = graft.torch.partition_reports()[before:]
    model.load_state_dict(state)
    model.zero_grad()
    return want, got, reports


def held_bytes(model, x, backend):
    """The bytes of the storages a compiled step really keeps for its
    backward (each once; none of the parameters' or the batch's)."""
    inputs = {t.untyped_storage().data_ptr() for t in [x, *model.parameters(), *model.buffers()]}
    held = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in inputs:
            held[storage.data_ptr()] = storage.nbytes()
        return t
    torch._dynamo.reset()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step(model, backend, x)
    model.zero_grad()
    return sum(held.values())


class GatedMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(64, 256)
        self.down = torch.nn.Linear(128, 64)

    def forward(self, x):
        a, b = self.up(x).chunk(2, dim=-1)  # two views of one tensor
        return self.down(a * torch.nn.functional.gelu(b)).square().mean()


@pytest.mark.parametrize("budget", [None, 1.0, 0.3])
def test_saved_bytes_are_the_storages_the_step_holds(net_and_input, budget):
    # A saved transposed weight is the weight's storage, two saved halves
    # of one tensor are that tensor: the count is what the step holds, for
    # torch's default partition (budget None) and graft's.
    torch.manual_seed(0)
    for model, x in (net_and_input, (GatedMLP(), torch.randn(8, 64))):
        if budget is None:
            counted = default_saved_bytes(model, x)
            backend = aot_autograd(fw_compiler=nop, bw_compiler=nop,
                                   partition_fn=default_partition)
        else:
            backend = graft.torch.backend(budget, inner="eager")
        held = held_bytes(model, x, backend)
        if budget is not None:
            counted = graft.torch.partition_reports()[-1]["saved_bytes"]
        assert counted == held > 0


@pytest.mark.parametrize("budget", [1.0, 0.5, 0.2, 0.0])
def test_eager_partition_is_correct_and_within_budget(net_and_input, budget):
    model, x = net_and_input
    default = default_saved_bytes(model, x)
    (grads, stats), (got_grads, got_stats), reports = run(
        model, x, graft.torch.backend(budget, inner="eager"))
    assert close(got_grads, grads)
    assert close(got_stats, stats)  # running statistics updated once, as eager does
    [report] = reports
    assert report["fallback"] is None
    assert report["default_bytes"] <= default  # graft's reading of the default
    if report["budget_met"]:
        assert report["saved_bytes"] <= budget * default * 1.05
    else:  # a budget below what any partition saves: the least, and said so
        assert report["saved_bytes"] == report["least_bytes"] > budget * report["default_bytes"]
    if budget < 1.0:
        assert report["recomputed"] and report["saved_bytes"] < default
    # the plan is what the forward module keeps
    assert report["saved_bytes"] == report["planned_bytes"]


def test_dropout_and_batch_norm_statistics_are_never_recomputed(net_and_input):
    """Dropout's draws and the running statistics' update stay in the
    forward; a batch norm is recomputed only in its stats-free form (the
    batch's own statistics: the same output), so its input, not its output,
    is what the forward keeps."""
    model, x = net_and_input
    (grads, stats), (got_grads, got_stats), [report] = run(
        model, x, graft.torch.backend(0.0, inner="eager"))
    assert close(got_grads, grads) and close(got_stats, stats)
    recomputed = " ".join(report["recomputed"])
    assert "dropout" not in recomputed and "functional" not in recomputed
    assert "_native_batch_norm_legit_no_stats" in recomputed
    assert not report["budget_met"]


def test_inductor_partition_is_correct(net_and_input):
    model, x = net_and_input
    with inductor_config.patch(fallback_random=True):  # dropout draws as eager's
        (grads, stats), (got_grads, got_stats), [report] = run(
            model, x, graft.torch.backend(0.3, inner="inductor"))
    assert report["fallback"] is None and report["inner"] == "inductor"
    assert report["recomputed"]
    assert close(got_grads, grads) and close(got_stats, stats)


class SelfAttention(torch.nn.Module):
    """One attention layer by torch's fused kernel, its dropout given."""

    def __init__(self, dropout):
        super().__init__()
        self.qkv = torch.nn.Linear(64, 192)
        self.out = torch.nn.Linear(64, 64)
        self.dropout = dropout

    def forward(self, x):
        q, k, v = (t.unflatten(-1, (4, 16)).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        y = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout, is_causal=True)
        return self.out(y.transpose(1, 2).flatten(2)).square().mean()


@pytest.mark.parametrize("inner", ["eager", "inductor"])
def test_attention_without_dropout_may_be_recomputed_with_it_never(inner):
    """The fused attention kernel is random in torch's registry, but called
    with a dropout of 0 it draws nothing: graft may recompute it (as
    torch's own partitioner does), and the least it saves is less than
    where the kernel drops out and must stay in the forward."""
    least = {}
    for dropout in (0.0, 0.2):
        torch.manual_seed(0)
        model, x = SelfAttention(dropout).train(), torch.randn(2, 32, 64)
        with inductor_config.patch(fallback_random=True):
            (grads, _), (got_grads, _), [report] = run(
                model, x, graft.torch.backend(0.0, inner=inner))
        assert report["fallback"] is None
        assert close(got_grads, grads), dropout
        attention = [n for n in report["recomputed"] if "scaled_dot_product" in n]
        assert bool(attention) == (dropout == 0.0), report["recomputed"]
        least[dropout] = report["saved_bytes"]
    assert least[0.0] < least[0.2], least


class CheckpointedBlocks(torch.nn.Module):
    """Two blocks under torch.utils.checkpoint (as Hugging Face's
    gradient_checkpointing_enable wraps its layers), dropout inside."""

    def __init__(self, context_fn=None):
        super().__init__()
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(256, 64)) for _ in range(2))
        self.context_fn = context_fn

    def forward(self, x):
        for block in self.blocks:
            kwargs = {"context_fn": self.context_fn} if self.context_fn else {}
            x = x + torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False, **kwargs)
        return x.square().mean()


def test_checkpointed_regions_get_torch_partition_unless_a_budget_is_given():
    # Without a budget the model's own checkpointing stands (torch's
    # partition of its regions, said so); with one graft plans the graph
    # as any other: dropout's masks saved, not drawn again.
    torch.manual_seed(0)
    model, x = CheckpointedBlocks().train(), torch.randn(16, 64)
    (grads, _), (got, _), [report] = run(model, x, graft.torch.backend(inner="eager"))
    assert "checkpoint" in report["fallback"]
    assert report["saved_bytes"] == report["checkpoint_bytes"]
    assert close(got, grads)
    for budget in (0.5, 0.0):
        (grads, _), (got, _), [report] = run(model, x, graft.torch.backend(budget, inner="eager"))
        assert report["fallback"] is None and report["recomputed"]
        assert "dropout" not in " ".join(report["recomputed"])
        assert report["checkpoint_bytes"] > 0
        assert close(got, grads)
    assert report["saved_bytes"] == report["least_bytes"]  # budget 0: the least


def test_checkpointed_regions_under_a_budget_are_correct_under_inductor():
    torch.manual_seed(0)
    model, x = CheckpointedBlocks().train(), torch.randn(16, 64)
    with inductor_config.patch(fallback_random=True):  # dropout draws as eager's
        (grads, _), (got, _), [report] = run(model, x, graft.torch.backend(0.3))
    assert report["fallback"] is None and report["recomputed"]
    assert close(got, grads)


def test_a_policy_that_must_recompute_gets_torch_partition_and_says_so():
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    def policy(ctx, op, *args, **kwargs):
        return (CheckpointPolicy.MUST_RECOMPUTE if op is torch.ops.aten.gelu.default
                else CheckpointPolicy.PREFER_RECOMPUTE)
    torch.manual_seed(0)
    model = CheckpointedBlocks(lambda: create_selective_checkpoint_contexts(policy)).train()
    x = torch.randn(16, 64)
    (grads, _), (got, _), [report] = run(model, x, graft.torch.backend(0.5, inner="eager"))
    assert "MUST_RECOMPUTE" in report["fallback"]
    assert close(got, grads)


class NetWithASizeOfData(Net):
    def forward(self, x):
        positive = x.flatten()[(x.flatten() > 0).nonzero().squeeze(1)]  # its size: data's
        return super().forward(x) + positive.square().mean()


@pytest.mark.parametrize("strategy", ["budget", "swap"])
def test_a_graph_graft_cannot_read_gets_torch_default_of_the_graph_as_given(monkeypatch,
                                                                            strategy):
    """A size that depends on data (no hint to plan with) makes graft fall
    back, after it has split the batch norms from their statistics (and,
    swapping, as it would have moved tensors to the host), to torch's
    default partition of the graph torch gave: said so, eager's gradients,
    the default's bytes, nothing swapped."""
    monkeypatch.setattr(graft.torch, "_swap_host_tensors", True)
    torch.manual_seed(0)
    model, x = NetWithASizeOfData().train(), torch.randn(4, 3, 16, 16)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        default = default_saved_bytes(model, x)
        (grads, stats), (got_grads, got_stats), [report] = run(
            model, x, graft.torch.backend(0.3, strategy=strategy, inner="eager"))
    assert "depends on data" in report["fallback"]
    assert report["saved_bytes"] == default
    assert report["swapped"] == [] and report["swapped_bytes"] == 0
    assert close(got_grads, grads) and close(got_stats, stats)


@pytest.mark.parametrize("strategy", ["budget", "swap"])
@pytest.mark.parametrize("inner", ["eager", "inductor"])
def test_symbolic_shapes_are_planned_at_their_hints(net_and_input, monkeypatch, inner, strategy):
    """The conv net compiled for any batch size (symbolic sizes): one plan,
    made at the size it was traced with, the forward keeping the sizes the
    backward reads; gradients and running statistics equal eager's at batch
    sizes other than the traced one; the traced size's bytes within budget
    x the default, or the least and said so. Swapped tensors (host tensors
    here, as in the swap test) come back at every size too."""
    model, _ = net_and_input
    monkeypatch.setattr(graft.torch, "_swap_host_tensors", True)
    compiled = torch.compile(model, backend=graft.torch.backend(0.3, strategy=strategy, inner=inner),
                             dynamic=True)
    torch._dynamo.reset()
    before = len(graft.torch.partition_reports())
    with inductor_config.patch(fallback_random=True):  # dropout draws as eager's
        for batch in (4, 3, 6):
            x = torch.randn(batch, 3, 16, 16)
            state = {k: v.clone() for k, v in model.state_dict().items()}
            want = step(model, None, x)
            model.load_state_dict(state)
            model.zero_grad()
            got = step(compiled, None, x)
            model.zero_grad()
            assert close(got[0], want[0]) and close(got[1], want[1]), batch
    reports = graft.torch.partition_reports()[before:]
    assert len(reports) == 1, reports  # one graph for every batch size
    [report] = reports
    assert report["fallback"] is None and report["recomputed"], report
    assert "dropout" not in " ".join(report["recomputed"])
    assert bool(report["swapped"]) == (strategy == "swap")
    if inner == "eager":  # split from its statistics at symbolic sizes too
        assert "_native_batch_norm_legit_no_stats" in " ".join(report["recomputed"])
    if report["budget_met"]:
        assert report["saved_bytes"] <= 0.3 * report["default_bytes"] * 1.05
    else:
        assert report["saved_bytes"] == report["least_bytes"]
    assert report["saved_bytes"] < report["default_bytes"]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="inner"):
        graft.torch.backend(0.5, inner="cudagraphs")
    with pytest.raises(ValueError, match="fraction"):
        graft.torch.backend(1.5)


def test_strategies_are_the_ends_of_the_budget_search(net_and_input):
    """`speed` recomputes no matrix FLOPs and saves at most the default's
    bytes; `memory` saves the fewest bytes any partition does (what budget
    0 reaches); both give eager's gradients."""
    model, x = net_and_input
    default = default_saved_bytes(model, x)
    (grads, _), (got, _), [speed] = run(
        model, x, graft.torch.backend(strategy="speed", inner="eager"))
    assert close(got, grads)
    assert speed["strategy"] == "speed" and speed["recomputed_flops"] == 0
    assert speed["saved_bytes"] <= default
    (grads, _), (got, _), [memory] = run(
        model, x, graft.torch.backend(strategy="memory", inner="eager"))
    assert close(got, grads)
    assert memory["saved_bytes"] == memory["least_bytes"] == memory["budget_bytes"]
    assert memory["budget_met"] and memory["saved_bytes"] < speed["saved_bytes"]
    _, _, [zero] = run(model, x, graft.torch.backend(0.0, inner="eager"))
    assert zero["saved_bytes"] == memory["saved_bytes"]
    with pytest.raises(ValueError, match="strategy is one of budget, speed, memory, swap"):
        graft.torch.backend(strategy="list")
    with pytest.raises(ValueError, match="sets its own budget"):
        graft.torch.backend(0.5, strategy="memory")


def capture_backward(monkeypatch):
    """The backward modules graft's partitions make, as they are made."""
    made = []
    modules_saving = graft.torch._modules_saving

    def spy(*args, **kwargs):
        fw, bw = modules_saving(*args, **kwargs)
        made.append(bw)
        return fw, bw
    monkeypatch.setattr(graft.torch, "_modules_saving", spy)
    return made


@pytest.mark.parametrize("inner", ["eager", "inductor"])
def test_swap_keeps_saved_tensors_in_host_memory(net_and_input, monkeypatch, inner):
    """With strategy swap the forward's saved tensors wait in host memory,
    each brought back just before the backward reads it. No accelerator
    here: host tensors are swapped (copied host to host) so that the
    rewrite runs; the bytes are what a device would keep."""
    model, x = net_and_input
    monkeypatch.setattr(graft.torch, "_swap_host_tensors", True)
    backwards = capture_backward(monkeypatch)
    with inductor_config.patch(fallback_random=True):
        _, _, [speed] = run(model, x, graft.torch.backend(strategy="speed", inner=inner))
        for budget in (0.0, 0.5):
            (grads, stats), (got_grads, got_stats), [report] = run(
                model, x, graft.torch.backend(budget, strategy="swap", inner=inner))
            assert close(got_grads, grads) and close(got_stats, stats)
            assert report["fallback"] is None and report["budget_met"]
            assert report["saved_bytes"] == report["planned_bytes"]
            assert report["saved_bytes"] <= budget * report["default_bytes"]
            assert report["swapped"] and report["swapped_bytes"] > 0
            # swapping before recomputing: speed's plan, what it saves
            # split between the device and the host
            assert report["recomputed_flops"] == 0
            assert report["saved_bytes"] + report["swapped_bytes"] == speed["saved_bytes"]
            # each copy back comes after the backward starts, just before
            # the first op that reads it
            bw = backwards[-1]
            nodes = list(bw.graph.nodes)
            backs = [n for n in nodes if n.target is torch.ops.prims.device_put.default]
            assert len(backs) == len(report["swapped"])
            first_backward = min(nodes.index(u) for t in bw.graph.find_nodes(op="placeholder")
                                 if t.name.startswith("tangents") for u in t.users)
            for back in backs:
                reader = min(nodes.index(u) for u in back.users)
                assert first_backward < reader
                between = nodes[nodes.index(back) + 1:reader]
                assert all(n.target is torch.ops.prims.device_put.default for n in between)


def test_swap_without_an_accelerator_recomputes_and_says_so(net_and_input):
    model, x = net_and_input
    (grads, _), (got, _), [report] = run(
        model, x, graft.torch.backend(strategy="swap", inner="eager"))
    assert close(got, grads)
    assert report["swapped"] == [] and report["swapped_bytes"] == 0
    assert "host memory already" in report["note"]
    assert report["saved_bytes"] == report["least_bytes"]  # budget 0: the least


def test_an_absolute_budget_is_met(net_and_input):
    model, x = net_and_input
    limit = default_saved_bytes(model, x) // 2
    (grads, _), (got, _), [report] = run(
        model, x, graft.torch.backend(budget_bytes=limit, inner="eager"))
    assert report["budget_bytes"] == limit and report["budget_met"]
    assert report["saved_bytes"] <= limit
    assert close(got, grads)


def test_inductor_partition_is_exact_in_float64(net_and_input):
    # In float32 a recomputation that inductor fuses otherwise differs by
    # rounding (amplified by batch norms' backward); in float64 the
    # partition's gradients are eager's.
    model, x = net_and_input
    model, x = model.double(), x.double()
    with inductor_config.patch(fallback_random=True):
        (grads, stats), (got_grads, got_stats), [report] = run(
            model, x, graft.torch.backend(0.0, inner="inductor"))
    assert report["fallback"] is None and report["recomputed_flops"] > 0
    assert all(torch.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(got_grads, grads))
    assert all(torch.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(got_stats, stats))


class Autocast(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.model(x).float()


@pytest.mark.parametrize("strategy", ["budget", "swap"])
def test_mixed_precision_gradients_are_torch_defaults(net_and_input, monkeypatch, strategy):
    # Under bf16 autocast a compiled step rounds otherwise than eager's
    # (torch's own default partition too): graft's partition, recomputing
    # everything it may (or swapping it: host tensors, as in the swap
    # test), gives torch's default partition's gradients bit for bit.
    model, x = net_and_input
    model = Autocast(model)
    monkeypatch.setattr(graft.torch, "_swap_host_tensors", True)
    _, (want, want_stats), _ = run(model, x, aot_autograd(
        fw_compiler=nop, bw_compiler=nop, partition_fn=default_partition))
    _, (got, got_stats), [report] = run(
        model, x, graft.torch.backend(0.0, strategy=strategy, inner="eager"))
    assert report["fallback"] is None and report["recomputed"]
    assert bool(report["swapped"]) == (strategy == "swap")
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert all(torch.equal(a, b) for a, b in zip(got_stats, want_stats))


def test_each_budget_is_planned_not_taken_from_a_compile_cache(net_and_input):
    # Inductor's and AOTAutograd's caches do not key on the partition: the
    # backend turns them off, so a second budget on the same graph plans
    # again (and reports) rather than reusing the first one's graphs.
    model, x = net_and_input
    saved = []
    for budget in (0.5, 0.1, 0.5):
        _, (got, _), [report] = run(model, x, graft.torch.backend(budget))
        saved.append(report["saved_bytes"])
    assert saved[0] == saved[2] > saved[1]
