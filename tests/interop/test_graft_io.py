"""Pre- and post-processing grafts (rules/tf/graft_io.graft) on a real model:
a preprocessing graph (uint8 cast, bilinear resize, normalisation) and a
postprocessing graph (softmax, top-k) are grafted onto the example Keras
classifier; TensorFlow runs the result, fed and fetched by the original
names, and gets the same numbers as running the three graphs one after the
other."""
import numpy as np
import tensorflow as tf

from conftest import repo_path, run_graph
from models import graft_apply

RULES = repo_path("rules", "tf", "graft_io.graft")
RNG = np.random.default_rng(5)


def preprocessing_graph():
    graph = tf.Graph()
    with graph.as_default():
        image = tf.compat.v1.placeholder(tf.uint8, [None, 48, 40, 3], name="input")
        x = tf.cast(image, tf.float32)
        x = tf.compat.v1.image.resize_bilinear(x, [32, 32])
        tf.subtract(x / 127.5, 1.0, name="input_preprocessed")
    return graph.as_graph_def()


def postprocessing_graph():
    graph = tf.Graph()
    with graph.as_default():
        logits = tf.compat.v1.placeholder(tf.float32, [None, 10], name="Identity")
        probs = tf.nn.softmax(logits, name="probs")
        top = tf.math.top_k(probs, k=3, name="top")
        tf.identity(top.indices, name="Identity_postprocessed")
    return graph.as_graph_def()


def test_pre_and_post_processing_on_a_keras_model(tmp_path):
    model = tf.compat.v1.GraphDef()
    model.ParseFromString(open(repo_path("examples", "keras_cnn.pb"), "rb").read())
    pre, post = preprocessing_graph(), postprocessing_graph()
    (tmp_path / "pre.pb").write_bytes(pre.SerializeToString())
    (tmp_path / "post.pb").write_bytes(post.SerializeToString())
    grafted, log = graft_apply(model, tmp_path, "model", "-r", RULES,
                               "--param", "preprocessing=%s" % (tmp_path / "pre.pb"),
                               "--param", "postprocessing=%s" % (tmp_path / "post.pb"))
    assert "add_preprocessing: 1 applied" in log and "add_postprocessing: 1 applied" in log, log
    inputs = [n for n in grafted.node if n.op == "Placeholder"]
    assert [n.name for n in inputs] == ["input"]
    assert inputs[0].attr["dtype"].type == tf.uint8.as_datatype_enum

    images = RNG.integers(0, 256, (5, 48, 40, 3), dtype=np.uint8)
    # The three graphs one after the other.
    x = run_graph(pre, {"input:0": images}, "input_preprocessed:0")
    logits = run_graph(model, {"input:0": x}, "Identity:0")
    want_probs, want_top = run_graph(post, {"Identity:0": logits},
                                     ["probs:0", "Identity_postprocessed:0"])
    # The grafted graph, fed and fetched by the original names.
    got_probs, got_top, got_raw = run_graph(grafted, {"input:0": images},
                                            ["probs:0", "Identity:0", "Identity_raw:0"])
    np.testing.assert_allclose(got_raw, logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_probs, want_probs, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got_top, want_top)
    assert got_top.shape == (5, 3)

    # Applying the rules again changes nothing.
    again, _ = graft_apply(grafted, tmp_path, "again", "-r", RULES,
                           "--param", "preprocessing=%s" % (tmp_path / "pre.pb"),
                           "--param", "postprocessing=%s" % (tmp_path / "post.pb"))
    assert again == grafted
