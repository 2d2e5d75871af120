"""An LLM-scale model past ONNX's 2 GiB limit: a LLaMA-like decoder
(tests/interop/transformer_models.llama: embeddings, RMS norms, attention
with rotary embeddings, SiLU-gated MLP; random weights) in the op sequence
torch writes, at opset 20 as dynamo exports it, its weights in one
external data file. Each step in its own
process, time and peak RSS, beside the peers that can load it, each
stopped after --limit seconds:

  graft fusions        --pipeline onnx-transformers
  graft weight-only    rules/onnx/quantize_qdq.graft without ranges: every
                       MatMul weight int8 per output channel behind a
                       DequantizeLinear; rules/onnx/quantize_nbits.graft:
                       MatMulNBits, 8 bits in blocks of 128 (symmetric)
                       and 4 bits in blocks of 32, then with the
                       embeddings (GatherBlockQuantized), then as
                       standard DequantizeLinear (--opset 21, format=qdq)
  onnxruntime          optimize_model(model_type="gpt2") (its fusions);
                       MatMulNBitsQuantizer(bits=8, blocks of 128: per
                       channel it writes only for 4 bits; bits=4, blocks
                       of 32, without and with Gather, and in its QDQ
                       format)
  onnxoptimizer        its default passes
  onnxsim              simplify
  onnxscript           optimizer.optimize + rewriter.rewrite (default rules)

and `cp -r` of the model's folder (the floor). Outputs are compared in
onnxruntime on one batch (--run): the fused model's largest difference over
the largest output, the quantized model's SQNR.

  .venv/bin/python tests/interop/bench_onnx_llm.py [--layers 10] [--hidden 2048]
      [--run] [--limit 600] [--export FOLDER] [--quantize-only] [--latency]

--export reads a real export instead of building one: what
`export_zoo.py --llm FOLDER` writes (LLaMA of TinyLlama's widths, 12
layers, 2.2 GiB, by torch's dynamo exporter with dynamic batch and
sequence; graft's fusions then come from --pipeline onnx-transformers).

The defaults make 2.16 GiB of weights (TinyLlama's widths, 10 layers). The
test suite runs measure() on a small model (test_onnx_transformers.py).
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import transformer_models  # noqa: E402
from bench_onnx import timed  # noqa: E402
from conftest import graft_binary, repo_path  # noqa: E402

QUANTIZE = repo_path("rules", "onnx", "quantize_qdq.graft")
NBITS = repo_path("rules", "onnx", "quantize_nbits.graft")

PEERS = {
    "onnxruntime optimize_model": r"""
import sys
from onnxruntime.transformers import optimizer
src, out, heads, hidden = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
m = optimizer.optimize_model(src, model_type="gpt2", num_heads=heads, hidden_size=hidden,
                             opt_level=0)
m.save_model_to_file(out, use_external_data_format=True)
""",
    # 8 bits per output channel it has only as QDQ, which it writes for
    # 4 bits alone (it says so and quantizes nothing): blocks of 128.
    "onnxruntime MatMulNBitsQuantizer (8 bits, blocks of 128)": r"""
import sys
from onnxruntime.quantization import matmul_nbits_quantizer as q
src, out = sys.argv[1], sys.argv[2]
quant = q.MatMulNBitsQuantizer(src, bits=8, block_size=128, is_symmetric=True)
quant.process()
quant.model.save_model_to_file(out, use_external_data_format=True)
""",
    "onnxruntime MatMulNBitsQuantizer (4 bits, blocks of 32)": r"""
import sys
from onnxruntime.quantization import matmul_nbits_quantizer as q
src, out = sys.argv[1], sys.argv[2]
quant = q.MatMulNBitsQuantizer(src, bits=4, block_size=32, is_symmetric=False)
quant.process()
quant.model.save_model_to_file(out, use_external_data_format=True)
""",
    "onnxruntime MatMulNBitsQuantizer (4 bits, blocks of 32, embeddings too)": r"""
import sys
from onnxruntime.quantization import matmul_nbits_quantizer as q
src, out = sys.argv[1], sys.argv[2]
config = q.DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=False, bits=4,
                                        op_types_to_quantize=("MatMul", "Gather"),
                                        quant_axes=(("MatMul", 0), ("Gather", 1)))
