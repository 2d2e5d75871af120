"""PyTorch graphs of ATen ops in graft's aten dialect, and back.

``to_aten_text(exported_program)`` writes a ``torch.export``ed program as an
ATen graph in graft's file form (a text GraphDef, ``.aten.pbtxt``:
dialects/aten/aten_graph.h); ``from_aten_text(text, exported_program)``
reads a rewritten one back as a ``torch.fx.GraphModule`` whose parameters
are the graph's constants. Only torch is needed (imported when called);
this module does not load graft's extension.

In the file, a call_function node is a node whose op is its target as
torch.fx prints it (``aten.conv2d.default``), its Tensor arguments its
inputs in the schema's order (a ``None`` one reads ``_absent``), every other
argument an attr of the same name. ``getitem(x, i)`` is no node: its
readers read ``x:i``; what torch.export knew of its outputs is in
``_output_shapes`` and ``_output_types``. Parameters, buffers and lifted constants are Consts
holding their values (attr ``_target``: the state-dict entry); user inputs
are Placeholders; the outputs are ``_Retval`` nodes.
"""
import codecs
import collections
import operator
import re
import struct

ABSENT = "_absent"
_MAX_DEPTH = 100  # messages nested deeper are refused, not recursed into

# torch dtype name -> the IR's DataType (proto/graph.proto): name, number.
_DTYPES = {
    "float32": ("DT_FLOAT", 1), "float64": ("DT_DOUBLE", 2), "int32": ("DT_INT32", 3),
    "uint8": ("DT_UINT8", 4), "int16": ("DT_INT16", 5), "int8": ("DT_INT8", 6),
    "int64": ("DT_INT64", 9), "bool": ("DT_BOOL", 10), "bfloat16": ("DT_BFLOAT16", 14),
    "float16": ("DT_HALF", 19),
}


# Each byte as text format writes it in a string: printable ASCII as it is
# (quote and backslash escaped), the rest as three octal digits.
_QUOTED = ["\\" + chr(b) if chr(b) in '"\\' else chr(b) if 32 <= b < 127 else "\\%03o" % b
           for b in range(256)]


def _quote(data):
    if isinstance(data, str):
        data = data.encode()
    return '"%s"' % "".join(map(_QUOTED.__getitem__, data))


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _enum(dtype):
    return _DTYPES[_dtype_name(dtype)][0]


# A message is a dict of field name -> list of values: messages are dicts,
# strings bytes, enums their names, numbers and bools Python's (parsed text
# gives numbers and bools as their tokens: readers take both).

def _tensor_message(t):
    import torch
    t = t.detach().contiguous().cpu()
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return {"dtype": [_enum(t.dtype)],
            "tensor_shape": [{"dim": [{"size": [d]} for d in t.shape]}],
            "tensor_content": [raw]}


def _attr_message(value):
    """The AttrValue of a non-tensor argument, or None to leave it out."""
    import torch
    if value is None:
        return None
    if isinstance(value, bool):
        return {"b": [value]}
    if isinstance(value, int):
        return {"i": [value]}
    if isinstance(value, float):
        return {"f": [value]}
    if isinstance(value, str):
        return {"s": [value.encode()]}
    if isinstance(value, torch.dtype):
        return {"type": [_enum(value)]}
    if isinstance(value, (list, tuple)) and all(isinstance(v, bool) for v in value):
        return {"list": [{"b": list(value)}]}
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return {"list": [{"i": list(value)}]}
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return {"list": [{"f": [float(v) for v in value]}]}
    return {"s": [str(value).encode()]}  # devices, layouts, memory formats


def _is_tensor_type(t, torch):
    if isinstance(t, torch._C.OptionalType):
        t = t.getElementType()
    if isinstance(t, torch._C.ListType):
        t = t.getElementType()
        if isinstance(t, torch._C.OptionalType):
            t = t.getElementType()
    return isinstance(t, torch._C.TensorType)


def _is_tensor_value(value):
    import torch
    return isinstance(value, torch.Tensor)


# `_number: true` on a Const that holds a Python number the call passed as
# a Tensor argument (`add(x, 3)`): read back as that number, not a buffer.
NUMBER = "_number"

# `_symbolic_<arg>`: per item of the argument `arg`, the node whose symbolic
# size it is ("" for a number written as it is); those nodes are control
# inputs of the node, so that nothing drops them as unread.
SYMBOLIC = "_symbolic_"


# Arithmetic on symbolic sizes: a node `_sym.<function>` (`_sym.mul`), its
# operands the attr `args` (numbers as they are, symbolic ones as SYMBOLIC
# says), read back as the call of that function.
SIZE_OP = "_sym."
_OPERANDS = collections.namedtuple("Argument", "name")("args")


def _size_functions():
    """The functions torch.export writes arithmetic on sizes with, by the
    name their node's op carries."""
    import math
    import torch
    return {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "floordiv": operator.floordiv, "truediv": operator.truediv, "mod": operator.mod,
            "pow": operator.pow, "neg": operator.neg, "eq": operator.eq, "ne": operator.ne,
            "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
            "and": operator.and_, "or": operator.or_, "sym_max": torch.sym_max,
            "sym_min": torch.sym_min, "sym_float": torch.sym_float, "sym_int": torch.sym_int,
            "sym_not": torch.sym_not, "ceil": math.ceil, "floor": math.floor,
            "trunc": math.trunc}


def _holds_node(value):
    import torch.fx
    if isinstance(value, (list, tuple)):
        return any(_holds_node(v) for v in value)
    return isinstance(value, torch.fx.Node)


def _node(name, op, inputs=(), attrs=()):
    return {"name": [name.encode()], "op": [op.encode()],
            "input": [i.encode() for i in inputs],
            "attr": [{"key": [k.encode()], "value": [v]} for k, v in attrs]}


def _size(d, hinted):
    """A dim as written: its number; a symbolic one -1, or with `hinted`
    its hint (the size the compile traced with)."""
    if isinstance(d, int):
        return d
    return _hint(d) if hinted else -1


def _hint(value):
    """The number a symbolic size, float or bool stands for in the example
    being compiled; a ValueError for one that depends on data."""
    hint = getattr(value, "hint", None)
    if hint is None:
        raise ValueError("graft.aten: the size `%s` depends on data (no hint to plan with)"
                         % value)
    return hint


