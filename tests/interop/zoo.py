"""The zoo of real exports (tests/data/zoo/, export_zoo.py): its manifests,
inputs of the shapes each export takes, and onnxruntime runs of them, for
the zoo's test and benchmark."""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data")
ZOO = os.path.join(DATA, "zoo")
# The same models exported with transformers 4.57 (the exporter-drift review).
ZOO4 = os.path.join(DATA, "zoo-transformers4")


def manifest(folder):
    with open(os.path.join(folder, "MANIFEST.json")) as f:
        return json.load(f)["models"]


def read_manifest(folder):
    """The whole MANIFEST.json of an exporter's folder (versions and
    models), or an empty one."""
    path = os.path.join(folder, "MANIFEST.json")
    if not os.path.exists(path):
        return {"models": {}}
    with open(path) as f:
        return json.load(f)


def add_export(manifest, failed, base, path, export):
    """Runs `export()`, which writes `path` and returns its manifest entry,
    strips provenance and checks the file with onnx.checker; the entry goes
    into `manifest` as `base`. A producer's failure is appended to `failed`
    and leaves no file or entry behind (the other exports go on)."""
    import onnx
    try:
        entry = export()
        strip_provenance(path)
        onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception as e:  # noqa: BLE001 (a producer's failure is reported)
        failed.append(f"{base}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        if os.path.exists(path):
            os.remove(path)
        manifest["models"].pop(base, None)
        return
    if os.path.exists(path + ".data"):  # weights the exporter wrote apart
        os.remove(path + ".data")
    manifest["models"][base] = entry
    print(f"{base}: {os.path.getsize(path) / 1024:.0f} KiB", flush=True)


def write_manifest(folder, manifest, failed):
    """Writes MANIFEST.json (models sorted by name), reports the exports
    that failed; the exporter's exit code."""
    import sys
    manifest["models"] = dict(sorted(manifest["models"].items()))
    with open(os.path.join(folder, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    for line in failed:
        print("failed:", line, file=sys.stderr)
    return 1 if failed else 0


def feeds(spec):
    """Inputs of an export's shapes (symbols: batch 2, sequence 8); the
    attention mask (Keras's padding mask) pads the last row's last three
    tokens, BERT's segments are the first and the second half, and
    positions (transformers' exporter's position_ids) are the tokens' after
    what the mask holds beyond them (a KV cache's past)."""
    rng = np.random.default_rng(0)
    out = {}
    sizes = {"batch": 2, "sequence": 8}
    for k, s in spec["inputs"].items():
        shape = [d if isinstance(d, int) else sizes[d] for d in s["shape"]]
        if "value" in s:  # an input the export was traced at (a cache's window)
            v = np.full(shape, s["value"], s["dtype"])
        elif s["dtype"] in ("int64", "int32"):
            if k in ("attention_mask", "padding_mask"):
                v = np.ones(shape, s["dtype"])
                v[-1, -3:] = 0
            elif k == "segment_ids":
                v = np.zeros(shape, s["dtype"])
                v[:, shape[1] // 2:] = 1
            elif k == "position_ids":
                mask = spec["inputs"].get("attention_mask", {"shape": shape})["shape"]
                past = (mask[1] if isinstance(mask[1], int) else sizes[mask[1]]) - shape[1]
                v = np.broadcast_to(past + np.arange(shape[1]), shape).astype(s["dtype"])
            else:
                v = rng.integers(0, 500, shape).astype(s["dtype"])
        else:
            v = rng.standard_normal(shape).astype(s["dtype"])
        out[k] = v
    return out


def shared_dims(spec):
    """`graft apply` arguments that say an export's inputs share their batch
    and sequence (`--input-shape token_ids=batch,sequence ...`), for
    Keras's exports: tf2onnx names every unknown dimension apart, so that
    nothing shows a residual's two sides to be of one shape."""
    if not spec["exporter"].startswith("keras"):
        return []
    args = []
    for name, s in spec["inputs"].items():
        args += ["--input-shape", f"{name}={','.join(str(d) for d in s['shape'])}"]
    return args


def tolerance(spec):
    """The largest output difference, relative to the largest output, that
    counts as the same numbers: float16 exports (`dynamo16`) round at about
    1e-3."""
    return 2e-3 if spec["exporter"] == "dynamo16" else 1e-4


# Exports onnxruntime runs only one row at a time: torch's dynamo exporter
# at opset 23 with dynamic shapes writes the standard RotaryEmbedding over
# tables of one row ([1, S, h/2]), which the op takes for a batch of 1
# (graft's pipeline broadcasts them: rotary_embedding_batch_tables).
ROWS_APART = {"llama.dynamo23.dynamic", "qwen3.dynamo23.dynamic"}


def reference(name, path, inputs):
    """Export `name`'s outputs for `inputs` in onnxruntime: of the batch
    whole, or for ROWS_APART of each row on its own, joined (the rows of a
    batch are independent in these models)."""
    if name not in ROWS_APART:
        return run(path, inputs)
    batch = len(next(iter(inputs.values())))
    rows = [run(path, {k: v[i:i + 1] for k, v in inputs.items()}) for i in range(batch)]
    return [np.concatenate(outputs, 0) for outputs in zip(*rows)]


def run(path, inputs):
    """The model's outputs in onnxruntime (CPU)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def median_ms(path, feeds, runs=30):
    """onnxruntime's latency of a model (its default session options, 2
    intra-op threads): the median of `runs` runs after 3 warm-up runs, in
    ms, and its first output."""
    stats, outputs = interleaved_ms([path], feeds, rounds=1, runs=runs)
    return stats[0][2], outputs[0]


LATENCY_HEADER = ("| export | ms before | ms after | before / after "
                  "| ms after, `skip_norms=false` | before / after | diff |\n"
                  "|---|---:|---:|---:|---:|---:|---:|")


def apply_pipeline(graft, src, out, *args):
    """`graft apply --pipeline onnx-transformers src -o out args...`."""
    import subprocess
    subprocess.run([graft, "apply", "--pipeline", "onnx-transformers", src, "-o", out, "-q",
                    *args], check=True)


def latency_row(run, src, feeds, graft, *args):
    """A row of LATENCY_HEADER's table: the export `src` before and after
    `graft apply --pipeline onnx-transformers` (with `args`), and after it
    with `--param skip_norms=false`, timed by median_ms; the largest
    output difference relative to the largest output."""
    out, cpu = src + ".graft.onnx", src + ".cpu.onnx"
    apply_pipeline(graft, src, out, *args)
    apply_pipeline(graft, src, cpu, *args, "--param", "skip_norms=false")
    before, want = median_ms(src, feeds)
    after, got = median_ms(out, feeds)
    after_cpu, got_cpu = median_ms(cpu, feeds)
    scale = max(float(np.abs(want).max()), 1.0)
    diff = max(np.abs(want - got).max(), np.abs(want - got_cpu).max()) / scale
    return (f"| {run} | {before:.1f} | {after:.1f} | {before / after:.2f} | {after_cpu:.1f} "
            f"| {before / after_cpu:.2f} | {diff:.1e} |")


def strip_provenance(path):
    """Drops what names the exporting machine's files (the dynamo exporter's
    per-node stack traces and doc strings); the ops and weights stay."""
    import onnx
    model = onnx.load(path)
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    model.graph.doc_string = ""
    onnx.save(model, path)


def interleaved_ms(paths, feeds, rounds=20, runs=10):
    """onnxruntime's latency of several models measured together (their
    default session options, 2 intra-op threads, one session each, 3
    warm-up runs): `rounds` rounds of `runs` runs of each, the order
    turned each round, so that the machine's drift falls on all alike.
    Returns each model's (fastest, first quartile, median) in ms and its
    first output."""
    import statistics
    import time

    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    sessions = [ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                for path in paths]
    outputs = []
    for session in sessions:
        for _ in range(3):
            out = session.run(None, feeds)
        outputs.append(out[0])
    times = [[] for _ in sessions]
    for r in range(rounds):
        order = range(len(sessions)) if r % 2 == 0 else reversed(range(len(sessions)))
        for i in order:
            for _ in range(runs):
                start = time.perf_counter()
                sessions[i].run(None, feeds)
                times[i].append(time.perf_counter() - start)
    stats = [(min(t) * 1e3, statistics.quantiles(t, n=4)[0] * 1e3, statistics.median(t) * 1e3)
             for t in times]
    return stats, outputs


ABLATION_HEADER = ("| export | nodes with / without | ms with: fastest, p25, median "
                   "| ms without: fastest, p25, median | without / with: fastest, p25, median "
                   "| diff |\n|---|---:|---:|---:|---:|---:|")


def ablation_row(label, src, feeds, graft, skip_rules, args=(), rounds=20, runs=10):
    """A row of ABLATION_HEADER's table: the pipeline `onnx-transformers`
    (with `args`) against the same pipeline with `--skip-rules skip_rules`,
    timed together by interleaved_ms; the largest difference of either's
    output from the export's, relative to the largest output."""
    import onnx
    with_rules, without = src + ".with.onnx", src + ".without.onnx"
    apply_pipeline(graft, src, with_rules, *args)
    apply_pipeline(graft, src, without, *args, "--skip-rules", skip_rules)
    nodes = [len(onnx.load(p).graph.node) for p in (with_rules, without)]
    want = run(src, feeds)[0]
    (have, lack), (got, got_without) = interleaved_ms([with_rules, without], feeds, rounds, runs)
    scale = max(float(np.abs(want).max()), 1.0)
    diff = max(np.abs(want - got).max(), np.abs(want - got_without).max()) / scale
    ratio = ", ".join(f"{b / a:.2f}" for a, b in zip(have, lack))
    return (f"| {label} | {nodes[0]} / {nodes[1]} | {', '.join(f'{t:.1f}' for t in have)} "
            f"| {', '.join(f'{t:.1f}' for t in lack)} | {ratio} | {diff:.1e} |")
