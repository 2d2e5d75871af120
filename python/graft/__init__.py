"""graft: rewrite TensorFlow graphs by declarative rules, from Python.

    import graft
    model = graft.load("model.pb")
    rules = graft.RuleSet.compile(pipeline="inference")
    folded, report = graft.apply(model, rules)
    folded.save("folded.pb")

Models are bytes (a GraphDef, binary or text) and travel freely between
threads, processes and machines; reports are plain dicts; failures raise
graft.Error with the located diagnostic. graft works with the GIL released.
See graft.tf for Keras models and tf.function train steps, and graft.batch
for many models on any concurrent.futures executor.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from graft._errors import Diagnostic, Error


def _load_extension():
    # RTLD_DEEPBIND: the extension and the libraries it brings (protobuf,
    # abseil) resolve their symbols among themselves first, not in another
    # copy of protobuf that TensorFlow or onnx loaded into the process
    # before it (or after it: RTLD_LOCAL keeps ours out of their way).
    flags = sys.getdlopenflags()
    sys.setdlopenflags(os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    try:
        from graft import _graft as extension
    finally:
        sys.setdlopenflags(flags)
    return extension


_graft = _load_extension()

__all__ = [
    "Diagnostic", "Error", "Model", "RuleSet", "load", "apply", "explain",
    "diff", "review", "validate", "mem", "cost", "test", "fmt",
    "pipeline_from_transforms", "version", "RULES_DIR",
]

#: The shipped rule libraries, pipelines (``pipelines/*.yaml``) and GTT
#: transforms (``gtt/``).
RULES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")

_TEXT_SUFFIXES = (".pbtxt", ".txt", ".prototxt")
PathLike = Union[str, "os.PathLike[str]"]


# int64 fields of graft's reports (proto/report.proto; a test keeps the
# list whole), which JSON carries as strings.
_INT64_FIELDS = frozenset(
    "applied calls_inlined candidates copies count failed functions_kept "
    "guard_errors identities_bypassed matches nodes nodes_added nodes_after "
    "nodes_before nodes_removed num_control_edges num_data_edges "
    "num_functions num_nodes ok ops peak_bytes_after peak_bytes_before "
    "rewrites size_bytes skipped unchanged variable_bytes variable_reads_folded constant_args constant_args_folded "
    "variables".split())


def _ints(obj):
    if isinstance(obj, dict):
        return {k: int(v) if k in _INT64_FIELDS and isinstance(v, str)
                and v.lstrip("-").isdigit() else _ints(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_ints(v) for v in obj]
    return obj


def _report(text: str):
    """A report's JSON as plain Python objects (ints as ints)."""
    return _ints(json.loads(text))


def version() -> str:
    """graft's version and the op-signature snapshot it checks against."""
    return _graft.version()