def _output_attrs(val, hinted=False):
    """`_output_shapes` and `_output_types` of a node whose meta["val"] is
    `val` (a tensor or a tuple of them), as graft's shape inference and cost
    model read them; none when not all tensors."""
    import torch
    vals = list(val) if isinstance(val, (list, tuple)) else [val]
    if not vals or not all(isinstance(v, torch.Tensor) for v in vals):
        return []
    shapes = [{"dim": [{"size": [_size(d, hinted)]} for d in v.shape]} for v in vals]
    return [("_output_shapes", {"list": [{"shape": shapes}]}),
            ("_output_types", {"list": [{"type": [_enum(v.dtype) for v in vals]}]})]


class _Writer:
    """NodeDefs of an FX graph of ATen ops: getitems become ports of their
    producer, None arguments one `_Absent` node, Python numbers passed as
    Tensors `Const`s. With `hinted`, symbolic sizes are planned at their
    hints: a tensor's symbolic dims take them, and symbolic numbers (SymInt
    placeholders, `sym_size` and the arithmetic on it) are not nodes but
    the numbers they stand for, wherever they are read."""

    def __init__(self, hinted=False):
        self.alias = {}   # getitem node -> "producer:i"
        self.nodes = []
        self.absent = False
        self.hinted = hinted
        self.numbers = {}  # symbolic node -> its hint

    def ref(self, value):
        import torch
        if value is None:
            if not self.absent:
                self.absent = True
                self.nodes.insert(0, _node(ABSENT, "_Absent"))
            return ABSENT
        if getattr(value, "name", None) in self.numbers:
            value = self.numbers[value.name]
        if isinstance(value, (bool, int, float)):  # a Python number as a Tensor argument
            name = "_scalar_%d" % len(self.nodes)
            t = torch.tensor(value)
            self.nodes.append(_node(name, "Const", (), [
                ("dtype", {"type": [_enum(t.dtype)]}), ("value", {"tensor": [_tensor_message(t)]}),
                (NUMBER, {"b": [True]})]))
            return name
        return self.alias.get(value.name, value.name)

    def number(self, node):
        """Whether `node` is a symbolic number, taken as its hint."""
        import torch
        val = node.meta.get("val")
        if not (self.hinted and isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool))):
            return False
        self.numbers[node.name] = _hint(val)
        return True

    def argument(self, value):
        """A non-tensor argument with its symbolic numbers as their hints."""
        import torch.fx
        if isinstance(value, (list, tuple)):
            return type(value)(self.argument(v) for v in value)
        if isinstance(value, torch.fx.Node) and value.name in self.numbers:
            return self.numbers[value.name]
        return value

    def placeholder(self, node):
        val = node.meta.get("val")
        dims = [{"size": [_size(d, self.hinted)]} for d in val.shape]
        self.nodes.append(_node(node.name, "Placeholder", (), [
            ("dtype", {"type": [_enum(val.dtype)]}), ("shape", {"shape": [{"dim": dims}]})]))

    def call(self, node):
        """A call_function node: a getitem as a port, an ATen op by its
        schema (Tensor arguments as inputs, the rest as attrs)."""
        import torch
        if self.number(node):
            return
        if node.target is operator.getitem:
            self.alias[node.name] = "%s:%d" % (self.ref(node.args[0]), node.args[1])
            return
        schema = getattr(node.target, "_schema", None)
        if schema is None and isinstance(node.meta.get("val"),
                                         (torch.SymInt, torch.SymFloat, torch.SymBool)):
            self.size_arithmetic(node)
            return
        if schema is None:
            raise ValueError("graft.aten: `%s` calls %s, not an ATen op" % (node.name, node.target))
        inputs, attrs = [], []
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args):
                value = node.args[i]
            elif arg.name in node.kwargs:
                value = node.kwargs[arg.name]
            else:
                continue  # the schema's default
            if _is_tensor_type(arg.type, torch):
                if isinstance(value, (list, tuple)):
                    inputs += [self.ref(v) for v in value]
                    attrs.append(("N_" + arg.name, {"i": [len(value)]}))
                else:
                    inputs.append(self.ref(value))
                continue
            value = self.argument(value)
            if _holds_node(value):
                value, sources = self.symbolic(node, arg, value)
                attrs.append((SYMBOLIC + arg.name, {"list": [{"s": [s.encode() for s in sources]}]}))
                inputs += ["^" + s for s in sources if s and "^" + s not in inputs]
            message = _attr_message(value)
            if message is not None:
                attrs.append((arg.name, message))
        inputs.sort(key=lambda i: i.startswith("^"))  # control inputs last
        if GRAD_ENABLED in node.meta:
            attrs.append((GRAD_ENABLED, {"b": [bool(node.meta[GRAD_ENABLED])]}))
        self.nodes.append(_node(node.name, str(node.target), inputs,
                                attrs + _output_attrs(node.meta.get("val"), self.hinted)))

    def size_arithmetic(self, node):
        """Arithmetic on symbolic sizes (`s0 * 64`): a `_sym.<function>`
        node, its operands the attr `args` as `symbolic` writes arguments."""
        names = {fn: name for name, fn in _size_functions().items()}
        if node.target not in names or node.kwargs:
            raise ValueError("graft.aten: `%s` computes a symbolic size by %s, which graft "
                             "does not read (it reads %s)" % (
                                 node.name, getattr(node.target, "__name__", node.target),
                                 ", ".join(sorted(_size_functions()))))
        value, sources = self.symbolic(node, _OPERANDS, list(node.args))
        self.nodes.append(_node(node.name, SIZE_OP + names[node.target],
                                ["^" + s for s in dict.fromkeys(sources) if s], [
                                    (_OPERANDS.name, _attr_message(value)),
                                    (SYMBOLIC + _OPERANDS.name,
                                     {"list": [{"s": [s.encode() for s in sources]}]})]))

    def symbolic(self, node, arg, value):
        """An argument that holds symbolic sizes (`view(x, [sym_size_int,
        -1])` of a dynamic batch): its value at the example's sizes, and per
        item the node that computes it ("" for a number). Such a node must
        be an ATen op (`aten.sym_size.int`): arithmetic on sizes is refused
        where it is computed."""
        import torch.fx
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        plain, sources = [], []
        for v in items:
            if not isinstance(v, torch.fx.Node):
                plain.append(v)
                sources.append("")
                continue
            if v.op != "call_function":
                raise ValueError("graft.aten: `%s` (%s) takes its argument `%s` from `%s`, "
                                 "a %s node: not read yet" % (node.name, node.target, arg.name,
                                                              v.name, v.op))
            plain.append(_hint(v.meta.get("val")))
            sources.append(self.ref(v))
        if isinstance(value, (list, tuple)):
            return type(value)(plain), sources
        return plain[0], sources

    def outputs(self, values):
        for i, value in values:
            self.nodes.append(_node("output_%d" % i, "_Retval", [self.ref(value)],
                                    [("index", {"i": [i]})]))


