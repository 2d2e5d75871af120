"""graft's training-graph analyses on real TensorFlow training graphs (an
MLP and a small ResNet-style conv net from tests/interop/training_graphs.py,
tf.compat.v1 graph mode with tf.gradients):

- every tensor whose shape TensorFlow's own shape functions know gets the
  same shape from graft (run on the export without `_output_shapes`);
- the regions: the loss and gradient seed are found, gradient ops are
  backward, forward ops are forward, and the optimizer's updates (outside
  the `gradients/` scope) are backward too;
- graft's schedule next to the order TensorFlow's single-threaded executor
  ran the same step in (the fraction of node pairs in the same order);
- graft's simulated peak memory next to TensorFlow's own accounting of the
  same step on CPU (RunMetadata allocation records, measured in a child
  process with oneDNN on whatever the CPU: tf_memory.py); the numbers are
  printed and written to bazel-testlogs-interop/training_memory.txt.
"""
from itertools import combinations

import numpy as np
import pytest
import tensorflow as tf

from conftest import graft_json, numbers_report, write_graph
import tf_memory
import training_graphs

tf1 = tf.compat.v1


def graft_mem(graph_def, tmp_path, *args):
    return graft_json("mem", write_graph(graph_def, tmp_path, "train"), *args)


def tf_shapes(graph):
    """TensorFlow's own shapes: {tensor name: [dims] or None if not fully known}."""
    out = {}
    for op in graph.get_operations():
        for i, t in enumerate(op.outputs):
            name = op.name if i == 0 else "%s:%d" % (op.name, i)
            dims = t.shape.as_list() if t.shape.rank is not None else None
            out[name] = dims if dims is not None and None not in dims else None
    return out


def same_order(steps, order):
    """The fraction of pairs of `order` that `steps` puts in the same order."""
    names = [n for n in order if n in steps]
    pairs = list(combinations(range(len(names)), 2))
    agree = sum(steps[names[i]] < steps[names[j]] for i, j in pairs)
    return agree / len(pairs)


@pytest.fixture(scope="module")
def report():
    yield from numbers_report("training_memory.txt",
                              "model: graft simulated peak, TensorFlow peak (allocation records), "
                              "ratio; node pairs in TensorFlow's executor order")


@pytest.mark.parametrize("name", list(training_graphs.MODELS))
def test_training_graph(tmp_path, report, name):
    graph = training_graphs.MODELS[name]()
    plain = graph.as_graph_def()
    assert not any("_output_shapes" in n.attr for n in plain.node)
    # what the step fetches; one thread, as TensorFlow's run below
    mem = graft_mem(plain, tmp_path, "--outputs", "train,loss", "--threads", "1")

    # Shapes: everything TensorFlow knows, graft knows the same.
    want = tf_shapes(graph)
    got = mem["tensors"]
    known = [t for t, dims in want.items() if dims is not None]
    assert len(known) > 100
    for t in known:
        assert got[t]["shape"] == "[%s]" % ", ".join(map(str, want[t])), t
    unknown_to_tf = [t for t, dims in want.items() if dims is None]
    assert mem["unknown_shapes"] == len(unknown_to_tf)

    # Regions, by reachability.
    assert mem["loss"] == "loss" and mem["seed"] == "gradients/grad_ys_0"
    ops = {op.name: op.type for op in graph.get_operations()}
    region = {n: v["region"] for n, v in mem["nodes"].items()}
    for node, op in ops.items():
        if op.endswith("Grad") or op.startswith("Conv2DBackprop") or op == "AssignSubVariableOp":
            assert region[node] == "backward", node
        if op in ("Relu", "Conv2D", "MatMul", "FusedBatchNormV3") and not node.startswith("gradients/"):
            assert region[node] == "forward", node
    assert any(region[n] == "backward" and not n.startswith("gradients/") for n in ops)
    assert mem["saved_for_backward"] > 5

    # The schedule and peak memory next to TensorFlow's own run of the step.
    theirs, order = tf_memory.allocation_records(name)
    steps = {n: v["step"] for n, v in mem["nodes"].items()}
    agreement = same_order(steps, order)
    ours = mem["devices"][0]["peak_bytes"]
    ratio = ours / theirs
    report.append("%s: %d, %d, %.2f; %.0f%% of %d nodes' pairs" % (
        name, ours, theirs, ratio, 100 * agreement, sum(n in steps for n in order)))
    assert 0.5 <= ratio <= 2.0, (ours, theirs)
    assert agreement >= 0.8, agreement