class Model:
    """A graph as bytes: a TensorFlow GraphDef, binary (``"pb"``) or text
    (``"pbtxt"``), or an ONNX model (``"onnx"``); or a SavedModel folder (``"saved_model"``: ``name`` is
    its path, read where it is, rewritten into a new folder). Immutable and
    picklable; ``name`` labels it in errors and reports."""

    __slots__ = ("data", "format", "name", "inputs", "outputs")

    def __init__(self, data: bytes, format: str = "pb", name: str = "<bytes>",
                 inputs: Sequence[str] = (), outputs: Sequence[str] = ()):
        if format not in ("pb", "pbtxt", "onnx", "saved_model"):
            raise Error(f"format: expected pb, pbtxt, onnx or saved_model, got "
                        f"`{format}`", True)
        self.data = bytes(data)
        self.format = format
        self.name = name
        #: Tensor names fed and fetched (``"x:0"``), when known (graft.tf
        #: records them; apply keeps them: rewrites keep output names).
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    def __getstate__(self):
        return (self.data, self.format, self.name, self.inputs, self.outputs)

    def __setstate__(self, state):
        self.data, self.format, self.name, self.inputs, self.outputs = state

    def __repr__(self) -> str:
        return f"graft.Model({self.name!r}, {len(self.data)} bytes, {self.format})"

    def __eq__(self, other) -> bool:
        if self.format == "saved_model":  # a folder: the same folder
            return isinstance(other, Model) and other.format == "saved_model" \
                and os.path.realpath(self.name) == os.path.realpath(other.name)
        return (isinstance(other, Model) and self.data == other.data
                and self.format == other.format)

    def __hash__(self) -> int:
        if self.format == "saved_model":
            return hash(os.path.realpath(self.name))
        return hash((self.data, self.format))

    def _args(self) -> Tuple[str, Optional[bytes], str]:
        if self.format == "saved_model":  # a folder: read where it is
            return (self.name, None, "auto")
        return (self.name, self.data, self.format)

    def to_bytes(self) -> bytes:
        """The model's bytes, in its format."""
        return self.data

    def save(self, path: PathLike, format: str = "auto") -> None:
        """Writes the model atomically (a temporary file, then a rename);
        ``format`` auto: text for .pbtxt/.txt/.prototxt, else binary;
        ``"saved_model"``: a SavedModel folder whose ``serving_default``
        signature feeds ``inputs`` and fetches ``outputs`` (a frozen graph,
        as graft.tf.freeze makes; keys are the tensors' node names)."""
        if format == "saved_model" and self.format != "saved_model":
            if not self.inputs or not self.outputs:
                raise Error("error: a SavedModel signature needs the model's "
                            "inputs and outputs (graft.tf.freeze records "
                            "them; or set Model.inputs and Model.outputs)", True)
            keyed = [[(_signature_key(t), t) for t in tensors]
                     for tensors in (self.inputs, self.outputs)]
            _graft.save_saved_model(*self._args(), os.fspath(path),
                                    "serving_default", *keyed)
            return
        _graft.convert(*self._args(), os.fspath(path), format)

    def stats(self) -> Dict[str, Any]:
        """Node and edge counts, ops, devices, dtypes, inputs and outputs."""
        return _report(_graft.stats(*self._args()))

    @property
    def num_nodes(self) -> int:
        """The number of nodes (the graph is parsed to count them)."""
        return int(self.stats().get("num_nodes", 0))

    @classmethod
    def from_graph_def(cls, graph_def, name: str = "<graph_def>") -> "Model":
        """A TensorFlow ``GraphDef`` message (or any object with
        ``SerializeToString``) as a Model."""
        return cls(graph_def.SerializeToString(), "pb", name)

    def to_graph_def(self):
        """The model as a TensorFlow ``GraphDef`` (needs TensorFlow)."""
        from tensorflow.core.framework import graph_pb2  # pylint: disable=import-outside-toplevel

        graph_def = graph_pb2.GraphDef()
        graph_def.ParseFromString(self.as_format("pb").data)
        return graph_def

    def as_format(self, format: str) -> "Model":
        """The same graph in ``pb`` or ``pbtxt``."""
        if format == self.format:
            return self
        return Model(_graft.convert(*self._args(), "", format), format,
                     self.name, self.inputs, self.outputs)


def _signature_key(tensor: str) -> str:
    name = tensor.split(":")[0]
    return name if tensor.endswith(":0") or ":" not in tensor else \
        name + "_" + tensor.split(":")[1]