# `_grad_enabled` on the nodes of a `torch.no_grad()` (or `enable_grad()`)
# block, the grad mode they run in (the `wrap_with_set_grad_enabled` region
# torch.export writes); nodes without it run in the caller's mode. Read
# back, a run of such nodes sits between `_set_grad_enabled` calls, which a
# re-export makes the same region again.
GRAD_ENABLED = "_grad_enabled"


def _grad_regions_inlined(module):
    """`module`'s graph with each `wrap_with_set_grad_enabled` region's body
    in its place, its nodes marked with the grad mode they run in
    (meta[GRAD_ENABLED]); a copy: the program is left as it was. Other
    higher-order ops stay, to be refused where they are read."""
    import torch.fx
    graph = torch.fx.Graph()
    _copy_inlining(module, graph, {}, True, body=False)
    return graph


def _copy_inlining(module, graph, env, enabled, body):
    """Copies `module`'s nodes into `graph` (its placeholders already in
    `env` when it is a region's body), regions inlined; the values its
    output node returns (a body's), or its output node copied (the top)."""
    import torch
    import torch.fx
    wrap = getattr(torch.ops.higher_order, "wrap_with_set_grad_enabled", object())
    regions = {}  # a region's node -> its body's outputs

    def mapped(arg):
        return torch.fx.node.map_arg(arg, lambda n: env[n])

    for node in module.graph.nodes:
        if node.op == "placeholder" and body:
            continue
        if node.op == "output" and body:
            return list(mapped(node.args[0]))
        if node.op == "get_attr" and node.users and all(u.target is wrap for u in node.users):
            continue  # a region's body: inlined where it is called
        if node.op == "call_function" and node.target is wrap:
            inner = getattr(module, str(node.args[1].target))
            env.update(zip([n for n in inner.graph.nodes if n.op == "placeholder"],
                           mapped(tuple(node.args[2:]))))
            regions[node] = _copy_inlining(inner, graph, env, bool(node.args[0]), body=True)
            continue
        if node.op == "call_function" and node.target is operator.getitem \
                and node.args[0] in regions:
            env[node] = regions[node.args[0]][node.args[1]]
            continue
        env[node] = graph.node_copy(node, lambda n: env[n])
        if body:
            env[node].meta[GRAD_ENABLED] = enabled
    return None


def graph_message(program):
    """An ExportedProgram's graph as the GraphDef message of its ATen graph
    file (the dict form `to_aten_text` and `to_aten_bytes` write)."""
    from torch.export.graph_signature import ConstantArgument, InputKind
    specs = {s.arg.name: s for s in program.graph_signature.input_specs}
    state = dict(program.state_dict)
    state.update(program.constants)
    w = _Writer()
    for node in _grad_regions_inlined(program.graph_module).nodes:
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is not None and isinstance(spec.arg, ConstantArgument):
                if node.users:
                    raise ValueError("graft.aten: the constant input `%s` is read" % node.name)
                continue  # taken as the export took it: no input of the graph
            if spec is not None and spec.kind != InputKind.USER_INPUT:
                value = state[spec.target]
                kind = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer"}.get(
                    spec.kind, "constant")
                if kind == "buffer" and getattr(spec, "persistent", True) is False:
                    kind = "non-persistent buffer"
                w.nodes.append(_node(node.name, "Const", (), [
                    ("_target", {"s": [spec.target.encode()]}),
                    ("_kind", {"s": [kind.encode()]}),
                    ("dtype", {"type": [_enum(value.dtype)]}),
                    ("value", {"tensor": [_tensor_message(value)]})]))
            else:
                w.placeholder(node)
        elif node.op == "call_function":
            w.call(node)
        elif node.op == "output":
            w.outputs(enumerate(node.args[0]))
        elif node.op == "get_attr" and node.users:
            user = next(iter(node.users))
            raise ValueError("graft.aten: `%s` calls %s, a higher-order op graft does not read "
                             "yet (of its bodies it reads torch.no_grad()'s)" % (
                                 user.name, user.target))
        else:
            raise ValueError("graft.aten: %s nodes (`%s`) are not read yet" % (node.op, node.name))
    return {"node": w.nodes}


def joint_message(joint, num_fwd_outputs):
    """A joint forward-backward graph (AOTAutograd's) as an ATen graph's
    GraphDef message, for the partition planner: every placeholder (primals
    and tangents) a Placeholder, weights not copied, and only the
    backward's outputs (the gradients) as `_Retval`s; symbolic sizes at
    their hints. Also the map from "node:port" to the FX node that holds
    that tensor."""
    import torch.fx
    w = _Writer(hinted=True)
    for node in joint.graph.nodes:
        if node.op in ("placeholder", "get_attr"):  # a module's constant: held anyway
            if w.number(node):
                continue
            if not _is_tensor_value(node.meta.get("val")):
                raise ValueError("graft.aten: `%s` holds no tensor" % node.name)
            w.placeholder(node)
        elif node.op == "call_function":
            w.call(node)
        elif node.op == "output":
            values = torch.fx.node.map_aggregate(node.args[0], lambda v: v)
            flat = list(values) if isinstance(values, (list, tuple)) else [values]
            w.outputs((i, v) for i, v in enumerate(flat)
                      if i >= num_fwd_outputs and isinstance(v, torch.fx.Node)
                      and v.name not in w.numbers)
        else:
            raise ValueError("graft.aten: %s nodes (`%s`) are not read yet" % (node.op, node.name))
    holders = {}  # get_attr nodes are not saved: the backward reads them itself
    for node in joint.graph.nodes:
        if node.op in ("placeholder", "call_function") and node.name not in w.numbers:
            ref = w.alias.get(node.name, node.name)
            holders[ref if ":" in ref else ref + ":0"] = node
    return {"node": w.nodes}, holders


