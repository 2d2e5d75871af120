"""What torch.compile's partitioners and graft's save for backward, and
what it costs: per model and budget, the bytes the forward keeps for
backward (beyond its inputs), the backward's FLOPs with recomputation,
whether the gradients (and batch norms' running statistics) equal eager's,
and on a CUDA device peak memory (torch.cuda.max_memory_allocated) and step
time.

Partitioners: torch's default (save what the backward reads); torch's
min-cut with activation_memory_budget (1.0, 0.5, 0.3, 0.1); graft's
(graft.torch.backend at the same budgets) and, on CUDA, graft's swap
strategy (saved tensors wait in pinned host memory: the bytes left on the
device against the same budgets; in a dry run host tensors are swapped, so
that the rewrite runs); with --milp, the optimum under
graft's rules (a MILP over the same joint graph, eager only). Each runs eagerly (the compiled
graphs run as they are: only the partition differs) and, where asked or on
CUDA, under inductor (random ops as eager draws them, so gradients compare).

    .venv/bin/python tests/bench/torch_partitions.py [--dry-run] [--inductor] [--json FILE]

--dry-run: tiny models, budget 0.3 (where the partitioners differ; budget 1.0
is tests/torch/test_backend.py's), CPU (what the tests run).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
import torchvision
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.compilers import nop
from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "build", "python"))
import graft.torch  # noqa: E402


class UNet(torch.nn.Module):
    """A U-Net: conv + batch norm + ReLU blocks, max-pool down, transposed
    conv up, skip concatenations."""

    def __init__(self, width, depth=3):
        super().__init__()

        def block(cin, cout):
            return torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout),
                torch.nn.ReLU(), torch.nn.Conv2d(cout, cout, 3, padding=1),
                torch.nn.BatchNorm2d(cout), torch.nn.ReLU())

        widths = [width * 2 ** i for i in range(depth + 1)]
        self.down = torch.nn.ModuleList(
            [block(3, widths[0])] + [block(widths[i], widths[i + 1]) for i in range(depth)])
        self.up = torch.nn.ModuleList(
            [torch.nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2)
             for i in reversed(range(depth))])
        self.merge = torch.nn.ModuleList(
            [block(2 * widths[i], widths[i]) for i in reversed(range(depth))])
        self.head = torch.nn.Conv2d(widths[0], 1, 1)

    def forward(self, x):
        skips = []
        for i, b in enumerate(self.down):
            x = b(x if i == 0 else torch.nn.functional.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


class CausalLM(torch.nn.Module):
    """A transformers causal LM whose forward is its training loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, labels=ids).loss


def models(dry_run):
    """name -> (module, input): random weights, train mode."""
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    tiny = dry_run
    gpt2 = transformers.GPT2Config(
        n_layer=2 if tiny else 4, n_embd=64 if tiny else 256, n_head=4 if tiny else 8,
        vocab_size=256 if tiny else 1024, n_positions=128)
    llama = transformers.LlamaConfig(
        num_hidden_layers=2 if tiny else 4, hidden_size=64 if tiny else 256,
        intermediate_size=128 if tiny else 704, num_attention_heads=4 if tiny else 8,
        num_key_value_heads=2 if tiny else 4, vocab_size=256 if tiny else 1024,
        max_position_embeddings=128, attention_dropout=0.0)
    seq, batch = (32, 2) if tiny else (128, 4)
    out = {
        "resnet18": (torchvision.models.resnet18(num_classes=10),
                     torch.randn(2, 3, 32, 32) if tiny else torch.randn(8, 3, 128, 128)),
        "gpt2": (CausalLM(transformers.GPT2LMHeadModel(gpt2)),
                 torch.randint(0, gpt2.vocab_size, (batch, seq))),
        "llama": (CausalLM(transformers.LlamaForCausalLM(llama)),
                  torch.randint(0, llama.vocab_size, (batch, seq))),
        "unet": (UNet(8 if tiny else 32, 2 if tiny else 3),
                 torch.randn(2, 3, 32, 32) if tiny else torch.randn(4, 3, 128, 128)),
    }
    if not tiny:
        out["resnet50"] = (torchvision.models.resnet50(num_classes=10),
                           torch.randn(4, 3, 128, 128))
    return out


