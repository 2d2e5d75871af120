"""TensorFlow's own peak memory of a training step: the CPU allocator's
peak (`tf.config.experimental.get_memory_info`) over one `train` run, less
what was allocated before it, the largest of several runs, with
TensorFlow's default threading (as written: see below).

Each measurement runs in a fresh Python process: TensorFlow sizes its
global inter-op thread pool from the first session a process opens, so a
test that opened a one-thread session earlier would otherwise change the
threading (and the schedule, and the peak) of every later one.

The allocator is chosen explicitly in that process, never by the CPU's
default: TensorFlow turns its oneDNN path on by default only on some CPUs
(many Intel servers, not AMD EPYC), and its kernels and allocator differ
with it (without oneDNN the plain CPU allocator keeps no statistics, and
the Eigen convolution gradients allocate large scratch buffers that graft
does not model). The child runs with oneDNN on (`TF_ENABLE_ONEDNN_OPTS=1`,
oneDNN's CPU allocator, whose peak is what is measured) on every machine.

    python tf_memory.py [--as-written] [--runs N] GRAPH.pb...   # JSON list of bytes
    python tf_memory.py --records MODEL   # JSON [peak, node start order]

`--as-written` turns TensorFlow's graph optimizers (Grappler) off, so that
TensorFlow runs the graph it is given, one op at a time (one inter-op
thread), which is what `graft mem` models, and gives the smallest peak of
its runs (what the schedule needs; timing and the allocator's growth only
add to it): a small graph's largest peak moved by 20-30% from process to
process on 2 cores.
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


def _child(args):
    env = dict(os.environ, **MEASURING_ENV)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "tf_memory.py"), *args],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def peaks(graph_defs, tmp_path, as_written=False, runs=3):
    """The peaks (bytes) of `graph_defs`, measured in one fresh process."""
    paths = []
    for i, graph_def in enumerate(graph_defs):
        path = tmp_path / ("tf_memory_%d.pb" % i)
        path.write_bytes(graph_def.SerializeToString())
        paths.append(str(path))
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
        options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
        metadata = tf1.RunMetadata()
        sess.run(["train", "loss:0"], feed, options=options, run_metadata=metadata)
    events, starts = [], []
    for dev in metadata.step_stats.dev_stats:
        for node in dev.node_stats:
            starts.append((node.all_start_micros, node.node_name))
            for memory in node.memory:
                events += [(r.alloc_micros, r.alloc_bytes) for r in memory.allocation_records]
    assert events, "TensorFlow recorded no allocations"
    live = peak = 0
    for _, size in sorted(events):
        live += size
        peak = max(peak, live)
    return [peak, [name for _, name in sorted(starts)]]


def _measure(path, as_written, runs):
    import tensorflow as tf
    from test_checkpoint import feeds
    tf1 = tf.compat.v1
    graph_def = tf1.GraphDef.FromString(open(path, "rb").read())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    config = tf1.ConfigProto()
    if as_written:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        # One op at a time, in the executor's order: the schedule graft mem
        # models, and a peak that does not move with the thread timing.
        config.inter_op_parallelism_threads = 1
    feed = feeds(graph_def)
    measured = []
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run("init")
        sess.run("train", feed)  # warm up
        for _ in range(runs):
            tf.config.experimental.reset_memory_stats("CPU:0")
            before = tf.config.experimental.get_memory_info("CPU:0")["current"]
            sess.run("train", feed)
            measured.append(tf.config.experimental.get_memory_info("CPU:0")["peak"] - before)
    # As written, what the schedule needs: the smallest (timing and the
    # allocator's growth only add to it); by default, the largest.
    return min(measured) if as_written else max(measured)


def main(argv):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, HERE)
    if argv[:1] == ["--records"]:
        print(json.dumps(_records(argv[1])))
        return
    as_written = "--as-written" in argv
    argv = [a for a in argv if a != "--as-written"]
    runs = 3
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = int(argv[i + 1])
        del argv[i:i + 2]
    print(json.dumps([_measure(path, as_written, runs) for path in argv]))


if __name__ == "__main__":
    main(sys.argv[1:])