quant = q.MatMulNBitsQuantizer(src, algo_config=config)
quant.process()
quant.model.save_model_to_file(out, use_external_data_format=True)
""",
    "onnxruntime MatMulNBitsQuantizer (4 bits, blocks of 32, QDQ)": r"""
import sys
from onnxruntime.quantization import matmul_nbits_quantizer as q
from onnxruntime.quantization.quant_utils import QuantFormat
src, out = sys.argv[1], sys.argv[2]
config = q.DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=False,
                                        quant_format=QuantFormat.QDQ)
quant = q.MatMulNBitsQuantizer(src, algo_config=config)
quant.process()
quant.model.save_model_to_file(out, use_external_data_format=True)
""",
    "onnxoptimizer (default passes)": r"""
import sys, onnx, onnxoptimizer
src, out = sys.argv[1], sys.argv[2]
model = onnxoptimizer.optimize(onnx.load(src))
onnx.save_model(model, out, save_as_external_data=True, location="peer.data")
""",
    "onnxsim": r"""
import sys, onnx, onnxsim
src, out = sys.argv[1], sys.argv[2]
model, ok = onnxsim.simplify(onnx.load(src))
assert ok
onnx.save_model(model, out, save_as_external_data=True, location="peer.data")
""",
    "onnxscript optimize + rewrite": r"""
import sys, onnx, onnxscript.optimizer, onnxscript.rewriter
src, out = sys.argv[1], sys.argv[2]
model = onnxscript.rewriter.rewrite(onnxscript.optimizer.optimize(onnx.load(src)))
onnx.save_model(model, out, save_as_external_data=True, location="peer.data")
""",
}


def build(folder, layers, hidden, heads, inter, vocab, seq):
    """The model in `folder` (model.onnx, weights in model.onnx.data,
    written tensor by tensor); returns its path."""
    path = os.path.join(folder, "model.onnx")
    with open(path + ".data", "wb") as data:
        model = transformer_models.llama(
            layers=layers, hidden=hidden, n_heads=heads, inter=inter, batch=1, seq=seq,
            vocab=vocab, rotary=True, data=data, max_positions=max(seq, 256), opset=20)
    with open(path, "wb") as out:
        out.write(model.SerializeToString())
    onnx.checker.check_model(path)
    return path


def folder_bytes(path):
    folder = os.path.dirname(path)
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def kinds(path):
    model = onnx.load(path, load_external_data=False)
    return collections.Counter(
        ("com.microsoft." if n.domain == "com.microsoft" else "") + n.op_type
        for n in model.graph.node), len(model.graph.node)


FUSED = ("RotaryEmbedding", "RMSNormalization", "SkipSimplifiedLayerNormalization",
         "SimplifiedLayerNormalization", "Attention", "MultiHeadAttention",
         "GroupQueryAttention", "FastGelu", "Gelu")


def fusions(counts):
    found = {k.split(".")[-1]: v for k, v in counts.items() if k.split(".")[-1] in FUSED}
    return ", ".join("%s %d" % kv for kv in sorted(found.items())) or "none"


def run_model(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def export_feeds(vocab, seq):
    """Inputs of export_zoo.py --llm's model: one row of `seq` tokens."""
    ids = np.random.default_rng(0).integers(0, vocab, (1, seq)).astype(np.int64)
    return {"input_ids": ids, "attention_mask": np.ones((1, seq), np.int64)}