def load(source: Union[PathLike, bytes], format: str = "auto",
         name: Optional[str] = None, *, freeze: bool = False,
         signature: Optional[str] = None, tag: str = "serve") -> Model:
    """A model from a file (``.pb``, ``.pbtxt``), a SavedModel folder or
    bytes. Raises graft.Error when it is not a graph.

    A SavedModel is read where it is (``format`` "saved_model"); with
    ``freeze=True`` it is frozen now (``signature``, default the only one
    or ``serving_default``: its call tree inlined, variables as
    constants) into a GraphDef Model whose ``inputs`` and ``outputs`` are
    the signature's tensors."""
    if not isinstance(source, (bytes, bytearray, memoryview)) and \
            os.path.isfile(os.path.join(os.fspath(source), "saved_model.pb")):
        path = os.fspath(source)
        if freeze:
            data, signatures, _ = _graft.freeze_saved_model(
                path, tag, [signature] if signature else [])
            by_key = {key: (ins, outs) for key, ins, outs in signatures}
            key = signature or ("serving_default" if "serving_default" in by_key
                                else next(iter(by_key)) if len(by_key) == 1 else None)
            if key is None:
                raise Error(f"{path}: error: the SavedModel has signatures "
                            f"{', '.join(sorted(by_key))}: choose one with signature=",
                            True)
            ins, outs = by_key[key]
            return Model(data, "pb", name or path, [t for _, t in ins],
                         [t for _, t in outs])
        if signature is not None or tag != "serve":
            raise Error(f"{path}: error: signature= and tag= choose what a frozen "
                        "SavedModel keeps: pass freeze=True", True)
        model = Model(b"", "saved_model", path)
        _graft.stats(*model._args())  # a located error now, not later
        return model
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        fmt = "pb" if format == "auto" else format
        model = Model(data, fmt, name or "<bytes>")
    else:
        path = os.fspath(source)
        fmt = format
        if fmt == "auto":
            fmt = ("pbtxt" if path.lower().endswith(_TEXT_SUFFIXES)
                   else "onnx" if path.lower().endswith(".onnx") else "pb")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise Error(f"{path}: error: {e.strerror.lower()}") from None
        model = Model(data, fmt, name or path)
    _graft.stats(*model._args())  # a located error now, not later
    return model


def _shape_items(input_shapes) -> List[str]:
    if not input_shapes:
        return []
    if isinstance(input_shapes, Mapping):
        # a size, None or -1 (unknown), or a name for a size inputs share
        return [f"{k}=" + ",".join("?" if d is None or (isinstance(d, int) and d < 0)
                                  else str(d) for d in v) for k, v in input_shapes.items()]
    return list(input_shapes)


def _shipped_pipeline(pipeline: str) -> str:
    if pipeline and not os.path.exists(pipeline) and os.sep not in pipeline:
        shipped = os.path.join(RULES_DIR, "pipelines", pipeline + ".yaml")
        if os.path.exists(shipped):
            return shipped
    return pipeline


def _shipped_rules(path: str, folders=("", "tf", "onnx")) -> str:
    """A shipped library by name: ``"fold_batch_norms"`` (TensorFlow's, as
    before the libraries were grouped by dialect), ``"tf/checkpoint"``,
    ``"onnx/quantize_qdq"``, ``"gtt/fold_constants"``; a bare name is
    looked for in ``folders`` of rules/, in order."""
    if path and not os.path.exists(path) and not path.endswith(".graft") \
            and not os.path.isabs(path):
        for folder in folders:
            shipped = os.path.join(RULES_DIR, folder, path + ".graft")
            if os.path.exists(shipped):
                return shipped
    return path


