"""graft.torch.apply on programs torch.export writes, run in torch: a
torchvision ResNet-18 in eval mode (both export forms) folds every batch
norm, gives the model's outputs, and runs through ExportedProgram.module()."""
import pytest
import torch
import torchvision

import graft
import graft.torch
from graft import aten
from conftest import repo_path


def with_statistics(model):
    """`model` in eval mode with the batch-norm statistics a trained one has."""
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model.eval()


def resnet18():
    torch.manual_seed(0)
    return with_statistics(torchvision.models.resnet18())


def batch_norms(program):
    return [n for n in program.graph.nodes
            if n.op == "call_function" and "batch_norm" in str(n.target)]


@pytest.mark.parametrize("decomposed", [False, True])
def test_resnet18_batch_norms_fold(decomposed):
    model = resnet18()
    x = torch.randn(2, 3, 64, 64)
    program = torch.export.export(model, (x,))
    if decomposed:
        program = program.run_decompositions()
    assert len(batch_norms(program)) == 20
    folded = graft.torch.apply(program, "aten/fold_batch_norms")
    assert batch_norms(folded) == []
    assert graft.torch.last_report()["rewrites"] == 20
    with torch.no_grad():
        want = model(x)
        got = folded.module()(x)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()
    # Fewer parameters: the batch norms' went with them. What no rule
    # touched keeps its name and kind (the classifier's parameters).
    assert len(folded.state_dict) + len(folded.constants) < \
        len(program.state_dict) + len(program.constants)
    kinds = {s.target: s.kind.name for s in folded.graph_signature.input_specs}
    assert kinds["fc.weight"] == kinds["fc.bias"] == "PARAMETER"
    # No batch norm's state is left, `num_batches_tracked` included.
    norms = {name for name, m in model.named_modules()
             if isinstance(m, torch.nn.BatchNorm2d)}
    assert len(norms) == 20 and not [t for t in kinds if t and t.rpartition(".")[0] in norms]
    assert torch.equal(folded.state_dict["fc.weight"], model.fc.weight)
    # A folded convolution's weight and bias are parameters under its names,
    # as torch's own fusion makes them (the downsampling convolutions read
    # the activations their block's first one reads: told apart by shape).
    convs = {name: m for name, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)}
    assert {t for t, k in kinds.items() if k == "PARAMETER"} == \
        {"%s.%s" % (c, p) for c in convs for p in ("weight", "bias")} | {"fc.weight", "fc.bias"}
    norms = dict(model.named_modules())
    for name, bn in (("conv1", "bn1"), ("layer2.0.downsample.0", "layer2.0.downsample.1")):
        fused = torch.nn.utils.fusion.fuse_conv_bn_eval(convs[name], norms[bn])
        for p in ("weight", "bias"):
            got, want = folded.state_dict["%s.%s" % (name, p)], getattr(fused, p)
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got - want).abs().max()


@pytest.mark.parametrize("decomposed", [False, True])
def test_folded_weights_are_named_after_their_layers(decomposed):
    """RegNet: module names torch allows and Python does not (`block1-0`),
    and a block's first convolution and its shortcut's reading the same
    activations with filters of one shape. Each folded filter and bias is
    the layer's own, as torch's fusion computes them."""
    torch.manual_seed(0)
    model = with_statistics(torchvision.models.regnet_y_400mf())
    program = torch.export.export(model, (torch.randn(2, 3, 64, 64),))
    if decomposed:
        program = program.run_decompositions()
    folded = graft.torch.apply(program, "fold_batch_norms")
    state = folded.state_dict
    assert not [t for t in state if t.startswith("c_")]
    pairs = [(name, m[0], m[1]) for name, m in model.named_modules()
             if isinstance(m, torch.nn.Sequential) and len(m) > 1
             and isinstance(m[0], torch.nn.Conv2d) and isinstance(m[1], torch.nn.BatchNorm2d)]
    assert len(pairs) == graft.torch.last_report()["rewrites"] == 53
    for name, conv, bn in pairs:
        fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
        for p in ("weight", "bias"):
            got, want = state["%s.0.%s" % (name, p)], getattr(fused, p)
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (name, p)


