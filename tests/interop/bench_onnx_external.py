"""A model past ONNX's 2 GiB limit, its weights in an external data file:
graft reads it lazily (the data file mapped, pages read only when a tensor's
bytes are written) and writes it by range copy. Prints, for a model of
--gib GiB (default 2.5): the time and peak RSS of `graft convert` to
another folder (data file copied whole, checked byte-identical), of `graft
apply` folding one Gemm's batch norm (the changed weight computed while it
is written to the output's own data file), of `cp` of the data file (the
floor), and of onnx's Python load + save of the same model (the baseline
people use), each in its own process.

  .venv/bin/python tests/interop/bench_onnx_external.py [--gib 2.5] [--run]

--run also runs the original and the folded model in onnxruntime and prints
the output difference (loads the whole model: needs RAM for it).
The test suite runs this with a small model (test_onnx.py).
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bench_onnx import timed  # noqa: E402
from conftest import graft_binary, repo_path  # noqa: E402

WIDTH = 4096
FOLD = repo_path("rules", "onnx", "fold_batch_norms.graft")
PEER = r"""
import sys, onnx
src, out = sys.argv[1:3]
model = onnx.load(src)
onnx.save_model(model, out, save_as_external_data=True, location="peer.data")
"""


def build(folder, gib, width=WIDTH):
    """A chain of Gemm(transB) -> Relu layers of width x width float
    weights, the first followed by a BatchNormalization, adding up to `gib`
    GiB of external data in weights.bin; written tensor by tensor (never
    whole in memory). Returns the model's path."""
    rng = np.random.default_rng(0)
    layers = max(1, int(gib * (1 << 30) / (width * width * 4)))
    nodes, inits, x = [], [], "x"
    data_path = os.path.join(folder, "weights.bin")
    with open(data_path, "wb") as data:
        def external(name, array):
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=array.shape,
                            data_location=TensorProto.EXTERNAL)
            for k, v in (("location", "weights.bin"), ("offset", str(data.tell())),
                         ("length", str(array.nbytes))):
                t.external_data.add(key=k, value=v)
            data.write(array.tobytes())
            inits.append(t)
        for i in range(layers):
            w = (rng.standard_normal((width, width), dtype=np.float32)
                 * np.float32(1.5 / np.sqrt(width)))
            external("w%d" % i, w)
            nodes.append(helper.make_node("Gemm", [x, "w%d" % i], ["g%d" % i],
                                          name="gemm%d" % i, transB=1))
            x = "g%d" % i
            if i == 0:
                for k, (lo, hi) in zip("sbmv", [(.5, 1.5), (-.5, .5), (-.5, .5), (.5, 2)]):
                    inits.append(numpy_helper.from_array(
                        rng.uniform(lo, hi, width).astype(np.float32), "bn_" + k))
                nodes.append(helper.make_node(
                    "BatchNormalization", [x, "bn_s", "bn_b", "bn_m", "bn_v"], ["n0"],
                    name="bn"))
                x = "n0"
            nodes.append(helper.make_node("Relu", [x], ["r%d" % i], name="relu%d" % i))
            x = "r%d" % i
    graph = helper.make_graph(
        nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(folder, "big.onnx")
    with open(path, "wb") as out:
        out.write(model.SerializeToString())
    return path


def run_model(path, width):
    import onnxruntime as ort
    x = np.random.default_rng(1).standard_normal((1, width), dtype=np.float32)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def measure(gib, width=WIDTH, run=False, peers=True, print_=print):
    """Builds, converts, folds; returns a dict of the numbers (and checks
    the copies byte for byte)."""
    graft = graft_binary()
    with tempfile.TemporaryDirectory() as tmp:
        src_dir, out_dir = os.path.join(tmp, "src"), os.path.join(tmp, "out")
        os.makedirs(src_dir)
        os.makedirs(out_dir)
        start = time.perf_counter()
        src = build(src_dir, gib, width)
        data = os.path.join(src_dir, "weights.bin")
        size = os.path.getsize(data)
        r = {"data_gib": size / (1 << 30), "build_s": time.perf_counter() - start}
        r["cp_s"], r["cp_mib"] = timed(["cp", data, os.path.join(tmp, "plain.bin")])
        os.remove(os.path.join(tmp, "plain.bin"))
        r["convert_s"], r["convert_mib"] = timed(
            [graft, "convert", src, os.path.join(out_dir, "copy.onnx")])
        r["copy_identical"] = (
            filecmp.cmp(data, os.path.join(out_dir, "weights.bin"), shallow=False)
            and filecmp.cmp(src, os.path.join(out_dir, "copy.onnx"), shallow=False))
        os.remove(os.path.join(out_dir, "weights.bin"))
        folded = os.path.join(out_dir, "folded.onnx")
        r["fold_s"], r["fold_mib"] = timed([graft, "apply", "-q", "-r", FOLD, src, "-o", folded])
        r["fold_data_mib"] = os.path.getsize(folded + ".data") / (1 << 20)
        copied = os.path.join(out_dir, "weights.bin")
        r["original_untouched"] = (not os.path.exists(copied)
                                   or filecmp.cmp(data, copied, shallow=False))
        kinds = [n.op_type for n in onnx.load(folded, load_external_data=False).graph.node]
        r["batch_norms_left"] = kinds.count("BatchNormalization")
        if run:
            want, got = run_model(src, width), run_model(folded, width)
            r["max_rel_diff"] = float(np.abs(want - got).max() / np.abs(want).max())
        if peers:
            try:
                r["onnx_s"], r["onnx_mib"] = timed(
                    [sys.executable, "-c", PEER, src, os.path.join(out_dir, "peer.onnx")])
            except RuntimeError as e:
                r["onnx_error"] = str(e)[-300:]
    return r


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.5)
    parser.add_argument("--run", action="store_true")
    args = parser.parse_args()
    r = measure(args.gib, run=args.run)
    print("external data: %.2f GiB in one file (built in %.0f s)" % (r["data_gib"], r["build_s"]))
    print("| step | time (s) | peak RSS (MiB) | note |")
    print("|---|---:|---:|---|")
    print("| `cp` of the data file | %.2f | %.0f | the floor |" % (r["cp_s"], r["cp_mib"]))
    print("| `graft convert` to another folder | %.2f | %.0f | model and data byte-identical: %s |"
          % (r["convert_s"], r["convert_mib"], r["copy_identical"]))
    print("| `graft apply` fold_batch_norms | %.2f | %.0f | %d batch norms left; new data file "
          "%.0f MiB; original's data copied unchanged: %s%s |"
          % (r["fold_s"], r["fold_mib"], r["batch_norms_left"], r["fold_data_mib"],
             r["original_untouched"],
             "; max |diff| / max |out| %.1e" % r["max_rel_diff"] if "max_rel_diff" in r else ""))
    if "onnx_s" in r:
        print("| onnx `load` + `save_model` (Python) | %.2f | %.0f | |" % (r["onnx_s"], r["onnx_mib"]))
    else:
        print("| onnx `load` + `save_model` (Python) | failed | | %s |" % r.get("onnx_error"))


if __name__ == "__main__":
    main()
