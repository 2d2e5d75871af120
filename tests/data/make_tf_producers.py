"""Writes tests/data/tf_producers/: small TensorFlow graphs exactly as
today's producers write them, for the rule libraries' test blocks and the
engine's tests (the interop tests make their own, larger ones).

  .venv/bin/python tests/data/make_tf_producers.py

keras3_cnn.pbtxt: a Keras 3 (`import keras`) model frozen as graft.tf.freeze
  does (convert_variables_to_constants_v2): Conv2D, DepthwiseConv2D and
  Dense, each with a bias and followed by an unfused batch norm (Mul/Add
  arithmetic after a BiasAdd whose bias goes through Reshape and Squeeze).
keras3_conv1d.pbtxt: Keras 3's Conv1D (ExpandDims, Conv2D, Squeeze) and its
  batch norm.
control_flow.pbtxt: a tf.function with a conv + fused batch norm in each
  branch of a tf.cond and in a tf.while_loop body, frozen with
  convert_variables_to_constants_v2(lower_control_flow=False): the weights
  are top-level Consts passed into the bodies as arguments. Inputs x
  [2, 8, 8, 3], flag (bool), n (int32); output `out`.
keras3_sgd_step.pbtxt: a Keras 3 Dense layer's `tf.function` train step
  (GradientTape, SGD with momentum 0.9), as traced (variables as resource
  placeholders): its optimizer passes the gradients through an IdentityN
  and scales each momentum, `m * 0.9`, from the variable alone. Inputs x
  [2, 3], y [2, 4]; output `Identity`.
loop_carried.pbtxt: a tf.while_loop whose body convolves with a filter it
  halves each iteration: the filter enters as a constant but is loop-carried
  (never a constant inside the body). Inputs x [1, 4, 4, 3], n; output `out`.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework import convert_to_constants  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tf_producers")


def random_stats(rng, n):
    """gamma, beta, moving mean, moving variance."""
    return [rng.uniform(0.5, 1.5, n).astype(np.float32), rng.uniform(-0.5, 0.5, n).astype(np.float32),
            rng.uniform(-0.5, 0.5, n).astype(np.float32), rng.uniform(0.5, 2.0, n).astype(np.float32)]


def frozen(fn, *specs, lower_control_flow=True):
    concrete = tf.function(fn).get_concrete_function(*specs)
    return convert_to_constants.convert_variables_to_constants_v2(
        concrete, lower_control_flow=lower_control_flow).graph.as_graph_def()


def keras3_models():
    import keras  # Keras 3
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    layers = keras.layers
    cnn = keras.Sequential([
        keras.Input((8, 8, 3)),
        layers.Conv2D(4, 3), layers.BatchNormalization(), layers.ReLU(),
        layers.DepthwiseConv2D(3), layers.BatchNormalization(),
        layers.GlobalAveragePooling2D(), layers.Dense(3), layers.BatchNormalization()])
    conv1d = keras.Sequential([keras.Input((10, 3)), layers.Conv1D(4, 3), layers.BatchNormalization()])
    out = {}
    for name, model, shape in (("keras3_cnn", cnn, [1, 8, 8, 3]), ("keras3_conv1d", conv1d, [1, 10, 3])):
        for layer in model.layers:
            if isinstance(layer, layers.BatchNormalization):
                layer.set_weights(random_stats(rng, layer.get_weights()[0].shape))
        out[name] = frozen(lambda x, m=model: m(x, training=False),
                           tf.TensorSpec(shape, tf.float32, name="input"))
    return out


def control_flow_function():
    """The function control_flow.pbtxt freezes, and its input specs."""
    rng = np.random.default_rng(1)

    def block(x, w, stats):
        y = tf.nn.conv2d(x, w, 1, "SAME")
        return tf.compat.v1.nn.fused_batch_norm(
            y, *stats[:2], mean=stats[2], variance=stats[3], epsilon=1e-3, is_training=False)[0]

    w1, w2, w3 = (tf.constant(rng.standard_normal(s).astype(np.float32))
                  for s in ((3, 3, 3, 4), (1, 1, 3, 4), (3, 3, 4, 4)))
    variables = [tf.Variable(w) for w in (w1, w2, w3)]
    stats = [[tf.Variable(s) for s in random_stats(rng, 4)] for _ in range(3)]

    def fn(x, flag, n):
        y = tf.cond(flag, lambda: block(x, variables[0], stats[0]),
                    lambda: block(x, variables[1], stats[1]))
        _, y = tf.while_loop(lambda i, y: i < n,
                             lambda i, y: (i + 1, tf.nn.relu(block(y, variables[2], stats[2]))),
                             (0, y))
        return tf.identity(y, name="out")

    fn.variables = variables + [s for group in stats for s in group]  # kept alive
    return fn, (tf.TensorSpec([2, 8, 8, 3], tf.float32, name="x"),
                tf.TensorSpec([], tf.bool, name="flag"), tf.TensorSpec([], tf.int32, name="n"))


def control_flow():
    fn, specs = control_flow_function()
    return frozen(fn, *specs, lower_control_flow=False)


def loop_carried():
    rng = np.random.default_rng(2)
    w = tf.Variable(rng.standard_normal((1, 1, 3, 3)).astype(np.float32))

    def fn(x, n):
        _, _, y = tf.while_loop(
            lambda i, w, y: i < n,
            lambda i, w, y: (i + 1, w * 0.5, tf.nn.conv2d(y, w, 1, "SAME")),
            (0, tf.identity(w), x))
        return tf.identity(y, name="out")

    return frozen(fn, tf.TensorSpec([1, 4, 4, 3], tf.float32, name="x"),
                  tf.TensorSpec([], tf.int32, name="n"), lower_control_flow=False)


def keras3_sgd_step():
    import keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4)])
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    concrete = step.get_concrete_function(tf.TensorSpec([2, 3], tf.float32, name="x"),
                                          tf.TensorSpec([2, 4], tf.float32, name="y"))
    return concrete.graph.as_graph_def(add_shapes=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    graphs = keras3_models()
    graphs["control_flow"] = control_flow()
    graphs["loop_carried"] = loop_carried()
    graphs["keras3_sgd_step"] = keras3_sgd_step()  # last: the others' names stay
    for name, graph_def in graphs.items():
        path = os.path.join(OUT, name + ".pbtxt")
        with open(path, "w") as f:
            f.write(str(graph_def))
        print("wrote", path)


if __name__ == "__main__":
    main()