# MobileNetV3's hardswish decomposes to clamp(x + 3, 0, 6) with int bounds;
# ShuffleNetV2's channel shuffle to clone(memory_format=contiguous_format).
@pytest.mark.parametrize("name", ["mobilenet_v3_small", "shufflenet_v2_x0_5"])
def test_decomposed_programs_keep_their_arguments(name):
    assert_every_batch_norm_folds(with_statistics(getattr(torchvision.models, name)()),
                                  torch.randn(2, 3, 64, 64), decomposed=True)


def assert_every_batch_norm_folds(model, x, decomposed):
    """`model` exported (decomposed or not) and folded: no batch norm left,
    one rewrite each, the model's outputs from `.module()`."""
    program = torch.export.export(model, (x,))
    if decomposed:
        program = program.run_decompositions()
    count = len(batch_norms(program))
    folded = graft.torch.apply(program, "aten/fold_batch_norms")
    assert graft.torch.last_report()["rewrites"] == count and batch_norms(folded) == []
    with torch.no_grad():
        want, got = model(x), folded.module()(x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()
    # Each folded weight and bias is a parameter named after the layer it
    # belongs to (`features.0.0.weight`), none after a graph node.
    parameters = {name for name, _ in model.named_parameters()}
    for spec in folded.graph_signature.input_specs:
        if spec.kind.name in ("PARAMETER", "BUFFER"):
            assert spec.target in parameters or spec.target.endswith(".bias") or \
                spec.kind.name == "BUFFER" and spec.target in dict(model.named_buffers()), spec


class Heads(torch.nn.Module):
    """A decoder's transposed convolution and a projection head's linear
    layers, each with a batch norm."""

    def __init__(self):
        super().__init__()
        self.deconv = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.project = torch.nn.Linear(6, 8)
        self.bn_project = torch.nn.BatchNorm1d(8)
        self.out = torch.nn.Linear(8, 3, bias=False)
        self.bn_out = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        y = torch.relu(self.bn(self.deconv(x))).mean((2, 3))
        return self.bn_out(self.out(torch.relu(self.bn_project(self.project(y)))))


@pytest.mark.parametrize("decomposed", [False, True])
@pytest.mark.parametrize("name", ["r3d_18", "heads"])
def test_convolutions_of_every_kind_and_linear_layers_fold(name, decomposed):
    if name == "r3d_18":  # a video model: Conv3d and BatchNorm3d
        model, x = with_statistics(torchvision.models.video.r3d_18()), torch.randn(1, 3, 4, 32, 32)
    else:
        model, x = with_statistics(Heads()), torch.randn(4, 4, 5, 5)
    assert_every_batch_norm_folds(model, x, decomposed)


@pytest.mark.parametrize("decomposed", [False, True])
def test_batch_norms_over_tokens_fold(decomposed):
    """Hugging Face's LeViT: BatchNorm1d over a linear layer's tokens
    flattened (`bn(y.flatten(0, 1)).reshape_as(y)`), with a dynamic batch.
    Decomposed, four of its linear layers read a transposed input and
    become a bmm of an expanded weight: those four stay."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = with_statistics(transformers.LevitModel(transformers.LevitConfig(
        image_size=64, hidden_sizes=[32, 48, 64], num_attention_heads=[1, 2, 2],
        depths=[1, 1, 1], key_dim=[8, 8, 8])))
    program = torch.export.export(model, (torch.randn(2, 3, 64, 64),), dynamic_shapes={
        "pixel_values": {0: torch.export.Dim("batch", min=1, max=16)}})
    if decomposed:
        program = program.run_decompositions()
    assert len(batch_norms(program)) == 26
    folded = graft.torch.apply(program, "fold_batch_norms")
    assert len(batch_norms(folded)) == (4 if decomposed else 0)
    x = torch.randn(3, 3, 64, 64)
    with torch.no_grad():
        want = model(x).last_hidden_state
    got = folded.module()(x).last_hidden_state
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()


class Arguments(torch.nn.Module):
    """Arguments of every kind an ATen call takes besides tensors: dtypes,
    devices, memory formats, and Scalars that are ints, floats or bools."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x, i):
        y = self.bn(self.conv(x)).contiguous(memory_format=torch.channels_last)
        zeros = torch.zeros(y.shape[0], 8, device=x.device, dtype=torch.float64)
        return (y.to(torch.float64).mean((2, 3)) + zeros, torch.clamp(i, 0, 6) * 2,
                torch.clamp(y, min=-0.5).sum(), torch.full((2,), True) & (i[:2] > 0))


@pytest.mark.parametrize("decomposed", [False, True])
def test_arguments_of_every_kind_read_back(decomposed):
    model = with_statistics(Arguments())
    x, i = torch.randn(2, 3, 16, 16), torch.arange(-3, 9)
    program = torch.export.export(model, (x, i))
    if decomposed:
        program = program.run_decompositions()
    folded = graft.torch.apply(program, "aten/fold_batch_norms")
    assert batch_norms(folded) == []
    with torch.no_grad():
        for want, got in zip(model(x, i), folded.module()(x, i)):
            assert got.dtype == want.dtype  # an int clamp stays int
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got - want).abs().max()


