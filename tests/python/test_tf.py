"""graft.tf: a Keras model frozen, rewritten and run back (docs/python.md's
snippet, run as written), and a tf.function train step rewritten in one
call that trains the same variables to the same bits."""
import re

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("tf_keras")

import graft  # noqa: E402
import graft.tf  # noqa: E402
from conftest import repo_path  # noqa: E402


def readme_snippet(marker):
    text = open(repo_path("docs", "python.md")).read()
    m = re.search(r"<!-- %s -->\n```python\n(.*?)```" % re.escape(marker), text, re.S)
    assert m, f"docs/python.md has no snippet marked {marker}"
    return m.group(1)


def randomized(model):
    """Random batch-norm statistics, so that a wrong fold shows (tf-keras's
    and Keras 3's batch norms alike)."""
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if type(layer).__name__ == "BatchNormalization":
            shape = layer.get_weights()[-1].shape
            stats = [rng.uniform(0.5, 1.5, shape), rng.uniform(-0.5, 0.5, shape),
                     rng.uniform(-0.5, 0.5, shape), rng.uniform(0.5, 2.0, shape)]
            layer.set_weights([s.astype(np.float32) for s in stats])
    return model


@pytest.mark.parametrize("keras_import", ["tf_keras as keras", "keras"],
                         ids=["tf_keras", "keras3"])
def test_readme_keras_snippet_folds_mobilenet(keras_import):
    """The snippet as written (tf-keras), and with Keras 3's `import keras`:
    no batch norm left in any form (fused ops; Keras 3's Rsqrt and Mul)."""
    code = readme_snippet("python: keras model in and out")
    assert len(code.strip().splitlines()) <= 10
    original = "keras.applications.MobileNetV2(weights=None)"
    assert original in code and "tf_keras as keras" in code
    scope = {"randomized": randomized}
    code = code.replace(original, f"randomized({original})")
    exec(code.replace("tf_keras as keras", keras_import), scope)  # noqa: S102
    report, result = scope["report"], scope["difference"]
    assert report["nodes_after"] < report["nodes_before"]
    ops = {o["name"] for o in graft.load(scope["folded"].data).stats()["ops"]}
    assert not {o for o in ops if "BatchNorm" in o or o in ("Rsqrt", "Mul")}, ops
    assert len(result) == 1 and result[0]["max_rel"] < 1e-5, result


def test_freeze_names_inputs_and_outputs():
    inp = keras.Input((4,), name="features")
    model = keras.Model(inp, [keras.layers.Dense(2)(inp), keras.layers.Dense(3)(inp)])
    frozen = graft.tf.freeze(model)
    assert frozen.inputs == ["features:0"] and len(frozen.outputs) == 2
    run = graft.tf.to_function(frozen)
    x = np.random.default_rng(1).random((5, 4)).astype(np.float32)
    diffs = graft.tf.compare(model, run, [x])
    assert [d["max_abs"] for d in diffs] == [0.0, 0.0]


def test_frozen_model_saved_as_a_saved_model(tmp_path):
    model = randomized(keras.applications.MobileNetV2(
        weights=None, input_shape=(64, 64, 3), classes=10))
    folded, _ = graft.apply(graft.tf.freeze(model),
                            repo_path("rules", "tf", "fold_batch_norms.graft"))
    folded.save(tmp_path / "served", format="saved_model")
    served = tf.saved_model.load(str(tmp_path / "served")).signatures["serving_default"]
    x = np.random.default_rng(2).standard_normal((2, 64, 64, 3)).astype(np.float32)
    (got,) = served(**{folded.inputs[0].split(":")[0]: tf.constant(x)}).values()
    want = model(x, training=False).numpy()
    assert np.abs(got.numpy() - want).max() <= 1e-5 * np.abs(want).max()


BATCH = 8


def conv_net():
    keras.utils.set_random_seed(0)
    layers = [keras.Input((16, 16, 3))]
    for _ in range(6):
        layers += [keras.layers.Conv2D(8, 3, padding="same", use_bias=False),
                   keras.layers.BatchNormalization(), keras.layers.ReLU()]
    model = keras.Sequential(layers + [keras.layers.GlobalAveragePooling2D(),
                                       keras.layers.Dense(10)])
    optimizer = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return model, optimizer, train_step


def test_rewrite_train_step_trains_to_the_same_bits():
    model, optimizer, train_step = conv_net()
    rng = np.random.default_rng(0)
    batches = [(tf.constant(rng.random((BATCH, 16, 16, 3)), tf.float32),
                tf.constant(rng.integers(0, 10, BATCH), tf.int32)) for _ in range(3)]
    step = graft.tf.rewrite_train_step(train_step, batches[0])
    assert step.report["rewrites"] > 0
    variables = model.variables + optimizer.variables()
    start = [v.numpy() for v in variables]

    def train(fn):
        for v, value in zip(variables, start):
            v.assign(value)
        losses = [float(fn(x, y)) for x, y in batches]
        return losses, [v.numpy() for v in variables]

    want_losses, want = train(train_step)
    got_losses, got = train(step)
    assert got_losses == want_losses
    moved = [not np.array_equal(a, s) for a, s in zip(want, start)]
    assert sum(moved) > len(model.trainable_variables)  # weights and Adam's slots
    for v, a, b in zip(variables, want, got):
        assert np.array_equal(a, b), f"{v.name} differs"
    before = graft.mem(step.original)["devices"][0]["peak_bytes"]
    after = graft.mem(step.model)["devices"][0]["peak_bytes"]
    assert after < before, (before, after)
