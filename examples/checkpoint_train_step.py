"""Gradient checkpointing of a real Keras training step, end to end.

  .venv/bin/python examples/checkpoint_train_step.py [GRAFT] [WORK_DIR] [--keras3] [--swap]

1. Export: a tf-keras conv net with batch norms and Adam (with `--keras3`,
   Keras 3's, and dropout after every block: stateless masks drawn from a
   seed generator's variable); its `tf.function` train step (GradientTape,
   the optimizer's apply ops, resource variables) is traced and its graph
   written with shapes (`add_shapes=True`).
2. Rewrite: `graft apply --pipeline rules/pipelines/training-memory.yaml`
   (graft finds the loss and the tape's gradient seed, a constant `ones`,
   by itself); with `--swap`, `graft apply -r rules/tf/swap.graft
   --device-default /device:GPU:0` instead: the step's ops on an
   accelerator, large activations copied to the host and back (on a machine
   without one, soft placement runs the accelerator's ops on the CPU).
3. Load back: the rewritten GraphDef is imported as a function whose
   variable handles are the model's own variables, and trained with.

Prints graft's summary and the largest relative difference of the
variables after three steps of each graph (from the same start)."""
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 16


def tape_step(model, optimizer, loss_fn):
    """The usual custom train step: a `tf.function` with a GradientTape and
    the optimizer's apply_gradients."""
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step


def build(keras3=False):
    if keras3:
        import keras
    else:
        import tf_keras as keras
    keras.utils.set_random_seed(0)
    # Eight conv blocks at full resolution: their activations (1 MiB each at
    # batch 16), not the weights, are what a training step keeps alive.
    layers = [keras.Input((32, 32, 3))]
    for _ in range(8):
        layers += [keras.layers.Conv2D(16, 3, padding="same", use_bias=False),
                   keras.layers.BatchNormalization(), keras.layers.ReLU()]
        if keras3:
            layers.append(keras.layers.Dropout(0.1))
    model = keras.Sequential(layers + [keras.layers.GlobalAveragePooling2D(),
                                       keras.layers.Dense(10)])
    optimizer = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_step = tape_step(model, optimizer, loss_fn)
    spec = (tf.TensorSpec([BATCH, 32, 32, 3], tf.float32, name="x"),
            tf.TensorSpec([BATCH], tf.int32, name="y"))
    # The model and optimizer own the variables the step uses: keep them.
    return train_step.get_concrete_function(*spec), (model, optimizer)


def export(step, path):
    """The train step's graph, and what running it back needs: the
    placeholders of the inputs and of the captured variables, the output,
    the loss and the gradient seed."""
    graph_def = step.graph.as_graph_def(add_shapes=True)
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    output = step.outputs[0].name
    loss = step.graph.get_tensor_by_name(output).op.inputs[0].op.name
    return {
        "inputs": [t.name for t in step.inputs[:2]],
        "variables": [t.name for t in step.inputs[2:]],
        "output": output,
        "loss": loss,
        "seed": "ones",
    }


def load(path, info, variables):
    """The GraphDef at `path` as a callable train step on `variables`: its
    input placeholders fed by the call's arguments, its variable
    placeholders by the variables' own handles."""
    graph_def = tf1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())

    def step(x, y):
        feeds = {info["inputs"][0]: x, info["inputs"][1]: y}
        graph = tf1.get_default_graph()  # captures the variables' handles
        feeds.update({name: graph.capture(v.handle)
                      for name, v in zip(info["variables"], variables)})
        return tf1.import_graph_def(graph_def, input_map=feeds,
                                    return_elements=[info["output"]], name="")[0]

    return tf1.wrap_function(step, [tf.TensorSpec([BATCH, 32, 32, 3], tf.float32),
                                    tf.TensorSpec([BATCH], tf.int32)])


def train(step, variables, start, batches):
    for v, value in zip(variables, start):
        v.assign(value)
    for x, y in batches:
        step(x, y)
    return [v.numpy() for v in variables]


PIPELINE = ["--pipeline", os.path.join(HERE, "..", "rules", "pipelines", "training-memory.yaml")]
SWAP = ["-r", os.path.join(HERE, "..", "rules", "tf", "swap.graft"),
        "--device-default", "/device:GPU:0"]


def main(graft, work, keras3=False, rules=PIPELINE):
    """Exports the step, rewrites it with `graft apply` and `rules` (its
    arguments that choose the rules), trains three steps with each."""
    os.makedirs(work, exist_ok=True)
    step, owners = build(keras3)
    # The captured variables, in the order of the step's inputs.
    by_handle = {id(v.handle): v for v in step.variables}
    variables = [by_handle[id(t)] for t in step.captured_inputs]
    original = os.path.join(work, "train_step.pb")
    rewritten = os.path.join(work, "train_step.graft.pb")
    info = export(step, original)
    proc = subprocess.run([graft, "apply", *rules, original, "-o", rewritten],
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        return proc.returncode
    rng = np.random.default_rng(0)
    batches = [(rng.random((BATCH, 32, 32, 3)).astype(np.float32),
                rng.integers(0, 10, BATCH).astype(np.int32)) for _ in range(3)]
    start = [v.numpy() for v in variables]
    want = train(load(original, info, variables), variables, start, batches)
    got = train(load(rewritten, info, variables), variables, start, batches)
    worst = max(float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-30))
                for a, b in zip(want, got))
    moved = max(float(np.max(np.abs(a - s))) for a, s in zip(want, start))
    print(json.dumps({"variables": len(variables), "moved": moved,
                      "max_relative_difference": worst}))
    del owners
    return 0


if __name__ == "__main__":
    flags = {"--keras3", "--swap"}
    args = [a for a in sys.argv[1:] if a not in flags]
    graft = args[0] if len(args) > 0 else os.path.join(HERE, "..", "bazel-bin", "cli", "graft")
    work = args[1] if len(args) > 1 else "/tmp/graft_train_step"
    sys.exit(main(graft, work, keras3="--keras3" in sys.argv[1:],
                  rules=SWAP if "--swap" in sys.argv[1:] else PIPELINE))