def test_the_file_form_reads_back_as_written():
    program = torch.export.export(resnet18(), (torch.randn(1, 3, 32, 32),))
    data = aten.to_aten_bytes(program)
    module = aten.from_aten_bytes(data)
    text_module = aten.from_aten_text(aten.to_aten_text(program))
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        want = program.module()(x)
        assert torch.equal(module(x)[0], want) and torch.equal(text_module(x)[0], want)


def test_training_programs_are_left_or_refused():
    program = torch.export.export(resnet18().train(), (torch.randn(2, 3, 32, 32),))
    # torch.export's default form: batch norms that train are not folded.
    kept = graft.torch.apply(program, "aten/fold_batch_norms")
    assert graft.torch.last_report()["rewrites"] == 0 and len(batch_norms(kept)) == 20
    # Decomposed, their running statistics are outputs that mutate buffers:
    # refused, not silently dropped.
    with pytest.raises(ValueError, match="mutates"):
        graft.torch.apply(program.run_decompositions(), "aten/fold_batch_norms")


def test_symbolic_batch_folds_and_stays_symbolic():
    model = resnet18()
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(model, (torch.randn(2, 3, 32, 32),),
                                  dynamic_shapes={"x": {0: batch}})
    assert "size: -1" in aten.to_aten_text(program)  # written unknown
    folded = graft.torch.apply(program, "aten/fold_batch_norms")
    assert graft.torch.last_report()["rewrites"] == 20 and batch_norms(folded) == []
    assert [(r.lower, r.upper) for r in folded.range_constraints.values()] == [(2, 64)]
    for size in (3, 17):  # batches it was not exported with
        x = torch.randn(size, 3, 32, 32)
        with torch.no_grad():
            want, got = model(x), folded.module()(x)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()