def test_inference_graph_shapes(tmp_path):
    """Shapes on frozen inference graphs (depthwise convs, padding, pooling,
    reductions, reshapes): every tensor TensorFlow knows, graft knows the
    same, from the export without `_output_shapes`."""
    import tf_keras
    from models import freeze
    for ctor, size in [(tf_keras.applications.MobileNetV2, 96), (tf_keras.applications.ResNet50, 64)]:
        frozen = freeze(ctor(weights=None, input_shape=(size, size, 3), classes=10), [4, size, size, 3])
        for node in frozen.node:
            node.attr.pop("_output_shapes", None)
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(frozen, name="")
        want = tf_shapes(graph)
        got = graft_mem(frozen, tmp_path)["tensors"]
        known = [t for t, dims in want.items() if dims is not None]
        assert len(known) > 200
        for t in known:
            assert got[t]["shape"] == "[%s]" % ", ".join(map(str, want[t])), t


def _feed(graph, rng):
    feed = {}
    for op in graph.get_operations():
        if op.type != "Placeholder":
            continue
        t = op.outputs[0]
        shape = t.shape.as_list()
        if t.dtype == tf.int32:
            feed[t] = rng.integers(0, 10, shape).astype(np.int32)
        else:
            feed[t] = rng.random(shape).astype(np.float32)
    return feed


SHAPE_CHECKED = dict(
    training_graphs.SHAPE_MODELS,
    dropout_chain=training_graphs.dropout_chain,
    keras_resnet50=lambda: training_graphs.keras_resnet50(batch=2, size=64, classes=10))


@pytest.mark.parametrize("name", list(SHAPE_CHECKED))
def test_training_graph_shapes(tmp_path, name):
    """What tf.gradients emits for dense chains, U-Nets (conv2d_transpose,
    concatenation: ConcatOffset, Slice), ResNet-18 (fused batch norms in
    training mode, every output), a transformer block (BatchMatMulV2,
    transposes by computed permutations, softmax and sigmoid cross-entropy:
    Select, Exp, Log1p, StridedSlice of shapes), dropout (RandomUniform of
    a shape) and Keras's ResNet50 (stateless random initializers, the Pad
    gradient's Slice from a computed begin): every shape TensorFlow's shape
    functions know, graft knows the same; a shape graft knows beyond them
    is the one the tensor has when the step runs."""
    graph = SHAPE_CHECKED[name]()
    mem = graft_mem(graph.as_graph_def(), tmp_path, "--outputs", "train,loss")
    want = tf_shapes(graph)
    got = mem["tensors"]
    known = [t for t, dims in want.items() if dims is not None]
    assert len(known) > 100
    wrong = [t for t in known if got[t]["shape"] != "[%s]" % ", ".join(map(str, want[t]))]
    assert wrong == [], [(t, got[t]["shape"], want[t]) for t in wrong[:5]]
    beyond = [t for t, dims in want.items()
              if dims is None and t in got and "?" not in got[t]["shape"]
              and got[t]["shape"] != "<unknown>"]
    if beyond:
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            ran = sess.run([graph.get_tensor_by_name(t if ":" in t else t + ":0")
                            for t in beyond], _feed(graph, np.random.default_rng(0)))
        for t, value in zip(beyond, ran):
            assert got[t]["shape"] == "[%s]" % ", ".join(map(str, np.shape(value))), t


