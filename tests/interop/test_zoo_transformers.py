"""The pipeline `onnx-transformers` on the zoo of real exports
(tests/data/zoo/, written by torch's dynamo and TorchScript exporters and
transformers' own exporter from Hugging Face transformers models, causal
LMs also as their prefill and KV-cache decode graphs; export_zoo.py): its output passes
onnx.checker (full check), onnxruntime computes the original's outputs,
also where an attention mask pads a sequence whole or on its left (rows
of attention masked whole, which the exports zero after the softmax), on
every export it writes at least as many of every fused kind as
onnxruntime's transformers optimizer or onnxscript's optimize_for_ort
writes into a model onnxruntime runs with the original's outputs (as
recorded in tests/data/zoo/PEERS.json by bench_zoo_transformers.py
--record; the attention kinds one family, kinds onnx.checker refuses
aside) and leaves no more nodes than the better of them, and on the
dynamo and TorchScript exports of encoders, GPT-2, the LLaMA family
(rotary embeddings, grouped-query attention) and the families of 2025-26
checkpoints (Qwen3, OLMo 2, Gemma 3, T5, BART, OPT, SigLIP, DINOv2, ...)
every layer's attention is fused (MultiHeadAttention, packed into
Attention where Q, K and V project one input). The zoo's
torchvision CNNs, exported with their batch norms kept, fold with
rules/onnx/fold_batch_norms.graft."""
import collections
import json
import os
import re
import sys

import numpy as np
import onnx
import pytest

import zoo
from conftest import repo_path
from zoo import ZOO, ZOO4, run

MANIFEST = zoo.manifest(ZOO)
MANIFEST4 = zoo.manifest(ZOO4)
CNNS = {"mobilenet_v2", "shufflenet_v2"}
TRANSFORMERS = sorted(k for k, v in MANIFEST.items() if v["model"] not in CNNS)
CNN_EXPORTS = sorted(k for k, v in MANIFEST.items() if v["model"] in CNNS)
# The fused kinds compared (onnxruntime's contrib ops and the standard norms).
NORMS_AND_GELUS = ("SkipLayerNormalization", "BiasGelu", "FastGelu", "QuickGelu", "Gelu",
                   "SkipSimplifiedLayerNormalization", "LayerNormalization")
ATTENTION = ("Attention", "MultiHeadAttention", "GroupQueryAttention")
# What onnxruntime's transformers optimizer and onnxscript's optimize_for_ort
# wrote on each export (bench_zoo_transformers.py --record).
with open(os.path.join(ZOO, "PEERS.json")) as f:
    PEERS = json.load(f)


def feeds(name, manifest=MANIFEST):
    return zoo.feeds(manifest[name])


def kinds(model):
    return collections.Counter(n.op_type for n in model.graph.node
                               if n.domain == "com.microsoft" or n.op_type in NORMS_AND_GELUS)


def peer_kinds(name):
    """Per peer, the fused kinds it wrote into a model onnxruntime runs with
    the original's outputs, the attention kinds as one family. onnxruntime's
    contrib kinds only: the standard-domain norms the peers write are either
    standard at the export's opset (graft keeps the standard op) or what
    onnx.checker refuses."""
    peers = {}
    for tool, result in PEERS["exports"][name].items():
        if "error" in result or not result["same_outputs"]:
            continue
        wrote = collections.Counter()
        for key, count in result["kinds"].items():
            domain, op = key.split(":")
            if domain == "com.microsoft":
                wrote["attention" if op in ATTENTION else op] += count
        peers[tool] = wrote
    return peers


def apply_and_check(graft, src, ours, name, manifest):
    """The pipeline's output: valid ONNX, the original's outputs, fewer nodes."""
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", ours, "-q",
          *zoo.shared_dims(manifest[name]))
    mine = onnx.load(ours)
    onnx.checker.check_model(mine, full_check=True)
    check_same_outputs(src, ours, name, manifest)
    if name not in zoo.ROWS_APART:  # (there: Expands that broadcast the tables)
        assert len(mine.graph.node) < len(onnx.load(src).graph.node)
    unread = unread_initializers(mine)
    assert not unread, unread[:5]
    return mine


def unread_initializers(model):
    """Initializers no node (nor a subgraph's) reads and no output names,
    which onnxruntime warns of and drops."""
    read = {o.name for o in model.graph.output}

    def walk(graph):
        for node in graph.node:
            read.update(node.input)
            for a in node.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    walk(g)
    walk(model.graph)
    return [i.name for i in model.graph.initializer if i.name not in read]


def padded(inputs):
    """The inputs as given, then with the last sequence's mask padding it
    whole and padding its first three tokens: rows of attention masked
    whole (every row, or a causal model's first ones), which the exports
    zero after the softmax (TorchScript's -inf bias) or average (dynamo's
    float minimum)."""
    yield "as given", inputs
    for key in ("attention_mask", "padding_mask"):
        if key in inputs:
            for what, first in (("padded whole", None), ("padded left", 3)):
                mask = np.ones_like(inputs[key])
                mask[-1, :first] = 0
                yield what, {**inputs, key: mask}


