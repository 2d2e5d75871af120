"""Writes the inputs of rules/onnx/quantize_qdq.graft's test blocks:

tests/data/onnx/qdq_cnn.onnxtxt       opset 13: Conv -> Relu -> MaxPool ->
                                      Flatten -> Gemm (transB)
tests/data/onnx/qdq_cnn_ranges.yaml   calibrated ranges of four of its five
                                      activations (not MaxPool's output)

  .venv/bin/python tests/data/make_onnx_quantize.py
"""
import os

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")


def main():
    rng = np.random.default_rng(11)
    f = lambda n, sh: numpy_helper.from_array(rng.normal(0, 0.5, sh).astype(np.float32), n)  # noqa
    node = helper.make_node
    nodes = [node("Conv", ["x", "w1", "b1"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             node("Relu", ["conv"], ["relu"], name="relu"),
             node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             node("Flatten", ["pool"], ["flat"], name="flatten"),
             node("Gemm", ["flat", "w2", "b2"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "qdq_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [f("w1", (4, 3, 3, 3)), f("b1", (4,)), f("w2", (10, 64)), f("b2", (10,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="graft tests")
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(HERE, "qdq_cnn.onnxtxt"), "w") as out:
        out.write(text_format.MessageToString(model))
    with open(os.path.join(HERE, "qdq_cnn_ranges.yaml"), "w") as out:
        out.write('# value: [min, max]\n"x": [-3.0, 3.0]\n"conv": [-4.5, 5.25]\n'
                  '"relu": [0.0, 5.25]\n"flat": [0.0, 5.0]\n')


if __name__ == "__main__":
    main()
