"""Test inputs of rules/onnx/onnxoptimizer/ passes written with the onnx package
(tests/data/onnx/opt_<case>.onnxtxt): each a small model with one float
input `x` holding what the pass removes and, beside it, what it must keep
(a node named `real`). test_onnxoptimizer_passes.py runs every one in
onnxruntime before and after.

    .venv/bin/python tests/data/make_opt_cases.py
"""
import os

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def model(name, nodes, shape, inits, opset=17):
    """The model, its output `y` typed as onnx's shape inference finds it."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_empty_tensor_value_info("y")], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="graft tests")
    m.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    m.graph.output[0].CopyFrom(inferred.graph.output[0])
    onnx.checker.check_model(m, full_check=True)
    return m


N = helper.make_node
CASES = {
    # Reshape to the shape it has; a real one after
    "reshape": model("reshape", [
        N("Reshape", ["x", "same"], ["a"], name="nop"),
        N("Reshape", ["a", "flat"], ["y"], name="real")],
        [2, 3, 4], [const("same", np.array([2, 3, 4], np.int64)),
                    const("flat", np.array([2, 12], np.int64))]),
    # Expand to the shape it has (and to a shape of ones); a real one after
    "expand": model("expand", [
        N("Expand", ["x", "same"], ["a"], name="nop"),
        N("Expand", ["a", "ones"], ["b"], name="nop_ones"),
        N("Expand", ["b", "wider"], ["y"], name="real")],
        [1, 3, 1], [const("same", np.array([1, 3, 1], np.int64)),
                    const("ones", np.array([1, 1], np.int64)),
                    const("wider", np.array([2, 3, 4], np.int64))]),
    # Flatten of a matrix at axis 1; a real one after an Unsqueeze
    "flatten": model("flatten", [
        N("Flatten", ["x"], ["a"], name="nop", axis=1),
        N("Unsqueeze", ["a", "axis"], ["b"], name="grow"),
        N("Flatten", ["b"], ["y"], name="real", axis=2)],
        [3, 4], [const("axis", np.array([0], np.int64))]),
    # x * 1, x + 0, x / 1, x - 0, x ^ 1; x * ones that broadcast x stays
    "unit": model("unit", [
        N("Mul", ["x", "one"], ["a"], name="mul"),
        N("Add", ["zero", "a"], ["b"], name="add"),
        N("Div", ["b", "one"], ["c"], name="div"),
        N("Sub", ["c", "zero"], ["d"], name="sub"),
        N("Pow", ["d", "one"], ["e"], name="pow"),
        N("Mul", ["e", "wide_ones"], ["y"], name="real")],
        [3, 4], [const("one", np.array(1, np.float32)), const("zero", np.array(0, np.float32)),
                 const("wide_ones", np.ones((2, 3, 4), np.float32))]),
    # ArgMax of Softmax / Exp / Log over the same axis is ArgMax of x;
    # ArgMax of Relu is not
    "argmax": model("argmax", [
        N("Softmax", ["x"], ["s"], name="softmax", axis=1),
        N("ArgMax", ["s"], ["i"], name="argmax", axis=1, keepdims=1),
        N("Relu", ["x"], ["r"], name="relu"),
        N("ArgMax", ["r"], ["j"], name="real", axis=1, keepdims=1),
        N("Add", ["i", "j"], ["k"], name="sum"),
        N("Cast", ["k"], ["y"], name="cast", to=TensorProto.FLOAT)],
        [2, 5], []),
    # Transpose of a Transpose: one, or none where the two undo each other
    "transposes": model("transposes", [
        N("Transpose", ["x"], ["a"], name="first", perm=[0, 2, 3, 1]),
        N("Transpose", ["a"], ["b"], name="undo", perm=[0, 3, 1, 2]),
        N("Transpose", ["b"], ["c"], name="t1", perm=[1, 0, 2, 3]),
        N("Transpose", ["c"], ["y"], name="real", perm=[0, 1, 3, 2])],
        [1, 2, 3, 4], []),
    # ReduceSum without keepdims then Unsqueeze of the same axes: keepdims
    "reduce_unsqueeze": model("reduce_unsqueeze", [
        N("ReduceSum", ["x", "axes"], ["a"], name="reduce", keepdims=0),
        N("Unsqueeze", ["a", "axes"], ["b"], name="unsqueeze"),
        N("Relu", ["b"], ["y"], name="real")],
        [2, 3, 4], [const("axes", np.array([1], np.int64))]),
    # Where(Not(c), a, b) is Where(c, b, a)
    "where": model("where", [
        N("Greater", ["x", "zero"], ["c"], name="real"),
        N("Not", ["c"], ["n"], name="not"),
        N("Where", ["n", "x", "zero"], ["y"], name="where")],
        [3, 4], [const("zero", np.array(0, np.float32))]),
    # Shape of a known shape, a Gather of it and a Slice of it: constants
    "shape": model("shape", [
        N("Shape", ["x"], ["s"], name="shape"),
        N("Gather", ["s", "first"], ["d"], name="gather", axis=0),
        N("Slice", ["s", "start", "end"], ["tail"], name="slice"),
        N("Concat", ["d", "tail"], ["t"], name="concat", axis=0),
        N("Reshape", ["x", "t"], ["y"], name="real")],
        [2, 3, 4], [const("first", np.array([0], np.int64)),
                    const("start", np.array([1], np.int64)),
                    const("end", np.array([3], np.int64))]),
    # Conv then Add of a [1, M, 1, 1] bias: the Conv's bias
    "conv_bias": model("conv_bias", [
        N("Conv", ["x", "w"], ["c"], name="real", kernel_shape=[3, 3]),
        N("Add", ["c", "b"], ["y"], name="bias")],
        [1, 2, 5, 5], [const("w", np.linspace(-1, 1, 4 * 2 * 9, dtype=np.float32)
                              .reshape(4, 2, 3, 3)),
                       const("b", np.array([0.5, -1, 2, 0.25], np.float32).reshape(1, 4, 1, 1))]),
    # Pad with zeros then Conv: the Conv's pads
    "pad_conv": model("pad_conv", [
        N("Pad", ["x", "pads"], ["p"], name="pad"),
        N("Conv", ["p", "w"], ["y"], name="real", kernel_shape=[3, 3], pads=[0, 1, 0, 1])],
        [1, 2, 5, 5], [const("pads", np.array([0, 0, 1, 0, 0, 0, 2, 0], np.int64)),
                       const("w", np.linspace(-1, 1, 3 * 2 * 9, dtype=np.float32)
                             .reshape(3, 2, 3, 3))]),
}


def main():
    for name, m in CASES.items():
        with open(os.path.join(OUT, f"opt_{name}.onnxtxt"), "w") as f:
            f.write(text_format.MessageToString(m))
        print(f"opt_{name}", len(m.graph.node), "nodes")


if __name__ == "__main__":
    main()
