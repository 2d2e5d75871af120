"""ONNX models exported from TensorFlow by tf2onnx, made offline: tf-keras
applications built with weights=None and random batch-norm statistics,
converted with tf2onnx's default optimizers (which fold the batch norms
and move the NHWC transposes themselves). Their value names are
TensorFlow's (`w:0`), their weights initializers, their input NHWC."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402

MODELS = {
    "keras_mobilenet_v2": lambda keras: keras.applications.MobileNetV2(
        weights=None, input_shape=(96, 96, 3), alpha=0.35),
    "keras_efficientnet_b0": lambda keras: keras.applications.EfficientNetB0(
        weights=None, input_shape=(96, 96, 3)),
}


def make(name, out_dir, seed=0):
    """Writes OUT_DIR/NAME.onnx; returns its path."""
    import tensorflow as tf
    import tf2onnx
    import tf_keras as keras
    model = MODELS[name](keras)
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            g, b, m, v = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, g.shape), rng.uniform(-0.5, 0.5, b.shape),
                               rng.uniform(-0.5, 0.5, m.shape), rng.uniform(0.5, 2.0, v.shape)])
    spec = (tf.TensorSpec((1,) + model.input_shape[1:], tf.float32, name="input"),)
    path = os.path.join(out_dir, name + ".onnx")
    tf2onnx.convert.from_keras(model, input_signature=spec, opset=17, output_path=path)
    return path
