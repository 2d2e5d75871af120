"""graft's rules/onnx/transformers/ beside onnxruntime's transformers
optimizer (`optimize_model(model_type=...)`, opt_level 0: its fusions
alone) on BERT- and GPT-2-style models (transformer_models.py) at
BERT-base's width: fusions by kind, nodes left, largest output difference
in onnxruntime relative to the largest output, whether onnx.checker
accepts the result, time. graft's time is the whole command (start, read,
rewrite, write); the optimizer's is its optimize_model() call and save.

  .venv/bin/python tests/interop/bench_onnx_transformers.py [LAYERS]
"""
import collections
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import transformer_models  # noqa: E402

RULES = sorted(os.path.join(ROOT, "rules", "onnx", "transformers", f)
               for f in os.listdir(os.path.join(ROOT, "rules", "onnx", "transformers"))
               if f.endswith(".graft"))
SHORT = {"LayerNormalization": "LN", "SkipLayerNormalization": "SkipLN", "Gelu": "Gelu",
         "RMSNormalization": "RMSNorm", "SimplifiedLayerNormalization": "RMSNorm",
         "SkipSimplifiedLayerNormalization": "SkipRMSNorm",
         "BiasGelu": "BiasGelu", "FastGelu": "FastGelu", "Attention": "Attention",
         "EmbedLayerNormalization": "EmbedLN"}


def fused(path):
    counts = collections.Counter(n.op_type for n in onnx.load(path).graph.node
                                 if n.domain == "com.microsoft" or n.op_type in (
                                     "LayerNormalization", "RMSNormalization",
                                     "SimplifiedLayerNormalization"))
    return " ".join("%s %d" % (SHORT.get(k, k), v) for k, v in sorted(counts.items())) or "-"


def valid(path):
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
        return "yes"
    except onnx.checker.ValidationError:
        return "no"


def main():
    from onnxruntime.transformers import optimizer
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    graft = os.path.join(ROOT, "bazel-bin", "cli", "graft")
    out = tempfile.mkdtemp()
    print("| model | opset | nodes | tool | fusions | nodes left | diff | onnx.checker | s |")
    print("|---|---:|---:|---|---|---:|---:|---|---:|")
    for name, opsets in (("bert", (14, 17)), ("gpt2", (14, 17)), ("llama", (14, 23))):
        for opset in opsets:
            model = getattr(transformer_models, name)(layers=layers, hidden=768, n_heads=12,
                                                      seq=128, vocab=1000, opset=opset)
            src = os.path.join(out, "%s_%d.onnx" % (name, opset))
            onnx.save(model, src)
            feeds = transformer_models.feeds(model)

            def run(path):
                session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                return session.run(None, feeds)[0]
            want = run(src)
            ours, theirs = os.path.join(out, "graft.onnx"), os.path.join(out, "ort.onnx")
            args = [graft, "apply", "-q"] + [a for r in RULES for a in ("-r", r)]
            t = time.perf_counter()
            subprocess.run(args + [src, "-o", ours], check=True, cwd=ROOT)
            graft_s = time.perf_counter() - t
            t = time.perf_counter()
            kind = "gpt2" if name == "llama" else name  # its decoder fusions
            optimizer.optimize_model(src, model_type=kind, num_heads=12, hidden_size=768,
                                     opt_level=0).save_model_to_file(theirs)
            ort_s = time.perf_counter() - t
            for tool, path, s in (("graft", ours, graft_s), ("onnxruntime", theirs, ort_s)):
                diff = np.abs(run(path) - want).max() / np.abs(want).max()
                print(f"| {name} | {opset} | {len(model.graph.node)} | {tool} | {fused(path)} "
                      f"| {len(onnx.load(path).graph.node)} | {diff:.1e} | {valid(path)} "
                      f"| {s:.2f} |")


if __name__ == "__main__":
    main()