def check_same_outputs(src, ours, name, manifest=MANIFEST):
    for what, inputs in padded(feeds(name, manifest)):
        want = zoo.reference(name, src, inputs)
        got = run(ours, inputs)
        for w, g in zip(want, got):
            w, g = np.asarray(w, np.float64), np.asarray(g, np.float64)
            assert np.array_equal(np.isnan(w), np.isnan(g)), (name, what, "NaN")
            w, g = np.nan_to_num(w), np.nan_to_num(g)
            scale = max(float(np.abs(w).max()), 1.0)
            assert np.abs(w - g).max() <= zoo.tolerance(manifest[name]) * scale, (
                name, what, np.abs(w - g).max(), scale)


# Models whose attention fuses into MultiHeadAttention (or Attention), static
# and dynamic shapes: the dynamo exports' scaled dot-product attention
# decomposed, and the model's own eager attention (GPT-Neo's causal mask,
# MPNet's relative position bias; TorchScript exports).
SDPA_MODELS = {"gpt_neo", "mpnet", "bert", "roberta", "distilbert", "vit", "clip_text", "gpt2", "electra", "albert",
               "xlm_roberta", "deit", "llama", "qwen2", "mistral", "phi3", "gemma",
               "qwen3", "smollm3", "granite", "olmo2", "gemma3", "phi", "stablelm", "gpt_neox",
               "opt", "modernbert", "t5_encoder", "bart", "dinov2", "siglip_vision", "falcon"}
# Layers whose TorchScript export's attention stays unfused: none now
# (GPT-Neo's dynamic one was, its causal mask its buffer cut to the
# sequence, which the rules now read as the sequence where the mask meets
# the scores: meets_dim).
EAGER_UNFUSED = {}
LAYERS = 2
# Models whose rotary embeddings fuse (Q's and K's in every layer), on every
# export below opset 23 (float16's dynamic one included: its tables computed
# in float32 and cast).
ROTARY_MODELS = {"llama", "qwen2", "mistral", "phi3", "gemma", "qwen3", "smollm3", "granite",
                 "olmo2", "gemma3", "phi", "stablelm", "gpt_neox", "falcon", "modernbert"}
# Keras 3's exports (KerasHub by tf2onnx): every attention layer fuses,
# static and dynamic, at opsets 15 and 17 (Keras's masked softmax, a row
# masked whole zeroed after the fused op); those whose Q, K and V are plain
# projections of one input (Keras's MultiHeadAttention) pack into Attention
# where static. LLaMA's and Qwen3's rotate and repeat their heads, and
# their rotary embeddings fuse, static and dynamic.
KERAS_PACKED_MODELS = {"bert", "gpt2", "opt"}
# Attention layers where not LAYERS: BART's encoder, decoder and cross-attention.
ATTENTION_LAYERS = {"bart": 3 * LAYERS}
# Norms after a residual where fewer than two a layer: one where a layer's
# attention and MLP read one norm (Falcon, Phi, GPT-NeoX) or its norms
# follow each sublayer (OLMo 2), and OPT's residual viewed as rows before
# its second norm.
SKIP_NORMS = {"falcon": 2, "phi": 2, "gpt_neox": 2, "olmo2": 1, "opt": 1}


# Exporters of torch models below opset 23: torch's dynamo (float32 and
# float16) and TorchScript exporters, and transformers' own (a model's
# forward; a causal LM's prefill and its decode over a KV cache).
TORCH_EXPORTERS = ("dynamo", "dynamo16", "ts14", "ts17", "hf", "hfprefill", "hfdecode")


# Where graft still writes fewer kinds than onnxruntime's optimizer (strict
# xfails, with the reason): none now. (DINOv2's TorchScript exports were
# one: their interpolated position embeddings' size is a float Pow, which
# the constant folding before the fusions' second run evaluates.)
KNOWN_GAPS = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[n]))
    if n in KNOWN_GAPS else n for n in TRANSFORMERS])