def _text(message, indent=""):
    out = []
    for field, values in message.items():
        for v in values:
            if isinstance(v, dict):
                out.append("%s%s {\n%s%s}\n" % (indent, field, _text(v, indent + "  "), indent))
            elif isinstance(v, bytes):
                out.append("%s%s: %s\n" % (indent, field, _quote(v)))
            elif isinstance(v, bool):
                out.append("%s%s: %s\n" % (indent, field, "true" if v else "false"))
            elif isinstance(v, float):
                out.append("%s%s: %r\n" % (indent, field, v))
            else:
                out.append("%s%s: %s\n" % (indent, field, v))
    return "".join(out)


def to_aten_text(program):
    """An ExportedProgram's graph as an ATen graph file's text (`.aten.pbtxt`)."""
    return _text(graph_message(program))


def to_aten_bytes(program):
    """The same in binary (`.aten.pb`): what graft reads without a copy of
    the weights."""
    return _encode(graph_message(program), "GraphDef")


# ---- the binary wire form: the fields of proto/graph.proto graft writes ----

# message -> field -> (number, kind, message type); kinds: "msg", "bytes",
# "int", "float", "double", "bool", "enum"; packed scalars where repeated.
_SCHEMA = {
    "GraphDef": {"node": (1, "msg", "NodeDef")},
    "NodeDef": {"name": (1, "bytes", None), "op": (2, "bytes", None), "input": (3, "bytes", None),
                "device": (4, "bytes", None), "attr": (5, "msg", "AttrEntry")},
    "AttrEntry": {"key": (1, "bytes", None), "value": (2, "msg", "AttrValue")},
    "AttrValue": {"list": (1, "msg", "ListValue"), "s": (2, "bytes", None), "i": (3, "int", None),
                  "f": (4, "float", None), "b": (5, "bool", None), "type": (6, "enum", None),
                  "shape": (7, "msg", "TensorShape"), "tensor": (8, "msg", "Tensor")},
    "ListValue": {"s": (2, "bytes", None), "i": (3, "int", None), "f": (4, "float", None),
                  "b": (5, "bool", None), "type": (6, "enum", None),
                  "shape": (7, "msg", "TensorShape"), "tensor": (8, "msg", "Tensor")},
    "TensorShape": {"dim": (2, "msg", "Dim"), "unknown_rank": (3, "bool", None)},
    "Dim": {"size": (1, "int", None), "name": (2, "bytes", None)},
    "Tensor": {"dtype": (1, "enum", None), "tensor_shape": (2, "msg", "TensorShape"),
               "version_number": (3, "int", None), "tensor_content": (4, "bytes", None),
               "float_val": (5, "float", None), "double_val": (6, "double", None),
               "int_val": (7, "int", None), "string_val": (8, "bytes", None),
               "int64_val": (10, "int", None), "bool_val": (11, "bool", None),
               "half_val": (13, "int", None)},
}
_ENUM_NUMBERS = {v[0]: v[1] for v in _DTYPES.values()}
_ENUM_NAMES = {n: name for name, n in _ENUM_NUMBERS.items()}
_PACKED_LISTS = {("ListValue", "i"), ("ListValue", "f"), ("ListValue", "b"),
                 ("ListValue", "type"), ("Tensor", "float_val"), ("Tensor", "double_val"),
                 ("Tensor", "int_val"), ("Tensor", "int64_val"), ("Tensor", "bool_val"),
                 ("Tensor", "half_val")}


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _scalar_bytes(kind, v):
    if kind == "float":
        return struct.pack("<f", float(v))
    if kind == "double":
        return struct.pack("<d", float(v))
    if kind == "bool":
        return _varint(1 if v in (True, "true") else 0)
    if kind == "enum":
        return _varint(_ENUM_NUMBERS[v] if isinstance(v, str) else int(v))
    return _varint(int(v))


def _encode(message, kind):
    fields = _SCHEMA[kind]
    out = []
    for name, values in message.items():
        number, k, sub = fields[name]
        if (kind, name) in _PACKED_LISTS:
            payload = b"".join(_scalar_bytes(k, v) for v in values)
            out += [_varint(number << 3 | 2), _varint(len(payload)), payload]
            continue
        for v in values:
            if k == "msg":
                payload = _encode(v, sub)
                out += [_varint(number << 3 | 2), _varint(len(payload)), payload]
            elif k == "bytes":
                out += [_varint(number << 3 | 2), _varint(len(v)), v]
            elif k == "float":
                out += [_varint(number << 3 | 5), _scalar_bytes(k, v)]
            elif k == "double":
                out += [_varint(number << 3 | 1), _scalar_bytes(k, v)]
            else:
                out += [_varint(number << 3), _scalar_bytes(k, v)]
    return b"".join(out)


def _binary_error(pos, what):
    return ValueError("graft.aten: byte %d: %s" % (pos, what))


def _read_varint(data, pos, end=None):
    end = len(data) if end is None else end
    shift = result = 0
    start = pos
    while True:
        if pos >= end or shift > 63:
            raise _binary_error(start, "a varint runs past its message" if pos >= end
                                else "a varint longer than 10 bytes")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _decode_scalar(kind, data, pos, wire, end=None):
    end = len(data) if end is None else end
    if wire in (5, 1):
        size = 4 if wire == 5 else 8
        if pos + size > end:
            raise _binary_error(pos, "a %d-byte value runs past its message" % size)
        return struct.unpack_from("<f" if wire == 5 else "<d", data, pos)[0], pos + size
    if wire != 0:
        raise _binary_error(pos, "wire type %d, which graft's files do not hold" % wire)
    v, pos = _read_varint(data, pos, end)
    if kind == "bool":
        return bool(v), pos
    if kind == "enum":
        return _ENUM_NAMES.get(v, v), pos
    if v >= 1 << 63:
        v -= 1 << 64
    return v, pos


