"""Writes tests/data/onnx/opt_*.onnxtxt: the inputs of the test blocks of
rules/onnx/onnxoptimizer/ (onnxoptimizer's passes as rule files), each a small
model with the pattern the pass removes or fuses and, where it matters, a
look-alike it must leave.

  .venv/bin/python tests/data/make_onnx_optimizer.py
"""
import os

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")


def save(name, nodes, inputs, outputs, inits=(), opset=15, ir_version=8):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="graft tests")
    model.ir_version = ir_version
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(HERE, "opt_%s.onnxtxt" % name), "w") as out:
        out.write(text_format.MessageToString(model))


def main():
    rng = np.random.default_rng(4)
    f = lambda n, sh: numpy_helper.from_array(rng.uniform(-1, 1, sh).astype(np.float32), n)  # noqa
    x4 = [("x", [1, 3, 4, 4])]
    node = helper.make_node
    save("identity", [node("Identity", ["x"], ["a"], name="id"),
                      node("Relu", ["a"], ["y"], name="relu")], x4, [("y", [1, 3, 4, 4])])
    save("dropout", [node("Dropout", ["x"], ["a"], name="drop"),
                     node("Relu", ["a"], ["y"], name="relu")], x4, [("y", [1, 3, 4, 4])])
    # Opset 6: without is_test, Dropout is in training mode.
    save("dropout_training", [node("Dropout", ["x"], ["a"], name="drop"),
                              node("Relu", ["a"], ["y"], name="relu")],
         x4, [("y", [1, 3, 4, 4])], opset=6, ir_version=3)
    save("transpose", [node("Transpose", ["x"], ["a"], name="nop", perm=[0, 1, 2, 3]),
                       node("Transpose", ["a"], ["b"], name="real", perm=[0, 2, 3, 1]),
                       node("Relu", ["b"], ["y"], name="relu")], x4, [("y", [1, 4, 4, 3])])
    save("pad", [node("Pad", ["x", "zeros"], ["a"], name="nop"),
                 node("Pad", ["a", "ones"], ["b"], name="real"),
                 node("Relu", ["b"], ["y"], name="relu")], x4, [("y", [1, 3, 6, 6])],
         [numpy_helper.from_array(np.zeros(8, np.int64), "zeros"),
          numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "ones")])
    save("matmul_add", [node("MatMul", ["x", "w"], ["a"], name="mm"),
                        node("Add", ["a", "c"], ["b"], name="add"),
                        node("Relu", ["b"], ["y"], name="relu")],
         [("x", [2, 3])], [("y", [2, 4])], [f("w", (3, 4)), f("c", (4,))])
    save("matmul_add_rank3", [node("MatMul", ["x", "w"], ["a"], name="mm"),
                              node("Add", ["a", "c"], ["b"], name="add"),
                              node("Relu", ["b"], ["y"], name="relu")],
         [("x", [2, 2, 3])], [("y", [2, 2, 4])], [f("w", (3, 4)), f("c", (4,))])
    save("unused", [node("Relu", ["x"], ["y"], name="relu")], x4, [("y", [1, 3, 4, 4])],
         [f("unused_w", (3, 3))])
    save("concat", [node("Concat", ["x"], ["a"], name="one", axis=1),
                    node("Concat", ["a", "x"], ["b"], name="two", axis=1),
                    node("Relu", ["b"], ["y"], name="relu")], x4, [("y", [1, 6, 4, 4])])
    save("idempotent", [node("Relu", ["x"], ["a"], name="relu1"),
                        node("Relu", ["a"], ["b"], name="relu2"),
                        node("Floor", ["b"], ["c"], name="floor1"),
                        node("Floor", ["c"], ["y"], name="floor2")], x4, [("y", [1, 3, 4, 4])])
    save("log_softmax", [node("Softmax", ["x"], ["a"], name="softmax", axis=1),
                         node("Log", ["a"], ["y"], name="log")], [("x", [2, 5])], [("y", [2, 5])])
    save("transpose_gemm", [node("Transpose", ["x"], ["xt"], name="ta", perm=[1, 0]),
                            node("Transpose", ["w"], ["wt"], name="tb", perm=[1, 0]),
                            node("Gemm", ["xt", "wt", "c"], ["y"], name="gemm", transB=1)],
         [("x", [3, 2])], [("y", [2, 4])], [f("w", (3, 4)), f("c", (4,))])
    save("transpose_gemm_no_c", [node("Transpose", ["x"], ["xt"], name="ta", perm=[1, 0]),
                                 node("Transpose", ["w"], ["wt"], name="tb", perm=[1, 0]),
                                 node("Gemm", ["xt", "wt"], ["y"], name="gemm")],
         [("x", [3, 2])], [("y", [2, 4])], [f("w", (4, 3))])
    # Opset 12 on: the ratio is an input; not in training mode, a no-op.
    save("dropout_ratio", [node("Dropout", ["x", "ratio"], ["a"], name="drop"),
                           node("Relu", ["a"], ["y"], name="relu")],
         x4, [("y", [1, 3, 4, 4])],
         [numpy_helper.from_array(np.array(0.3, np.float32), "ratio")])
    print("wrote", HERE)


if __name__ == "__main__":
    main()