def test_pipeline_on_real_exports(graft, tmp_path, name):
    src = os.path.join(ZOO, name + ".onnx")
    mine = apply_and_check(graft, src, str(tmp_path / "graft.onnx"), name, MANIFEST)
    have = kinds(mine)
    spec = MANIFEST[name]
    if spec["exporter"] == "dynamo23":
        # opset 23: the exporter writes ONNX's Attention op, which stays
        assert sum(n.op_type == "Attention" and n.domain == "" for n in mine.graph.node) == LAYERS
    elif spec["exporter"] in TORCH_EXPORTERS and spec["model"] in SDPA_MODELS:
        want = ATTENTION_LAYERS.get(spec["model"], LAYERS) - EAGER_UNFUSED.get(name, 0)
        assert sum(have[k] for k in ATTENTION) == want, dict(have)
    elif spec["exporter"].startswith("keras"):
        assert sum(have[k] for k in ATTENTION) == LAYERS, dict(have)
        if not spec["dynamic"] and spec["model"] in KERAS_PACKED_MODELS:
            assert have["Attention"] == LAYERS, dict(have)
        if spec["model"] in ROTARY_MODELS:
            # Q's and K's rotary embeddings, from constant tables (static)
            # or tables computed from the positions (dynamic)
            assert have["RotaryEmbedding"] == 2 * LAYERS, dict(have)
    if spec["model"] in ROTARY_MODELS and spec["exporter"] in TORCH_EXPORTERS:
        assert have["RotaryEmbedding"] == 2 * LAYERS, dict(have)
    # Every layer's two norms after a residual are fused (TorchScript's
    # dynamic exports below opset 17 too, whose norms are decomposed).
    skips = have["SkipLayerNormalization"] + have["SkipSimplifiedLayerNormalization"]
    keras = spec["exporter"].startswith("keras")  # KerasHub's: two a layer
    assert skips >= (2 * LAYERS if keras else SKIP_NORMS.get(spec["model"], 2 * LAYERS)), have
    # no more nodes than the better peer whose output is valid and right
    peers = [r["nodes"] for r in PEERS["exports"][name].values()
             if "error" not in r and r["valid"] and r["same_outputs"]]
    assert not peers or len(mine.graph.node) <= min(peers), (len(mine.graph.node), peers)
    have["attention"] = sum(have.pop(k, 0) for k in ATTENTION)
    for tool, want in peer_kinds(name).items():
        mine = collections.Counter(have)
        # an embedding's norm fused with its lookups counts as its Skip norm
        embed = "EmbedLayerNormalization"
        mine["SkipLayerNormalization"] += mine[embed] - want[embed]
        # a layer's attention fused where the peer's is not holds the scores'
        # and the context's MatMuls the peer made FusedMatMuls
        mine["FusedMatMul"] += 2 * max(0, mine["attention"] - want["attention"])
        for kind in want:
            assert mine[kind] >= want[kind], (tool, kind, dict(have), dict(want))


@pytest.mark.parametrize("name", sorted(zoo.ROWS_APART))
def test_rotary_tables_of_one_row_broadcast_to_the_batch(graft, tmp_path, name):
    """torch's dynamo exporter at opset 23, dynamic shapes: onnxruntime
    refuses the export for a batch of 2 (its RotaryEmbedding's tables keep
    one row); graft's output runs it, each row as the export computes that
    row alone (check_same_outputs), every RotaryEmbedding kept, its tables
    broadcast."""
    import onnxruntime
    src = os.path.join(ZOO, name + ".onnx")
    inputs = feeds(name)
    assert len(inputs["input_ids"]) == 2
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument,
                       match="cos_cache"):
        run(src, inputs)
    mine = apply_and_check(graft, src, str(tmp_path / "graft.onnx"), name, MANIFEST)
    rotary = [n for n in mine.graph.node if n.op_type == "RotaryEmbedding"]
    assert len(rotary) == 2 * LAYERS and all(n.domain == "" for n in rotary)
    made = {o: n.op_type for n in mine.graph.node for o in n.output}
    assert all(made[n.input[1]] == made[n.input[2]] == "Expand" for n in rotary)


def apply_with_param(graft, src, out, name, param, manifest=MANIFEST):
    """The pipeline's output with `--param PARAM`: valid ONNX, the
    original's outputs (padded rows included)."""
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", out, "-q", "--param", param,
          *zoo.shared_dims(manifest[name]))
    mine = onnx.load(out)
    onnx.checker.check_model(mine, full_check=True)
    check_same_outputs(src, out, name, manifest)
    return mine


# Models whose K and V heads are repeated for grouped-query attention (2
# heads of K and V for 4 of Q; Falcon's one, broadcast) where their
# attention fuses into MultiHeadAttention: with `--param
# grouped_attention=true`, every layer's is GroupQueryAttention, on every
# such export (those at opset 23, which write ONNX's Attention, excepted);
# on a KV cache's decode graph (one query, the past's keys and its own) it
# takes the cache's past as a past K and V of its own.
GROUPED_MODELS = {"llama", "qwen2", "mistral", "phi3", "gemma", "qwen3", "smollm3", "granite",
                  "olmo2", "gemma3", "stablelm", "falcon"}
KV_HEADS = {"falcon": 1}
GROUPED = [n for n in TRANSFORMERS if MANIFEST[n]["model"] in GROUPED_MODELS
           and not MANIFEST[n]["exporter"].startswith("dynamo23")
           and MANIFEST[n]["exporter"] != "hfdecode"]
DECODE = [n for n in TRANSFORMERS if MANIFEST[n]["model"] in GROUPED_MODELS
          and MANIFEST[n]["exporter"] == "hfdecode"]
PREFILL = [n for n in TRANSFORMERS if MANIFEST[n]["model"] in GROUPED_MODELS
           and MANIFEST[n]["exporter"] == "hfprefill"]
# (transformers 4.57's exports of them too)
GROUPED4 = sorted(n for n in MANIFEST4 if MANIFEST4[n]["model"] in GROUPED_MODELS)


@pytest.mark.parametrize("zoo_dir,name", [pytest.param(ZOO, n, id=n) for n in GROUPED]
                         + [pytest.param(ZOO4, n, id="transformers4-" + n) for n in GROUPED4])