class RuleSet:
    """Rules compiled once, applied to any number of models (from any
    number of threads). Pickles as its sources: a worker compiles them
    again."""

    def __init__(self, native, spec: Dict[str, Any]):
        self._native = native
        self._spec = spec

    @classmethod
    def compile(cls, files: Union[PathLike, Sequence[PathLike], None] = None,
                text: Optional[str] = None, *, pipeline: Optional[str] = None,
                transforms: Optional[str] = None,
                onnxoptimizer_passes: Optional[str] = None,
                params: Optional[Mapping[str, Any]] = None,
                skip_rules: Union[str, Sequence[str]] = (),
                only_rules: Union[str, Sequence[str]] = (),
                name: str = "<rules>", gtt_inputs: str = "",
                outputs: Sequence[str] = (), device: str = "h100_sxm",
                loss: str = "", seed: str = "",
                input_shapes=None, batch: int = 0,
                default_device: str = "", cpu_kernels: str = "onednn") -> "RuleSet":
        """Compiles rule files (a shipped library by name:
        ``"fold_batch_norms"``, ``"quantize"``), rule text (``name`` labels
        it in errors),
        a pipeline (a YAML path, or a shipped one by name: ``"inference"``,
        ``"training-memory"``), a GTT ``--transforms`` string or
        onnxoptimizer's pass names (``onnxoptimizer_passes=
        "fuse_bn_into_conv,eliminate_identity"``, rules/onnx/onnxoptimizer/). ``params``
        override the rules' defaults. ``skip_rules``: rules left out of
        every step, by name or glob (``["rotary_*"]``; each must name a
        rule; ``notes`` says which were left out); ``only_rules``: the
        rules kept, every other left out (the same way). The analysis settings (``device``,
        ``loss``, ``seed``, ``input_shapes`` (``{"ids": ["batch",
        "sequence"]}``: sizes, None for unknown, names for sizes inputs
        share), ``batch``, ``cpu_kernels``:
        TensorFlow's CPU kernels whose scratch the memory model and the
        planners count, ``"onednn"`` or ``"eigen"``) are what the analysis
        hooks assume. Raises graft.Error with diagnostics."""
        if isinstance(files, (str, os.PathLike)):
            files = [files]
        spec = dict(
            files=[_shipped_rules(os.fspath(f)) for f in (files or [])],
            text=text or "",
            name=name, pipeline=_shipped_pipeline(pipeline or ""),
            transforms=transforms or "",
            onnxoptimizer_passes=onnxoptimizer_passes or "", gtt_inputs=gtt_inputs,
            params={k: _param_text(v) for k, v in (params or {}).items()},
            skip_rules=_names(skip_rules), only_rules=_names(only_rules),
            outputs=list(outputs), device=device, loss=loss, seed=seed,
            input_shapes=_shape_items(input_shapes), batch=int(batch),
            default_device=default_device, cpu_kernels=cpu_kernels)
        return cls._from_spec(spec)

    @classmethod
    def _from_spec(cls, spec: Dict[str, Any]) -> "RuleSet":
        settings = _graft.settings(spec["device"], spec["loss"], spec["seed"],
                                   spec["input_shapes"], spec["batch"],
                                   spec["default_device"], False,
                                   spec.get("cpu_kernels", "onednn"), 0)
        native = _graft.compile(
            spec["files"], spec["text"], spec["name"], spec["pipeline"],
            spec["transforms"], spec.get("onnxoptimizer_passes", ""), spec["gtt_inputs"],
            spec["params"], spec.get("skip_rules", []), spec.get("only_rules", []),
            spec["outputs"], settings, _graft.__file__)
        return cls(native, spec)

    def __reduce__(self):
        return (_rules_in_worker, (json.dumps(self._spec, sort_keys=True),))

    @property
    def num_rules(self) -> int:
        """The number of rules, over every file and step."""
        return self._native.num_rules

    @property
    def files(self) -> List[str]:
        """Every rule file compiled (imports included)."""
        return list(self._native.files)

    @property
    def warnings(self) -> str:
        """Lint findings, rendered (the rules compiled)."""
        return self._native.warnings

    @property
    def notes(self) -> List[str]:
        """Notes: GTT params graft does not need, the rules left out."""
        return list(self._native.notes)

    def __repr__(self) -> str:
        return f"graft.RuleSet({self.num_rules} rules)"


_WORKER_RULES: Dict[str, RuleSet] = {}


def _rules_in_worker(spec_json: str) -> RuleSet:
    """A pickled RuleSet arriving in a worker: compiled once per process."""
    rules = _WORKER_RULES.get(spec_json)
    if rules is None:
        rules = RuleSet._from_spec(json.loads(spec_json))
        _WORKER_RULES[spec_json] = rules
    return rules


def _names(names: Union[str, Sequence[str]]) -> List[str]:
    """A name or names (rules to skip) as a list."""
    return [names] if isinstance(names, str) else list(names)


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param_text(v) for v in value) + "]"
    return str(value)


RulesArg = Union[RuleSet, PathLike, Sequence[PathLike], None]