class FlattenHead(torch.nn.Module):
    """A classifier head as many models write it: `view(x.size(0), -1)`."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.view(y.size(0), -1))


def test_sizes_read_from_a_symbolic_batch_stay_symbolic():
    model = with_statistics(FlattenHead())
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(model, (torch.randn(2, 3, 8, 8),),
                                  dynamic_shapes={"x": {0: batch}})
    # The view's size is read from the graph (aten.sym_size.int), not its
    # example's number.
    text = aten.to_aten_text(program)
    assert 'op: "aten.sym_size.int"' in text and "_symbolic_size" in text
    folded = graft.torch.apply(program, "aten/fold_batch_norms")
    assert graft.torch.last_report()["rewrites"] == 1
    for size in (3, 9):
        x = torch.randn(size, 3, 8, 8)
        with torch.no_grad():
            want, got = model(x), folded.module()(x)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got - want).abs().max()


def test_a_transformer_of_symbolic_batch_and_sequence_round_trips():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=100)
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    sequence = torch.export.Dim("sequence", min=2, max=128)
    program = torch.export.export(model, (torch.randint(0, 100, (2, 8)),),
                                  dynamic_shapes={"input_ids": {0: batch, 1: sequence}})
    rewritten = graft.torch.apply(program, "aten/fold_batch_norms")
    assert sorted((r.lower, r.upper) for r in rewritten.range_constraints.values()) == \
        [(2, 64), (2, 128)]
    ids = torch.randint(0, 100, (3, 13))
    with torch.no_grad():
        want, got = model(ids).last_hidden_state, rewritten.module()(ids)[0]
    assert torch.equal(got, want)


def test_arithmetic_on_symbolic_sizes_stays_arithmetic():
    batch = torch.export.Dim("batch", min=2, max=64)

    class Heads(torch.nn.Module):
        def forward(self, x):
            b, w = x.shape
            return x.reshape(b * 2, w // 2).sum(0) / max(b - 1, 1)

    program = torch.export.export(Heads(), (torch.randn(4, 6),),
                                  dynamic_shapes={"x": {0: batch}})
    text = aten.to_aten_text(program)
    assert 'op: "_sym.mul"' in text and 'op: "_sym.sub"' in text
    rewritten = graft.torch.apply(program, "fold_batch_norms")
    for size in (3, 17):
        x = torch.randn(size, 6)
        assert torch.allclose(rewritten.module()(x), Heads()(x))
    with pytest.raises(ValueError, match="`m` has op `_sym.cube`, no arithmetic on sizes"):
        aten.from_aten_text('node { name: "m" op: "_sym.cube" attr { key: "args" value { list { i: 2 } } } }')
    with pytest.raises(ValueError, match="`n` is a number .`_number`. holding 2 values"):
        aten.from_aten_text(
            'node { name: "n" op: "Const" attr { key: "_number" value { b: true } } '
            'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } '
            'float_val: 1 } } } }')


def test_symbolic_sizes_it_cannot_say_are_refused_not_guessed():
    batch = torch.export.Dim("batch", min=2, max=64)

    class Scale(torch.nn.Module):
        def forward(self, x):
            return x * 3

    # A dimension that is an expression of a symbol: the re-export could not
    # say it.
    even = torch.export.export(Scale(), (torch.randn(4, 3),),
                               dynamic_shapes={"x": {0: 2 * batch}})
    with pytest.raises(ValueError, match="an expression of symbolic sizes"):
        graft.torch.apply(even, "aten/fold_batch_norms")


def test_rules_of_another_dialect_are_refused():
    program = torch.export.export(resnet18(), (torch.randn(1, 3, 32, 32),))
    with pytest.raises(graft.Error, match="its rules are for tensorflow graphs; this is an aten graph"):
        graft.torch.apply(program, "tf/fold_batch_norms")
    # A library's bare name is the aten dialect's.
    assert not batch_norms(graft.torch.apply(program, "fold_batch_norms"))


class Structured(torch.nn.Module):
    """A model called with a dict, keyword arguments and constants
    (None, a flag, a number), returning a dict holding a tuple."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.norm = torch.nn.BatchNorm2d(4)

    def forward(self, batch, scale=None, *, flag=True, times=3, bias):
        y = self.norm(self.conv(batch["image"])) * batch["gain"] + bias
        y = y if scale is None else y * scale
        return {"out": y * times if flag else y, "pair": (y.mean(), y.flatten(1)),
                "count": y.shape[0], "none": None}