# What a forward module keeps for backward beyond its own inputs
# (parameters and the batch are held anyway): graft's own count.
saved_bytes = graft.torch._saved_bytes


def torch_partition(kind, budget, record, compiler=None):
    def partition(joint, joint_inputs, **kwargs):
        if compiler:
            kwargs["compiler"] = compiler
        if kind == "default":
            kwargs.pop("compiler", None)
            fw, bw = default_partition(joint, joint_inputs, **kwargs)
        else:
            with functorch_config.patch(activation_memory_budget=budget):
                fw, bw = min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
        record["saved_bytes"] += saved_bytes(fw, kwargs["num_fwd_outputs"])
        return fw, bw
    return partition


def matrix_flops(node):
    """The FLOPs torch's flop counter counts for one node (0 for the ops it
    does not count: element-wise, views)."""
    from torch.utils.flop_counter import flop_registry
    packet = getattr(node.target, "overloadpacket", None)
    if packet not in flop_registry:
        return 0
    val = lambda v: v.meta.get("val") if isinstance(v, torch.fx.Node) else v  # noqa: E731
    args = torch.fx.node.map_aggregate(node.args, val)
    kwargs = torch.fx.node.map_aggregate(node.kwargs, val)
    return flop_registry[packet](*args, out_val=node.meta.get("val"), **kwargs)


