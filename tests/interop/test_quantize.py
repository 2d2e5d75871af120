"""Fake-quant insertion (rules/tf/quantize.graft) on BN-folded tf-keras
MobileNetV2 and ResNet50 and Keras 3's MobileNetV2: TensorFlow runs the quantized graphs; the number of
fake-quant ops matches a count made here from the folded graph's own op
list; the signal-to-quantization-noise ratio (SQNR) of the logits against
the float graph and the top-1 agreement are reported for per-tensor and
per-channel weights, with default and with calibrated activation ranges.
8-bit per-channel weights with calibrated ranges must reach 20 dB.

The numbers are printed and written to
bazel-testlogs-interop/quantize_sqnr.txt."""
import collections

import keras  # Keras 3
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from conftest import module_folder, numbers_report, repo_path, run_graph
from models import FOLD_RULES, batch_norms_left, freeze, graft_apply, last_identity, randomize_batch_norms

QUANTIZE_RULES = repo_path("rules", "tf", "quantize.graft")
RNG = np.random.default_rng(11)
CONVS = ("Conv2D", "DepthwiseConv2dNative", "MatMul")


def producer(name):
    return name.lstrip("^").split(":")[0]


def quantized_activations(graph_def):
    """The tensors quantize.graft gives a fake-quant, found from the op list
    alone: Relu6 outputs; Relu, BiasAdd, Add and AddV2 outputs no Relu* reads;
    Identity outputs of non-constants; each only when something reads it."""
    ops = {n.name: n.op for n in graph_def.node}
    readers = collections.defaultdict(list)
    for n in graph_def.node:
        for i in n.input:
            if not i.startswith("^") and (":" not in i or i.endswith(":0")):
                readers[producer(i)].append(n.op)
    out = []
    for n in graph_def.node:
        if not readers[n.name]:
            continue
        if n.op == "Relu6":
            out.append(n.name)
        elif n.op in ("Relu", "BiasAdd", "Add", "AddV2") and \
                not any(op.startswith("Relu") for op in readers[n.name]):
            out.append(n.name)
        elif n.op == "Identity" and ops[producer(n.input[0])] != "Const":
            out.append(n.name)
    return out


def expected_fake_quants(graph_def, per_channel):
    """(per-tensor, per-channel) fake-quant op counts."""
    ops = {n.name: n.op for n in graph_def.node}
    per_tensor, per_chan = set(), set()
    for n in graph_def.node:
        if n.op in CONVS and ops[producer(n.input[1])] == "Const":
            w = producer(n.input[1])
            transpose_b = n.op == "MatMul" and n.attr["transpose_b"].b
            if per_channel and n.op != "DepthwiseConv2dNative" and not transpose_b:
                per_chan.add(w)
            else:
                per_tensor.add(w)
    return len(per_tensor) + len(quantized_activations(graph_def)), len(per_chan)


def calibrate(graph_def, fetch, path):
    """Runs the float graph on calibration inputs; writes each quantized
    activation's [min, max] as a graft range file."""
    names = quantized_activations(graph_def)
    shape = [d.size for d in next(n for n in graph_def.node if n.name == "input")
             .attr["shape"].shape.dim]
    x = RNG.standard_normal([16] + shape[1:]).astype(np.float32)
    values = run_graph(graph_def, {"input:0": x}, [n + ":0" for n in names])
    with open(path, "w") as f:
        f.write("# calibrated on 16 random inputs\n")
        for name, v in zip(names, values):
            f.write('"%s": [%r, %r]\n' % (name, float(v.min()), float(v.max())))


def sqnr_db(reference, quantized):
    noise = np.sum((reference.astype(np.float64) - quantized) ** 2)
    return float("inf") if noise == 0 else 10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / noise)


MODELS = {  # tf-keras applications (fused batch norms) and Keras 3 (unfused)
    "mobilenet_v2": (tf_keras.applications.MobileNetV2, 96, tf_keras.layers.BatchNormalization),
    "resnet50": (tf_keras.applications.ResNet50, 64, tf_keras.layers.BatchNormalization),
    "keras3_mobilenet_v2": (keras.applications.MobileNetV2, 96, keras.layers.BatchNormalization),
}


@pytest.fixture(scope="module")
def folded_models(tmp_path_factory):
    """Each model frozen with random weights and BN statistics, then folded
    by rules/tf/fold_batch_norms.graft; outputs are logits."""
    out = {}
    with module_folder(tmp_path_factory, "folded") as tmp:
        for name, (ctor, size, bn_class) in MODELS.items():
            model = ctor(weights=None, input_shape=(size, size, 3), classes=10,
                         classifier_activation=None)
            randomize_batch_norms(RNG, model, bn_class)
            original = freeze(model, [None, size, size, 3])
            folded, _ = graft_apply(original, tmp, name, "-r", FOLD_RULES)
            assert batch_norms_left(folded.node) == []
            out[name] = (folded, last_identity(original), size)
    return out