def test_inputs_and_outputs_keep_the_programs_structure():
    torch.manual_seed(0)
    model = with_statistics(Structured())
    batch = {"image": torch.randn(2, 3, 8, 8), "gain": torch.randn(1, 4, 1, 1)}
    kwargs = {"flag": False, "times": 5, "bias": torch.randn(4, 1, 1)}
    dims = {"batch": {"image": {0: torch.export.Dim("batch", min=1, max=16)}, "gain": None},
            "scale": None, "flag": None, "times": None, "bias": None}
    program = torch.export.export(model, (batch, None), kwargs, dynamic_shapes=dims)
    folded = graft.torch.apply(program, "fold_batch_norms")
    assert not batch_norms(folded) and folded.call_spec.in_spec == program.call_spec.in_spec
    for size in (2, 5):
        batch = {"image": torch.randn(size, 3, 8, 8), "gain": torch.randn(1, 4, 1, 1)}
        with torch.no_grad():
            want = model(batch, None, **kwargs)
        got = folded.module()(batch, None, **kwargs)
        assert sorted(got) == ["count", "none", "out", "pair"] and isinstance(got["pair"], tuple)
        assert got["count"] == size and got["none"] is None
        for g, w in zip([got["out"], *got["pair"]], [want["out"], *want["pair"]]):
            assert torch.allclose(g, w, rtol=1e-5, atol=1e-5), (g - w).abs().max()
    # The rewritten program goes through inductor's passes as the model does.
    compiled = torch.compile(folded.module())
    with torch.no_grad():
        want = model(batch, None, **kwargs)
        got = compiled(batch, None, **kwargs)
    assert torch.allclose(got["out"], want["out"], rtol=1e-5, atol=1e-5)


DECODERS = {
    "llama": lambda t: (t.LlamaModel, t.LlamaConfig),
    "qwen2": lambda t: (t.Qwen2Model, t.Qwen2Config),
    "mistral": lambda t: (t.MistralModel, t.MistralConfig),
}


@pytest.mark.parametrize("decomposed", [False, True])
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoders_of_symbolic_batch_and_sequence_round_trip(name, decomposed):
    """Hugging Face decoders as torch.export writes them: a rotary
    embedding under `torch.no_grad()` (a grad region in the default form),
    empty lifted constants and arithmetic on the sizes (the decomposed
    form)."""
    transformers = pytest.importorskip("transformers")
    model_class, config_class = DECODERS[name](transformers)
    torch.manual_seed(0)
    model = model_class(config_class(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=100, use_cache=False)).eval()
    dims = {0: torch.export.Dim("batch", min=1, max=64),
            1: torch.export.Dim("sequence", min=2, max=128)}
    program = torch.export.export(model, (torch.randint(0, 100, (2, 8)),),
                                  dynamic_shapes={"input_ids": dims})
    if decomposed:
        program = program.run_decompositions()
    before = str(program.graph)
    rewritten = graft.torch.apply(program, "fold_batch_norms")
    assert str(program.graph) == before

    def regions(p):
        return sum("wrap_with_set_grad_enabled" in str(n.target) for n in p.graph.nodes)
    assert regions(rewritten) == regions(program) == (0 if decomposed else 1)
    for shape in ((3, 13), (1, 40)):
        ids = torch.randint(0, 100, shape)
        with torch.no_grad():
            want = model(ids).last_hidden_state
        got = rewritten.module()(ids).last_hidden_state  # the model's output class
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got - want).abs().max()


