"""How `graft apply --pipeline onnx-transformers` scales with a model's
depth: the zoo's LLaMA (hidden 64, 4 heads, 2 of K and V) at 8, 16 and 32
layers, exported by torch's TorchScript exporter at opset 17 with dynamic
batch and sequence (the most nodes and rewrites per layer of the zoo's
exporters) and by its dynamo exporter, static shapes. Prints a markdown
table: nodes before and after, rewrites, graft's apply time (its own
summary: rules only, without reading and writing) and the whole process's
wall time, per layer.

  .venv/bin/python tests/interop/bench_apply_scaling.py [LAYERS,...]
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_zoo  # noqa: E402

GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")


def main():
    layers = [int(n) for n in sys.argv[1].split(",")] if len(sys.argv) > 1 else [8, 16, 32]
    warnings.simplefilter("ignore")
    print("| export | layers | nodes | nodes after | rewrites | apply s | process s "
          "| process ms / layer |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for exporter in ("ts17-dynamic", "dynamo"):
            for n in layers:
                model, inputs = export_zoo.build("llama", num_hidden_layers=n)
                src, out = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.graft.onnx")
                export_zoo.write(model, inputs, "llama", exporter.removesuffix("-dynamic"),
                                 exporter.endswith("-dynamic"), src)
                start = time.perf_counter()
                proc = subprocess.run([GRAFT, "apply", "--pipeline", "onnx-transformers", src,
                                       "-o", out], capture_output=True, text=True, check=True)
                wall = time.perf_counter() - start
                summary = re.search(r"(\d+) rewrite\(s\); nodes (\d+) -> (\d+); .*?([0-9.]+) ms "
                                    r"apply", proc.stderr)
                rewrites, before, after, apply_ms = summary.groups()
                print(f"| llama@{exporter} | {n} | {before} | {after} | {rewrites} "
                      f"| {float(apply_ms) / 1e3:.2f} | {wall:.2f} | {1e3 * wall / n:.0f} |",
                      flush=True)


if __name__ == "__main__":
    main()