@pytest.fixture(scope="module")
def report():
    yield from numbers_report("quantize_sqnr.txt", "model, weights, activation ranges: SQNR of the logits (dB), top-1 agreement")


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("calibrated", [False, True], ids=["default_ranges", "calibrated"])
def test_quantized_model(tmp_path, folded_models, report, model, per_channel, calibrated):
    folded, fetch, size = folded_models[model]
    args = ["-r", QUANTIZE_RULES, "--param", "per_channel=%s" % str(per_channel).lower()]
    if calibrated:
        ranges = tmp_path / "ranges.yaml"
        calibrate(folded, fetch, ranges)
        args += ["--param", "ranges=%s" % ranges]
    quantized, log = graft_apply(folded, tmp_path, model, *args)

    # The fake-quant ops, counted from TensorFlow's op list of each graph.
    want_tensor, want_channel = expected_fake_quants(folded, per_channel)
    got = collections.Counter(n.op for n in quantized.node)
    assert got["FakeQuantWithMinMaxVars"] == want_tensor, log
    assert got["FakeQuantWithMinMaxVarsPerChannel"] == want_channel, log
    assert want_tensor > 50

    # Applying the library again changes nothing.
    again, log2 = graft_apply(quantized, tmp_path, model + "_again", *args)
    assert again == quantized, log2

    x = RNG.standard_normal((8, size, size, 3)).astype(np.float32)
    reference = run_graph(folded, {"input:0": x}, fetch)
    result = run_graph(quantized, {"input:0": x}, fetch)
    sqnr = sqnr_db(reference, result)
    top1 = float(np.mean(np.argmax(reference, 1) == np.argmax(result, 1)))
    report.append("%s, %s, %s: %.1f dB, top-1 %.0f%%" % (
        model, "per-channel" if per_channel else "per-tensor",
        "calibrated" if calibrated else "default", sqnr, 100 * top1))
    if per_channel and calibrated:
        assert sqnr >= 20, "%s: SQNR %.1f dB" % (model, sqnr)


def test_mixed_precision_model(tmp_path, report):
    """A mixed_float16 MobileNetV2 (float16 activations, float32 weights
    cast to float16 for each conv), folded: every activation the library
    quantizes gets its fake-quant (float16 ones in float32 between two
    Casts), every weight before its Cast; TensorFlow runs the result, and
    per-channel calibrated 8 bits reach 20 dB."""
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = tf_keras.applications.MobileNetV2(
            weights=None, input_shape=(96, 96, 3), classes=10, classifier_activation=None)
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")
    randomize_batch_norms(RNG, model, tf_keras.layers.BatchNormalization)
    original = freeze(model, [None, 96, 96, 3])
    folded, _ = graft_apply(original, tmp_path, "mixed", "-r", FOLD_RULES)
    fetch = last_identity(original)
    ranges = tmp_path / "ranges.yaml"
    calibrate(folded, fetch, ranges)
    args = ["-r", QUANTIZE_RULES, "--param", "per_channel=true", "--param", "ranges=%s" % ranges]
    quantized, log = graft_apply(folded, tmp_path, "mixed_q", *args)
    ops = {n.name: n for n in quantized.node}
    half = [n for n in quantized.node if n.op == "FakeQuantWithMinMaxVars"
            and ops[producer(n.input[0])].op == "Cast"]
    assert len(half) > 40, log
    activations = quantized_activations(folded)
    quantized_names = {producer(n.input[0]) for n in quantized.node if n.op.startswith("FakeQuant")}
    quantized_names |= {producer(ops[c].input[0]) for c in quantized_names if ops[c].op == "Cast"}
    assert [a for a in activations if a not in quantized_names] == []
    # Weights the library reads: a Const, or a Const through its Cast (as in
    # float32 graphs, a weight read through a variable's Identity is not).
    by_name = {n.name: n for n in folded.node}

    def constant_weight(name):
        n = by_name[producer(name)]
        return n.op == "Const" or (n.op == "Cast" and by_name[producer(n.input[0])].op == "Const")
    weights = sum(1 for n in folded.node if n.op in CONVS and constant_weight(n.input[1]))
    assert sum(n.op.startswith("FakeQuant") for n in quantized.node) == len(activations) + weights, log
    again, log2 = graft_apply(quantized, tmp_path, "mixed_q_again", *args)
    assert again == quantized, log2
    x = RNG.standard_normal((8, 96, 96, 3)).astype(np.float32)
    reference = run_graph(folded, {"input:0": x}, fetch).astype(np.float32)
    result = run_graph(quantized, {"input:0": x}, fetch).astype(np.float32)
    sqnr = sqnr_db(reference, result)
    top1 = float(np.mean(np.argmax(reference, 1) == np.argmax(result, 1)))
    report.append("mobilenet_v2 mixed_float16, per-channel, calibrated: %.1f dB, top-1 %.0f%%" % (
        sqnr, 100 * top1))
    assert sqnr >= 20, "SQNR %.1f dB" % sqnr


def test_inference_pipeline_on_the_example(tmp_path):
    """The README's main job: fold, then quantize; TensorFlow runs it."""
    original = tf.compat.v1.GraphDef()
    original.ParseFromString(open(repo_path("examples", "keras_cnn.pb"), "rb").read())
    pipeline = repo_path("rules", "pipelines", "inference.yaml")
    result, log = graft_apply(original, tmp_path, "example", "--pipeline", pipeline)
    folded, _ = graft_apply(original, tmp_path, "example_folded", "-r", FOLD_RULES)
    assert not any("BatchNorm" in n.op for n in result.node), log
    want_tensor, _ = expected_fake_quants(folded, per_channel=False)
    assert sum(n.op == "FakeQuantWithMinMaxVars" for n in result.node) == want_tensor, log
    x = RNG.standard_normal((4, 32, 32, 3)).astype(np.float32)
    reference = run_graph(original, {"input:0": x}, "Identity:0")
    quantized = run_graph(result, {"input:0": x}, "Identity:0")
    assert sqnr_db(reference, quantized) >= 20
