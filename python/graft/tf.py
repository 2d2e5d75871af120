"""graft.tf: TensorFlow models in and out of graft, each a call.

    import graft, graft.tf
    model = graft.tf.freeze(keras_model)            # variables -> constants
    folded, report = graft.apply(model, pipeline="inference")
    run = graft.tf.to_function(folded)              # a callable TF function
    print(graft.tf.compare(keras_model, run, [x]))  # max abs / rel per output

    step = graft.tf.rewrite_train_step(train_step, (x, y))  # checkpointed
    step(x, y)                                      # trains the same variables

Needs TensorFlow (imported on first use of this module).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

import graft

_tf1 = tf.compat.v1

__all__ = ["freeze", "to_function", "rewrite_train_step", "compare",
           "grappler", "TrainStep"]


def _concrete(fn, input_signature):
    """A ConcreteFunction of a Keras model, tf.function or concrete
    function, with its inputs named."""
    if isinstance(fn, tf.types.experimental.ConcreteFunction):
        return fn
    if hasattr(fn, "inputs") and callable(fn) and not hasattr(
            fn, "get_concrete_function"):  # a Keras model
        model = fn
        if input_signature is None:
            input_signature = [
                tf.TensorSpec(t.shape, t.dtype, name=t.name.split(":")[0])
                for t in tf.nest.flatten(model.inputs)]
        single = len(input_signature) == 1
        fn = tf.function(
            lambda *xs: model(xs[0] if single else list(xs), training=False))
    if input_signature is None:
        return fn.get_concrete_function()
    return fn.get_concrete_function(*input_signature)


def freeze(model_or_function, input_signature: Optional[Sequence] = None
           ) -> graft.Model:
    """A Keras model, ``tf.function`` or concrete function as a frozen graph
    (variables folded to constants) whose ``inputs`` and ``outputs`` name
    its placeholders and fetched tensors. ``input_signature``: TensorSpecs,
    when the function has none (a Keras model's own inputs otherwise)."""
    # pylint: disable=import-outside-toplevel
    from tensorflow.python.framework import convert_to_constants

    concrete = _concrete(model_or_function, input_signature)
    frozen = convert_to_constants.convert_variables_to_constants_v2(concrete)
    graph_def = frozen.graph.as_graph_def()
    return graft.Model(graph_def.SerializeToString(), "pb", "<frozen>",
                       [t.name for t in frozen.inputs],
                       [t.name for t in frozen.outputs])


def grappler(model: graft.Model, fetches: Sequence[str]) -> graft.Model:
    """The graph TensorFlow's graph optimizers (Grappler, its default
    passes) make of ``model`` for a session that fetches ``fetches`` (node
    names): what a ``tf.compat.v1.Session`` runs with its defaults.
    ``graft.mem`` of it estimates that session's peak, where ``graft.mem`` of
    ``model`` estimates a session with Grappler off. Grappler's remapper
    fuses otherwise with oneDNN on and off (``TF_ENABLE_ONEDNN_OPTS``, read
    when TensorFlow is imported), as the session would."""
    # pylint: disable=import-outside-toplevel
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.grappler import tf_optimizer

    fetches = [f.split(":")[0] for f in fetches]
    if not fetches:
        raise graft.Error("error: grappler: name the fetches (node names)",
                          True)
    graph = tf.Graph()
    with graph.as_default():
        _tf1.import_graph_def(model.to_graph_def(), name="")
        known = {op.name for op in graph.get_operations()}
        missing = [f for f in fetches if f not in known]
        if missing:
            raise graft.Error("error: grappler: no node named %s in %s" % (
                ", ".join("`%s`" % m for m in missing), model.name), True)
        meta_graph = _tf1.train.export_meta_graph(graph=graph)
    meta_graph.collection_def["train_op"].node_list.value.extend(fetches)
    optimized = tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(),
                                           meta_graph, graph_id=b"graft")
    return graft.Model(optimized.SerializeToString(), "pb",
                       model.name + " (Grappler)", model.inputs, fetches)


def to_function(model: graft.Model, inputs: Optional[Sequence[str]] = None,
                outputs: Optional[Sequence[str]] = None):
    """A callable TensorFlow function running ``model``: positional
    arguments feed ``inputs`` (tensor names; the model's own by default),
    and it returns the ``outputs`` (a list; one tensor when there is one)."""
    inputs = list(inputs if inputs is not None else model.inputs)
    outputs = list(outputs if outputs is not None else model.outputs)
    if not outputs:
        raise graft.Error("error: no outputs: pass outputs= (tensor names)",
                          True)
    graph_def = model.to_graph_def()
    probe = tf.Graph()  # the fed tensors' dtypes and shapes
    with probe.as_default():
        _tf1.import_graph_def(graph_def, name="")
    specs = [tf.TensorSpec(t.shape, t.dtype) for t in
             (probe.get_tensor_by_name(_tensor(n)) for n in inputs)]
    fetches = [_tensor(n) for n in outputs]

    def run(*args):
        return _tf1.import_graph_def(
            graph_def, input_map=dict(zip([_tensor(n) for n in inputs], args)),
            return_elements=fetches, name="")

    function = _tf1.wrap_function(run, specs)
    if len(outputs) == 1:
        return lambda *args: function(*args)[0]
    return function