def milp_partition(budget, record, time_limit=120):
    """The optimal partition under the same rules as graft's (what never
    recomputes, views free, the backward as the trace placed it): a MILP
    (scipy's HiGHS) that minimizes recomputed matrix FLOPs, then saved
    bytes, then recomputed ops, with saved bytes within budget x the
    default (nothing recomputed but views, the fewest bytes so)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from torch._functorch import partitioners as tp

    def partition(joint, joint_inputs, *, num_fwd_outputs, static_lifetime_input_indices=None,
                  **kwargs):
        graft.torch._refuse_what_graft_does_not_partition(joint)
        graft.torch._batch_norms_apart_from_their_statistics(joint)  # graft's graph
        roles = graft.torch._roles(joint, num_fwd_outputs)
        backward = set(roles["backward_inputs"]) | set(roles["backward_ops"])
        for node in joint.graph.nodes:  # and what depends on the tangents
            if node.op != "output" and any(a.name in backward for a in node.all_input_nodes):
                backward.add(node.name)
        output = next(iter(joint.graph.find_nodes(op="output")))
        gradients = {v for v in output.args[0][num_fwd_outputs:] if isinstance(v, torch.fx.Node)}
        pinned, free = set(roles["pinned"]), set(roles["free"])
        fwd = [n for n in joint.graph.nodes if n.name not in backward and n.op != "output"]
        held = {n for n in fwd if n.op in ("placeholder", "get_attr")}
        ops = [n for n in fwd if n.op == "call_function"]
        tensor = {n for n in ops if isinstance(n.meta.get("val"), torch.Tensor)}
        idx = {}
        for n in ops:  # r (recompute) then s (save) per op
            idx[("r", n)] = len(idx)
            if n in tensor:
                idx[("s", n)] = len(idx)
        size = len(idx)
        nbytes = {n: n.meta["val"].numel() * n.meta["val"].element_size() for n in tensor}
        total_flops = max(1, sum(matrix_flops(n) for n in ops))
        total_bytes = max(1, sum(nbytes.values()))
        rows, lo = [], []

        def avail(u, coef, row):  # s_u + r_u, or 1 for what is held anyway
            if ("r", u) not in idx:
                return coef
            row[idx[("r", u)]] += coef
            if ("s", u) in idx:
                row[idx[("s", u)]] += coef
            return 0

        for n in ops:
            r = idx[("r", n)]
            if n in gradients or any(u.name in backward for u in n.users):  # the backward reads it
                row = np.zeros(size)
                const = avail(n, 1.0, row)
                rows.append(row)
                lo.append(1.0 - const)
            for u in n.all_input_nodes:  # a recomputed op's inputs are there
                if u.name in backward:
                    continue
                row = np.zeros(size)
                const = avail(u, 1.0, row)
                row[r] -= 1.0
                rows.append(row)
                lo.append(-const)
        upper = np.ones(size)
        for n in ops:
            if n.name in pinned:
                upper[idx[("r", n)]] = 0

        def solve(bytes_limit, default, least=False):
            # the default: nothing but views recomputed, the fewest bytes;
            # least: the fewest bytes, then matrix FLOPs; else matrix FLOPs,
            # then bytes, then recomputed ops.
            up = upper.copy()
            cost = np.zeros(size)
            flop_weight, byte_weight = (0, 1) if default else (1e-4, 1) if least else (1, 1e-3)
            for n in ops:
                f = matrix_flops(n)
                if default and n.name not in free:
                    up[idx[("r", n)]] = 0
                cost[idx[("r", n)]] = (0 if n.name in free else
                                       flop_weight * f / total_flops if f else 1e-9)
                if ("s", n) in idx:
                    cost[idx[("s", n)]] = byte_weight * nbytes[n] / total_bytes
            cons = [LinearConstraint(np.array(rows), np.array(lo), np.inf)]
            byte_row = np.zeros(size)
            for n in tensor:
                byte_row[idx[("s", n)]] = nbytes[n]
            if bytes_limit is not None:
                cons.append(LinearConstraint(byte_row, -np.inf, bytes_limit))
            res = milp(cost, constraints=cons, integrality=np.ones(size),
                       bounds=Bounds(np.zeros(size), up),
                       options={"time_limit": time_limit, "mip_rel_gap": 0})
            if res.x is None:
                return None
            return np.round(res.x), res
        default = solve(None, True)
        x, _ = default
        default_bytes = sum(nbytes[n] for n in tensor if x[idx[("s", n)]])
        found = solve(budget * default_bytes, False)
        if found is None:  # below what any partition saves: the least
            found = solve(None, False, least=True)
            record["milp_status"] = "least"
        else:
            record["milp_status"] = "optimal" if found[1].status == 0 else found[1].message
        x = found[0]
        saved = [n for n in tensor if x[idx[("s", n)]]]
        recomputed = [n for n in ops if x[idx[("r", n)]]]
        needed = {u for n in recomputed for u in n.all_input_nodes if u in held}
        needed |= {n for n in held if any(u.name in backward for u in n.users)}
        saved += [n for n in fwd if n in needed and n.op == "placeholder"]
        info = tp.classify_nodes(joint, static_lifetime_input_indices or [], num_fwd_outputs)
        fw, bw = graft.torch._modules_saving(joint, saved, num_fwd_outputs,
                                             info.static_lifetime_input_nodes,
                                             recomputes=bool(recomputed))
        record["saved_bytes"] += saved_bytes(fw, num_fwd_outputs)
        return fw, bw
    return partition


class RecordingPartitioner(torch._inductor.custom_graph_pass.CustomPartitionerFn):
    """Inductor's hook, for torch's own partitioners (their bytes recorded)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, joint, joint_inputs, **kwargs):
        return self.fn(joint, joint_inputs, **kwargs)

    def uuid(self):
        return None


def backend_for(kind, budget, inner, record):
    if kind == "graft":
        return graft.torch.backend(budget, inner=inner)
    if kind == "graft_swap":
        return graft.torch.backend(budget, strategy="swap", inner=inner)
    if kind == "milp":
        return aot_autograd(fw_compiler=nop, bw_compiler=nop,
                            partition_fn=milp_partition(budget, record))
    if inner == "eager":
        return aot_autograd(fw_compiler=nop, bw_compiler=nop,
                            partition_fn=torch_partition(kind, budget, record))
    from torch._inductor.compile_fx import compile_fx

    def compile_graph(gm, example_inputs):
        fn = torch_partition(kind, budget, record, compiler="inductor")
        # no compile caches: a cached graph would skip the partition
        with functorch_config.patch(enable_autograd_cache=False), inductor_config.patch(
                custom_partitioner_fn=RecordingPartitioner(fn), fx_graph_cache=False):
            return compile_fx(gm, example_inputs)
    return compile_graph