def _rules(rules: RulesArg, pipeline, transforms, params, kwargs) -> RuleSet:
    if isinstance(rules, RuleSet):
        if pipeline or transforms or params or kwargs:
            raise Error("error: a compiled RuleSet takes no further rule "
                        "options; pass them to RuleSet.compile", True)
        return rules
    if isinstance(rules, (str, os.PathLike)) and os.fspath(rules).endswith(
            (".yaml", ".yml")):
        pipeline, rules = os.fspath(rules), None
    return RuleSet.compile(rules, pipeline=pipeline, transforms=transforms,
                           params=params, **kwargs)


def _model(model: Union[Model, PathLike, bytes]) -> Model:
    return model if isinstance(model, Model) else load(model)


def apply(model: Union[Model, PathLike, bytes], rules: RulesArg = None, *,
          pipeline: Optional[str] = None, transforms: Optional[str] = None,
          params: Optional[Mapping[str, Any]] = None,
          outputs: Sequence[str] = (), custom_ops: Sequence[str] = (),
          max_rewrites: int = 0, diff: bool = False,
          output: Optional[PathLike] = None, format: Optional[str] = None,
          functions: Union[str, Sequence[str]] = "all",
          saved_model: str = "freeze",
          **compile_options) -> Tuple[Model, Dict[str, Any]]:
    """Rewrites ``model`` until no rule matches; returns the new model and
    the report (rewrites per rule, nodes before and after, timings).

    ``rules``: a RuleSet, a rule file or files, or a pipeline YAML; or give
    ``pipeline=`` / ``transforms=`` (GTT's string). ``outputs``: fetch
    nodes besides the sinks. ``output``: also write the result there,
    atomically. With ``diff``, the report's ``"diff"`` holds the structural
    diff as text. ``functions``: the library functions (If/While bodies,
    call targets) rewritten too: "all", "none" or names; the report's
    ``"functions"`` says what happened in each. ``saved_model`` (a
    SavedModel folder's model): "freeze" (its signatures inlined,
    variables as constants: the result is a frozen GraphDef, or with
    ``output`` a SavedModel folder without variables) or "in-place" (its
    functions rewritten where they are; needs ``output``). Raises
    graft.Error and writes nothing when a step does not converge or the
    result does not validate."""
    model = _model(model)
    rule_set = _rules(rules, pipeline, transforms, params, compile_options)
    fmt = format or model.format
    if not outputs:  # the model's own fetches, when known
        outputs = sorted({t.split(":")[0].lstrip("^") for t in model.outputs})
    to_folder = model.format == "saved_model" and (
        output is not None or saved_model == "in-place")
    if to_folder and output is None:
        raise Error(f"{model.name}: error: a SavedModel rewritten in place is "
                    "written as a folder: pass output=", True)
    if model.format == "saved_model" and not to_folder:
        fmt = format or "pb"
    data, report_json, diff_text = _graft.apply(
        *model._args(), rule_set._native, list(outputs), list(custom_ops),
        int(max_rewrites), bool(diff), os.fspath(output) if to_folder else "",
        "auto" if to_folder else fmt, _functions(functions), saved_model)
    if to_folder:
        result = load(output)
    else:
        result = Model(data, fmt, model.name, model.inputs, model.outputs)
        if output is not None:
            result.save(output)
    report = _report(report_json)
    if diff:
        report["diff"] = diff_text
    return result, report


def _functions(functions: Union[str, Sequence[str]]) -> str:
    return functions if isinstance(functions, str) else ",".join(functions)


