"""Runs GraphDefs in TensorFlow in a fresh process with oneDNN chosen
explicitly (`TF_ENABLE_ONEDNN_OPTS=0` or `=1`), whatever the CPU's default
and the test process's own setting: TensorFlow turns oneDNN on by default
only on some CPUs, and its layout pass rewrites graphs (merging Conv2D with
BiasAdd, say) that the default path runs as they are. A process that
aborts (a CHECK in a graph pass) is a failure that names the graph, which
is kept.

    python tf_run.py OUT.npz FETCHES GRAPH.pb...   # FETCHES: comma separated

runs each graph twice, Grappler on, then off (as written: TensorFlow's own
graph passes, oneDNN's layout pass among them, see the graph as graft wrote
it, unfused), each in a fresh session: `init` (when the graph has it), then
FETCHES with every Placeholder fed random values
(tests/interop/test_checkpoint.py `feeds`, seed 0). Writes the results of
graph i as arrays `w<as_written>_g<i>_<j>`.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def run_graphs(graph_defs, fetches, tmp_path, onednn, tag="run"):
    """{as_written: the values of `fetches` in each of `graph_defs`}, run
    in one child process with oneDNN on (`onednn` true) or off, Grappler on
    (as_written False) and off (True)."""
    paths = []
    for i, graph_def in enumerate(graph_defs):
        path = tmp_path / ("%s_%d.pb" % (tag, i))
        path.write_bytes(graph_def.SerializeToString())
        paths.append(str(path))
    out = tmp_path / ("%s_onednn%d.npz" % (tag, int(onednn)))
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0",
               TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "tf_run.py"), str(out),
                           ",".join(fetches), *paths],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, "TensorFlow (oneDNN %s) failed with exit %d on %s:\n%s" % (
        "on" if onednn else "off", proc.returncode, " ".join(paths), proc.stderr[-3000:])
    arrays = np.load(out)
    return {as_written: [[arrays["w%d_g%d_%d" % (as_written, i, j)] for j in range(len(fetches))]
                         for i in range(len(paths))]
            for as_written in (False, True)}


def _run(path, fetches, as_written):
    import tensorflow as tf
    sys.path.insert(0, HERE)
    from test_checkpoint import feeds
    tf1 = tf.compat.v1
    graph_def = tf1.GraphDef.FromString(open(path, "rb").read())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    config = tf1.ConfigProto(allow_soft_placement=True)  # swap-ins name a GPU
    if as_written:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf1.Session(graph=graph, config=config) as sess:
        if any(n.name == "init" for n in graph_def.node):
            sess.run("init")
        return sess.run(fetches, feeds(graph_def))


def main(argv):
    out, fetches, paths = argv[0], argv[1].split(","), argv[2:]
    arrays = {}
    for as_written in (False, True):
        for i, path in enumerate(paths):
            # names a graph that aborts
            print("running %s, Grappler %s" % (path, "off" if as_written else "on"),
                  file=sys.stderr, flush=True)
            for j, value in enumerate(_run(path, fetches, as_written)):
                arrays["w%d_g%d_%d" % (as_written, i, j)] = np.asarray(value)
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1:])