def close(got, want):
    return all(torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))


def error(got, want):
    """The largest difference of a tensor over its largest magnitude, over
    the tensors whose gradient is not zero (a conv's bias before a batch
    norm holds rounding noise only)."""
    scale = max(float(w.abs().max()) for w in want)
    return max((float((g - w).abs().max() / w.abs().max()) for g, w in zip(got, want)
                if float(w.abs().max()) > 1e-6 * scale), default=0.0)


def measure(name, model, x, kind, budget, inner, device, steps, reference=None,
            step_time=False):
    """One partition's row; `reference`: the same compiler's default
    partition's gradients (inductor's kernels differ from eager's by more
    than rtol 1e-4 on their own: what a partition changes is measured
    against them). Returns the row and the gradients."""
    record = {"saved_bytes": 0}
    torch._dynamo.reset()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model = model.to(device)
    x = x.to(device)

    def loss_of(m):
        out = m(x)
        return out if out.dim() == 0 else out.square().mean()

    torch.manual_seed(1)
    loss_of(model).backward()
    want = [p.grad.clone() for p in model.parameters()]
    want_buffers = [b.clone() for b in model.buffers()]
    model.load_state_dict(state)
    model.zero_grad()
    row = {"model": name, "partitioner": kind, "budget": budget, "inner": inner,
           "device": device}
    reports_before = len(graft.torch.partition_reports())
    try:
        compiled = torch.compile(model, backend=backend_for(kind, budget, inner, record))
        torch.manual_seed(1)
        loss = loss_of(compiled)
        counter = FlopCounterMode(display=False)
        with counter:
            loss.backward()
        if inner == "eager":  # inductor's kernels run past the counter
            row["backward_flops"] = counter.get_total_flops()
        got = [p.grad.clone() for p in model.parameters()]
        row["grads_equal"] = close(got, want)
        row["grad_error"] = error(got, want)
        if reference is not None:
            row["grads_equal_default"] = close(got, reference)
            row["grad_error_default"] = error(got, reference)
        row["buffers_equal"] = close(list(model.buffers()), want_buffers)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            for _ in range(steps):
                model.zero_grad()
                loss_of(compiled).backward()
            torch.cuda.synchronize()
            row["step_ms"] = (time.perf_counter() - start) / steps * 1e3
            row["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
        elif step_time:  # on CPU: the median of `steps` steps, after the compiling one
            times = []
            for _ in range(steps):
                model.zero_grad()
                start = time.perf_counter()
                loss_of(compiled).backward()
                times.append(time.perf_counter() - start)
            row["step_ms"] = sorted(times)[len(times) // 2] * 1e3
    except Exception as e:  # a partition that does not run is a finding
        row["error"] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])
    reports = graft.torch.partition_reports()[reports_before:]
    if kind in ("graft", "graft_swap"):
        record["saved_bytes"] = sum(r["saved_bytes"] for r in reports)
        row["swapped_mib"] = sum(r["swapped_bytes"] for r in reports) / 2**20
        row["recomputed_flops"] = sum(r["recomputed_flops"] for r in reports)
        row["graphs"] = len(reports)
        row["budget_met"] = all(r.get("budget_met", True) for r in reports)
        fallbacks = [r["fallback"] for r in reports if r["fallback"]]
        if fallbacks:
            row["fallback"] = fallbacks[0]
        row["graft_default_mib"] = sum(r["default_bytes"] for r in reports) / 2**20
        row["least_mib"] = sum(r.get("least_bytes", r["saved_bytes"]) for r in reports) / 2**20
    if "milp_status" in record:
        row["milp_status"] = record["milp_status"]
    row["saved_mib"] = record["saved_bytes"] / 2**20
    model.load_state_dict(state)
    model.zero_grad()
    return row, (got if "error" not in row else None)


