"""Writes tests/data/onnx/tfm_*.onnxtxt: the inputs of the test blocks of
rules/onnx/transformers/, each a small piece of a transformer in the op
sequence torch.onnx.export writes (tests/interop/transformer_models.py):

tfm_layer_norm          a decomposed LayerNorm over the last axis, opset 17
tfm_layer_norm_opset14  the same at opset 14 (no LayerNormalization there)
tfm_layer_norm_axis1    a look-alike normalizing over axis 1: must not fuse
tfm_skip_layer_norm     MatMul + Add bias + Add residual -> LayerNorm, whose
                        residual sum another Add reads too (opset 14)
tfm_gelu                MatMul + Add bias -> Gelu (erf form)
tfm_gelu_half_first     Gelu (erf form) as HF's BERT writes it: x * 0.5 * (1 + erf)
tfm_fast_gelu           Gelu (tanh form, GPT-2's gelu_new)
tfm_bias_gelu           MatMul + Add bias -> onnxruntime's Gelu
tfm_attention           BERT self-attention (2 heads) with the int64 mask
tfm_fully_connected     GPT-2's Conv1D: Reshape to rows, Gemm, Reshape back
tfm_rms_norm            LLaMA's RMSNorm (torch's rsqrt: Sqrt, Reciprocal), opset 23
tfm_rms_norm_opset14    the same at opset 14 (no RMSNormalization there)
tfm_skip_rms_norm       RMSNorm of a residual sum another Add reads too
tfm_fast_gelu_bias      MatMul + Add bias -> onnxruntime's FastGelu
tfm_rotary              LLaMA's rotary embeddings on Q and K [2, 2, 4, 8] by
                        position_ids (one cos/sin Gather for both), opset 14
tfm_rotary_opset23      the same at opset 23 (RotaryEmbedding is standard there)

  .venv/bin/python tests/data/make_onnx_transformers.py
"""
import math
import os
import sys

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))

from transformer_models import Builder  # noqa: E402

SHAPE = [2, 4, 8]


def save(name, b, x, inputs=("x",), opset=14, contrib=False, extra=(), shape=SHAPE):
    b.nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    graph = helper.make_graph(
        b.nodes, name, [helper.make_tensor_value_info(i, TensorProto.FLOAT, shape)
                        for i in inputs] + list(extra),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], b.inits)
    opsets = [helper.make_opsetid("", opset)]
    if contrib:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="graft tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(HERE, "onnx", "tfm_%s.onnxtxt" % name), "w") as out:
        out.write(text_format.MessageToString(model))


def main():
    b = Builder(5)
    save("layer_norm", b, b.layer_norm("x", 8, "/ln"), opset=17)
    b = Builder(5)
    save("layer_norm_opset14", b, b.layer_norm("x", 8, "/ln"))
    b = Builder(5)
    save("layer_norm_axis1", b, b.layer_norm("x", 8, "/ln", axes=[1]), opset=17)
    b = Builder(6)
    h = b.linear("x", 8, 8, "/dense")
    total = b.op("Add", [h, "r"], "/residual")
    ln = b.layer_norm(total, 8, "/ln")
    save("skip_layer_norm", b, b.op("Add", [ln, total], "/next"), inputs=("x", "r"))
    b = Builder(7)
    save("gelu", b, b.gelu_erf(b.linear("x", 8, 8, "/dense"), "/act"))
    b = Builder(7)
    half = b.op("Mul", ["x", b.scalar(0.5)], "/act")
    erf = b.op("Erf", [b.op("Div", ["x", b.scalar(math.sqrt(2.0))], "/act")], "/act")
    save("gelu_half_first", b, b.op("Mul", [half, b.op("Add", [b.scalar(1.0), erf], "/act")],
                                     "/act"))
    b = Builder(8)
    save("fast_gelu", b, b.gelu_tanh("x", "/act"))
    b = Builder(10)
    q, k, v = (b.linear("x", 8, 8, "/" + n) for n in "qkv")
    ctx = b.attention_core(q, k, v, 2, 4, 2, 4, "/attn", b.extended_mask("mask"))
    save("attention", b, ctx,
         extra=[helper.make_tensor_value_info("mask", TensorProto.INT64, SHAPE[:2])])
    b = Builder(12)
    rows = b.op("Reshape", ["x", b.shape([-1, 8])], "/c_fc")
    fc = b.op("Gemm", [rows, b.weight("/c_fc.weight", (8, 8)), b.weight("/c_fc.bias", (8,))],
              "/c_fc")
    save("fully_connected", b, b.op("Reshape", [fc, b.shape(SHAPE)], "/c_fc"))
    b = Builder(13, opset=23)
    save("rms_norm", b, b.rms_norm("x", 8, "/norm"), opset=23)
    b = Builder(13)
    save("rms_norm_opset14", b, b.rms_norm("x", 8, "/norm"))
    b = Builder(14)
    total = b.op("Add", [b.op("MatMul", ["x", b.weight("/o.weight", (8, 8))], "/o"), "r"],
                 "/residual")
    save("skip_rms_norm", b, b.op("Add", [b.rms_norm(total, 8, "/norm"), total], "/next"),
         inputs=("x", "r"))
    for op in ("Gelu", "FastGelu"):
        b = Builder(9)
        h = b.linear("x", 8, 8, "/dense")
        b.nodes.append(helper.make_node(op, [h], ["g"], name="/act/" + op,
                                        domain="com.microsoft"))
        save("bias_gelu" if op == "Gelu" else "fast_gelu_bias", b, "g", contrib=True)
    for name, opset in (("rotary", 14), ("rotary_opset23", 23)):
        b = Builder(15, opset=opset)
        emb = np.outer(np.arange(16), 1.0 / 10000 ** (np.arange(0, 8, 2) / 8))
        emb = np.concatenate([emb, emb], -1)
        tables = [b.const(t, f(emb).astype(np.float32))
                  for t, f in (("cos_cached", np.cos), ("sin_cached", np.sin))]
        cos, sin = (b.op("Unsqueeze", [b.op("Gather", [t, "position_ids"], "/rotary_emb"),
                                       b.shape([1])], "/rotary_emb") for t in tables)
        q = b.rotary("x", cos, sin, 8, "/attn")
        k = b.rotary("k", cos, sin, 8, "/attn")
        save(name, b, b.op("Add", [q, k], "/attn"), inputs=("x", "k"), opset=opset,
             shape=[2, 2, 4, 8],
             extra=[helper.make_tensor_value_info("position_ids", TensorProto.INT64, [2, 4])])


if __name__ == "__main__":
    main()
