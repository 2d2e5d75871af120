"""Regenerates dialects/aten/ops/aten_ops.pbtxt: the signatures of PyTorch's
ATen ops (`aten::` schemas of the installed torch) as an OpList the aten
dialect compiles in.

Each overload is one OpDef named as torch.fx prints its target:
`aten.NAME.OVERLOAD` (`aten.conv2d.default`, `aten.add.Tensor`). Tensor
arguments are inputs, in the schema's order (`Tensor?` ones say "optional"
in their description: a left-out one reads the dialect's stand-in; a
`Tensor[]` is a variadic input counted by the attr `N_name`); every other
argument is an attr of the same name, typed ("int", "float", "bool",
"string", "type", "list(int)", ...), with the schema's default where it has
one (an empty one where the default is None or not an attr value: the
attr may be left out, and torch fills it in). Outputs are the schema's returns, named `out0`, `out1`, ... unless
named. An argument the op writes (`Tensor(a!)`) says "mutated" in its
description, and the op's summary says "mutates" (in-place ops and
out= variants), so rules and analyses can tell them from pure ones. An op
torch tags `nondeterministic_seeded` (it draws from the generator:
dropout, bernoulli, rand*, the attention kernels with a dropout) is
`is_stateful`, as TensorFlow's and ONNX's random ops are: never shared
between rewrites nor recomputed by a checkpoint plan.

  .venv/bin/python dialects/aten/ops/gen_aten_ops.py > dialects/aten/ops/aten_ops.pbtxt
"""
import sys

import torch

# By each argument's real type (MemoryFormat and Layout are ints to the
# schema's `type`, and Scalar a number): a Scalar is "number", an int, float
# or bool as the call gives it (clamp(x, 0, 6) keeps an int tensor int);
# devices, layouts and memory formats are their names (`cpu`,
# `torch.strided`, `torch.contiguous_format`).
SCALARS = {"int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "string",
           "ScalarType": "type", "Scalar": "number", "number": "number", "SymFloat": "float",
           "SymBool": "bool"}


def strip_optional(t):
    return t.getElementType() if isinstance(t, torch._C.OptionalType) else t


def is_tensor(t):
    return isinstance(strip_optional(t), torch._C.TensorType)


def is_tensor_list(t):
    t = strip_optional(t)
    return isinstance(t, torch._C.ListType) and is_tensor(t.getElementType())


def attr_type(t):
    t = strip_optional(t)
    if isinstance(t, torch._C.ListType):
        inner = attr_type(t.getElementType())
        return "list(%s)" % inner if not inner.startswith("list") else "list(string)"
    return SCALARS.get(str(t), "string")


def quote(s):
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif ord(c) < 32 or ord(c) > 126:
            out.append("\\%03o" % ord(c) if ord(c) < 256 else "?")
        else:
            out.append(c)
    return '"%s"' % "".join(out)


def default_text(kind, value):
    """The AttrValue text of a default, or None when it has none to give."""
    if value is None:
        return None
    if kind == "int" and isinstance(value, (int, bool)):
        return "i: %d" % int(value)
    if kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "f: %r" % float(value)
    if kind == "number" and isinstance(value, bool):
        return "b: %s" % ("true" if value else "false")
    if kind == "number" and isinstance(value, int):
        return "i: %d" % value
    if kind == "number" and isinstance(value, float):
        return "f: %r" % value
    if kind == "bool" and isinstance(value, bool):
        return "b: %s" % ("true" if value else "false")
    if kind == "string" and isinstance(value, str):
        return "s: %s" % quote(value)
    if kind == "list(int)" and isinstance(value, (list, tuple)):
        return "list { %s }" % " ".join("i: %d" % int(v) for v in value)
    if kind == "list(int)" and isinstance(value, int):  # int[2] stride=1
        return None
    return None


def draws_random(base, overload):
    """Whether torch tags the overload nondeterministic_seeded."""
    try:
        op = getattr(getattr(torch.ops.aten, base), overload)
    except (AttributeError, RuntimeError):
        return False
    return torch.Tag.nondeterministic_seeded in op.tags


def op_text(schema):
    overload = schema.overload_name or "default"
    base = schema.name.split("::", 1)[1]
    name = "aten.%s.%s" % (base, overload)
    lines = ["op {", "  name: %s" % quote(name)]
    attrs = []
    mutates = False
    for arg in schema.arguments:
        written = arg.alias_info is not None and arg.alias_info.is_write
        mutates = mutates or written
        notes = []
        if isinstance(arg.type, torch._C.OptionalType):
            notes.append("optional")
        if written:
            notes.append("mutated")
        if is_tensor(arg.type) or is_tensor_list(arg.type):
            lines.append("  input_arg {")
            lines.append("    name: %s" % quote(arg.name))
            if notes:
                lines.append("    description: %s" % quote(", ".join(notes)))
            if is_tensor_list(arg.type):
                lines.append("    number_attr: %s" % quote("N_" + arg.name))
                attrs.append(("N_" + arg.name, "int", None, ""))
            lines.append("  }")
            continue
        kind = attr_type(arg.real_type)
        default = default_text(kind, arg.default_value) if arg.has_default_value() else None
        if default is None and (arg.has_default_value() or
                                isinstance(arg.type, torch._C.OptionalType)):
            default = ""  # None, or not an attr value: left out means the schema's default
        attrs.append((arg.name, kind, default, "optional" if arg.has_default_value() or
                      isinstance(arg.type, torch._C.OptionalType) else "required"))
    for i, ret in enumerate(schema.returns):
        lines.append("  output_arg {")
        lines.append("    name: %s" % quote(ret.name or "out%d" % i))
        if not (is_tensor(ret.type) or is_tensor_list(ret.type)):
            lines.append("    description: %s" % quote(str(ret.type)))
        lines.append("  }")
    for attr_name, kind, default, note in attrs:
        lines.append("  attr {")
        lines.append("    name: %s" % quote(attr_name))
        lines.append("    type: %s" % quote(kind))
        if default is not None:
            lines.append(("    default_value { %s }" % default) if default else "    default_value {\n    }")
        if note:
            lines.append("    description: %s" % quote(note))
        lines.append("  }")
    if mutates:
        lines.append('  summary: "mutates"')
    if draws_random(base, overload):
        lines.append("  is_stateful: true")
    lines.append("}")
    return name, "\n".join(lines)


def main():
    ops = {}
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        name, text = op_text(schema)
        ops.setdefault(name, text)
    sys.stdout.write("# PyTorch %s's ATen op schemas (%d overloads); regenerate with "
                     "dialects/aten/ops/gen_aten_ops.py\n" % (torch.__version__.split("+")[0],
                                                              len(ops)))
    for name in sorted(ops):
        sys.stdout.write(ops[name] + "\n")


if __name__ == "__main__":
    main()
