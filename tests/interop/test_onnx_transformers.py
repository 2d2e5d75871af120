"""rules/onnx/transformers/ (norms, GELUs, BERT attention) on BERT-, GPT-2- and LLaMA-style models in torch's
opset-14 and opset-17 op sequences (transformer_models.py), beside
onnxruntime's transformers optimizer on the same models: graft finds every
kind of fusion the optimizer finds (LayerNormalization only at opset 17:
below it the optimizer writes a LayerNormalization that onnx.checker
refuses, and graft leaves the norm decomposed), its models pass
onnx.checker, and onnxruntime computes the same outputs."""
import collections
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import transformer_models
from conftest import repo_path

RULES = sorted(repo_path("rules", "onnx", "transformers", f)
               for f in os.listdir(repo_path("rules", "onnx", "transformers"))
               if f.endswith(".graft"))
# The fused ops both write, by kind.
KINDS = ("LayerNormalization", "SkipLayerNormalization", "Gelu", "BiasGelu", "FastGelu",
         "Attention", "MultiHeadAttention", "EmbedLayerNormalization",
         "RMSNormalization", "SkipSimplifiedLayerNormalization", "RotaryEmbedding")
# The optimizer's RMS norm is its own op in ONNX's domain; graft's the standard one.
SAME_KIND = {"SimplifiedLayerNormalization": "RMSNormalization"}


def fused(model):
    counts = collections.Counter(SAME_KIND.get(n.op_type, n.op_type) for n in model.graph.node
                                 if n.domain == "com.microsoft" or n.op_type in (
                                     "LayerNormalization", "RMSNormalization",
                                     "SimplifiedLayerNormalization", "RotaryEmbedding"))
    return {k: counts.get(k, 0) for k in KINDS}


def run(path, feeds):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def ort_optimize(src, name, out):
    from onnxruntime.transformers import optimizer
    model = optimizer.optimize_model(src, model_type=name, num_heads=4, hidden_size=64,
                                     opt_level=0)
    model.save_model_to_file(out)
    return onnx.load(out)


@pytest.mark.parametrize("opset", [14, 17])
@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_fusions_beside_onnxruntime(graft, tmp_path, name, opset):
    model = getattr(transformer_models, name)(opset=opset)
    src = str(tmp_path / "model.onnx")
    onnx.save(model, src)
    ours = str(tmp_path / "graft.onnx")
    args = ["apply"]
    for r in RULES:
        args += ["-r", r]
    graft(*args, src, "-o", ours)
    mine = onnx.load(ours)
    onnx.checker.check_model(mine, full_check=True)
    theirs = ort_optimize(src, name, str(tmp_path / "ort.onnx"))
    have, want = fused(mine), fused(theirs)
    for kind in KINDS:
        if kind == "LayerNormalization" and opset < 17:
            # The optimizer's LayerNormalization below opset 17 is not ONNX.
            if want[kind]:
                with pytest.raises(onnx.checker.ValidationError, match="LayerNormalization"):
                    onnx.checker.check_model(theirs, full_check=True)
            assert have[kind] == 0
            continue
        if kind in ("LayerNormalization", "SkipLayerNormalization"):
            # the embeddings' norm (positions added to the tokens) graft may
            # fuse further: a Skip norm over a [1, S, D] skip, or with the
            # lookups into EmbedLayerNormalization
            norms = ("LayerNormalization", "SkipLayerNormalization", "EmbedLayerNormalization")
            valid = [k for k in norms if k != "LayerNormalization" or opset >= 17]
            assert sum(have[k] for k in norms) >= sum(want[k] for k in valid), (have, want)
            assert have["SkipLayerNormalization"] >= want["SkipLayerNormalization"], (have, want)
            continue
        assert have[kind] >= want[kind], (kind, have, want)
    assert have["SkipLayerNormalization"] >= 4  # every residual's
    assert have["BiasGelu" if name == "bert" else "FastGelu"] == 2
    assert have["Attention"] == (2 if name == "bert" else 0)
    assert len(mine.graph.node) <= len(model.graph.node) - 40
    if opset >= 17:  # where both fuse the same norms, graft leaves no more nodes
        assert len(mine.graph.node) <= len(theirs.graph.node), (
            len(mine.graph.node), len(theirs.graph.node))
    feeds = transformer_models.feeds(model)
    expected = run(src, feeds)
    for path in (ours, str(tmp_path / "ort.onnx")):
        got = run(path, feeds)
        assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max(), path


