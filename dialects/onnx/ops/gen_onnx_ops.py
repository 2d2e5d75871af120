"""Regenerates dialects/onnx/ops/onnx_ops.pbtxt: the signatures of ONNX's ops (the
default domain, and ai.onnx.ml and the preview domains as `domain.Name`),
every version, from the onnx package on PyPI; and onnxruntime's contrib ops
(`com.microsoft.Name`, from the onnxruntime package: the fused ops rules
write, such as SkipLayerNormalization). onnx.checker does not know the
contrib ops, so graft's validator does not check them either; rules are
checked against them.

Each version of an op is one OpDef named `Name@V` (V its since_version);
`Name` alone is the newest. Inputs and outputs keep their names; a
type-constrained one names its constraint in `type_attr` (the constraint
is an attr of type "type" listing its allowed dtypes); `description` says
"optional", "variadic" (one type) or "variadic heterogeneous"; an op's
description says "allows unchecked attributes" where onnx.checker lets a
node carry attrs the op lacks. A type constraint lists the dtypes graft's
IR has; its description says "partial" when the constraint allows others
(sequences, optionals, float4, float8e8m0, 2-bit types). ONNX attrs become attrs of the matching type
("int", "float", "string", "tensor", "graph", "list(int)", ...), with
their defaults; a required attr has none and the description "required".
An op whose outputs are random (Dropout's when training) is stateful.
Documentation is dropped.

  .venv/bin/python dialects/onnx/ops/gen_onnx_ops.py > dialects/onnx/ops/onnx_ops.pbtxt
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import onnx  # noqa: E402
from onnx import defs, helper  # noqa: E402
from tensorflow.core.framework import op_def_pb2, types_pb2  # noqa: E402
from google.protobuf import text_format  # noqa: E402

# ONNX element types (TensorProto.DataType) -> TensorFlow DataType.
DTYPES = {
    "float": types_pb2.DT_FLOAT, "uint8": types_pb2.DT_UINT8, "int8": types_pb2.DT_INT8,
    "uint16": types_pb2.DT_UINT16, "int16": types_pb2.DT_INT16,
    "int32": types_pb2.DT_INT32, "int64": types_pb2.DT_INT64,
    "string": types_pb2.DT_STRING, "bool": types_pb2.DT_BOOL,
    "float16": types_pb2.DT_HALF, "double": types_pb2.DT_DOUBLE,
    "uint32": types_pb2.DT_UINT32, "uint64": types_pb2.DT_UINT64,
    "complex64": types_pb2.DT_COMPLEX64, "complex128": types_pb2.DT_COMPLEX128,
    "bfloat16": types_pb2.DT_BFLOAT16,
    "float8e4m3fn": types_pb2.DT_FLOAT8_E4M3FN, "float8e4m3fnuz": types_pb2.DT_FLOAT8_E4M3FNUZ,
    "float8e5m2": types_pb2.DT_FLOAT8_E5M2, "float8e5m2fnuz": types_pb2.DT_FLOAT8_E5M2FNUZ,
    "uint4": types_pb2.DT_UINT4, "int4": types_pb2.DT_INT4,
}

# Two-operand ops whose operands commute (patterns match them either way).
COMMUTATIVE = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor",
               "Equal", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}

# Ops whose outputs are drawn at random (Dropout when training): marked
# stateful, so that two nodes of them are never taken for one.
RANDOM = {"Bernoulli", "Dropout", "Multinomial", "RandomNormal", "RandomNormalLike",
          "RandomUniform", "RandomUniformLike", "BiasDropout", "BitmaskBiasDropout",
          "BitmaskDropout", "Sampling"}

ATTR_TYPES = {
    "FLOAT": "float", "INT": "int", "STRING": "string", "TENSOR": "tensor",
    "GRAPH": "graph", "SPARSE_TENSOR": "sparse_tensor", "TYPE_PROTO": "type_proto",
    "FLOATS": "list(float)", "INTS": "list(int)", "STRINGS": "list(string)",
    "TENSORS": "list(tensor)", "GRAPHS": "list(graph)",
    "SPARSE_TENSORS": "list(sparse_tensor)", "TYPE_PROTOS": "list(type_proto)",
}


def default_value(attr_def, out):
    """The schema's default (an AttributeProto) as an AttrValue; False when
    it has none graft can hold."""
    value = attr_def.default_value
    if value is None or not value.name:
        return False
    kind = value.type
    if kind == onnx.AttributeProto.FLOAT:
        out.f = value.f
    elif kind == onnx.AttributeProto.INT:
        out.i = value.i
    elif kind == onnx.AttributeProto.STRING:
        out.s = value.s
    elif kind == onnx.AttributeProto.FLOATS:
        out.list.f.extend(value.floats)
    elif kind == onnx.AttributeProto.INTS:
        out.list.i.extend(value.ints)
    elif kind == onnx.AttributeProto.STRINGS:
        out.list.s.extend(value.strings)
    else:
        return False
    return True


def arg(params, param, out):
    out.name = param.name
    option = param.option
    if option == defs.OpSchema.FormalParameterOption.Optional:
        out.description = "optional"
    elif option == defs.OpSchema.FormalParameterOption.Variadic:
        out.description = "variadic" if param.is_homogeneous else "variadic heterogeneous"
        out.number_attr = "N_" + param.name  # the count, known from the node
    if param.type_str in params:
        out.type_attr = param.type_str
    else:
        dtype = DTYPES.get(param.type_str.replace("tensor(", "").rstrip(")"))
        if dtype is not None:
            out.type = dtype
        else:
            out.type_attr = param.type_str


def unchecked_attributes(schema):
    """Whether onnx.checker lets a node of this op carry attrs its schema
    lacks (LayerNormalization and a few others allow unchecked attributes):
    probed with a node carrying an unknown one."""
    from onnx import checker
    inputs = ["x%d" % i for i in range(schema.min_input)]
    outputs = ["y%d" % i for i in range(max(1, schema.min_output))]
    node = helper.make_node(schema.name, inputs, outputs, domain=schema.domain,
                            graft_probe=1)
    ctx = checker.C.CheckerContext()
    ctx.ir_version = onnx.IR_VERSION
    ctx.opset_imports = {schema.domain: schema.since_version}
    try:
        checker.check_node(node, ctx)
    except Exception:  # noqa: BLE001 - refused (or deprecated): checked
        return False
    return True


# Outputs a schema calls optional that its runtime's type inference sets
# all the same: a node loads only when they are there (onnxruntime's
# EmbedLayerNormalization fails "output index 1 is out of range" without
# its mask index). Written, and so named, always.
ALWAYS_WRITTEN = {("com.microsoft", "EmbedLayerNormalization"): {"mask_index"}}


def op_def(schema, name):
    out = op_def_pb2.OpDef(name=name)
    params = {c.type_param_str: c for c in schema.type_constraints}
    for p in schema.inputs:
        arg(params, p, out.input_arg.add())
        if p.option == defs.OpSchema.FormalParameterOption.Variadic:
            # The count of a variadic input, with its least (min_arity).
            out.attr.add(name="N_" + p.name, type="int", has_minimum=True,
                         minimum=p.min_arity)
    for p in schema.outputs:
        arg(params, p, out.output_arg.add())
        if p.name in ALWAYS_WRITTEN.get((schema.domain, schema.name), ()):
            out.output_arg[-1].description = "always written"
    for attr_name in sorted(schema.attributes):
        a = schema.attributes[attr_name]
        attr = out.attr.add(name=attr_name)
        attr.type = ATTR_TYPES.get(str(a.type).split(".")[-1], "string")
        default_value(a, attr.default_value)
        if a.required:
            attr.description = "required"
    for c in schema.type_constraints:
        attr = out.attr.add(name=c.type_param_str, type="type")
        for t in c.allowed_type_strs:
            dtype = DTYPES.get(t.replace("tensor(", "").rstrip(")"))
            if t.startswith("tensor(") and dtype is not None:
                attr.allowed_values.list.type.append(dtype)
            else:  # a sequence, an optional, float4...: not in the list
                attr.description = "partial"
    if isinstance(schema, ContribSchema):
        out.description = "onnxruntime contrib op"
    elif unchecked_attributes(schema):
        out.description = "allows unchecked attributes"
    out.is_commutative = schema.name in COMMUTATIVE
    out.is_stateful = schema.name in RANDOM
    out.summary = "since %d" % schema.since_version
    if schema.deprecated:
        out.deprecation.version = schema.since_version
    return out


class ContribSchema:
    """An onnxruntime contrib op's schema, seen as onnx.defs.OpSchema is."""

    class Param:
        def __init__(self, p):
            self.name, self.type_str = p.name, p.typeStr
            self.is_homogeneous, self.min_arity = p.isHomogeneous, 1
            self.option = getattr(defs.OpSchema.FormalParameterOption, str(p.option).split(".")[-1])

    class Attr:
        def __init__(self, a):
            self.type, self.required = a.type, a.required
            self.default_value = onnx.AttributeProto()
            if a._default_value:
                self.default_value.ParseFromString(a._default_value)

    def __init__(self, s):
        self.name, self.domain, self.since_version = s.name, s.domain, s.since_version
        self.deprecated = s.deprecated
        self.inputs = [self.Param(p) for p in s.inputs]
        self.outputs = [self.Param(p) for p in s.outputs]
        self.attributes = {k: self.Attr(a) for k, a in s.attributes.items()}
        self.type_constraints = s.type_constraints
        self.min_input, self.min_output = s.min_input, s.min_output