def verdicts(rows):
    """Per model, inner and budget: graft within budget x default (x1.05)
    or saving the least it can, and no torch budget row with both fewer or
    equal saved bytes and over 1% fewer backward FLOPs."""
    out = []
    for r in rows:
        if r["partitioner"] != "graft" or "error" in r:
            continue
        same = [s for s in rows if s["model"] == r["model"] and s["inner"] == r["inner"]]
        default = next((s for s in same if s["partitioner"] == "default"), None)
        if default is None or "error" in default:
            continue
        limit = r["budget"] * default["saved_mib"] * 1.05
        within = r["saved_mib"] <= limit + 1e-9 or not r.get("budget_met", True)
        dominated = [s for s in same if s["partitioner"] == "min_cut" and "error" not in s
                     and s["budget"] == r["budget"]
                     and s.get("grads_equal_default" if s["inner"] != "eager" else "grads_equal")
                     and s["saved_mib"] <= r["saved_mib"] + 1e-9
                     and "backward_flops" in s and "backward_flops" in r
                     and s["backward_flops"] < 0.99 * r["backward_flops"]]
        correct = r.get("grads_equal", False)
        if r["inner"] != "eager":  # no further from inductor's default than it is from eager
            correct = r.get("grads_equal_default", False) or (
                r.get("grad_error_default", 1) <= max(1e-4, default.get("grad_error", 0)))
        verdict = {"model": r["model"], "inner": r["inner"], "budget": r["budget"],
                   "within_budget": within, "grads_equal": correct,
                   "torch_dominates": bool(dominated)}
        optimum = next((s for s in same if s["partitioner"] == "milp" and "error" not in s
                        and s["budget"] == r["budget"]), None)
        if optimum and "backward_flops" in r:  # graft's backward FLOPs over the optimum's
            verdict["flops_over_milp"] = r["backward_flops"] / optimum["backward_flops"]
            verdict["milp_status"] = optimum.get("milp_status")
        out.append(verdict)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--inductor", action="store_true",
                        help="also under inductor on CPU (always on CUDA)")
    parser.add_argument("--inners", help="comma-separated: eager, inductor (default: eager, "
                        "and inductor with --inductor or on CUDA)")
    parser.add_argument("--budgets", help="comma-separated (default: 1.0,0.5,0.3,0.1)")
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--milp", action="store_true",
                        help="also the optimal partition under graft's rules (scipy's HiGHS)")
    parser.add_argument("--partitioners", help="comma-separated: min_cut, graft, graft_swap, "
                        "milp (default: all that apply; torch's default always runs)")
    parser.add_argument("--swap-host-tensors", action="store_true",
                        help="swap host tensors (host to host) so that graft_swap runs on CPU: "
                        "its bytes are what a device would keep; memory is not measured")
    parser.add_argument("--step-time", action="store_true",
                        help="time steps on CPU too (the median of 10; on CUDA always, their mean)")
    parser.add_argument("--json")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    inners = ["eager"] + (["inductor"] if device == "cuda" or args.inductor else [])
    if args.inners:
        inners = args.inners.split(",")
    budgets = [0.3] if args.dry_run else [1.0, 0.5, 0.3, 0.1]
    if args.budgets:
        budgets = [float(b) for b in args.budgets.split(",")]
    inductor_config.fallback_random = True  # inductor's dropout draws as eager's
    simulated = args.dry_run or args.swap_host_tensors
    swap = device == "cuda" or simulated
    graft.torch._swap_host_tensors = simulated  # the rewrite without a device
    rows = []
    for name, (model, x) in models(args.dry_run).items():
        if args.models and name not in args.models.split(","):
            continue
        model.train()
        for inner in inners:
            kinds = (("min_cut", "graft") + (("graft_swap",) if swap else ())
                     + (("milp",) if inner == "eager" and args.milp else ()))
            if args.partitioners:
                kinds = tuple(k for k in kinds if k in args.partitioners.split(","))
            configs = [("default", 1.0)] + [(k, b) for b in budgets for k in kinds]
            reference = None
            for kind, budget in configs:
                row, grads = measure(name, model, x, kind, budget, inner, device,
                                     2 if args.dry_run else 10,
                                     reference if inner != "eager" else None,
                                     step_time=args.step_time)
                if kind == "default":
                    reference = grads
                rows.append(row)
                print(json.dumps(row), flush=True)
    checks = verdicts(rows)
    for c in checks:
        print(json.dumps(c), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "verdicts": checks}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
