"""onnxruntime's latency of Keras 3's transformer exports at a working
width, before and after `graft apply --pipeline onnx-transformers`, in one
run: KerasHub's BERT, GPT-2, OPT, LLaMA and Qwen3 (export_zoo_keras.py's
backbones at hidden 512, 8 heads of 64 (LLaMA's and Qwen3's K and V 4),
4 layers, MLP 2048; batch 4 of 128 tokens) by Keras's own ONNX export
(tf2onnx) at its default opset, static shapes (`NAME`) and dynamic
(`NAME@dynamic`: run at 4 x 128, graft told the inputs share batch and
sequence). Each also with `--param skip_norms=false`. Each model runs in
onnxruntime with its default session options (its own graph optimizations
on) and 2 intra-op threads: 3 warm-up runs, then the median of 30 (the
same timing as bench_zoo_latency.py). Prints a markdown table: ms before,
ms after (and the ratio), ms after with `skip_norms=false` (and the
ratio), and the largest output difference relative to the largest output.

  PYTHONPATH=DIR .venv/bin/python tests/interop/bench_zoo_latency_keras.py [NAME[@dynamic],...]

Needs keras-hub beside the test environment's TensorFlow, Keras 3, tf2onnx
and onnxruntime: `.venv/bin/pip install --target DIR --no-deps
keras-hub==0.32.0` (the version the zoo's Keras exports name).
"""
import os
import sys
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_zoo_keras  # noqa: E402
from zoo import LATENCY_HEADER, latency_row  # noqa: E402

WIDE = dict(vocabulary_size=512, num_layers=4, hidden_dim=512, intermediate_dim=2048)
CONFIGS = {
    "bert": dict(WIDE, num_heads=8, max_sequence_length=256),
    "gpt2": dict(WIDE, num_heads=8, max_sequence_length=256),
    "opt": dict(WIDE, num_heads=8, max_sequence_length=256),
    "llama": dict(WIDE, num_query_heads=8, num_key_value_heads=4),
    "qwen3": dict(WIDE, num_query_heads=8, num_key_value_heads=4, head_dim=64),
}
GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")
RUNS = ["bert", "gpt2", "opt", "llama", "qwen3", "bert@dynamic", "llama@dynamic"]


def main():
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else RUNS
    warnings.simplefilter("ignore")
    print(LATENCY_HEADER)
    with tempfile.TemporaryDirectory() as tmp:
        for run in names:
            name, _, shapes = run.partition("@")
            dynamic = shapes == "dynamic"
            src = os.path.join(tmp, "model.onnx")
            spec = export_zoo_keras.export(name, "keras", dynamic, src, config=CONFIGS[name],
                                           batch=4, sequence=128)
            _, inputs = export_zoo_keras.build(name, CONFIGS[name], batch=4, sequence=128)
            shared = [a for k in spec["inputs"]
                      for a in ("--input-shape", f"{k}=batch,sequence")] if dynamic else []
            feeds = {k: np.asarray(v) for k, v in inputs.items()}
            print(latency_row(run, src, feeds, GRAFT, *shared), flush=True)


if __name__ == "__main__":
    main()