def contrib_schemas():
    from onnxruntime.capi import onnxruntime_pybind11_state as ort
    return [ContribSchema(s) for s in ort.get_all_operator_schema()
            if s.domain == "com.microsoft"]


def main():
    schemas = defs.get_all_schemas_with_history() + contrib_schemas()
    # Another domain's op is named `domain.Name`, as graphs name it.
    full = lambda s: s.name if s.domain == "" else "%s.%s" % (s.domain, s.name)  # noqa: E731
    newest = {}
    for s in schemas:
        if full(s) not in newest or s.since_version > newest[full(s)].since_version:
            newest[full(s)] = s
    ops = op_def_pb2.OpList()
    for s in sorted(schemas, key=lambda s: (s.domain != "", full(s), s.since_version)):
        ops.op.append(op_def(s, "%s@%d" % (full(s), s.since_version)))
        if newest[full(s)] is s:
            ops.op.append(op_def(s, full(s)))
    import onnxruntime
    sys.stdout.write("# ONNX %s op signatures (opset %d) and onnxruntime %s's contrib ops; "
                     "regenerate with dialects/onnx/ops/gen_onnx_ops.py\n"
                     % (onnx.__version__, defs.onnx_opset_version(), onnxruntime.__version__))
    sys.stdout.write(text_format.MessageToString(ops))


if __name__ == "__main__":
    main()