def _decode(data, kind, start=0, end=None, depth=0):
    """A binary message as `_encode` writes it (the dict form); bytes that
    are not one are a ValueError at their offset."""
    end = len(data) if end is None else end
    if depth > _MAX_DEPTH:
        raise _binary_error(start, "messages nested more than %d deep" % _MAX_DEPTH)
    by_number = {num: (name, k, sub) for name, (num, k, sub) in _SCHEMA[kind].items()}
    out, pos = {}, start
    while pos < end:
        key, pos = _read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        name, k, sub = by_number.get(number, (None, None, None))
        if wire == 2:
            length, pos = _read_varint(data, pos, end)
            if pos + length > end:
                raise _binary_error(pos, "a field of %d bytes runs past its message" % length)
            if name is None:
                pos += length
                continue
            if k == "msg":
                value = _decode(data, sub, pos, pos + length, depth + 1)
                out.setdefault(name, []).append(value)
            elif k == "bytes":
                out.setdefault(name, []).append(bytes(data[pos:pos + length]))
            else:  # packed scalars
                p, stop = pos, pos + length
                wire_of = {"float": 5, "double": 1}.get(k, 0)
                while p < stop:
                    v, p = _decode_scalar(k, data, p, wire_of, stop)
                    out.setdefault(name, []).append(v)
            pos += length
        else:
            v, pos = _decode_scalar(k, data, pos, wire, end)
            if name is not None:
                if k == "msg" or k == "bytes":
                    raise _binary_error(pos, "field %d of %s is not a %s" % (number, kind, k))
                out.setdefault(name, []).append(v)
    return out


# ---- reading the file form back ----