def test_grouped_attention_reads_kv_heads_unrepeated(graft, tmp_path, zoo_dir, name):
    """`--param grouped_attention=true`: each layer's attention is
    onnxruntime's GroupQueryAttention over the KV heads as they are (no
    Expand of K or V left), not causal, the export's bias masking as before:
    the original's outputs, padded rows and NaNs included, and fewer nodes
    than the default's MultiHeadAttention."""
    manifest = MANIFEST if zoo_dir == ZOO else MANIFEST4
    src = os.path.join(zoo_dir, name + ".onnx")
    default, grouped = str(tmp_path / "mha.onnx"), str(tmp_path / "gqa.onnx")
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", default, "-q",
          *zoo.shared_dims(manifest[name]))
    mine = apply_with_param(graft, src, grouped, name, "grouped_attention=true", manifest)
    have = kinds(mine)
    assert have["GroupQueryAttention"] == LAYERS and have["MultiHeadAttention"] == 0, have
    assert kinds(onnx.load(default))["MultiHeadAttention"] == LAYERS
    for n in mine.graph.node:
        if n.op_type == "GroupQueryAttention":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            assert attrs["causal"] == 0 and attrs["num_heads"] == 4
            assert attrs["kv_num_heads"] == KV_HEADS.get(manifest[name]["model"], 2)
            assert_kv_unrepeated(mine, n)
    # (Falcon's one head was broadcast by one Expand each: the merge of its
    # K and V heads as rows costs more nodes than that)
    if manifest[name]["model"] != "falcon":
        assert len(mine.graph.node) < len(onnx.load(default).graph.node)


def assert_takes_the_cache(model, op, past_at=None):
    """Every layer's attention is `op`, writing the graph's present outputs
    (its present K and V), and reading the cache's past inputs as its own
    past K and V (at `past_at`, `past_at` + 1; none: a prefill, no past):
    no Concat of the cache left, no heads split apart for the outputs."""
    inputs = {i.name for i in model.graph.input}
    outputs = {o.name for o in model.graph.output}
    fused = [n for n in model.graph.node if n.op_type == op]
    assert len(fused) == LAYERS, kinds(model)
    for n in fused:
        if past_at is not None:
            assert {n.input[past_at], n.input[past_at + 1]} <= inputs, list(n.input)
        assert {n.output[1], n.output[2]} <= outputs, list(n.output)
    assert not any(n.op_type == "Concat" and set(n.input) & inputs for n in model.graph.node)


@pytest.mark.parametrize("name", [n for n in TRANSFORMERS
                                  if MANIFEST[n]["exporter"] in ("hfprefill", "hfdecode")
                                  and MANIFEST[n]["model"] not in GROUPED_MODELS])
def test_attention_takes_a_decode_cache_as_its_past(graft, tmp_path, name):
    """On a KV cache's decode graph (one query over the past's keys and its
    own, as many K and V heads as Q's: GPT-2), every layer's
    MultiHeadAttention takes the cache's past as its own past K and V, and
    on a prefill graph it reads K's and V's rows; either way its present K
    and V are the graph's present outputs, with the original's outputs,
    padded rows included."""
    out = str(tmp_path / "mha.onnx")
    mine = apply_and_check(graft, os.path.join(ZOO, name + ".onnx"), out, name, MANIFEST)
    assert_takes_the_cache(mine, "MultiHeadAttention",
                           6 if MANIFEST[name]["exporter"] == "hfdecode" else None)


@pytest.mark.parametrize("name", DECODE + PREFILL)
def test_grouped_attention_takes_a_decode_cache_as_its_past(graft, tmp_path, name):
    """`--param grouped_attention=true` on a KV cache's decode graph with
    K's and V's heads repeated to Q's: every layer's attention is
    GroupQueryAttention over the cache's past as its own past K and V (on
    a prefill graph: no past), its present K and V the graph's present
    outputs, the original's outputs, padded rows included, and fewer nodes
    than the default's MultiHeadAttention."""
    src = os.path.join(ZOO, name + ".onnx")
    default = str(tmp_path / "mha.onnx")
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", default, "-q",
          *zoo.shared_dims(MANIFEST[name]))
    mine = apply_with_param(graft, src, str(tmp_path / "gqa.onnx"), name,
                            "grouped_attention=true")
    assert kinds(mine)["MultiHeadAttention"] == 0
    assert_takes_the_cache(mine, "GroupQueryAttention",
                           3 if MANIFEST[name]["exporter"] == "hfdecode" else None)
    for n in mine.graph.node:
        if n.op_type == "GroupQueryAttention":
            assert_kv_unrepeated(mine, n)
    assert len(mine.graph.node) < len(onnx.load(default).graph.node)


def assert_kv_unrepeated(model, node):
    """`node` reads K and V as they are, not repeated (merged as rows at
    most)."""
    made = {o: m for m in model.graph.node for o in m.output}
    for kv in node.input[1:3]:
        chain = []
        while kv in made and made[kv].op_type in ("Reshape", "Transpose"):
            chain.append(made[kv].op_type)
            kv = made[kv].input[0]
        assert kv not in made or made[kv].op_type not in ("Expand", "Tile"), chain


@pytest.mark.parametrize("name", [n for n in TRANSFORMERS if MANIFEST[n]["model"] in GROUPED_MODELS
                                  and MANIFEST[n]["exporter"].startswith("dynamo23")])
