"""Benchmark (prints numbers; not a test): how much memory and time folding
a large GraphDef's batch norms takes next to copying the file.

  bazel build -c opt //cli:graft
  .venv/bin/python tests/interop/bench_graphdef_fold.py [--graft PATH] [--runs N]

tf-keras InceptionV3 (299x299, random weights and batch-norm statistics,
frozen: 1,183 nodes, 95.6 MB) folded by `graft apply -r
rules/tf/fold_batch_norms.graft`, each run a fresh process writing a new file,
taking turns with `cp` of the same file; peak resident memory (the child's
ru_maxrss: its heap and the file pages it has mapped) and wall time, best
and median of N runs, with the ratios to the file's size and to `cp`.
By default the optimized binary (`bazel build -c opt`), else bazel-bin's.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def make_model(path):
    import numpy as np
    import tf_keras
    from models import freeze, randomize_batch_norms
    model = tf_keras.applications.InceptionV3(weights=None, input_shape=(299, 299, 3))
    randomize_batch_norms(np.random.default_rng(0), model, tf_keras.layers.BatchNormalization)
    graph_def = freeze(model, [1, 299, 299, 3])
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    return len(graph_def.node)


def run(argv):
    """(seconds, peak RSS bytes) of one child process. GNU time reads the
    peak (a Python child's own would count the interpreter it forked from);
    both tools run under it."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, (argv, proc.stderr)
    return seconds, int(proc.stderr.strip().splitlines()[-1]) * 1024


def main():
    parser = argparse.ArgumentParser()
    opt = os.path.join(ROOT, "bazel-out", "k8-opt", "bin", "cli", "graft")
    parser.add_argument("--graft", default=opt if os.path.exists(opt) else
                        os.path.join(ROOT, "bazel-bin", "cli", "graft"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--make", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        print(make_model(args.make))
        return
    tmp = tempfile.mkdtemp()
    src = os.path.join(tmp, "inception_v3.pb")
    # made in a child process: this one stays small (TensorFlow is not loaded here)
    nodes = int(subprocess.run([sys.executable, __file__, "--make", src], check=True,
                               capture_output=True, text=True).stdout.split()[-1])
    size = os.path.getsize(src)
    rules = os.path.join(ROOT, "rules", "tf", "fold_batch_norms.graft")
    results = {"graft": [], "cp": []}
    for i in range(args.runs + 1):  # the first round warms the page cache
        out = os.path.join(tmp, "out%d.pb" % i)
        copy = os.path.join(tmp, "copy%d.pb" % i)
        g = run([args.graft, "apply", "-q", "-r", rules, src, "-o", out])
        c = run(["cp", src, copy])
        os.remove(out)
        os.remove(copy)
        if i:
            results["graft"].append(g)
            results["cp"].append(c)
    print("InceptionV3: %d nodes, %.1f MB (%s)" % (nodes, size / 1e6, os.path.relpath(args.graft, ROOT)))
    print("| run | time, best / median | peak RSS, median | RSS / file size |")
    print("|---|---:|---:|---:|")
    for name, label in (("graft", "graft apply -r rules/tf/fold_batch_norms.graft"), ("cp", "cp")):
        times = [t for t, _ in results[name]]
        rss = statistics.median(r for _, r in results[name])
        print("| %s | %.3f / %.3f s | %.1f MiB | %.2f |" % (
            label, min(times), statistics.median(times), rss / 2**20, rss / size))
    g = [t for t, _ in results["graft"]]
    c = [t for t, _ in results["cp"]]
    print("graft / cp time: %.2fx best, %.2fx median" % (
        min(g) / min(c), statistics.median(g) / statistics.median(c)))


if __name__ == "__main__":
    main()