def explain(model: Union[Model, PathLike, bytes], rules: RulesArg, *,
            rule: str = "", node: str = "",
            params: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
    """Where each rule (or only ``rule``) matches, with its bindings; with
    ``node``, whether it matches there and if not why:
    ``[{"rule": ..., "at": [{"node", "function", "matched", "reason",
    "bindings"}]}]`` (``function``: the library function whose body holds
    the node, "" for the graph)."""
    model = _model(model)
    rule_set = _rules(rules, None, None, params, {})
    return json.loads(_graft.explain(*model._args(), rule_set._native, rule,
                                     node))


class Diff(str):
    """A structural diff as text (``str``); ``differs`` says whether the
    graphs differ at all."""

    differs: bool

    def __new__(cls, text: str, differs: bool):
        obj = super().__new__(cls, text)
        obj.differs = differs
        return obj


def diff(before: Union[Model, PathLike, bytes],
         after: Union[Model, PathLike, bytes], *, format: str = "text",
         full: bool = False, context: int = 1) -> Diff:
    """What changed between two graphs: ``text``, ``dot`` or ``html``."""
    a, b = _model(before), _model(after)
    differs, text = _graft.diff(*a._args(), *b._args(), format, bool(full),
                                int(context))
    return Diff(text, differs)


def review(base: Union[PathLike, Sequence[PathLike]],
           head: Union[PathLike, Sequence[PathLike]],
           models: Sequence[PathLike], *,
           params: Optional[Mapping[str, Any]] = None,
           format: str = "text", jobs: int = 0, full: bool = False,
           base_skip_rules: Union[str, Sequence[str]] = (),
           head_skip_rules: Union[str, Sequence[str]] = ()) -> Dict[str, Any]:
    """A rule change (base and head: rule files, a pipeline YAML, or a
    shipped pipeline or library by name, ``"onnx-transformers"``) applied to
    every model: ``{"text": review, "models": [...], "failed": n}``; each
    model's op-count change, rewrites per rule, constants' size and outputs
    first, its node-level diff (cut at 200 lines, or whole with ``full``;
    in markdown only with ``full``) after. ``base_skip_rules`` /
    ``head_skip_rules`` leave rules out of a side (names or globs): the
    same rules on both sides, one without ``["rotary_*"]``, show what
    those rules do."""
    def side(rules):
        if isinstance(rules, (str, os.PathLike)):
            rules = [rules]
        rules = [os.fspath(r) for r in rules]
        pipeline = _shipped_pipeline(rules[0]) if len(rules) == 1 else ""
        if pipeline.endswith((".yaml", ".yml")):
            return [], pipeline
        return [_shipped_rules(r) for r in rules], ""
    bf, bp = side(base)
    hf, hp = side(head)
    text, json_text, failed = _graft.review(
        bf, bp, hf, hp, {k: _param_text(v) for k, v in (params or {}).items()},
        [os.fspath(m) for m in models], format, int(jobs), bool(full),
        _names(base_skip_rules), _names(head_skip_rules))
    return {"text": text, "models": json.loads(json_text)["models"],
            "failed": failed}


def validate(model: Union[Model, PathLike, bytes], *,
             outputs: Sequence[str] = (),
             custom_ops: Sequence[str] = ()) -> Dict[str, Any]:
    """What TensorFlow's importer would refuse:
    ``{"valid": bool, "problems": [...], "nodes": n}``."""
    model = _model(model)
    report = _report(_graft.validate(*model._args(), list(outputs),
                                     list(custom_ops)))
    report.setdefault("problems", [])
    return report


def _settings(device="h100_sxm", loss="", seed="", input_shapes=None,
              batch=0, default_device="", skip_invalid_nodes=False,
              cpu_kernels="onednn", threads=0):
    return _graft.settings(device, loss or "", seed or "",
                           _shape_items(input_shapes), int(batch),
                           default_device, bool(skip_invalid_nodes),
                           cpu_kernels, int(threads))


def mem(model: Union[Model, PathLike, bytes], *, loss: str = "",
        seed: str = "", outputs: Sequence[str] = (), input_shapes=None,
        batch: int = 0, default_device: str = "",
        skip_invalid_nodes: bool = False, cpu_kernels: str = "onednn",
        threads: int = 0) -> Dict[str, Any]:
    """Shapes, forward/backward regions, schedule and simulated peak memory
    per device (``devices[i]["peak_bytes"]``), as ``graft mem --json``.
    ``cpu_kernels``: TensorFlow's CPU kernels whose scratch counts
    (``"onednn"``, or ``"eigen"`` for TensorFlow without oneDNN: the
    convolution gradients' im2col buffers, sized by ``threads``, 0 for this
    machine's). With more than one thread, the schedule runs together the
    siblings TensorFlow's thread pool runs at once; ``threads=1`` is one op
    at a time, the schedule the checkpoint planners plan for."""
    model = _model(model)
    return json.loads(_graft.mem(
        *model._args(), _settings("h100_sxm", loss, seed, input_shapes, batch,
                                  default_device, skip_invalid_nodes,
                                  cpu_kernels, threads),
        list(outputs)))


def cost(model: Union[Model, PathLike, bytes], *, device: str = "h100_sxm",
         input_shapes=None, batch: int = 0, default_device: str = "",
         skip_invalid_nodes: bool = False) -> Dict[str, Any]:
    """Per-op and total roofline estimates on ``device`` (a shipped profile
    or a YAML file), as ``graft cost --json``."""
    model = _model(model)
    return json.loads(_graft.cost(
        *model._args(), _settings(device, "", "", input_shapes, batch,
                                  default_device, skip_invalid_nodes)))


def partition(model: Union[Model, PathLike, bytes], *,
              backward_inputs: Sequence[str], backward_ops: Sequence[str] = (),
              pinned: Sequence[str] = (),
              free: Sequence[str] = (), functional: Sequence[str] = (),
              swappable: Sequence[str] = (), budget: float = 1.0,
              budget_bytes: Optional[int] = None) -> Dict[str, Any]:
    """The forward/backward partition of a joint training graph: which
    forward tensors the forward saves (``saved``, "node:port") so that
    their bytes fit ``budget`` x what saving every tensor the backward reads
    keeps (or ``budget_bytes``), the rest recomputed in the backward
    (``recomputed``) at the least FLOPs graft finds. ``backward_inputs``
    name the backward's inputs (the tangents), ``backward_ops`` ops the
    backward computes though they need none of them; ``pinned`` ops are never
    recomputed, ``free`` ops (views) are recomputed at no cost, and ops
    outside the dialect's registry are never recomputed unless listed in
    ``functional``. The outputs of ``swappable`` ops may wait for the
    backward in host memory: the plan then swaps them out (``swapped``, of
    ``saved``; ``swapped_bytes``), earliest made first, before it
    recomputes anything, and the budget is of the bytes left on the device
    (``saved_bytes``). ``budget_met`` is false when no partition fits: the
    plan then saves the least (``least_bytes``)."""
    model = _model(model)
    return json.loads(_graft.partition(
        *model._args(), list(backward_inputs), list(backward_ops), list(pinned), list(free),
        list(functional), list(swappable), float(budget),
        -1 if budget_bytes is None else int(budget_bytes)))


def test(paths: Union[PathLike, Sequence[PathLike]]) -> List[Dict[str, Any]]:
    """Runs the ``test`` blocks of rule files (or folders of them):
    ``[{"name", "passed", "failure"}]``."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return json.loads(_graft.test_rules([os.fspath(p) for p in paths]))


def fmt(paths: Union[PathLike, Sequence[PathLike]], *,
        write: bool = False) -> List[Dict[str, str]]:
    """Each rule file in graft's canonical format: ``[{"path", "text",
    "diff"}]`` (``diff`` empty when already formatted); with ``write``, the
    files that differ are rewritten atomically."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [dict(path=p, text=t, diff=d) for p, t, d in
            _graft.format_rules([os.fspath(p) for p in paths], bool(write))]


def pipeline_from_transforms(transforms: str, *, inputs: str = "",
                             outputs: Sequence[str] = (),
                             yaml_dir: str = ".") -> Dict[str, Any]:
    """A GTT ``--transforms`` string as pipeline YAML (rule paths relative
    to ``yaml_dir``): ``{"yaml", "steps", "notes"}``."""
    yaml, steps, notes = _graft.pipeline_from_transforms(
        transforms, inputs, list(outputs), yaml_dir, _graft.__file__)
    return {"yaml": yaml, "steps": steps, "notes": list(notes)}