def test_onnx_attention_reads_kv_heads_unrepeated(graft, tmp_path, name):
    """At opset 23 (ONNX's own Attention, which takes fewer heads of K and
    V than of Q) the pipeline drops the exporter's repeat of K and V: the
    original's outputs, each Attention reading the KV heads the export
    repeated (unsqueezed, expanded, viewed)."""
    src = os.path.join(ZOO, name + ".onnx")
    original = onnx.load(src)
    made = {o: n for n in original.graph.node for o in n.output}

    def repeated(t):
        view = made[t]
        expand = made[view.input[0]]
        unsqueeze = made[expand.input[0]]
        assert (view.op_type, expand.op_type, unsqueeze.op_type) == (
            "Reshape", "Expand", "Unsqueeze")
        return unsqueeze.input[0]
    want = [[n.input[0], repeated(n.input[1]), repeated(n.input[2])]
            for n in original.graph.node if n.op_type == "Attention"]
    mine = apply_and_check(graft, src, str(tmp_path / "graft.onnx"), name, MANIFEST)
    attention = [n for n in mine.graph.node if n.op_type == "Attention"]
    assert len(attention) == len(want) == LAYERS
    for n in attention:
        assert_kv_unrepeated(mine, n)
    assert sorted(list(n.input[1:3]) for n in attention) == sorted(w[1:] for w in want)


@pytest.mark.parametrize("name", ["bert.ts17.dynamic", "llama.dynamo.static"])
def test_skip_norms_false_keeps_residual_adds_apart(graft, tmp_path, name):
    """`--param skip_norms=false` (for onnxruntime's CPU kernels, where a
    Skip norm is slower than its Add and norm): no Skip norm, the norms as
    LayerNormalization (or left decomposed, RMS below opset 23), the other
    fusions as before, the original's outputs."""
    src = os.path.join(ZOO, name + ".onnx")
    ours = str(tmp_path / "cpu.onnx")
    mine = apply_with_param(graft, src, ours, name, "skip_norms=false")
    have = kinds(mine)
    assert have["SkipLayerNormalization"] + have["SkipSimplifiedLayerNormalization"] == 0, have
    assert sum(have[k] for k in ATTENTION) == LAYERS, have
    if MANIFEST[name]["model"] == "bert":
        assert have["LayerNormalization"] == 2 * LAYERS + 1, have


def test_peers_recorded_with_the_installed_versions():
    """PEERS.json is what the installed onnxruntime, onnxscript and
    transformers write."""
    import onnxruntime
    import onnxscript
    import transformers
    installed = {"onnxruntime": onnxruntime.__version__, "onnxscript": onnxscript.__version__,
                 "onnx": onnx.__version__, "transformers": transformers.__version__}
    assert PEERS["versions"] == installed, (
        "re-record: .venv/bin/python tests/interop/bench_zoo_transformers.py --record")
    assert set(PEERS["exports"]) == set(TRANSFORMERS)


@pytest.mark.parametrize("name", CNN_EXPORTS)
def test_batch_norms_fold_in_real_cnn_exports(graft, tmp_path, name):
    src = os.path.join(ZOO, name + ".onnx")
    ours = str(tmp_path / "graft.onnx")
    graft("apply", "-r", repo_path("rules", "onnx", "fold_batch_norms.graft"), src, "-o", ours,
          "-q")
    mine = onnx.load(ours)
    onnx.checker.check_model(mine, full_check=True)
    before = collections.Counter(n.op_type for n in onnx.load(src).graph.node)
    after = collections.Counter(n.op_type for n in mine.graph.node)
    if before["BatchNormalization"]:
        assert after["BatchNormalization"] == 0, (name, before, after)
    check_same_outputs(src, ours, name)


def test_pipeline_by_name_from_python_is_the_cli(graft, tmp_path):
    """graft.apply(m, pipeline="onnx-transformers") writes what the CLI writes."""
    # The package scripts/build_wheel.sh stages (the test command builds it first).
    sys.path.insert(0, repo_path("build", "python"))
    import graft as graft_module
    src = os.path.join(ZOO, "bert.dynamo.dynamic.onnx")
    cli_out, py_out = str(tmp_path / "cli.onnx"), str(tmp_path / "py.onnx")
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", cli_out, "-q")
    graft_module.apply(src, pipeline="onnx-transformers", output=py_out)
    with open(cli_out, "rb") as a, open(py_out, "rb") as b:
        assert a.read() == b.read()
    assert kinds(onnx.load(py_out))["Attention"] == LAYERS


def test_named_input_shapes_from_python_are_the_cli(graft, tmp_path):
    """graft.apply(..., input_shapes={"token_ids": ["batch", "sequence"]})
    writes what the CLI's --input-shape token_ids=batch,sequence writes."""
    sys.path.insert(0, repo_path("build", "python"))
    import graft as graft_module
    name = "llama.keras.dynamic"
    src = os.path.join(ZOO, name + ".onnx")
    cli_out, py_out = str(tmp_path / "cli.onnx"), str(tmp_path / "py.onnx")
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", cli_out, "-q",
          *zoo.shared_dims(MANIFEST[name]))
    shapes = {k: v["shape"] for k, v in MANIFEST[name]["inputs"].items()}
    graft_module.apply(src, pipeline="onnx-transformers", output=py_out, input_shapes=shapes)
    with open(cli_out, "rb") as a, open(py_out, "rb") as b:
        assert a.read() == b.read()
    assert kinds(onnx.load(py_out))["SkipSimplifiedLayerNormalization"] == 2 * LAYERS


