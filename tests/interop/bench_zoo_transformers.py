"""The pipeline onnx-transformers beside onnxruntime's transformers optimizer
(`optimize_model` with the model type of the architecture, the zoo's 4
heads of width 64, opt_level 0: its fusions alone, as above opt_level 0 it
imports torch) and onnxscript's `optimize_for_ort` on every
transformer export of the zoo (tests/data/zoo/), and on transformers' own
exporter's exports its own fusions for onnxruntime's CPU provider
(`fuse_for_onnxruntime`, as `OnnxConfig(ort_fusions="cpu")` runs them): fusions by kind, nodes
left, whether onnx.checker (full check) accepts the result, the largest
output difference in onnxruntime relative to the largest output ("fails"
when onnxruntime refuses the model), time. Each tool runs in its own process
and its time is the whole process (start, import, read, rewrite, write), so
the tools are timed alike. Prints a markdown table and a summary.

  .venv/bin/python tests/interop/bench_zoo_transformers.py [--record] [NAME_SUBSTRING]

--record writes what the peers wrote on each export (fused kinds by domain
and op, nodes, onnx.checker's verdict, same outputs in onnxruntime) with
their versions to tests/data/zoo/PEERS.json: the zoo test holds graft to
it without running the peers. With a NAME_SUBSTRING, the other exports'
records stay where the versions are the same.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import zoo  # noqa: E402
from zoo import ZOO, run  # noqa: E402
GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")
SHORT = {"SkipLayerNormalization": "SkipLN", "SkipSimplifiedLayerNormalization": "SkipRMSNorm",
         "SimplifiedLayerNormalization": "RMSNorm", "MultiHeadAttention": "MHA",
         "GroupQueryAttention": "GQA", "EmbedLayerNormalization": "EmbedLN",
         "RotaryEmbedding": "Rotary"}
ORT_TYPE = {"bert": "bert", "roberta": "bert", "distilbert": "bert", "vit": "vit",
            "clip_text": "clip", "gpt2": "gpt2", "llama": "gpt2", "qwen2": "gpt2",
            "electra": "bert", "albert": "bert", "mpnet": "bert", "xlm_roberta": "bert",
            "gpt_neo": "gpt_neox", "mistral": "gpt2", "phi3": "gpt2", "gemma": "gpt2",
            "deit": "vit", "qwen3": "qwen3", "smollm3": "gpt2", "granite": "gpt2",
            "olmo2": "gpt2", "gemma3": "gpt2", "phi": "gpt2", "stablelm": "gpt2",
            "gpt_neox": "gpt_neox", "falcon": "gpt2", "opt": "gpt2", "modernbert": "bert",
            "t5_encoder": "t5", "bart": "bart", "dinov2": "vit", "siglip_vision": "vit"}
# Each peer as a child process: python -c CODE SRC OUT MODEL_TYPE
PEERS = {
    "onnxruntime": (
        "import sys\n"
        "from onnxruntime.transformers import optimizer\n"
        "m = optimizer.optimize_model(sys.argv[1], model_type=sys.argv[3], num_heads=4,\n"
        "                             hidden_size=64, opt_level=0)\n"
        "m.save_model_to_file(sys.argv[2])\n"),
    "onnxscript": (
        "import sys, onnx_ir as ir\n"
        "from onnxscript.rewriter.ort_fusions import optimize_for_ort\n"
        "m = ir.load(sys.argv[1])\n"
        "optimize_for_ort(m)\n"
        "ir.save(m, sys.argv[2])\n"),
    # transformers' own fusions for onnxruntime's CPU provider (its
    # exporter's `OnnxConfig(ort_fusions="cpu")`), on its own exports
    "transformers": (
        "import sys, onnx_ir as ir\n"
        "from transformers.exporters.onnxruntime_fusions import fuse_for_onnxruntime\n"
        "m = ir.load(sys.argv[1])\n"
        "fuse_for_onnxruntime(m, 'cpu')\n"
        "ir.save(m, sys.argv[2])\n"),
}
# The peers run on an export: transformers' fusions on its own exporter's.
HF_EXPORTERS = ("hf", "hfprefill", "hfdecode")


def peers_of(spec):
    return ["onnxruntime", "onnxscript"] + (
        ["transformers"] if spec["exporter"] in HF_EXPORTERS else [])


PEERS_JSON = os.path.join(ZOO, "PEERS.json")


def kinds(model):
    """Fused ops by kind: onnxruntime's contrib ops, and the norms the peers
    write into the standard domain."""
    return dict(sorted(collections.Counter(
        f"{n.domain or 'ai.onnx'}:{n.op_type}" for n in model.graph.node
        if n.domain == "com.microsoft" or n.op_type in (
            "SimplifiedLayerNormalization", "RMSNormalization", "LayerNormalization",
            "Gelu")).items()))


def fused(model):
    counts = collections.Counter(n.op_type for n in model.graph.node
                                 if n.domain == "com.microsoft" or n.op_type in (
                                     "SimplifiedLayerNormalization", "RMSNormalization"))
    return " ".join(f"{SHORT.get(k, k)} {v}" for k, v in sorted(counts.items())) or "-"


def measure(tool, name, src, out, spec):
    start = time.perf_counter()
    if tool == "graft":
        proc = subprocess.run([GRAFT, "apply", "--pipeline", "onnx-transformers", src, "-o", out,
                               "-q", *zoo.shared_dims(spec)], capture_output=True, text=True)
    else:
        proc = subprocess.run([sys.executable, "-c", PEERS[tool], src, out, ORT_TYPE[spec["model"]]],
                              capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or not os.path.exists(out):
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": last[:80], "s": seconds}
    model = onnx.load(out)
    try:
        onnx.checker.check_model(model, full_check=True)
        valid = "yes"
    except Exception:  # noqa: BLE001 (refused is the measurement)
        valid = "no"
    inputs = zoo.feeds(spec)
    try:
        want, got = zoo.reference(name, src, inputs)[0], run(out, inputs)[0]
        diff = f"{np.abs(want - got).max() / max(np.abs(want).max(), 1.0):.1e}"
    except Exception:  # noqa: BLE001
        diff = "fails"
    return {"fused": fused(model), "kinds": kinds(model), "nodes": len(model.graph.node),
            "valid": valid, "diff": diff, "s": seconds}


def versions():
    import onnxruntime
    import onnxscript
    import transformers
    return {"onnxruntime": onnxruntime.__version__, "onnxscript": onnxscript.__version__,
            "onnx": onnx.__version__, "transformers": transformers.__version__}


def main():
    args = sys.argv[1:]
    record = "--record" in args
    args = [a for a in args if a != "--record"]
    only = args[0] if args else ""
    recorded = {}
    manifest = zoo.manifest(ZOO)
    names = [n for n, s in sorted(manifest.items())
             if s["model"] in ORT_TYPE and only in n]
    out = tempfile.mkdtemp()
    print("| export | nodes | tool | fusions | nodes left | onnx.checker | diff | s |")
    print("|---|---:|---|---|---:|---|---:|---:|")
    wins = collections.Counter()
    for name in names:
        src = os.path.join(ZOO, name + ".onnx")
        before = len(onnx.load(src).graph.node)
        results = {}
        for tool in ["graft"] + peers_of(manifest[name]):
            r = measure(tool, name, src, os.path.join(out, f"{name}.{tool}.onnx"), manifest[name])
            results[tool] = r
            if "error" in r:
                print(f"| {name} | {before} | {tool} | fails: {r['error']} | | | | {r['s']:.2f} |")
            else:
                print(f"| {name} | {before} | {tool} | {r['fused']} | {r['nodes']} | {r['valid']} "
                      f"| {r['diff']} | {r['s']:.2f} |", flush=True)
        recorded[name] = {
            tool: ({"error": r["error"]} if "error" in r else {
                "kinds": r["kinds"], "nodes": r["nodes"], "valid": r["valid"] == "yes",
                "same_outputs": r["diff"] != "fails"
                and float(r["diff"]) <= zoo.tolerance(manifest[name])})
            for tool, r in results.items() if tool != "graft"}
        ok = {t: r for t, r in results.items()
              if "error" not in r and r["valid"] == "yes" and r["diff"] != "fails"
              and float(r["diff"]) <= zoo.tolerance(manifest[name])}
        if "graft" in ok:
            peers = [r for t, r in ok.items() if t != "graft"]
            if not peers or ok["graft"]["nodes"] <= min(r["nodes"] for r in peers):
                wins["nodes"] += 1
            if not peers or ok["graft"]["s"] < min(r["s"] for r in peers):
                wins["time"] += 1
        wins["models"] += 1
    print(f"\ngraft leaves no more nodes than the best valid peer on {wins['nodes']} of "
          f"{wins['models']} exports, and is faster than every peer on {wins['time']}.")
    if record:
        if only:  # a subset: the other exports' records stay, if the versions do
            with open(PEERS_JSON) as f:
                kept = json.load(f)
            # (a peer's version recorded since, and none changed)
            if all(kept["versions"].get(k, v) == v for k, v in versions().items()):
                recorded = {**{n: r for n, r in kept["exports"].items() if n in manifest},
                            **recorded}
        with open(PEERS_JSON, "w") as f:
            json.dump({"versions": versions(), "exports": recorded}, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded the peers' results in {os.path.relpath(PEERS_JSON, ROOT)}")


if __name__ == "__main__":
    main()