class Attention(torch.nn.Module):
    """A transformer block's matrix work: projections, scores, values, MLP."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x):
        b, s, w = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.softmax(q @ k.transpose(-1, -2) / (w // self.heads) ** 0.5, dim=-1)
        y = self.out((scores @ v).transpose(1, 2).reshape(b, s, w)) + x
        return self.mlp(y) + y


class FusedAttention(Attention):
    """The same through scaled_dot_product_attention (grouped key/value
    width differing from the queries' is not needed: torch counts q k^T
    and the product by v)."""

    def forward(self, x):
        b, s, w = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = self.out(a.transpose(1, 2).reshape(b, s, w)) + x
        return self.mlp(y) + y


@pytest.mark.parametrize("name", ["resnet18", "attention", "sdpa"])
def test_cost_counts_matrix_flops_as_torch_does(tmp_path, name):
    model, x = {"resnet18": lambda: (resnet18(), torch.randn(2, 3, 64, 64)),
                "attention": lambda: (Attention().eval(), torch.randn(2, 16, 32)),
                "sdpa": lambda: (FusedAttention().eval(), torch.randn(2, 16, 32))}[name]()
    program = torch.export.export(model, (x,))
    path = tmp_path / "m.aten.pb"
    path.write_bytes(aten.to_aten_bytes(program))
    cost = graft.cost(graft.load(path), device="cpu")
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(x)
    matrix = sum(op["flops"] for op in cost["ops"]
                 if any(k in op["op"] for k in ("conv", "linear", "mm", "matmul",
                                                "scaled_dot_product")))
    assert matrix == counter.get_total_flops() > 0
    assert cost["unknown_ops"] == 0, [o for o in cost["ops"] if o["flops"] < 0]


def test_constants_whose_names_sanitize_alike_stay_apart():
    """Two constants a rewrite made, `w/a` and `w_a` (both `c_w_a` as
    attribute names), and a parameter under its own dotted name: each read
    back as itself."""
    def const(name, value, target=None):
        extra = ('attr { key: "_target" value { s: "%s" } } '
                 'attr { key: "_kind" value { s: "parameter" } } ' % target) if target else ""
        return ('node { name: "%s" op: "Const" %sattr { key: "dtype" value { type: DT_FLOAT } } '
                'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } '
                'float_val: %s } } } }\n' % (name, extra, value))
    text = (const("w/a", 1.0) + const("w_a", 10.0) + const("p", 100.0, "layer.0.weight") +
            'node { name: "s" op: "aten.add.Tensor" input: "w/a" input: "w_a" }\n'
            'node { name: "t" op: "aten.add.Tensor" input: "s" input: "p" }\n'
            'node { name: "output_0" op: "_Retval" input: "t" attr { key: "index" value { i: 0 } } }\n')
    module = aten.from_aten_text(text)
    assert module()[0].item() == 111.0
    assert isinstance(module.get_parameter("layer.0.weight"), torch.nn.Parameter)


def test_malformed_files_are_refused_at_their_place():
    """The file-form readers say where a file is wrong, as a ValueError;
    and a sample of fuzz/aten_reader.py's mutations (its long runs:
    docs/reliability.md) gives nothing else."""
    import importlib.util
    text = open(repo_path("tests", "data", "aten", "conv_bn.aten.pbtxt")).read()
    cases = {
        "line 1, column 1: unexpected `\"`": '"node',
        "a `}` closes no message": text + "}",
        "the text ends inside a message": text[:text.rindex("}")],
        "messages nested more than 100 deep": "a {" * 101 + "}" * 101,
        "`conv2d` has op `aten.conv9d.default`, which the installed torch's ATen ops do not":
            text.replace("aten.conv2d.default", "aten.conv9d.default", 1),
        r"`conv2d` \(aten.conv2d.default\) has 4 data input\(s\); its schema takes 3":
            text.replace('input: "x"', 'input: "x" input: "x"', 1),
        r"holds 433 bytes, not 432 \(node `p_conv1_weight`\)":
            text.replace('tensor_content: "', 'tensor_content: "\\001', 1),
        "over the 67108864 elements one value may fill":
            'node { name: "c" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT '
            'tensor_shape { dim { size: 100000 } dim { size: 100000 } } float_val: 1 } } } }',
    }
    for message, bad in cases.items():
        with pytest.raises(ValueError, match=message):
            aten.from_aten_text(bad)
    binary = aten._encode(aten.parse_text_proto(text), "GraphDef")
    with pytest.raises(ValueError, match="byte [0-9]+: a field of [0-9]+ bytes runs past"):
        aten.from_aten_bytes(binary[:-7])
    spec = importlib.util.spec_from_file_location(
        "aten_reader", repo_path("fuzz", "aten_reader.py"))
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    results = fuzz.run(150, seed=7)
    assert all(read + refused == runs for runs, read, refused, _ in results.values())
