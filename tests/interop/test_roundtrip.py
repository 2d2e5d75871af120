"""Round trips through graft give graphs TensorFlow reads back as the same
graph, and that run with the same numbers."""
import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.framework import graph_pb2

from conftest import repo_path, run_graph


def load_tf(path):
    graph_def = graph_pb2.GraphDef()
    if path.endswith(".pbtxt"):
        with open(path) as f:
            text_format.Parse(f.read(), graph_def)
    else:
        with open(path, "rb") as f:
            graph_def.ParseFromString(f.read())
    return graph_def


def function_library_graph():
    """A graph with a function library (control flow v2 lowers to While with
    cond/body functions), debug info and shapes."""

    @tf.function
    def f(x):
        i = tf.constant(0)
        c = lambda i, acc: i < 3  # noqa: E731
        b = lambda i, acc: (i + 1, acc * 2.0 + 1.0)  # noqa: E731
        return tf.while_loop(c, b, [i, x])[1]

    concrete = f.get_concrete_function(tf.TensorSpec([2, 2], tf.float32, name="x"))
    return concrete.graph.as_graph_def()


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """(name, path) of real TF-exported graphs, binary and text."""
    tmp = tmp_path_factory.mktemp("graphs")
    lib = function_library_graph()
    assert len(lib.library.function) >= 2
    lib_path = tmp / "function_library.pb"
    lib_path.write_bytes(lib.SerializeToString())
    return [
        repo_path("examples", "keras_cnn.pb"),
        repo_path("tests", "data", "control_devices.pb"),
        repo_path("tests", "data", "control_devices.pbtxt"),
        str(lib_path),
    ]


def test_binary_round_trip_is_byte_identical(graft, graphs, tmp_path):
    for src in graphs:
        if not src.endswith(".pb"):
            continue
        out = tmp_path / "out.pb"
        graft("convert", src, out)
        with open(src, "rb") as f:
            assert out.read_bytes() == f.read(), src


@pytest.mark.parametrize("via", ["pb", "pbtxt"])
def test_tensorflow_reads_back_the_same_graph(graft, graphs, tmp_path, via):
    for src in graphs:
        out = tmp_path / ("out." + via)
        graft("convert", src, out)
        original = load_tf(src)
        back = load_tf(str(out))
        # Compare as messages: same nodes, attrs, library, versions.
        assert back == original, src
        # And TensorFlow imports it.
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(back, name="")


def test_round_tripped_example_runs_with_same_numbers(graft, tmp_path):
    src = repo_path("examples", "keras_cnn.pb")
    text = tmp_path / "cnn.pbtxt"
    back = tmp_path / "cnn.pb"
    graft("convert", src, text)
    graft("convert", text, back)
    x = np.random.default_rng(0).standard_normal((2, 32, 32, 3)).astype(np.float32)
    want = run_graph(load_tf(src), {"input:0": x}, "Identity:0")
    got = run_graph(load_tf(str(back)), {"input:0": x}, "Identity:0")
    assert want.shape == (2, 10)
    np.testing.assert_array_equal(got, want)


def test_function_library_graph_runs_after_round_trip(graft, graphs, tmp_path):
    src = graphs[-1]
    out = tmp_path / "lib.pbtxt"
    graft("convert", src, out)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    graph_def = load_tf(str(out))
    fetch = [n.name for n in graph_def.node if n.op == "Identity"][-1] + ":0"
    got = run_graph(graph_def, {"x:0": x}, fetch)
    np.testing.assert_allclose(got, x * 8 + 7)


def test_stats_agree_with_tensorflow(graft):
    import json
    src = repo_path("examples", "keras_cnn.pb")
    stats = json.loads(graft("stats", "--json", src).stdout)
    graph_def = load_tf(src)
    assert int(stats["num_nodes"]) == len(graph_def.node)
    ops = {}
    for n in graph_def.node:
        ops[n.op] = ops.get(n.op, 0) + 1
    assert {c["name"]: int(c["count"]) for c in stats["ops"]} == ops
    data = sum(1 for n in graph_def.node for i in n.input if not i.startswith("^"))
    control = sum(1 for n in graph_def.node for i in n.input if i.startswith("^"))
    assert int(stats["num_data_edges"]) == data
    assert int(stats["num_control_edges"]) == control
