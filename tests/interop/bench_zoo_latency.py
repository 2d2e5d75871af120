"""onnxruntime's latency of transformer exports at a working width, before
and after `graft apply --pipeline onnx-transformers`, in one run: OPT,
Falcon, Qwen3, T5's encoder and SigLIP's vision model (export_zoo.py's
architectures at hidden 512, 8 heads, 4 layers, MLP 2048; batch 4 of 128
tokens, or 128 x 128 images) by torch's dynamo exporter, static shapes.
Each model runs in onnxruntime with its default session options (its own
graph optimizations on) and 2 intra-op threads: 3 warm-up runs, then the
median of 30. Prints a markdown table: ms before, ms after, the ratio and
the largest output difference relative to the largest output.

  .venv/bin/python tests/interop/bench_zoo_latency.py [NAME,...]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnxruntime as ort
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_zoo  # noqa: E402

GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")
WIDTH = dict(hidden_size=512, num_attention_heads=8, num_hidden_layers=4, intermediate_size=2048)
# Each architecture's config at the working width (export_zoo.NEWER's names).
WIDE = {
    "opt": dict(hidden_size=512, num_attention_heads=8, num_hidden_layers=4, ffn_dim=2048,
                word_embed_proj_dim=512, max_position_embeddings=256),
    "falcon": dict(hidden_size=512, num_attention_heads=8, num_hidden_layers=4),
    "qwen3": dict(WIDTH, head_dim=64, max_position_embeddings=256),
    "t5_encoder": dict(d_model=512, d_kv=64, d_ff=2048, num_layers=4, num_heads=8),
    "siglip_vision": dict(WIDTH, image_size=128, patch_size=8),
}


def median_ms(path, feeds, runs=30):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(path, options)
    for _ in range(3):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, out[0]


def main():
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else list(WIDE)
    export_zoo.SEQ, export_zoo.BATCH, export_zoo.IMAGE = 128, 4, 128
    warnings.simplefilter("ignore")
    print("| export | ms before | ms after | before / after | diff |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model, inputs = export_zoo.build(name, **WIDE[name])
            src, out = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".graft.onnx")
            with torch.no_grad():
                torch.onnx.export(model, tuple(inputs.values()), src, input_names=list(inputs),
                                  output_names=["output"], dynamo=True, external_data=False)
            subprocess.run([GRAFT, "apply", "--pipeline", "onnx-transformers", src, "-o", out,
                            "-q"], check=True)
            feeds = {k: v.numpy() for k, v in inputs.items()}
            before, want = median_ms(src, feeds)
            after, got = median_ms(out, feeds)
            diff = np.abs(want - got).max() / max(float(np.abs(want).max()), 1.0)
            print(f"| {name} | {before:.1f} | {after:.1f} | {before / after:.2f} | {diff:.1e} |",
                  flush=True)


if __name__ == "__main__":
    main()
