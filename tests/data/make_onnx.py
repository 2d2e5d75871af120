"""Writes tests/data/onnx/: small ONNX models for the CLI tests (good and
hostile) and the ONNX loader's fuzz seeds.

  .venv/bin/python tests/data/make_onnx.py

conv_bn.onnx      Conv (with bias) -> BatchNormalization -> Relu, opset 15
ir99.onnx         the same, claiming IR version 99
external.onnx     its weights in an external file that is not there
external_ok.onnx  conv_bn.onnx with every initializer in external_ok.onnx.data
external_past_end.onnx  a tensor said to lie past the end of that file
external_escape.onnx    a tensor's location leaving the model's folder
external_sub.onnx       external_ok.onnx reading sub/external_ok.onnx.data
unknown_value.onnx a node reading a value nothing produces
cycle.onnx        two nodes reading each other
truncated.onnx    conv_bn.onnx cut short
unsorted.onnx     conv_bn.onnx with its nodes in reverse order
string_input.onnx conv_bn.onnx whose input is declared a string tensor
conv_bn.onnxtxt   conv_bn.onnx in the text form (protobuf's text format)
subgraph_ok.onnx  an If whose branches read the outer graph's input
subgraph_unknown.onnx  the same, its then-branch reading a value no scope has
subgraph_bn.onnx  Conv -> BatchNormalization whose output an If reads from its
                  branches: the then-branch a Conv (its weights the outer
                  graph's initializer) -> BatchNormalization, the else-branch
                  a Loop whose body holds Conv -> BatchNormalization -> Relu
fold_*.onnxtxt    the inputs of rules/onnx/fold_batch_norms.graft's test
                  blocks: a Conv without a bias, a ConvTranspose, a Gemm
                  (transB) without and with C, and two that must not fold
                  (training_mode 1; the Conv's output read twice); a MatMul
                  without and with an Add of a constant, and one of rank 3
                  (must not fold: BN's channel axis is not the MatMul's)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")


def conv_bn():
    rng = np.random.default_rng(0)
    f = lambda name, shape, lo=-1, hi=1: numpy_helper.from_array(  # noqa: E731
        rng.uniform(lo, hi, shape).astype(np.float32), name)
    nodes = [
        helper.make_node("Conv", ["x", "w", "c"], ["y"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["y", "s", "b", "m", "v"], ["z"], name="bn"),
        helper.make_node("Relu", ["z"], ["out"], name="relu"),
    ]
    inits = [f("w", (4, 3, 3, 3)), f("c", (4,)), f("s", (4,), 0.5, 1.5), f("b", (4,)),
             f("m", (4,)), f("v", (4,), 0.5, 2.0)]
    graph = helper.make_graph(
        nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)],
                              producer_name="graft tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def fold_case(name, producer, inputs, extra_inits, attrs=None, bn_attrs=None,
              opset=15, shape=(1, 3, 6, 6), out_shape=(), second_reader=False, add=None):
    """`producer` (-> Add of initializer `add`) -> BatchNormalization ->
    Relu, written as fold_NAME.onnxtxt."""
    rng = np.random.default_rng(1)
    f = lambda n, sh, lo=-1, hi=1: numpy_helper.from_array(  # noqa: E731
        rng.uniform(lo, hi, sh).astype(np.float32), n)
    channels = out_shape[1]
    inits = [f(n, sh) for n, sh in extra_inits]
    bn_input = "y_add" if add else "y"
    inits += [f("s", (channels,), 0.5, 1.5), f("b", (channels,)), f("m", (channels,)),
              f("v", (channels,), 0.5, 2.0)]
    nodes = [helper.make_node(producer, inputs, ["y"], name="op", **(attrs or {}))]
    if add:
        nodes.append(helper.make_node("Add", ["y", add], ["y_add"], name="add"))
    nodes += [helper.make_node("BatchNormalization", [bn_input, "s", "b", "m", "v"],
                              ["z", "rm", "rv"] if bn_attrs else ["z"], name="bn",
                              **(bn_attrs or {})),
             helper.make_node("Relu", ["z"], ["out"], name="relu")]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, list(out_shape))]
    if second_reader:
        nodes.append(helper.make_node("Neg", ["y"], ["other"], name="other"))
        outputs.append(helper.make_tensor_value_info("other", TensorProto.FLOAT,
                                                     list(out_shape)))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="graft tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    from google.protobuf import text_format
    with open(os.path.join(HERE, "fold_%s.onnxtxt" % name), "w") as out:
        out.write(text_format.MessageToString(model))


def fold_cases():
    conv = dict(out_shape=(1, 4, 4, 4))
    fold_case("conv", "Conv", ["x", "w"], [("w", (4, 3, 3, 3))], **conv)
    fold_case("conv_transpose", "ConvTranspose", ["x", "w"], [("w", (3, 4, 3, 3))],
              out_shape=(1, 4, 8, 8))
    fold_case("gemm", "Gemm", ["x", "w"], [("w", (5, 3))], attrs={"transB": 1}, shape=(2, 3),
              out_shape=(2, 5))
    fold_case("gemm_bias", "Gemm", ["x", "w", "c"], [("w", (3, 5)), ("c", (5,))], shape=(2, 3),
              out_shape=(2, 5))
    fold_case("matmul", "MatMul", ["x", "w"], [("w", (3, 5))], shape=(2, 3), out_shape=(2, 5))
    fold_case("matmul_add", "MatMul", ["x", "w"], [("w", (3, 5)), ("c", (5,))], shape=(2, 3),
              out_shape=(2, 5), add="c")
    # Rank 3: BatchNormalization's channel (axis 1) is not the MatMul's columns.
    fold_case("matmul_rank3", "MatMul", ["x", "w"], [("w", (3, 5))], shape=(2, 4, 3),
              out_shape=(2, 4, 5))
    fold_case("training", "Conv", ["x", "w"], [("w", (4, 3, 3, 3))],
              bn_attrs={"training_mode": 1}, **conv)
    fold_case("shared_conv", "Conv", ["x", "w"], [("w", (4, 3, 3, 3))], second_reader=True,
              **conv)


def subgraphs():
    def branch(name, value):
        return helper.make_graph(
            [helper.make_node("Neg", [value], [name + "_y"], name=name + "_neg")], name, [],
            [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [2])])
    for file, read in (("subgraph_ok.onnx", "x"), ("subgraph_unknown.onnx", "nowhere")):
        node = helper.make_node("If", ["c"], ["y"], name="if",
                                then_branch=branch("then", read), else_branch=branch("else", "x"))
        graph = helper.make_graph(
            [node], "if", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)],
                                  producer_name="graft tests")
        model.ir_version = 8
        if read == "x":
            onnx.checker.check_model(model, full_check=True)
        with open(os.path.join(HERE, file), "wb") as out:
            out.write(model.SerializeToString())


def subgraph_bn():
    rng = np.random.default_rng(2)
    f = lambda n, sh, lo=-1, hi=1: numpy_helper.from_array(  # noqa: E731
        rng.uniform(lo, hi, sh).astype(np.float32), n)

    def stats(prefix):
        return [f(prefix + "_s", (4,), 0.5, 1.5), f(prefix + "_b", (4,)),
                f(prefix + "_m", (4,)), f(prefix + "_v", (4,), 0.5, 2.0)]

    def conv_bn_nodes(prefix, x, w, out):
        return [helper.make_node("Conv", [x, w], [prefix + "_y"], name=prefix + "_conv",
                                 pads=[1, 1, 1, 1]),
                helper.make_node("BatchNormalization",
                                 [prefix + "_y"] + [prefix + s for s in ("_s", "_b", "_m", "_v")],
                                 [out], name=prefix + "_bn")]
    info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 6, 6])  # noqa
    then_branch = helper.make_graph(
        conv_bn_nodes("then", "y", "w_shared", "then_out"), "then", [], [info("then_out")],
        stats("then"))
    body = helper.make_graph(
        conv_bn_nodes("body", "carried", "body_w", "body_z")
        + [helper.make_node("Relu", ["body_z"], ["carried_out"], name="body_relu"),
           helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 info("carried")],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), info("carried_out")],
        [f("body_w", (4, 4, 3, 3))] + stats("body"))
    else_branch = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "y"], ["else_out"], name="loop", body=body)],
        "else", [], [info("else_out")])
    nodes = conv_bn_nodes("outer", "x", "w", "y") + [
        helper.make_node("If", ["c"], ["z"], name="if", then_branch=then_branch,
                         else_branch=else_branch)]
    graph = helper.make_graph(
        nodes, "subgraph_bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [info("z")],
        [f("w", (4, 3, 3, 3)), f("w_shared", (4, 4, 3, 3)),
         numpy_helper.from_array(np.array(2, np.int64), "trips")] + stats("outer"))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)],
                              producer_name="graft tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, "subgraph_bn.onnx"))


def external_data(model):
    ok = onnx.ModelProto()
    ok.CopyFrom(model)
    for name in ("external_ok.onnx", "external_ok.onnx.data"):
        if os.path.exists(os.path.join(HERE, name)):
            os.remove(os.path.join(HERE, name))
    onnx.save_model(ok, os.path.join(HERE, "external_ok.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external_ok.onnx.data",
                    size_threshold=0)
    ok = onnx.load(os.path.join(HERE, "external_ok.onnx"), load_external_data=False)
    for name, key, value in (("external_past_end.onnx", "offset", "100000"),
                             ("external_escape.onnx", "location", "../external_ok.onnx.data")):
        bad = onnx.ModelProto()
        bad.CopyFrom(ok)
        for e in bad.graph.initializer[0].external_data:
            if e.key == key:
                e.value = value
        with open(os.path.join(HERE, name), "wb") as out:
            out.write(bad.SerializeToString())
    # Every tensor's data in a subfolder: where a link may stand (tests of
    # a folder linked out of the model's).
    sub = onnx.ModelProto()
    sub.CopyFrom(ok)
    for tensor in sub.graph.initializer:
        for e in tensor.external_data:
            if e.key == "location":
                e.value = "sub/external_ok.onnx.data"
    with open(os.path.join(HERE, "external_sub.onnx"), "wb") as out:
        out.write(sub.SerializeToString())


def main():
    os.makedirs(HERE, exist_ok=True)
    model = conv_bn()
    onnx.save(model, os.path.join(HERE, "conv_bn.onnx"))
    from google.protobuf import text_format
    with open(os.path.join(HERE, "conv_bn.onnxtxt"), "w") as out:
        out.write(text_format.MessageToString(model))
    bad = onnx.ModelProto()
    bad.CopyFrom(model)
    bad.ir_version = 99
    onnx.save(bad, os.path.join(HERE, "ir99.onnx"))
    ext = onnx.ModelProto()
    ext.CopyFrom(model)
    w = ext.graph.initializer[0]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "432")):
        w.external_data.add(key=k, value=v)
    with open(os.path.join(HERE, "external.onnx"), "wb") as out:
        out.write(ext.SerializeToString())
    external_data(model)
    fold_cases()
    subgraphs()
    subgraph_bn()
    unknown = onnx.ModelProto()
    unknown.CopyFrom(model)
    unknown.graph.node[2].input[0] = "nowhere"
    with open(os.path.join(HERE, "unknown_value.onnx"), "wb") as out:
        out.write(unknown.SerializeToString())
    cyc = onnx.ModelProto()
    cyc.CopyFrom(model)
    cyc.graph.node[0].input[0] = "out"  # conv reads relu's output
    with open(os.path.join(HERE, "cycle.onnx"), "wb") as out:
        out.write(cyc.SerializeToString())
    unsorted = onnx.ModelProto()
    unsorted.CopyFrom(model)
    unsorted.graph.ClearField("node")
    unsorted.graph.node.extend(reversed(model.graph.node))
    with open(os.path.join(HERE, "unsorted.onnx"), "wb") as out:
        out.write(unsorted.SerializeToString())
    text = onnx.ModelProto()
    text.CopyFrom(model)
    text.graph.input[0].type.tensor_type.elem_type = TensorProto.STRING
    with open(os.path.join(HERE, "string_input.onnx"), "wb") as out:
        out.write(text.SerializeToString())
    data = model.SerializeToString()
    with open(os.path.join(HERE, "truncated.onnx"), "wb") as out:
        out.write(data[: len(data) // 2])
    print("wrote", HERE)


if __name__ == "__main__":
    main()
