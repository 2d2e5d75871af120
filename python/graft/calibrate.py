"""Calibration for static quantization (rules/onnx/quantize_qdq.graft):
runs an ONNX model in onnxruntime over calibration inputs and writes the
range table the quantize rules read, YAML ``value: [min, max]`` by the
model's value names::

    import graft, graft.calibrate
    graft.calibrate.onnx_ranges("m.onnx", batches, "ranges.yaml")
    graft.apply("m.onnx", "rules/onnx/quantize_qdq.graft",
                params={"ranges": "ranges.yaml"}, output="m.qdq.onnx")

``batches`` is an iterable of feeds (``{input name: numpy array}``). Every
float value a node computes, and every float graph input, is measured; a
value that is ever not finite (a mask's -inf fill, a NaN) gets no range,
so it stays float; the model's own initializers are not measured (the
rules quantize weights from their values). Needs the onnx and onnxruntime packages (not graft's own
dependencies), and a model whose weights fit in one protobuf (2 GiB).
"""
import json
import os
import tempfile
from typing import Dict, Iterable, Mapping

METHODS = ("minmax", "percentile")


def _float_values(model) -> list:
    import onnx
    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    is_float = {v.name for v in list(graph.value_info) + list(graph.input) + list(graph.output)
                if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    initializers = {t.name for t in graph.initializer}
    names = [i.name for i in graph.input] + [o for n in graph.node for o in n.output]
    return [n for n in dict.fromkeys(names) if n and n in is_float and n not in initializers]


def onnx_ranges(model_path: str, batches: Iterable[Mapping[str, "object"]], output: str, *,
                method: str = "minmax", percentile: float = 99.999) -> Dict[str, list]:
    """Measures the model's float values over ``batches`` and writes their
    ranges to ``output`` (atomically); returns them. ``method``:
    ``"minmax"`` (the extremes seen) or ``"percentile"`` (the
    ``100 - percentile`` and ``percentile`` percentiles of all values
    seen, which clips outliers)."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from graft._errors import Error
    if method not in METHODS:
        raise Error(f"method: expected one of {', '.join(METHODS)}, got `{method}`", True)
    try:
        model = onnx.load(model_path)
    except Exception as e:  # noqa: BLE001 - onnx raises protobuf's and OSError
        raise Error(f"{model_path}: error: cannot read the ONNX model: {e}") from None
    names = _float_values(model)
    declared = {o.name for o in model.graph.output}
    for name in names:
        if name not in declared:
            model.graph.output.append(
                onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    lows: Dict[str, float] = {}
    highs: Dict[str, float] = {}
    seen: Dict[str, list] = {n: [] for n in names} if method == "percentile" else {}
    unbounded = set()
    count = 0
    for feed in batches:
        count += 1
        try:
            values = session.run(names, dict(feed))
        except Exception as e:  # noqa: BLE001 - onnxruntime's errors differ by kind
            raise Error(f"{model_path}: error: calibration batch {count}: {e}") from None
        for name, value in zip(names, values):
            value = np.asarray(value, np.float32).ravel()
            if value.size == 0 or name in unbounded:
                continue
            if not np.isfinite(value).all():  # a mask's -inf fill, a NaN: no range
                unbounded.add(name)
                continue
            if method == "percentile":
                seen[name].append(value)
            lows[name] = min(lows.get(name, np.inf), float(value.min()))
            highs[name] = max(highs.get(name, -np.inf), float(value.max()))
    if count == 0:
        raise Error("calibration: no batches were given", True)
    ranges = {}
    for name in names:
        if name not in lows or name in unbounded:
            continue
        if method == "percentile":
            values = np.concatenate(seen[name])
            ranges[name] = [float(np.percentile(values, 100 - percentile)),
                            float(np.percentile(values, percentile))]
        else:
            ranges[name] = [lows[name], highs[name]]
    folder = os.path.dirname(os.path.abspath(output))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        out.write(f"# value: [min, max], {method} over {count} batch(es) of {model_path}\n")
        for name, (lo, hi) in ranges.items():
            out.write(f"{json.dumps(name)}: [{lo!r}, {hi!r}]\n")
    os.replace(out.name, output)
    return ranges