def test_skipped_rules_leave_their_fusion_out(graft, tmp_path):
    """`--skip-rules 'rotary_*'` (Python: skip_rules=) leaves the rotary
    fusions out of the pipeline and fuses the rest as before, with the
    original's outputs; the CLI and Python write the same bytes; a name
    that matches no rule is a usage error that suggests the near one and
    writes nothing."""
    sys.path.insert(0, repo_path("build", "python"))
    import graft as graft_module
    name = "llama.ts17.dynamic"
    src = os.path.join(ZOO, name + ".onnx")
    full, cli_out, py_out = (str(tmp_path / f) for f in ("full.onnx", "cli.onnx", "py.onnx"))
    graft("apply", "--pipeline", "onnx-transformers", src, "-o", full, "-q")
    proc = graft("apply", "--pipeline", "onnx-transformers", src, "-o", cli_out,
                 "--skip-rules", "rotary_*")
    assert "left out" in proc.stderr and "rotary_embedding_computed" in proc.stderr, proc.stderr
    _, report = graft_module.apply(src, pipeline="onnx-transformers", output=py_out,
                                   skip_rules=["rotary_*"])
    with open(cli_out, "rb") as a, open(py_out, "rb") as b:
        assert a.read() == b.read()
    assert not [r for r in report["rules"] if r["name"].startswith("rotary_")], report["rules"]
    have, without = kinds(onnx.load(full)), kinds(onnx.load(cli_out))
    assert have["RotaryEmbedding"] == 2 * LAYERS and without["RotaryEmbedding"] == 0, (
        dict(have), dict(without))
    for kind in set(have) - {"RotaryEmbedding"}:
        assert without[kind] == have[kind], (kind, dict(have), dict(without))
    onnx.checker.check_model(onnx.load(cli_out), full_check=True)
    check_same_outputs(src, cli_out, name)
    refuses_typo(graft, src, tmp_path, "--skip-rules", "rotary_embeding", "rotary_embedding")
    with pytest.raises(graft_module.Error, match="rotary_embeding"):
        graft_module.apply(src, pipeline="onnx-transformers", skip_rules="rotary_embeding")


def test_only_rules_run_alone(graft, tmp_path):
    """`--only-rules merge_duplicate_nodes` (Python: only_rules=) runs that
    rule alone, every other rule of the pipeline left out: no fusion, the
    duplicates merged, the original's outputs; the CLI and Python write the
    same bytes; a name that matches no rule is a usage error that suggests
    the near one and writes nothing."""
    sys.path.insert(0, repo_path("build", "python"))
    import graft as graft_module
    name = "bart.ts17.dynamic"
    src = os.path.join(ZOO, name + ".onnx")
    cli_out, py_out = str(tmp_path / "cli.onnx"), str(tmp_path / "py.onnx")
    proc = graft("apply", "--pipeline", "onnx-transformers", src, "-o", cli_out,
                 "--only-rules", "merge_duplicate_*")
    assert "kept 1 rule(s): merge_duplicate_nodes" in proc.stderr, proc.stderr
    assert "merge_duplicate_nodes:" in proc.stderr and "applied" in proc.stderr, proc.stderr
    _, report = graft_module.apply(src, pipeline="onnx-transformers", output=py_out,
                                   only_rules="merge_duplicate_nodes")
    with open(cli_out, "rb") as a, open(py_out, "rb") as b:
        assert a.read() == b.read()
    assert {r["name"] for r in report["rules"]} == {"merge_duplicate_nodes"}, report["rules"]
    mine, original = onnx.load(cli_out), onnx.load(src)
    assert not set(kinds(mine)) - set(kinds(original)), kinds(mine)
    assert len(mine.graph.node) < len(original.graph.node)
    onnx.checker.check_model(mine, full_check=True)
    check_same_outputs(src, cli_out, name)
    refuses_typo(graft, src, tmp_path, "--only-rules", "merge_duplicate_node",
                 "merge_duplicate_nodes")