def _tensor(name: str) -> str:
    return name if ":" in name else name + ":0"


def _outputs(fn, feeds) -> List[np.ndarray]:
    if isinstance(fn, graft.Model):
        fn = to_function(fn)
    if isinstance(feeds, dict):
        result = fn(**feeds)
    else:
        result = fn(*feeds)
    return [np.asarray(t) for t in tf.nest.flatten(result)]


def compare(original, rewritten, feeds) -> List[Dict[str, float]]:
    """Runs both (Keras models, TF functions or graft Models) on ``feeds``
    (positional arrays, or a dict by name) and returns, per output, the
    largest absolute difference and that relative to the original's largest
    magnitude: ``[{"output": i, "max_abs": ..., "max_rel": ...}]``."""
    if hasattr(original, "inputs") and not isinstance(original, graft.Model) \
            and callable(original) and not hasattr(
                original, "get_concrete_function"):
        keras_model = original

        def original(*xs):  # noqa: F811: inference mode, like freeze
            return keras_model(xs[0] if len(xs) == 1 else list(xs),
                               training=False)
    want = _outputs(original, feeds)
    got = _outputs(rewritten, feeds)
    if len(want) != len(got):
        raise graft.Error(f"error: {len(want)} outputs against {len(got)}")
    result = []
    for i, (a, b) in enumerate(zip(want, got)):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        max_abs = float(np.max(np.abs(a64 - b64))) if a.size else 0.0
        scale = float(np.max(np.abs(a64))) if a.size else 0.0
        result.append({"output": i, "max_abs": max_abs,
                       "max_rel": max_abs / scale if scale > 0 else max_abs})
    return result


class TrainStep:
    """A rewritten train step: call it like the original; it updates the
    same variables. ``report`` is graft's apply report; ``original`` and
    ``model`` the graphs before and after (for graft.mem, graft.diff)."""

    def __init__(self, function, structured_outputs, report, original, model,
                 num_args):
        self._function = function
        self._structured_outputs = structured_outputs
        self._num_args = num_args
        self.report = report
        self.original = original
        self.model = model

    def __call__(self, *args):
        flat = tf.nest.flatten(args)
        if len(flat) != self._num_args:
            raise graft.Error(f"error: the step takes {self._num_args} "
                              f"tensor(s), got {len(flat)}", True)
        results = self._function(*flat)
        return tf.nest.pack_sequence_as(self._structured_outputs,
                                        tf.nest.flatten(results),
                                        expand_composites=True)


def cpu_kernels() -> str:
    """The CPU kernels this process's TensorFlow runs, as the memory model
    and the planners name them: "onednn" (TF_ENABLE_ONEDNN_OPTS=1, the
    default of a oneDNN build) or "eigen" (=0, or a build without it)."""
    flag = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").strip().lower()
    if flag in ("0", "false"):
        return "eigen"
    if flag in ("1", "true"):
        return "onednn"
    try:
        from tensorflow.python.util import _pywrap_util_port
        return "onednn" if _pywrap_util_port.IsMklEnabled() else "eigen"
    except (ImportError, AttributeError):
        return "onednn"


def rewrite_train_step(train_step, example_args: Sequence[Any],
                       pipeline: str = "training-memory",
                       kernels: Optional[str] = None,
                       **params) -> TrainStep:
    """Rewrites a ``tf.function`` train step (GradientTape, optimizer,
    resource variables) with ``pipeline`` (a shipped one by name, or a
    YAML path) and returns a callable with the same signature that updates
    the same variables. graft finds the loss and the tape's gradient seed
    itself; ``params`` go to the pipeline's rules. ``kernels``: the CPU
    kernels whose scratch the planners count ("onednn" or "eigen"; by
    default this process's, ``cpu_kernels()``)."""
    concrete = _concrete(train_step, list(example_args))
    num_args = len(concrete.inputs) - len(concrete.captured_inputs)
    graph_def = concrete.graph.as_graph_def(add_shapes=True)
    outputs = [t.name for t in concrete.outputs]
    original = graft.Model(graph_def.SerializeToString(), "pb", "<train_step>",
                           [t.name for t in concrete.inputs[:num_args]],
                           outputs)
    rewritten, report = graft.apply(original, pipeline=pipeline,
                                    params=params or None,
                                    cpu_kernels=kernels or cpu_kernels())
    # What the step captured: variables by their handles, anything else as
    # the tensor itself.
    by_handle = {id(v.handle): v for v in concrete.variables}
    captures = [by_handle.get(id(t), t) for t in concrete.captured_inputs]
    capture_names = [t.name for t in concrete.inputs[num_args:]]
    arg_names = original.inputs
    specs = [tf.TensorSpec(t.shape, t.dtype) for t in concrete.inputs[:num_args]]
    new_graph_def = rewritten.to_graph_def()

    def step(*args):
        graph = _tf1.get_default_graph()
        feeds = dict(zip(arg_names, args))
        for name, c in zip(capture_names, captures):
            feeds[name] = graph.capture(
                c.handle if isinstance(c, tf.Variable) else c)
        return _tf1.import_graph_def(new_graph_def, input_map=feeds,
                                     return_elements=outputs, name="")

    function = _tf1.wrap_function(step, specs)
    return TrainStep(function, concrete.structured_outputs, report, original,
                     rewritten, num_args)
