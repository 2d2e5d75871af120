"""TensorFlow's own peak memory of a training step, less what was
allocated before it, with TensorFlow's default threading (as written: see
below), beside graft mem's estimate of the graph TensorFlow runs.

Each measurement runs in a fresh Python process: TensorFlow sizes its
global inter-op thread pool from the first session a process opens, so a
test that opened a one-thread session earlier would otherwise change the
threading (and the schedule, and the peak) of every later one.

The kernels are chosen explicitly in that process, never by the CPU's
default: TensorFlow turns its oneDNN path on by default only on some CPUs
(many Intel servers, not AMD EPYC), and its kernels and allocator differ
with it. Either way the peak is that of a traced step's allocation
records: the bytes its kernels asked for (Eigen's convolution gradients'
im2col buffers included), live at once. Without oneDNN the CPU allocator
is malloc, which keeps no statistics; with it, oneDNN's allocator
(`tf.config.experimental.get_memory_info`) counts only the allocations it
serves from its large-size pool, 256 KiB and more: its peak of the CIFAR
ResNet's pipeline step was 15.0 MiB where the records say 18.2, and the
records without the allocations under 256 KiB say 15.0.

    python tf_memory.py [--as-written] [--runs N] GRAPH.pb...   # JSON list of bytes
    python tf_memory.py --records MODEL   # JSON [peak, node start order]
    python tf_memory.py --report [--runs N] GRAPH.pb...   # the table below
    python tf_memory.py --grappler IN.pb OUT.pb...   # Grappler's graphs

`--report` (and `stats()`) measures each graph N times (5 by default) in
each of four settings, TensorFlow's graph optimizers (Grappler) on and
off, oneDNN on and off, each setting in its own process, and prints the
smallest, median and largest peak beside graft mem's estimate of the graph
TensorFlow runs there (`estimates()`): the graph as given with Grappler
off, the graph Grappler makes of it (graft.tf.grappler, with oneDNN on or
off as the session) with Grappler on; oneDNN's kernels' scratch or Eigen's
(`graft mem --cpu-kernels`, this machine's threads).

`--as-written` turns TensorFlow's graph optimizers (Grappler) off, so that
TensorFlow runs the graph it is given, one op at a time (one inter-op
thread), and gives the smallest peak of its runs (what the schedule needs;
timing and the allocator's growth only add to it): a small graph's largest
peak moved by 20-30% from process to process on 2 cores.
`--records MODEL` runs one step of training_graphs.MODELS[MODEL] with one
thread and full tracing, and gives the peak of its RunMetadata allocation
records and the order its nodes started in.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# What every measuring child process runs with, whatever the CPU.
MEASURING_ENV = {"TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}


def _child(args, onednn=True, timeout=600):
    """Runs this script with `args` in a fresh process, oneDNN on or off:
    the JSON its last line prints (None when it prints nothing)."""
    proc = subprocess.run([sys.executable, os.path.join(HERE, "tf_memory.py"), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=_child_env(onednn))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


def _child_env(onednn):
    env = dict(os.environ, **MEASURING_ENV)
    env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    env.pop("TF_CPU_ALLOCATOR_USE_BFC", None)
    return env


def write_graphs(graph_defs, tmp_path):
    paths = []
    for i, graph_def in enumerate(graph_defs):
        path = os.path.join(str(tmp_path), "tf_memory_%d.pb" % i)
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        paths.append(path)
    return paths


# The four settings stats() measures: (Grappler on, oneDNN on).
SETTINGS = ((True, True), (False, True), (True, False), (False, False))


def stats(graph_defs, tmp_path, runs=5, settings=SETTINGS):
    """{(grappler, onednn): [every run's peak in bytes, per graph]}, each
    setting measured in one fresh process, `runs` training steps of each
    graph after a warm-up (TensorFlow's default threading)."""
    paths = write_graphs(graph_defs, tmp_path)
    out = {}
    for grappler, onednn in settings:
        args = ["--runs", str(runs), "--all"] + ([] if grappler else ["--no-grappler"]) + paths
        out[(grappler, onednn)] = _child(args, onednn, timeout=1200)
    return out


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def peaks(graph_defs, tmp_path, as_written=False, runs=3):
    """The peaks (bytes) of `graph_defs`, measured in one fresh process."""
    paths = write_graphs(graph_defs, tmp_path)
    return _child(["--runs", str(runs)] + (["--as-written"] if as_written else []) + paths)


def allocation_records(model):
    """(peak bytes of the RunMetadata allocation records, node names in the
    order they started) of one single-threaded training step of
    training_graphs.MODELS[model], measured in a fresh process."""
    peak, order = _child(["--records", model])
    return peak, order


def _records(model):
    import numpy as np
    import tensorflow as tf
    import training_graphs
    tf1 = tf.compat.v1
    graph = training_graphs.MODELS[model]()
    rng = np.random.default_rng(3)
    config = tf1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    with graph.as_default():
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        x = graph.get_tensor_by_name("x:0")
        labels = graph.get_tensor_by_name("labels:0")
        feed = {x: rng.standard_normal(x.shape.as_list()).astype(np.float32)}
        if labels.dtype == tf.int32:
            feed[labels] = rng.integers(0, 10, labels.shape.as_list()).astype(np.int32)
        else:
            feed[labels] = np.eye(10, dtype=np.float32)[rng.integers(0, 10, labels.shape[0])]
        sess.run("train", feed)  # warm up
        metadata = _traced_run(sess, ["train", "loss:0"], feed)
    starts = [(node.all_start_micros, node.node_name)
              for dev in metadata.step_stats.dev_stats for node in dev.node_stats]
    return [_records_peak(metadata), [name for _, name in sorted(starts)]]


def _traced_run(sess, fetches, feed):
    import tensorflow as tf
    tf1 = tf.compat.v1
    metadata = tf1.RunMetadata()
    sess.run(fetches, feed, options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE),
             run_metadata=metadata)
    return metadata


def _records_peak(metadata):
    """The peak of a traced step's allocation records: the bytes its
    kernels asked for (outputs and scratch), live at once."""
    events = [(r.alloc_micros, r.alloc_bytes)
              for dev in metadata.step_stats.dev_stats for node in dev.node_stats
              for memory in node.memory for r in memory.allocation_records]
    assert events, "TensorFlow recorded no allocations"
    live = peak = 0
    for _, size in sorted(events):
        live += size
        peak = max(peak, live)
    return peak


def _measure(path, as_written, runs, grappler=True, every_run=False):
    import tensorflow as tf
    from test_checkpoint import feeds
    tf1 = tf.compat.v1
    graph_def = tf1.GraphDef.FromString(open(path, "rb").read())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    config = tf1.ConfigProto()
    if as_written or not grappler:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    if as_written:
        # One op at a time, in the executor's order: the schedule graft mem
        # models, and a peak that does not move with the thread timing.
        config.inter_op_parallelism_threads = 1
    feed = feeds(graph_def)
    measured = []
    # The step's allocation records say what its kernels asked for (the
    # allocators' own statistics miss malloc's and oneDNN's small ones).
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run("init")
        sess.run("train", feed)  # warm up
        for _ in range(runs):
            measured.append(_records_peak(_traced_run(sess, "train", feed)))
    if every_run:
        return measured
    # As written, what the schedule needs: the smallest (timing and the
    # allocator's growth only add to it); by default, the largest.
    return min(measured) if as_written else max(measured)


def grappler_graphs(paths, out_paths, onednn):
    """Writes to `out_paths` the graphs Grappler makes of the graphs at
    `paths` for a session fetching `train` (graft.tf.grappler), in one
    child with oneDNN on or off (Grappler's remapper fuses otherwise)."""
    _child(["--grappler", *[p for pair in zip(paths, out_paths) for p in pair]], onednn)


def _write_grappler_graphs(pairs):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "python"))
    import graft
    import graft.tf
    for path, out_path in zip(pairs[::2], pairs[1::2]):
        optimized = graft.tf.grappler(graft.load(path), ["train", "init"])
        with open(out_path, "wb") as f:
            f.write(optimized.data)