def refuses_typo(graft, src, tmp_path, flag, typo, meant):
    """`flag typo` (a name of no rule) is a usage error naming the flag and
    the near name, and writes nothing."""
    out = str(tmp_path / "typo.onnx")
    proc = graft("apply", "--pipeline", "onnx-transformers", src, "-o", out, flag, typo,
                 check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"{flag[2:].replace('-', ' ')}: `{typo}`" in proc.stderr, proc.stderr
    assert f"did you mean `{meant}`?" in proc.stderr, proc.stderr
    assert not os.path.exists(out)


def test_review_of_a_pipeline_without_its_rules_shows_what_they_do(graft):
    """`graft review` of the pipeline against itself with the rotary rules
    left out of the base: only the rotary export changes, by those rules'
    rewrites, its outputs the same (Python: base_skip_rules=); a name that
    matches no rule is a usage error naming the side."""
    sys.path.insert(0, repo_path("build", "python"))
    import graft as graft_module
    models = [os.path.join(ZOO, n + ".onnx") for n in ("llama.dynamo.dynamic", "bert.dynamo.static")]
    proc = graft("review", "--base-pipeline", "onnx-transformers", "--base-skip-rules", "rotary_*",
                 "--head-pipeline", "onnx-transformers", *models)
    assert proc.stdout.startswith("The change alters 1 of 2 model(s)"), proc.stdout[:300]
    # (without the rotary rule, each layer's rotary arithmetic is computed
    # apart for Q and K, and more of it merges)
    rewrites = re.search(r"; rewrites (.*)\n", proc.stdout).group(1)
    assert "rotary_embedding_computed: 0 -> 4" in rewrites.split(", "), proc.stdout[:600]
    assert "com.microsoft.RotaryEmbedding +4" in proc.stdout and "outputs: same" in proc.stdout
    # a shipped pipeline by name, as the CLI takes it, or by its path
    for pipeline in ("onnx-transformers", repo_path("rules", "pipelines", "onnx-transformers.yaml")):
        reviewed = graft_module.review(pipeline, pipeline, models, base_skip_rules="rotary_*")
        assert reviewed["failed"] == 0 and reviewed["text"] == proc.stdout
    proc = graft("review", "--base-pipeline", "onnx-transformers", "--head-pipeline",
                 "onnx-transformers", "--head-skip-rules", "rotary_embeding", *models, check=False)
    assert proc.returncode == 2 and "head" in proc.stderr, proc.stderr
    assert "did you mean `rotary_embedding`?" in proc.stderr, proc.stderr


def test_rule_folder_and_glob_mistake(graft, tmp_path):
    """-r takes a folder; rule files given as models are a usage error naming -r."""
    src = os.path.join(ZOO, "vit.dynamo.static.onnx")
    out = str(tmp_path / "out.onnx")
    folder = repo_path("rules", "onnx", "transformers")
    graft("apply", "-r", repo_path("rules", "onnx", "onnxoptimizer", "extract_constant_to_initializer.graft"),
          "-r", folder, src, "-o", out, "-q")
    # the layers' 4 residuals and the learned positions' sum
    assert kinds(onnx.load(out))["SkipLayerNormalization"] == 5
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".graft"))
    proc = graft("apply", "-r", *files, src, "-o", str(tmp_path / "x.onnx"), check=False)
    assert proc.returncode == 2 and "give each rule file its own -r" in proc.stderr
    assert not os.path.exists(tmp_path / "x.onnx")


def altered(src, dst, change):
    """A copy of a zoo export with one value or attr changed by `change`."""
    model = onnx.load(src)
    change(model)
    onnx.save(model, dst)


def set_initializer(name, value):
    def change(model):
        for i, init in enumerate(model.graph.initializer):
            if init.name == name:
                model.graph.initializer[i].CopyFrom(onnx.numpy_helper.from_array(
                    np.asarray(value, onnx.helper.tensor_dtype_to_np_dtype(init.data_type)),
                    name))
                return
        for node in model.graph.node:  # a Constant node's value
            if node.op_type == "Constant" and node.output[0] == name:
                node.attribute[0].t.CopyFrom(onnx.numpy_helper.from_array(
                    np.asarray(value, np.float32), name))
                return
        raise KeyError(name)
    return change


def set_axis(output, axis):
    def change(model):
        node = next(n for n in model.graph.node if n.output[0] == output)
        next(a for a in node.attribute if a.name == "axis").i = axis
    return change


def node_of(path, output):
    return next(n.name for n in onnx.load(path).graph.node if n.output[0] == output)


# Per fusion family: an export, what is altered, where to ask, and the guard
# `graft explain --pipeline onnx-transformers` must name.
ALTERED = {
    "skip layer norm": ("bert.dynamo.static", set_axis("layer_norm_1", 1), "layer_norm_1",
                        "skip_layer_norm_op", 'attr(y, "axis", -1) == -1'),
    "gelu": ("bert.ts14.static", set_initializer(
        "/model/encoder/layer.0/intermediate/intermediate_act_fn/Constant_output_0", 1.5),
        "/model/encoder/layer.0/intermediate/intermediate_act_fn/Mul_1_output_0", "gelu",
        "all_close(k, 1.41421)"),
    "rms norm": ("llama.dynamo.static", set_initializer("val_36", 3.0), "mul_10",
                 "skip_rms_norm", "all_close(two, 2)"),
    "attention": ("bert.dynamo.static", set_initializer("val_99", 1.0), "view_4",
                  "multi_head_attention_sdpa", "all_close(zero, 0)"),
    # the positions' Range stepping by 2
    "rotary": ("llama.dynamo.dynamic", set_initializer("val_6", 2), "add_4",
               "rotary_embedding_computed", "all_close(delta, 1)"),
}


@pytest.mark.parametrize("family", sorted(ALTERED))
def test_explain_names_the_guard_an_altered_export_fails(graft, tmp_path, family):
    name, change, output, rule, guard = ALTERED[family]
    src = os.path.join(ZOO, name + ".onnx")
    # The unaltered export fuses there...
    node = node_of(src, output)
    proc = graft("explain", "--pipeline", "onnx-transformers", src, "--rule", rule, "--node", node)
    assert f"{rule} at `{node}`: matches" in proc.stdout, proc.stdout
    # ...the altered one says which guard stopped it.
    bad = str(tmp_path / "altered.onnx")
    altered(src, bad, change)
    proc = graft("explain", "--pipeline", "onnx-transformers", bad, "--rule", rule, "--node", node)
    said = f"{rule} at `{node}`: no match: guard `"
    assert said in proc.stdout and guard in proc.stdout.split(said)[1], proc.stdout