@pytest.mark.parametrize("read_held", [True, False])
def test_measured_peak_frees_a_copied_variable(read_held):
    """TensorFlow copies a variable that an in-place update changes while a
    value read from it is still held; the step's allocation records keep
    the copy (the variable's new buffer) and miss the old buffer's free.
    The measurement (tf_memory) puts that free after the last reader of the
    old value, and adds none where the update found nothing holding it."""
    graph = tf.Graph()
    with graph.as_default():
        var = tf.Variable(tf.ones([256, 256]), name="v")  # 256 KiB
        read = tf.raw_ops.ReadVariableOp(resource=var.handle, dtype=tf.float32)
        other = tf.Variable(tf.ones([256, 256]), name="other").read_value()
        if read_held:
            with tf.control_dependencies([read]):
                update = var.assign_sub(tf.fill([256, 256], 0.5), read_value=False)
            with tf.control_dependencies([update]):
                total = tf.reduce_sum(read, name="total")  # reads the old value
            # Waits for the read (and runs after `total`) but holds no
            # buffer of it: the free is not put after it.
            with tf.control_dependencies([read, total]):
                late = tf.reduce_sum(tf.matmul(other, other), name="late")
        else:
            total = tf.reduce_sum(read, name="total")
            with tf.control_dependencies([total]):
                update = var.assign_sub(tf.fill([256, 256], 0.5), read_value=False)
            late = tf.no_op()
        init = tf1.global_variables_initializer()
    config = tf1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        # (the first update copies anyway: the variable holds the constant
        # it was initialized from, which its kernel keeps)
        sess.run([total, update, late])
        metadata = tf_memory._traced_run(sess, [total, update, late], {})
        value = sess.run(var)
    np.testing.assert_array_equal(value, np.zeros([256, 256], np.float32))
    frees = tf_memory._variable_copy_frees(metadata)
    if not read_held:
        assert frees == []
        return
    stats = {s.node_name: s for dev in metadata.step_stats.dev_stats for s in dev.node_stats}
    end = lambda name: stats[name].all_start_micros + stats[name].all_end_rel_micros  # noqa: E731
    assert len(frees) == 1 and frees[0][1] == -256 * 256 * 4, frees
    assert end("late") > end("total")
    assert frees[0][0] == end("total"), frees


@pytest.mark.parametrize("read_held", [True, False])
def test_measured_peak_frees_a_variable_buffer_an_assignment_replaced(read_held):
    """Assigning a value no other op reads makes its buffer the variable's
    (Keras 3 SGD's `m.assign(m * 0.9 - lr * g)`): the step's records keep
    that buffer, allocated by the op that computed it, and miss the old
    buffer's free. The measurement (tf_memory) puts that free after the
    assignment, or after the last reader of the old value where one is
    still to run, and the records balance."""
    graph = tf.Graph()
    with graph.as_default():
        var = tf.Variable(tf.ones([256, 256]), name="v")  # 256 KiB
        read = tf.raw_ops.ReadVariableOp(resource=var.handle, dtype=tf.float32)
        new = tf.subtract(read * 0.5, tf.fill([256, 256], 0.25), name="new")
        if read_held:
            update = var.assign(new, read_value=False)
            with tf.control_dependencies([update]):
                total = tf.reduce_sum(read, name="total")  # reads the old value
        else:
            total = tf.reduce_sum(read, name="total")
            with tf.control_dependencies([total]):
                update = var.assign(new, read_value=False)
        init = tf1.global_variables_initializer()
    config = tf1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        sess.run([total, update])
        metadata = tf_memory._traced_run(sess, [total, update], {})
        value = sess.run(var)
    np.testing.assert_array_equal(value, np.full([256, 256], 0.25 * 0.5 - 0.25, np.float32))
    assert tf_memory._variable_copy_frees(metadata) == []
    frees = tf_memory._variable_adoption_frees(metadata)
    stats = {s.node_name: s for dev in metadata.step_stats.dev_stats for s in dev.node_stats}
    end = lambda name: stats[name].all_start_micros + stats[name].all_end_rel_micros  # noqa: E731
    assert len(frees) == 1 and frees[0][1] == -256 * 256 * 4, frees
    assert frees[0][0] == end("total" if read_held else update.name), frees
    assert tf_memory._records_peak(metadata) >= 256 * 256 * 4  # and its records balance