# (a string's runs of plain characters matched whole: a tensor's bytes are
# millions of them)
_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("[^"\\\n]*(?:\\.[^"\\\n]*)*")|([{}:])|([^\s{}:"]+))')


# A string whose escapes are all octal (at most \\377), \\n, \\t, \\r or a
# quoted \\, " or ': what Python's own escape decoder reads as protobuf does,
# in C (a tensor's bytes are such a string).
_PLAIN_ESCAPES = re.compile(rb'\\(?![0-3]|[4-7](?![0-7]{2})|[ntr\\"\'])')

# Protobuf's text-format escapes, read as graft's C++ reader (protobuf's
# tokenizer) reads them: octal of one to three digits (kept to its low
# byte), \x of one or two hex digits, \u of four and \U of eight as UTF-8
# (a \u surrogate pair as one code point), and \a \b \f \n \r \t \v \\ \? \'
# \"; any other backslash is an error, and so is a \U past 10FFFF (which
# protobuf keeps as its text).
_ESCAPE = re.compile(
    rb'\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})'
    rb'|u([Dd][89ABab][0-9A-Fa-f]{2})\\u([Dd][C-Fc-f][0-9A-Fa-f]{2})'
    rb'|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([abfnrtv\\?\'"])|(.?))', re.S)
_SIMPLE_ESCAPES = {b"a": b"\a", b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r",
                   b"t": b"\t", b"v": b"\v"}


class _EscapeError(ValueError):
    def __init__(self, offset, what):
        super().__init__(what)
        self.offset = offset  # in characters from the string's first


def _unescape(s):
    """A quoted string's content (without its quotes) as bytes; an escape
    protobuf's text format has not is an _EscapeError at its offset."""
    raw = s.encode("utf-8")
    # (each escaped backslash dropped first: what follows it is no escape)
    if _PLAIN_ESCAPES.search(raw.replace(b"\\\\", b"")) is None:
        return codecs.escape_decode(raw)[0]

    def one(m):
        octal, hex2, high, low, u4, u8, simple, other = m.groups()
        if octal:
            return bytes([int(octal, 8) & 0xFF])
        if hex2:
            return bytes([int(hex2, 16)])
        if high:
            point = 0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00
            return chr(point).encode("utf-8")
        if u4 or u8:
            point = int(u4 or u8, 16)
            if point > 0x10FFFF:
                raise _EscapeError(len(raw[:m.start()].decode("utf-8")),
                                   "`\\U%s` is past the last code point (10FFFF)" % u8.decode())
            return chr(point).encode("utf-8", "surrogatepass")  # a lone surrogate as protobuf
        if simple:
            return _SIMPLE_ESCAPES.get(simple, simple)
        at = len(raw[:m.start()].decode("utf-8"))
        other = s[at + 1:at + 2]
        if other == "x":
            raise _EscapeError(at, "`\\x` without a hex digit after it")
        if other in ("u", "U"):
            raise _EscapeError(at, "`\\%s` without %s hex digits after it"
                               % (other, "four" if other == "u" else "eight"))
        raise _EscapeError(at, "`\\%s` is no escape protobuf's text format has" % other)

    return _ESCAPE.sub(one, raw)


_FIELD = re.compile(r"[A-Za-z_][\w.\[\]/]*")


def parse_text_proto(text):
    """A protobuf text message as nested dicts; every field a list of values
    (messages as dicts, strings as bytes, the rest as their tokens). Text
    that is not one is a ValueError at its line and column."""
    tokens, offset = [], 0
    while True:
        m = _TOKEN.match(text, offset)
        if m is None:
            if text[offset:].strip():
                start = offset + len(text[offset:]) - len(text[offset:].lstrip())
                raise _text_error(text, start, "unexpected `%s`" % text[start])
            break
        offset = m.end()
        if m.group(1) is None:
            tokens.append(m)
    i = 0

    def fail(message):
        at = tokens[i].start(0) + len(tokens[i].group(0)) - len(tokens[i].group(0).lstrip()) \
            if i < len(tokens) else len(text)
        return _text_error(text, at, message)

    def message(end, depth):
        nonlocal i
        if depth > _MAX_DEPTH:
            raise fail("messages nested more than %d deep" % _MAX_DEPTH)
        out = {}
        while True:
            if i == len(tokens):
                if end is None:
                    return out
                raise fail("the text ends inside a message (a `}` missing)")
            if tokens[i].group(3) == "}":
                if end is None:
                    raise fail("a `}` closes no message")
                return out
            name = tokens[i].group(4)
            if name is None or not _FIELD.fullmatch(name):
                raise fail("a field name expected")
            i += 1
            if i < len(tokens) and tokens[i].group(3) == ":":
                i += 1
            if i == len(tokens) or tokens[i].group(3) in ("}", ":"):
                raise fail("a value of `%s` expected" % name)
            if tokens[i].group(3) == "{":
                i += 1
                value = message("}", depth + 1)
                i += 1
            elif tokens[i].group(2):
                value = b""
                while i < len(tokens) and tokens[i].group(2):  # adjacent strings join
                    try:
                        value += _unescape(tokens[i].group(2)[1:-1])
                    except _EscapeError as e:
                        raise _text_error(text, tokens[i].start(2) + 1 + e.offset, str(e))
                    i += 1
            else:
                value = tokens[i].group(4)
                i += 1
            out.setdefault(name, []).append(value)

    return message(None, 0)


def _text_error(text, offset, what):
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return ValueError("graft.aten: line %d, column %d: %s" % (line, column, what))


# The most elements a constant given by one repeated value may have (as the
# rule evaluator's limit on the constants it computes).
MAX_SPLAT_ELEMENTS = 1 << 26


def _tensor_value(tensor):
    """A TensorProto message's value; a ValueError for one whose dtype,
    shape and content disagree."""
    import torch
    enum = tensor["dtype"][0]
    names = [k for k, v in _DTYPES.items() if v[0] == enum]
    if not names:
        raise ValueError("graft.aten: a tensor of dtype %s, which torch has not" % (enum,))
    dtype = getattr(torch, names[0])
    shape = [int(d["size"][0]) for d in tensor.get("tensor_shape", [{}])[0].get("dim", [])]
    if any(d < 0 for d in shape):
        raise ValueError("graft.aten: a constant of shape %s" % shape)
    raw = tensor.get("tensor_content", [b""])[0]
    count = 1
    for d in shape:
        count *= d
    if not count:  # an empty tensor (a lifted `torch.tensor([])`)
        return torch.empty(shape, dtype=dtype)
    if not raw:  # a scalar list field instead of content
        field = {"DT_FLOAT": "float_val", "DT_DOUBLE": "double_val", "DT_INT64": "int64_val"}.get(
            enum, "int_val")
        vals = [float(v) for v in tensor.get(field, [])] or [0.0]
        if len(vals) == count:
            return torch.tensor(vals, dtype=dtype).reshape(shape)
        if len(vals) != 1 or count > MAX_SPLAT_ELEMENTS:
            raise ValueError("graft.aten: a constant of shape %s given by %d value(s)%s"
                             % (shape, len(vals), "" if len(vals) != 1 else
                                ", over the %d elements one value may fill" % MAX_SPLAT_ELEMENTS))
        return torch.full(shape, vals[0], dtype=dtype)
    size = count * torch.empty((), dtype=dtype).element_size()
    if len(raw) != size:
        raise ValueError("graft.aten: a constant of shape %s and dtype %s holds %d bytes, not %d"
                         % (shape, names[0], len(raw), size))
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).clone()


def _aten_op(name, op):
    """The ATen overload a node's op names (`aten.conv2d.default`)."""
    import torch
    parts = op.split(".")
    found = None
    if len(parts) == 3 and parts[0] == "aten":
        found = getattr(getattr(torch.ops.aten, parts[1], None), parts[2], None)
    if found is None or getattr(found, "_schema", None) is None:
        raise ValueError("graft.aten: `%s` has op `%s`, which the installed torch's ATen "
                         "ops do not have" % (name, op))
    return found


def _truth(v):
    return v is True or v == "true"


def _attr_value(attr):
    import torch
    if "list" in attr:
        lst = attr["list"][0]
        for key, cast in (("i", int), ("f", float), ("b", _truth)):
            if key in lst:
                return [cast(v) for v in lst[key]]
        return []
    if "i" in attr:
        return int(attr["i"][0])
    if "f" in attr:
        return float(attr["f"][0])
    if "b" in attr:
        return _truth(attr["b"][0])
    if "type" in attr:
        name = next(k for k, v in _DTYPES.items() if v[0] == attr["type"][0])
        return getattr(torch, name)
    if "s" in attr:
        return attr["s"][0].decode()
    return None


def _argument_value(arg, attr):
    """An attr read back as the schema's argument `arg` takes it: devices,
    layouts and memory formats from their names."""
    import torch
    value = _attr_value(attr)
    if not isinstance(value, str):
        return value
    kind = arg.real_type
    if isinstance(kind, torch._C.OptionalType):
        kind = kind.getElementType()
    kind = str(kind)
    if kind == "Device":
        return torch.device(value)
    if kind in ("Layout", "MemoryFormat"):
        found = getattr(torch, value.rpartition(".")[2], None)
        if not isinstance(found, (torch.layout, torch.memory_format)):
            raise ValueError("graft.aten: `%s` is not a torch %s" % (value, kind.lower()))
        return found
    return value


def _topological(nodes):
    """Nodes with every producer before its readers (a rewrite appends the
    nodes it makes), file order otherwise; a ValueError for a cycle."""
    by_name = {n["name"][0].decode(): n for n in nodes}
    state, out = {}, []  # state: name -> "open" (on the walk) or "done"
    for start in nodes:
        stack = [(start, False)]
        while stack:
            n, expanded = stack.pop()
            name = n["name"][0].decode()
            if expanded:
                state[name] = "done"
                out.append(n)
                continue
            if state.get(name) == "done":
                continue
            if state.get(name) == "open":
                raise ValueError("graft.aten: `%s` depends on itself (a cycle)" % name)
            state[name] = "open"
            stack.append((n, True))
            for i in reversed(n.get("input", [])):
                producer = by_name.get(i.decode().lstrip("^").partition(":")[0])
                if producer is not None and state.get(producer["name"][0].decode()) != "done":
                    stack.append((producer, False))
    return out


def from_aten_text(text):
    """A GraphModule running an ATen graph file's graph (text): Consts
    become its buffers (by their `_target`, new ones by node name),
    Placeholders its inputs in file order, `_Retval`s its outputs in
    `index` order."""
    return graph_module(parse_text_proto(text))


def from_aten_bytes(data):
    """The same from the binary form (`.aten.pb`)."""
    return graph_module(_decode(memoryview(data), "GraphDef"))


def register(root, n, a):
    """Registers a Const's value on `root` and returns its attribute path:
    a program's parameter or buffer under its own name (`layer1.0.conv1.weight`,
    `_target`) and kind (`_kind`), anything else (what a rewrite computed)
    as a buffer named after the node (`c_<name>`)."""
    import torch
    value = _tensor_value(a["value"]["tensor"][0])
    target = a["_target"]["s"][0].decode() if "_target" in a else ""
    kind = a["_kind"]["s"][0].decode() if "_kind" in a else "buffer"
    path = target.split(".") if target else []
    if not path or not all(re.fullmatch(r"[^.\s]+", p) for p in path):  # `block1-0` is a name
        path = ["c_" + re.sub(r"\W", "_", target or n["name"][0].decode())]
    by_name = {k: v for k, v in a.items() if k != "_target"}
    module = root
    for part in path[:-1]:
        if not hasattr(module, part):
            module.add_module(part, torch.nn.Module())
        module = getattr(module, part)
        if not isinstance(module, torch.nn.Module):  # a name taken by a tensor
            return register(root, n, by_name)
    leaf = path[-1]
    if hasattr(module, leaf):
        if target:  # a second Const of one target (a copy): by its node's name
            return register(root, n, by_name)
        while hasattr(module, leaf):  # two node names alike once sanitized
            leaf += "_"
        path[-1] = leaf
    if kind == "parameter":
        module.register_parameter(leaf, torch.nn.Parameter(value, requires_grad=False))
    else:
        module.register_buffer(leaf, value, persistent=kind != "non-persistent buffer")
    return ".".join(path)


# What the argument that reads a weight or bias is called, op by op: a linear
# layer after run_decompositions() is mm(x, permute(w)), addmm(c, x, ...)
# with a bias.
_ROLES = {("aten.mm.default", "mat2"): "weight", ("aten.addmm.default", "mat2"): "weight",
          ("aten.addmm.default", "self"): "bias"}
_VIEWS = ("aten.permute.default", "aten.t.default")


def _tensor_argument_names(op, count):
    """The schema's name of each of an op's `count` data inputs, in order."""
    import torch
    try:
        schema = _aten_op(op, op)._schema
    except ValueError:
        return [""] * count
    names = [a.name for a in schema.arguments if _is_tensor_type(a.type, torch)]
    return (names + [""] * count)[:count]


def _weight_readers(message, constant):
    """The ops of a graph message that read a weight: {op node: (key,
    {"weight": const, "bias": const})}, the key (op family, activations
    read, the weight's shape) what stays of the op when a rewrite gives it
    new constants; `constant(node)` says which Consts count (read directly
    or through a permute)."""
    nodes = {n["name"][0].decode(): n for n in message.get("node", [])}

    def const_behind(ref):
        n = nodes.get(ref.partition(":")[0])
        if n is not None and n["op"][0].decode() in _VIEWS:
            n = nodes.get(n["input"][0].decode().partition(":")[0]) if n.get("input") else None
        return n["name"][0].decode() if n is not None and constant(n) else None

    def shape(const):
        for a in nodes[const].get("attr", []):
            if a["key"][0].decode() == "value":
                dims = a["value"][0]["tensor"][0].get("tensor_shape", [{}])[0].get("dim", [])
                return tuple(int(d.get("size", [0])[0]) for d in dims)
        return None

    found = {}
    for name, n in nodes.items():
        op = n["op"][0].decode()
        if not op.startswith("aten.") or op in _VIEWS:
            continue
        inputs = [i.decode() for i in n.get("input", []) if not i.startswith(b"^")]
        consts = [const_behind(i) for i in inputs]
        roles = {}
        for arg, c in zip(_tensor_argument_names(op, len(inputs)), consts):
            role = _ROLES.get((op, arg), arg)
            if c is not None and role in ("weight", "bias"):
                roles[role] = c
        if "weight" not in roles:
            continue
        activations = tuple(i[:-2] if i.endswith(":0") else i
                            for i, c in zip(inputs, consts) if c is None and i != ABSENT)
        family = "aten.mm" if op in ("aten.mm.default", "aten.addmm.default") else op
        found[name] = ((family, activations, shape(roles["weight"])), roles)
    return found


def _attrs(node):
    """A node message's attrs by name (AttrValue messages)."""
    return {a["key"][0].decode(): a["value"][0] for a in node.get("attr", [])}


def _attr_string(node, key):
    value = _attrs(node).get(key)
    return _attr_value(value) if value is not None else ""


def name_replaced_weights(original, rewritten):
    """Gives each constant a rewrite computed as an op's weight or bias
    (a folded batch norm's) the name and kind of the parameter it takes the
    place of, as torch's own conv-batch-norm fusion does: where the op that
    reads it stands for an op of `original` (`replaced`), whose weight
    (bias) is read no more. A bias
    the op had not has its weight's name with `bias` for `weight`. Sets
    `_target` and `_kind` in `rewritten` (graph messages, as graph_message
    writes them)."""
    def with_target(n):
        return n["op"][0].decode() == "Const" and bool(_attr_string(n, "_target"))

    def without_target(n):
        return n["op"][0].decode() == "Const" and not _attr_string(n, "_target")

    by_name = {n["name"][0].decode(): n for n in original.get("node", [])}
    new = {n["name"][0].decode(): n for n in rewritten.get("node", []) if without_target(n)}
    read = {_attr_string(n, "_target") for n in rewritten.get("node", []) if with_target(n)}
    taken = read | {_attr_string(n, "_target") for n in by_name.values() if with_target(n)}
    before = _weight_readers(original, with_target)
    keys = collections.Counter(key for key, _ in before.values())
    unique = {key: name for name, (key, _) in before.items() if keys[key] == 1}

    def replaced(name, key):
        """The op of `original` that the op `name` of `rewritten` stands
        for: the one op with its key, else (two read the same activations
        with weights of one shape) the op of its name, or that op's
        producer with its key (a rewrite names its result after the node
        it replaces: a folded batch norm's)."""
        if key in unique:
            return unique[key]
        node = by_name.get(name)
        if node is None:
            return None
        for candidate in [name] + [i.decode().partition(":")[0] for i in node.get("input", [])]:
            if candidate in before and before[candidate][0] == key:
                return candidate
        return None

    for name, (key, roles) in sorted(_weight_readers(rewritten, without_target).items()):
        was = before.get(replaced(name, key), (None, {}))[1]
        weight = _attr_string(by_name[was["weight"]], "_target") if "weight" in was else ""
        for role, const in sorted(roles.items()):
            source = by_name.get(was.get(role, ""))
            if source is not None:
                target, kind = _attr_string(source, "_target"), _attr_string(source, "_kind")
            elif role == "bias" and weight.endswith(".weight"):
                target = weight[:-len("weight")] + "bias"
                kind = _attr_string(by_name[was["weight"]], "_kind")
            else:
                continue
            if target in read or (source is None and target in taken) or const not in new:
                continue
            read.add(target)
            taken.add(target)
            new.pop(const)["attr"].extend(
                {"key": [k.encode()], "value": [{"s": [v.encode()]}]}
                for k, v in (("_target", target), ("_kind", kind or "parameter")))


def drop_state_of_removed_modules(original, rewritten):
    """Leaves out of `rewritten` the state nothing reads of a module a
    rewrite removed: a folded batch norm's `num_batches_tracked`, once its
    weight and statistics are gone (torch's own fusion leaves no batch norm
    behind). A module whose state is read stays whole."""
    def targets(message):
        return {_attr_string(n, "_target") for n in message.get("node", [])
                if n["op"][0].decode() == "Const"} - {""}

    def module_of(target):
        return target.rpartition(".")[0]

    left = collections.defaultdict(list)  # module -> its Consts in `rewritten`
    for n in rewritten.get("node", []):
        target = _attr_string(n, "_target") if n["op"][0].decode() == "Const" else ""
        if target:
            left[module_of(target)].append(n["name"][0].decode())
    read = {i.decode().lstrip("^").partition(":")[0]
            for n in rewritten.get("node", []) for i in n.get("input", [])}
    drop = set()
    for module in {module_of(t) for t in targets(original) - targets(rewritten)} - {""}:
        if not read.intersection(left[module]):
            drop.update(left[module])
    rewritten["node"] = [n for n in rewritten.get("node", [])
                         if n["name"][0].decode() not in drop]


# What a malformed message raises where the reader expects a field: said
# as a ValueError at the node it was reading.
_MALFORMED = (KeyError, IndexError, TypeError, AttributeError, RuntimeError, StopIteration,
              OverflowError, UnicodeDecodeError, SyntaxError)


def graph_module(graph_def):
    """A GraphModule running a GraphDef message of the aten dialect, its
    outputs a tuple. A graph it cannot read is a ValueError naming the node
    (nothing else escapes)."""
    at = {"node": None}
    try:
        return _graph_module(graph_def, at)
    except ValueError as e:
        if at["node"] and "`%s`" % at["node"] not in str(e):
            raise ValueError("%s (node `%s`)" % (e, at["node"])) from None
        raise
    except _MALFORMED as e:
        where = " at node `%s`" % at["node"] if at["node"] else ""
        raise ValueError("graft.aten: a malformed ATen graph%s: %s: %s"
                         % (where, type(e).__name__, e)) from None


def _graph_module(graph_def, at):
    import torch
    import torch.fx
    nodes = _topological(graph_def.get("node", []))
    graph = torch.fx.Graph()
    root = torch.nn.Module()
    env, outputs, multi = {}, [], set()  # multi: ops returning several values

    def read(name):
        base, _, port = name.partition(":")
        if base == ABSENT:
            return None
        value = env[base]
        if not port and base in multi:  # `x` is `x:0`, as graft writes it
            port = "0"
        return graph.call_function(operator.getitem, (value, int(port))) if port else value

    def symbolic(arg, value):
        """`value` with the items `_symbolic_<arg>` names read from the graph."""
        if SYMBOLIC + arg.name not in a:
            return value
        sources = [x.decode() for x in a[SYMBOLIC + arg.name]["list"][0].get("s", [])]
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(sources) != len(items) or any(s and s.partition(":")[0] not in env for s in sources):
            raise ValueError("graft.aten: `%s`: its argument `%s` reads sizes %s the graph does "
                             "not compute" % (name, arg.name, sources))
        items = [read(s) if s else v for s, v in zip(sources, items)]
        return items if isinstance(value, (list, tuple)) else items[0]

    grad = {"mode": None, "caller": None}  # the mode set now (None: the caller's)

    def set_grad_mode(mode):
        """Moves into `mode` (True, False or None: the caller's) where the
        node about to be written runs in another."""
        if mode == grad["mode"]:
            return
        if grad["caller"] is None:
            grad["caller"] = graph.call_function(torch.is_grad_enabled, ())
        graph.call_function(torch._C._set_grad_enabled,
                            (grad["caller"] if mode is None else mode,))
        grad["mode"] = mode

    for n in nodes:
        name = at["node"] = n["name"][0].decode()
        op = n["op"][0].decode()
        inputs = [i.decode() for i in n.get("input", []) if not i.startswith(b"^")]
        a = _attrs(n)
        if op == "_Absent":
            continue
        if op == "Const" and NUMBER in a and _attr_value(a[NUMBER]):
            number = _tensor_value(a["value"]["tensor"][0])
            if number.numel() != 1:
                raise ValueError("graft.aten: `%s` is a number (`%s`) holding %d values"
                                 % (name, NUMBER, number.numel()))
            env[name] = number.item()
        elif op == "Const":
            env[name] = graph.get_attr(register(root, n, a))
        elif op == "Placeholder":  # an argument of forward(): a Python name
            env[name] = graph.placeholder(re.sub(r"\W|^(?=\d)", "_", name) or "_")
        elif op == "_Retval":
            outputs.append((int(_attr_value(a["index"])), read(inputs[0])))
        elif op.startswith(SIZE_OP):
            function = _size_functions().get(op[len(SIZE_OP):])
            if function is None or _OPERANDS.name not in a:
                raise ValueError("graft.aten: `%s` has op `%s`, no arithmetic on sizes graft "
                                 "knows" % (name, op))
            env[name] = graph.call_function(
                function, tuple(symbolic(_OPERANDS, _attr_value(a[_OPERANDS.name]))))
        else:
            target = _aten_op(name, op)
            set_grad_mode(_attr_value(a[GRAD_ENABLED]) if GRAD_ENABLED in a else None)
            args, kwargs, pos = [], {}, 0
            for arg in target._schema.arguments:
                if arg.kwarg_only:  # given by name
                    if arg.name in a:
                        kwargs[arg.name] = symbolic(arg, _argument_value(arg, a[arg.name]))
                    continue
                if _is_tensor_type(arg.type, torch):
                    count = int(_attr_value(a["N_" + arg.name])) if "N_" + arg.name in a else None
                    if count is None:
                        args.append(read(inputs[pos]) if pos < len(inputs) else None)
                        pos += 1
                    else:
                        args.append([read(x) for x in inputs[pos:pos + count]])
                        pos += count
                elif arg.name in a:
                    args.append(symbolic(arg, _argument_value(arg, a[arg.name])))
                elif arg.has_default_value():
                    args.append(arg.default_value)
                else:
                    args.append(None)
            if pos < len(inputs):
                raise ValueError("graft.aten: `%s` (%s) has %d data input(s); its schema takes %d"
                                 % (name, op, len(inputs), pos))
            env[name] = graph.call_function(target, tuple(args), kwargs)
            if len(target._schema.returns) > 1:
                multi.add(name)
    set_grad_mode(None)
    ordered = tuple(v for _, v in sorted(outputs, key=lambda p: p[0]))
    graph.output(ordered)
    return torch.fx.GraphModule(root, graph)