def test_keras_export_fuses_once_told_its_inputs_share_sizes(graft):
    """A Keras export names each input's dimensions apart: `graft explain`
    says the residual's two sides are not known to be of one shape, and
    with --input-shape naming the shared sizes the Skip norm matches."""
    name = "bert.keras.dynamic"
    src = os.path.join(ZOO, name + ".onnx")
    node = node_of(src, "bert_backbone_1/transformer_layer_0_1/self_attention_layer_norm_1/add_2:0")
    args = ("explain", "--pipeline", "onnx-transformers", src, "--rule",
            "skip_layer_norm_moments", "--node", node)
    proc = graft(*args)
    assert "no match: guard `same_shape(a, x)` is false" in proc.stdout, proc.stdout
    proc = graft(*args, *zoo.shared_dims(MANIFEST[name]))
    assert f"skip_layer_norm_moments at `{node}`: matches" in proc.stdout, proc.stdout


def test_keras_export_without_shared_sizes_says_which_to_give(graft, tmp_path):
    """Without --input-shape, apply's summary notes that the inputs name
    their dimensions apart and gives the flags; given them, the norms fuse.
    A torch export (inputs sharing `batch`) gets no such note."""
    src = os.path.join(ZOO, "bert.keras.dynamic.onnx")
    out = str(tmp_path / "out.onnx")
    proc = graft("apply", "--pipeline", "onnx-transformers", src, "-o", out)
    note = next(line for line in proc.stderr.splitlines() if "note:" in line)
    flags = note.split(": ")[-1].split()
    assert flags == [w for name in ("padding_mask", "segment_ids", "token_ids")
                     for w in ("--input-shape", f"{name}=batch,sequence")], note
    fused = kinds(onnx.load(out))["SkipLayerNormalization"]
    assert fused < 2 * LAYERS + 1  # where one input's sizes meet its own
    proc = graft("apply", "--pipeline", "onnx-transformers", src, "-o", out, *flags)
    assert "note:" not in proc.stderr
    assert kinds(onnx.load(out))["SkipLayerNormalization"] == 2 * LAYERS + 1
    proc = graft("apply", "--pipeline", "onnx-transformers",
                 os.path.join(ZOO, "bert.dynamo.dynamic.onnx"), "-o", out)
    assert "note:" not in proc.stderr


@pytest.mark.parametrize("name", sorted(MANIFEST4))
def test_pipeline_on_older_transformers_exports(graft, tmp_path, name):
    """The transformers 4.57 exports: valid, the same numbers, fewer nodes."""
    apply_and_check(graft, os.path.join(ZOO4, name + ".onnx"), str(tmp_path / "graft.onnx"),
                    name, MANIFEST4)


def test_drift_review_between_transformers_versions(graft, tmp_path):
    """graft review over two exports of the same models lists, per model, the
    fusions that stopped or started matching, stopped ones first."""
    report = str(tmp_path / "drift.json")
    proc = graft("review", "--pipeline", "onnx-transformers", "--before", ZOO4, "--after", ZOO,
                 "--report", report)
    text = proc.stdout
    body = text.split("\nModels in one folder only")[0].split("\nSummary:")[0]
    sections = {s.split("\n", 1)[0]: s for s in body.split("\n== ")[1:]}
    # transformers 5's LLaMA export (dynamo, dynamic) computes its rotary tables
    # from the positions, which the rule fuses; 4.57's did not.
    assert ("started matching: rotary_embedding_computed 0 -> 4"
            in sections["llama.dynamo.dynamic.onnx"])
    # Both versions' BERT attention fuses (4.57's without the NaN fill).
    assert "matching" not in sections["bert.dynamo.static.onnx"]
    # TorchScript's BERT at 4.57 had a Div(1, Sqrt) that 5 no longer writes.
    assert re.search(r"stopped matching: (.*, )?reciprocal_of_sqrt 2 -> 0",
                     sections["bert.ts17.static.onnx"])
    # Models that lost a fusion come first.
    order = list(sections)
    lost = [n for n in order if "stopped matching" in sections[n]]
    assert order[:len(lost)] == lost
    # Unpaired exports are named, not reviewed.
    assert "llama.ts14.static.onnx: only after" in text
    summary = text.split("\nSummary:")[1]
    assert "stopped matching: " in summary and "reciprocal_of_sqrt (3 model(s))" in summary
    with open(report) as f:
        models = {m["name"]: m for m in json.load(f)["models"]}
    llama = models["llama.dynamo.dynamic.onnx"]
    assert llama["before_rewrites"].get("rotary_embedding_computed", 0) == 0
    assert llama["after_rewrites"]["rotary_embedding_computed"] == 2 * LAYERS
    bert = models["bert.dynamo.static.onnx"]
    assert (bert["before_rewrites"]["multi_head_attention_sdpa"]
            == bert["after_rewrites"]["multi_head_attention_sdpa"] == LAYERS)