def test_fusions_apply_twice_change_nothing(graft, tmp_path):
    src = str(tmp_path / "model.onnx")
    onnx.save(transformer_models.bert(opset=17), src)
    args = ["apply"] + [a for r in RULES for a in ("-r", r)]
    graft(*args, src, "-o", str(tmp_path / "once.onnx"))
    graft(*args, str(tmp_path / "once.onnx"), "-o", str(tmp_path / "twice.onnx"))
    with open(tmp_path / "once.onnx", "rb") as a, open(tmp_path / "twice.onnx", "rb") as b:
        assert a.read() == b.read()


@pytest.mark.parametrize("opset", [14, 23])
def test_rms_norms_of_a_llama_style_decoder(graft, tmp_path, opset):
    """Every RMS norm of a LLaMA-style decoder fuses (the first, which reads
    no residual sum, only where RMSNormalization exists), where the
    optimizer finds none, and so do the rotary embeddings of Q and K
    (onnxruntime's RotaryEmbedding, the standard one at opset 23); no
    initializer is left unread."""
    model = transformer_models.llama(opset=opset, rotary=True)
    src = str(tmp_path / "model.onnx")
    onnx.save(model, src)
    ours = str(tmp_path / "graft.onnx")
    graft("apply", *[a for r in RULES for a in ("-r", r)], src, "-o", ours)
    mine = onnx.load(ours)
    onnx.checker.check_model(mine, full_check=True)
    have = fused(mine)
    assert have["SkipSimplifiedLayerNormalization"] == 4
    assert have["RMSNormalization"] == (1 if opset >= 23 else 0)
    assert have["RotaryEmbedding"] == 4
    rotary = {n.domain for n in mine.graph.node if n.op_type == "RotaryEmbedding"}
    assert rotary == ({""} if opset >= 23 else {"com.microsoft"})
    want = fused(ort_optimize(src, "gpt2", str(tmp_path / "ort.onnx")))
    assert all(have[k] >= want[k] for k in KINDS), (have, want)
    read = {i for n in mine.graph.node for i in n.input}
    assert all(t.name in read for t in mine.graph.initializer)
    feeds = transformer_models.feeds(model)
    expected = run(src, feeds)
    assert np.abs(run(ours, feeds) - expected).max() <= 1e-4 * np.abs(expected).max()


def test_llm_benchmark_sampled():
    """tests/interop/bench_onnx_llm.py (a LLaMA-like decoder with rotary
    embeddings, weights in an external data file) on a small model: the
    fusions and the weight-only quantizations (int8 per channel, and
    MatMulNBits in 8 and 4 bits, then GatherBlockQuantized for the
    embeddings too, and 4 bits as standard DequantizeLinear) run in
    onnxruntime, and each quantized model's folder holds the quantized weights, not the float ones beside
    them."""
    import bench_onnx_llm
    result = bench_onnx_llm.measure(layers=2, hidden=128, heads=4, inter=344, vocab=500,
                                    seq=16, run=True, peers=False, limit=300,
                                    print_=lambda *_: None)
    (fused,) = [row for row in result["rows"] if row["kind"] == "fuse"]
    assert fused["fusions"] == (
        "MultiHeadAttention 2, RotaryEmbedding 4, SkipSimplifiedLayerNormalization 4")
    assert fused["diff"] <= 1e-4
    # int8 per channel (QDQ), 8 bits in blocks of 128, 4 bits in blocks of
    # 32, then with the embedding table (not the rotary caches), then 4 bits
    # as standard DequantizeLinear after raising the opset from 20 to 21
    quantized = [row for row in result["rows"] if row["kind"] == "quantize"]
    for row, ops, db, share in zip(quantized, (14, 14, 14, 15, 14), (30, 30, 10, 9, 10),
                                   (0.5, 0.5, 0.35, 0.22, 0.35)):
        assert row["dequantize"] == ops, row  # q, k, v, o, gate, up, down per layer
        assert row["sqnr_db"] >= db, row
        assert row["out_gib"] * 2**30 < share * result["size"], row
    assert len(quantized) == 5