def estimates(paths, tmp_dir, settings=SETTINGS):
    """{setting: [graft mem's peak per graph]} of the graph TensorFlow runs
    in each setting: the graph as given where Grappler is off, Grappler's
    where it is on; with the scratch of oneDNN's kernels or, where oneDNN
    is off, Eigen's (this machine's threads)."""
    out = {}
    for grappler, onednn in settings:
        kernels = "onednn" if onednn else "eigen"
        graphs = paths
        if grappler:
            graphs = [os.path.join(str(tmp_dir), "grappler_%d_%d.pb" % (onednn, i))
                      for i in range(len(paths))]
            grappler_graphs(paths, graphs, onednn)
        out[(grappler, onednn)] = [_graft_peak(g, kernels) for g in graphs]
    return out


def _graft_peak(path, kernels="onednn"):
    graft = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bazel-bin", "cli", "graft")
    proc = subprocess.run([graft, "mem", "--json", path, "--outputs", "train",
                           "--cpu-kernels", kernels],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)["devices"][0]["peak_bytes"]


def report(paths, runs):
    """Prints each graph's peaks in the four settings beside graft mem's."""
    import tensorflow as tf
    tf1 = tf.compat.v1
    graph_defs = [tf1.GraphDef.FromString(open(p, "rb").read()) for p in paths]
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        measured = stats(graph_defs, tmp, runs)
        ours = estimates(paths, tmp)
    mib = lambda b: b / 2**20  # noqa: E731
    print("| graph | Grappler | oneDNN | min | median | max (MiB) | graft mem | graft / median |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for i, path in enumerate(paths):
        for setting, per_graph in measured.items():
            grappler, onednn = setting
            runs_i, estimate = per_graph[i], ours[setting][i]
            med = median(runs_i)
            print("| %s | %s | %s | %.1f | %.1f | %.1f | %s | %s |" % (
                os.path.basename(path), "on" if grappler else "off", "on" if onednn else "off",
                mib(min(runs_i)), mib(med), mib(max(runs_i)),
                "%.1f" % mib(estimate) if estimate else "-",
                "%.2f" % (estimate / med) if estimate else "-"))


def main(argv):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, HERE)
    if argv[:1] == ["--grappler"]:
        _write_grappler_graphs(argv[1:])
        return
    if argv[:1] == ["--records"]:
        print(json.dumps(_records(argv[1])))
        return
    flags = {"--as-written", "--all", "--no-grappler", "--report"}
    given = {a for a in argv if a in flags}
    argv = [a for a in argv if a not in flags]
    runs = 5 if "--report" in given or "--all" in given else 3
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = int(argv[i + 1])
        del argv[i:i + 2]
    if "--report" in given:
        report(argv, runs)
        return
    print(json.dumps([_measure(path, "--as-written" in given, runs,
                               grappler="--no-grappler" not in given,
                               every_run="--all" in given) for path in argv]))


if __name__ == "__main__":
    main(sys.argv[1:])