def latency(export, vocab=32000, rounds=5, print_=print):
    """Milliseconds per forward in onnxruntime (2 threads, the best of
    `rounds`) of an export (export_zoo.py --llm) and of graft's 4-bit
    blockwise results (accuracy_level 0 and 4, and after the transformer
    fusions), over 64 tokens and over one (a decode step's width, without a
    cache)."""
    import time
    import onnxruntime as ort
    graft = graft_binary()
    with tempfile.TemporaryDirectory() as tmp:
        models = [("float32", os.path.join(export, "model.onnx"))]
        for level in (0, 4):
            out = os.path.join(tmp, "level%d" % level, "model.onnx")
            os.makedirs(os.path.dirname(out))
            subprocess.run([graft, "apply", "-q", "-r", NBITS, "--param",
                            "accuracy_level=%d" % level, models[0][1], "-o", out], check=True)
            models.append(("graft 4 bits, blocks of 32, accuracy_level %d" % level, out))
        out = os.path.join(tmp, "qdq", "model.onnx")
        os.makedirs(os.path.dirname(out))
        subprocess.run([graft, "apply", "-q", "--opset", "21", "-r", NBITS, "--param",
                        "format=qdq", models[0][1], "-o", out], check=True)
        models.append(("graft 4 bits, blocks of 32, format=qdq (onnxruntime fuses it, "
                       "accuracy_level 4)", out))
        out = os.path.join(tmp, "pipeline", "model.onnx")
        os.makedirs(os.path.dirname(out))
        subprocess.run([graft, "apply", "-q", "--pipeline", "onnx-llm-int4", models[0][1], "-o",
                        out], check=True)
        models.append(("graft --pipeline onnx-llm-int4 (fusions, then accuracy_level 4)", out))
        print_("| model | ms, 64 tokens | ms, 1 token |")
        print_("|---|---:|---:|")
        for name, path in models:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 2
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            ms = []
            for seq in (64, 1):
                feeds = export_feeds(vocab, seq)
                session.run(None, feeds)
                times = []
                for _ in range(rounds):
                    start = time.perf_counter()
                    session.run(None, feeds)
                    times.append(time.perf_counter() - start)
                ms.append(1e3 * min(times))
            print_("| %s | %.0f | %.0f |" % (name, ms[0], ms[1]))


def measure(layers=10, hidden=2048, heads=16, inter=5632, vocab=32000, seq=64, run=False,
            peers=True, limit=600, print_=print, export=None, quantize_only=False):
    """Builds the model (or reads `export`, a folder export_zoo.py --llm
    wrote), runs every step; returns rows of dicts."""
    graft = graft_binary()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        src_dir = os.path.join(tmp, "src")
        start = time.perf_counter()
        if export is not None:
            shutil.copytree(export, src_dir)
            src = os.path.join(src_dir, "model.onnx")
            heads = 32  # TinyLlama's
        else:
            os.makedirs(src_dir)
            src = build(src_dir, layers, hidden, heads, inter, vocab, seq)
        size = folder_bytes(src)
        print_("model: %.2f GiB (%s), ready in %.0f s" % (
            size / 2**30, "a dynamo export" if export else "%d layers, hidden %d" % (
                layers, hidden), time.perf_counter() - start))
        counts, nodes = kinds(src)
        feeds = want = None
        if run:
            if export is not None:
                feeds = export_feeds(vocab, seq)
            else:
                model = onnx.load(src, load_external_data=False)
                feeds = transformer_models.feeds(model)
                feeds["input_ids"] = feeds["input_ids"] % vocab
            want = run_model(src, feeds)

        def step(name, cmd, out, kind):
            row = {"step": name, "kind": kind}
            try:
                row["s"], row["mib"] = timed(cmd, timeout=limit)
            except RuntimeError as e:  # its last words, /usr/bin/time's left out
                said = [line for line in str(e).strip().splitlines()
                        if line.strip() and not line.startswith(("MAXRSS", "Command "))]
                row["error"] = (said or ["failed"])[-1][:200]
                rows.append(row)
                print_(row)
                return row
            if out is not None:
                row["out_gib"] = folder_bytes(out) / 2**30
                counts, row["nodes"] = kinds(out)
                row["fusions"] = fusions(counts)
                row["dequantize"] = (counts.get("DequantizeLinear", 0) +
                                     counts.get("com.microsoft.MatMulNBits", 0) +
                                     counts.get("com.microsoft.GatherBlockQuantized", 0))
                got = None
                if run:
                    try:
                        got = run_model(out, feeds)
                    except Exception as e:  # the peer wrote a model onnxruntime refuses
                        row["run_error"] = str(e).strip().splitlines()[-1][-200:]
                if got is not None:
                    if kind == "fuse":
                        row["diff"] = float(np.abs(got - want).max() / np.abs(want).max())
                    else:
                        noise = np.sum((got - want) ** 2)
                        row["sqnr_db"] = float(10 * np.log10(np.sum(want ** 2) / noise))
                shutil.rmtree(os.path.dirname(out))
            rows.append(row)
            print_(row)
            return row

        copy = os.path.join(tmp, "copy")
        step("cp -r of the model's folder", ["cp", "-r", src_dir, copy], None, "floor")
        shutil.rmtree(copy)

        def out_path(name):
            folder = os.path.join(tmp, name)
            os.makedirs(folder)
            return os.path.join(folder, "model.onnx")

        if not quantize_only:
            out = out_path("graft_fused")
            step("graft apply --pipeline onnx-transformers",
                 [graft, "apply", "-q", "--pipeline", "onnx-transformers", src, "-o", out], out,
                 "fuse")
        out = out_path("graft_quantized")
        step("graft apply rules/onnx/quantize_qdq.graft (weights only)",
             [graft, "apply", "-q", "-r", QUANTIZE, src, "-o", out], out, "quantize")
        for bits, block, symmetric, ops in ((8, 128, "true", "MatMul|Gemm"),
                                            (4, 32, "false", "MatMul|Gemm"),
                                            (4, 32, "false", "MatMul|Gemm|Gather")):
            out = out_path("graft_nbits%d_%d" % (bits, len(rows)))
            step("graft apply rules/onnx/quantize_nbits.graft (%d bits, blocks of %d%s)" % (
                bits, block, ", embeddings too" if "Gather" in ops else ""),
                # a rotary embedding's cos and sin caches (the model built here
                # gathers them) are tables too: left float
                [graft, "apply", "-q", "-r", NBITS, "--param", "bits=%d" % bits, "--param",
                 "block_size=%d" % block, "--param", "symmetric=" + symmetric, "--param",
                 "ops=" + ops, "--param", "exclude=.*rotary.*", src, "-o", out], out,
                "quantize")
        # the same 4-bit blocks as standard DequantizeLinear (opset 21)
        out = out_path("graft_nbits_qdq")
        step("graft apply --opset 21 rules/onnx/quantize_nbits.graft (4 bits, blocks of 32, QDQ)",
             [graft, "apply", "-q", "--opset", "21", "-r", NBITS, "--param", "format=qdq", src,
              "-o", out], out, "quantize")
        if peers:
            for name, code in PEERS.items():
                if quantize_only and "Quantizer" not in name:
                    continue
                out = out_path("peer%d" % len(rows))
                extra = [str(heads), str(hidden)] if "optimize_model" in name else []
                kind = "quantize" if "Quantizer" in name else "fuse"
                step(name, [sys.executable, "-c", code, src, out] + extra, out, kind)
    return {"size": size, "nodes": nodes, "rows": rows}


