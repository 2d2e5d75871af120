"""graft's QDQ quantization (graft.calibrate + rules/onnx/quantize_qdq.graft)
beside onnxruntime's quantize_static (QDQ, per channel, uint8 activations,
int8 weights, MinMax) on zoo CNNs converted to opset 13 and on real torch
exports (CNNs, transformers), with the same 8 calibration inputs: SQNR of
the first output against the float model's and top-1 agreement (per row
of its last axis) on 16 other random inputs, and time (graft: calibration,
then the whole apply command; onnxruntime: its quantize_static call, which
calibrates too); latency in onnxruntime (2 threads, its default
optimizations; the float model and both results timed in interleaved
rounds of 10 runs, the median run of each) and what it runs in 8 bits (in its optimized
graph: QLinearConv of the model's convs, and all of test_onnx_quantize's
EIGHT_BIT_OPS).

  .venv/bin/python tests/interop/bench_onnx_quantize.py [--rounds N] [--rules FILE]

`--rules` quantizes with another rule file in place of
rules/onnx/quantize_qdq.graft (a variant to compare). `--zoo` quantizes
every static export of tests/data/zoo/ beside quantize_static instead:
valid outputs, runs, and how each SQNR compares. `--dynamic` measures
rules/onnx/quantize_dynamic.graft beside quantize_dynamic instead, on a
4-layer BERT at BERT-base's widths (128 tokens) that torch's dynamo
exporter writes here, and on zoo transformers.
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
import graft.calibrate as calibrate  # noqa: E402
import zoo  # noqa: E402
from onnx_zoo import example_input, make  # noqa: E402
from test_onnx_quantize import (EIGHT_BIT_OPS, ZOO_TRANSFORMERS, batches,  # noqa: E402
                                ort_quantize, run, runtime_ops, sqnr, zoo_batches)

GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")
MODELS = ["squeezenet", "resnet50", "inception_v1", "shufflenet", "densenet121"]
# torchvision's CNNs as torch's exporters write them (tests/data/zoo/), their
# batch norms folded first as test_onnx_quantize.py folds them
EXPORTS = ["mobilenet_v2.dynamo.static", "shufflenet_v2.dynamo.static"]


def sources(out):
    """(name, float model, feeds(n, seed)) of each benchmarked model."""
    for name in MODELS:
        src = os.path.join(out, name + "_13.onnx")
        onnx.save(version_converter.convert_version(onnx.load(make(name, out)), 13), src)
        input_name, x = example_input(src)
        yield name, src, lambda n, seed, i=input_name, s=x.shape: batches(i, s, n, seed)
    for name in EXPORTS:
        src = os.path.join(out, name + ".folded.onnx")
        subprocess.run([GRAFT, "apply", "-q", "-r", os.path.join(
            ROOT, "rules", "onnx", "onnxoptimizer", "extract_constant_to_initializer.graft"),
            "-r", os.path.join(ROOT, "rules", "onnx", "fold_batch_norms.graft"),
            os.path.join(zoo.ZOO, name + ".onnx"), "-o", src], check=True)
        (input_name, spec), = zoo.manifest(zoo.ZOO)[name]["inputs"].items()
        yield name, src, lambda n, seed, i=input_name, s=spec["shape"]: batches(i, s, n, seed)
    for name in ZOO_TRANSFORMERS:
        spec = zoo.manifest(zoo.ZOO)[name]
        yield name, os.path.join(zoo.ZOO, name + ".onnx"), \
            lambda n, seed, spec=spec: zoo_batches(spec, n, seed)


def latencies(paths, feed, rounds):
    """Median ms per run of each model: zoo.interleaved_ms's rounds of 10
    runs each, the order turned each round."""
    stats, _ = zoo.interleaved_ms(paths, feed, rounds=rounds)
    return [median for _, _, median in stats]


def zoo_sweep(rules):
    """Every static zoo export, calibrated on 8 batches, quantized by graft
    and by quantize_static; onnx.checker, a run, and both SQNRs."""
    import warnings
    warnings.simplefilter("ignore", RuntimeWarning)  # quantize_static's over an -inf
    out = tempfile.mkdtemp()
    ranges, ours, theirs = (os.path.join(out, f) for f in ("r.yaml", "g.onnx", "o.onnx"))
    rows, failed = [], []
    for name, spec in sorted(zoo.manifest(zoo.ZOO).items()):
        if spec["dynamic"]:
            continue
        src = os.path.join(zoo.ZOO, name + ".onnx")
        calibration, test = zoo_batches(spec, 8, 1), zoo_batches(spec, 4, 7)
        try:
            calibrate.onnx_ranges(src, calibration, ranges)
            subprocess.run([GRAFT, "apply", "-q", "-r", rules, "--param", "ranges=" + ranges,
                            src, "-o", ours], check=True, capture_output=True)
            onnx.checker.check_model(onnx.load(ours), full_check=True)
            want = run(src, test)
            got = sqnr(want, run(ours, test))
        except Exception as e:  # noqa: BLE001 - any failure is a row of the report
            failed.append(f"{name}: {str(e)[-200:]}")
            continue
        try:
            ort_quantize(src, theirs, calibration)
            peer = sqnr(want, run(theirs, test))
        except Exception:  # noqa: BLE001 - the peer's failure is its own
            peer = float("nan")
        rows.append((name, float(got), float(peer)))
    better = sum(g > p + 1 for _, g, p in rows)
    worse = [r for r in rows if r[1] < r[2] - 1]
    print(f"{len(rows)} of {len(rows) + len(failed)} static exports quantized, valid and run")
    print(f"SQNR against quantize_static's: {better} more than 1 dB higher, "
          f"{len(rows) - better - len(worse)} within 1 dB, {len(worse)} more than 1 dB lower")
    print(f"median SQNR: graft {np.median([g for _, g, _ in rows]):.1f} dB, quantize_static "
          f"{np.nanmedian([p for _, _, p in rows]):.1f} dB")
    for name, g, p in sorted(rows, key=lambda r: r[1] - r[2])[:5] + worse:
        print(f"  {name}: graft {g:.1f} dB, quantize_static {p:.1f} dB")
    for line in failed:
        print("  failed:", line)


def dynamic_sources(out):
    """(name, float model, feeds) for the dynamic-quantization benchmark."""
    import torch
    import transformers
    config = transformers.BertConfig(hidden_size=768, num_attention_heads=12,
                                     intermediate_size=3072, num_hidden_layers=4)
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 128))
    path = os.path.join(out, "bert_base4.onnx")
    torch.onnx.export(model, (ids, torch.ones_like(ids)), path, dynamo=True,
                      input_names=["input_ids", "attention_mask"], external_data=False)
    feed = {"input_ids": ids.numpy(), "attention_mask": np.ones((1, 128), np.int64)}
    yield "BERT, 4 layers of 768 (dynamo)", path, [feed]
    for name in ("bert.dynamo.static", "gpt2.dynamo.dynamic", "llama.ts17.static",
                 "bert.keras.static", "vit.dynamo.static", "mobilenet_v2.dynamo.static"):
        yield name, os.path.join(zoo.ZOO, name + ".onnx"), zoo_batches(
            zoo.manifest(zoo.ZOO)[name], 4, 7)


def dynamic_benchmark(rounds):
    """quantize_dynamic.graft beside onnxruntime's quantize_dynamic (int8
    weights per channel): nodes, file size, SQNR, time, and latency against
    float."""
    import contextlib
    import io
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = tempfile.mkdtemp()
    print("| model | tool | nodes | MB | SQNR dB | s | 8-bit matmuls | 8-bit convs | ms "
          "| vs float |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        sources = list(dynamic_sources(out))  # the exporter's progress
    rules = os.path.join(ROOT, "rules", "onnx", "quantize_dynamic.graft")
    for name, src, test in sources:
        # graft's default leaves convs float; `ops` with Conv is quantize_dynamic's
        tools = [("graft", [])]
        if "Conv" in {n.op_type for n in onnx.load(src, load_external_data=False).graph.node}:
            tools.append(("graft, ops with Conv", ["--param", "ops=MatMul|Gemm|Gather|Conv"]))
        results = []
        for tool, params in tools:
            path = os.path.join(out, f"graft{len(results)}.onnx")
            t = time.perf_counter()
            subprocess.run([GRAFT, "apply", "-q", "-r", rules, *params, src, "-o", path],
                           check=True)
            results.append((tool, path, time.perf_counter() - t))
        theirs = os.path.join(out, "ort.onnx")
        t = time.perf_counter()
        quantize_dynamic(src, theirs, weight_type=QuantType.QInt8, per_channel=True)
        results.append(("onnxruntime", theirs, time.perf_counter() - t))
        want = run(src, test)
        ms = latencies([src] + [path for _, path, _ in results], test[0], rounds)
        mb = lambda path: os.path.getsize(path) / 2**20  # noqa: E731
        print(f"| {name} | float | {len(onnx.load(src).graph.node)} | {mb(src):.2f} | | | | "
              f"| {ms[0]:.2f} | 1.00 |")
        for (tool, path, s), m in zip(results, ms[1:]):
            ops = runtime_ops(path, pathlib.Path(out))
            print(f"| {name} | {tool} | {len(onnx.load(path).graph.node)} | {mb(path):.2f} "
                  f"| {sqnr(want, run(path, test)):.1f} | {s:.2f} "
                  f"| {ops['DynamicQuantizeMatMul'] + ops['MatMulIntegerToFloat']} "
                  f"| {ops['ConvInteger']} | {m:.2f} | {ms[0] / m:.2f} |", flush=True)


def main():
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 30
    rules = (sys.argv[sys.argv.index("--rules") + 1] if "--rules" in sys.argv
             else os.path.join(ROOT, "rules", "onnx", "quantize_qdq.graft"))
    if "--zoo" in sys.argv:
        zoo_sweep(rules)
        return
    if "--dynamic" in sys.argv:
        dynamic_benchmark(rounds)
        return
    out = tempfile.mkdtemp()
    print("| model | tool | SQNR dB | top-1 agreement | s | 8-bit convs | 8-bit ops | ms "
          "| vs float |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, src, feeds in sources(out):
        calibration = feeds(8, 1)
        ours, theirs = os.path.join(out, "graft.onnx"), os.path.join(out, "ort.onnx")
        t = time.perf_counter()
        calibrate.onnx_ranges(src, calibration, os.path.join(out, "ranges.yaml"))
        subprocess.run([GRAFT, "apply", "-q", "-r", rules, "--param",
                        "ranges=" + os.path.join(out, "ranges.yaml"), src, "-o", ours],
                       check=True)
        graft_s = time.perf_counter() - t
        t = time.perf_counter()
        ort_quantize(src, theirs, calibration)
        ort_s = time.perf_counter() - t
        test = feeds(16, 7)
        want = run(src, test)
        top = want.reshape(-1, want.shape[-1]).argmax(1)
        ms = latencies([src, ours, theirs], test[0], rounds)
        convs = sum(n.op_type == "Conv" for n in onnx.load(src).graph.node)
        print(f"| {name} | float | | | | | | {ms[0]:.2f} | 1.00 |")
        for tool, path, s, m in (("graft", ours, graft_s, ms[1]),
                                 ("onnxruntime", theirs, ort_s, ms[2])):
            got = run(path, test)
            agree = np.mean(got.reshape(-1, got.shape[-1]).argmax(1) == top)
            ops = runtime_ops(path, pathlib.Path(out))
            print(f"| {name} | {tool} | {sqnr(want, got):.1f} | {agree:.2f} | {s:.2f} "
                  f"| {ops['QLinearConv']}/{convs} | {sum(ops[o] for o in EIGHT_BIT_OPS)} "
                  f"| {m:.2f} | {ms[0] / m:.2f} |", flush=True)


if __name__ == "__main__":
    main()
