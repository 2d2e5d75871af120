"""Writes tests/data/saved_models/: small SavedModels for the TensorBundle
and SavedModel readers' tests (and their fuzz seeds).

  .venv/bin/python tests/data/make_saved_models.py

cnn/: a tf-keras conv net (conv, batch norm, relu, dense) saved with
tf.saved_model.save; its variables are one data shard.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3),
        keras.layers.BatchNormalization(), keras.layers.ReLU(),
        keras.layers.Flatten(), keras.layers.Dense(2)])
    bn = model.layers[1]
    rng = np.random.default_rng(0)
    bn.set_weights([rng.uniform(0.5, 1.5, 4).astype(np.float32),
                    rng.uniform(-0.5, 0.5, 4).astype(np.float32),
                    rng.uniform(-0.5, 0.5, 4).astype(np.float32),
                    rng.uniform(0.5, 2.0, 4).astype(np.float32)])
    out = os.path.join(HERE, "saved_models", "cnn")
    tf.saved_model.save(model, out)
    print("wrote", out)


if __name__ == "__main__":
    main()