def table(result):
    lines = ["| step | time (s) | peak RSS (MiB) | output (GiB) | nodes | fusions; weights "
             "quantized (DequantizeLinear or MatMulNBits) | output vs original |",
             "|---|---:|---:|---:|---:|---|---|"]
    for r in result["rows"]:
        if "error" in r:
            lines.append("| %s | failed | | | | | %s |" % (r["step"], r["error"]))
            continue
        quality = ("diff %.1e" % r["diff"] if "diff" in r else
                   "SQNR %.1f dB" % r["sqnr_db"] if "sqnr_db" in r else
                   "onnxruntime refuses it: " + r["run_error"] if "run_error" in r else "")
        lines.append("| %s | %.1f | %.0f | %s | %s | %s | %s |" % (
            r["step"], r["s"], r["mib"], "%.2f" % r["out_gib"] if "out_gib" in r else "",
            r.get("nodes", ""), ("%s; %d" % (r["fusions"], r["dequantize"]))
            if "fusions" in r else "", quality))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--inter", type=int, default=5632)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--limit", type=int, default=600)
    parser.add_argument("--export", metavar="FOLDER",
                        help="a real export (export_zoo.py --llm FOLDER) instead of a built model")
    parser.add_argument("--quantize-only", action="store_true",
                        help="only the weight quantizers (and cp)")
    parser.add_argument("--latency", action="store_true",
                        help="with --export: onnxruntime's time per forward of the export "
                        "and of graft's 4-bit results")
    args = parser.parse_args()
    if args.latency:
        if not args.export:
            parser.error("--latency needs --export FOLDER")
        latency(args.export, args.vocab)
        return
    result = measure(args.layers, args.hidden, args.heads, args.inter, args.vocab,
                     run=args.run, limit=args.limit, export=args.export,
                     quantize_only=args.quantize_only)
    print("model: %.2f GiB, %d nodes" % (result["size"] / 2**30, result["nodes"]))
    print(table(result))


if __name__ == "__main__":
    main()
