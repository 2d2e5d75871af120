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


def conv_net(keras=keras, dropout=False, legacy=False):
    keras.utils.set_random_seed(0)
    layers = [keras.Input((16, 16, 3))]
    for _ in range(6):
        layers += [keras.layers.Conv2D(8, 3, padding="same", use_bias=False),
                   keras.layers.BatchNormalization(), keras.layers.ReLU()]
        if dropout:
            layers.append(keras.layers.Dropout(0.2))
    model = keras.Sequential(layers + [keras.layers.GlobalAveragePooling2D(),
                                       keras.layers.Dense(10)])
    optimizer = (keras.optimizers.legacy.Adam if legacy else keras.optimizers.Adam)(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return model, optimizer, train_step


@pytest.mark.parametrize("keras3, legacy", [(False, False), (False, True), (True, False)],
                         ids=["tf_keras", "tf_keras_legacy_adam", "keras3_dropout"])
def test_rewrite_train_step_trains_to_the_same_bits(keras3, legacy):
    """tf-keras's step, with its legacy Adam too (whose coefficients,
    computed from its variables and partly left unread, looked like
    losses), and Keras 3's with dropout (masks drawn from a seed
    generator's variable: recomputed, they must be the same masks)."""
    if keras3:
        keras3_module = pytest.importorskip("keras")
        model, optimizer, train_step = conv_net(keras3_module, dropout=True)
    else:
        model, optimizer, train_step = conv_net(legacy=legacy)
    rng = np.random.default_rng(0)
    batches = [(tf.constant(rng.random((BATCH, 16, 16, 3)), tf.float32),
                tf.constant(rng.integers(0, 10, BATCH), tf.int32)) for _ in range(3)]
    step = graft.tf.rewrite_train_step(train_step, batches[0])
    assert step.report["rewrites"] > 0
    variables = model.variables + (optimizer.variables if keras3 else optimizer.variables())
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


def conv_training_graph():
    """A tf.compat.v1 training step (a convolution, a constant scale, SGD)
    with fixed initial values: the same numbers in every session."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(1)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [4, 16, 16, 3], name="x")
        w = tf1.get_variable("w", initializer=rng.normal(0, 0.1, (3, 3, 3, 8)).astype(np.float32),
                             use_resource=True)
        y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")) / 3.0
        loss = tf.reduce_mean(tf.square(y), name="loss")
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf1.variables_initializer(tf1.global_variables(), name="init")
    return graph.as_graph_def()


def run_step(graph_def, feed):
    """The loss after one training step, in a session with Grappler off."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    config = tf1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run("init")
        sess.run("train", {"x:0": feed})
        return sess.run("loss:0", {"x:0": feed})


def test_grappler_gives_the_graph_a_session_runs():
    graph_def = conv_training_graph()
    model = graft.Model.from_graph_def(graph_def, "step")
    optimized = graft.tf.grappler(model, ["train", "loss", "init"])
    assert optimized.outputs == ["train", "loss", "init"]
    ops = {n.op for n in optimized.to_graph_def().node}
    assert len(optimized.to_graph_def().node) < len(graph_def.node), ops
    feed = np.random.default_rng(2).random((4, 16, 16, 3)).astype(np.float32)
    want = run_step(graph_def, feed)
    got = run_step(optimized.to_graph_def(), feed)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # graft mem reads Grappler's graph (its fused ops' shapes included).
    mem = graft.mem(optimized, outputs=["train"])
    assert mem["unknown_sizes"] == 0, mem["unknown_sizes"]
    with pytest.raises(graft.Error, match="no node named `nope` in step"):
        graft.tf.grappler(model, ["nope"])


def test_mem_counts_eigen_kernels_scratch():
    model = graft.Model.from_graph_def(conv_training_graph(), "step")
    onednn = graft.mem(model, outputs=["train"])["devices"][0]
    eigen = graft.mem(model, outputs=["train"], cpu_kernels="eigen", threads=2)["devices"][0]
    assert onednn["scratch_at_peak"] == 0 and onednn["scratch_node"] == ""
    # Each gradient's im2col buffer: as many images as fill 30 MiB with each
    # one's patches (16 x 16 pixels x 27 values), its output and the filter:
    # ceil(30 MiB / 4 B / 9176) = 858 images. The input's gradient runs too
    # (tf.gradients groups both): on two threads, beside the filter's.
    im2col = 858 * 256 * 27 * 4
    assert eigen["scratch_node"].startswith("gradients/Conv2D_grad/Conv2DBackprop"), eigen
    assert eigen["scratch_at_peak"] == 2 * im2col
    assert eigen["peak_bytes"] >= onednn["peak_bytes"] + im2col
    one = graft.mem(model, outputs=["train"], cpu_kernels="eigen", threads=1)["devices"][0]
    assert one["scratch_at_peak"] == im2col
    with pytest.raises(graft.Error, match="expected onednn or eigen"):
        graft.mem(model, cpu_kernels="mkl")


def test_planners_count_the_kernels_this_process_runs(monkeypatch):
    """graft.tf.cpu_kernels() says which kernels this process's TensorFlow
    runs; a rule set compiled for Eigen's plans the budget strategy with
    their scratch in its peak, so a budget below it is refused, and one
    compiled for oneDNN's finds the same graph within it."""
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    assert graft.tf.cpu_kernels() == "eigen"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    assert graft.tf.cpu_kernels() == "onednn"
    model = graft.Model.from_graph_def(conv_training_graph(), "step")
    peak = graft.mem(model, outputs=["train"], threads=1)["devices"][0]["peak_bytes"]
    params = {"strategy": "budget", "budget_bytes": 2 * peak}
    kept, report = graft.apply(model, "checkpoint", params=params, outputs=["train"])
    assert report["rewrites"] == 0  # fits as it is
    with pytest.raises(graft.Error, match="a kernel's scratch of up to"):
        graft.apply(model, "checkpoint", params=params, outputs=["train"], cpu_kernels="eigen")
    with pytest.raises(graft.Error, match="expected onednn or eigen"):
        graft.RuleSet.compile("checkpoint", cpu_kernels="mkl")
