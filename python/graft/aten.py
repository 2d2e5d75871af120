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
readers read ``x:i``. Parameters, buffers and lifted constants are Consts
holding their values (attr ``_target``: the state-dict entry); user inputs
are Placeholders; the outputs are ``_Retval`` nodes.
"""
import operator
import re

ABSENT = "_absent"

# torch dtype name -> the IR's DataType (proto/graph.proto), and its size.
_DTYPES = {
    "float32": ("DT_FLOAT", 1, "f"), "float64": ("DT_DOUBLE", 2, "d"),
    "int32": ("DT_INT32", 3, "i"), "uint8": ("DT_UINT8", 4, "B"), "int16": ("DT_INT16", 5, "h"),
    "int8": ("DT_INT8", 6, "b"), "int64": ("DT_INT64", 9, "q"), "bool": ("DT_BOOL", 10, "?"),
    "bfloat16": ("DT_BFLOAT16", 14, None), "float16": ("DT_HALF", 19, "e"),
}


def _quote(data):
    if isinstance(data, str):
        data = data.encode()
    out = []
    for b in data:
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"%s"' % "".join(out)


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _tensor_text(t):
    import torch
    t = t.detach().contiguous().cpu()
    enum = _DTYPES[_dtype_name(t.dtype)][0]
    shape = " ".join("dim { size: %d }" % d for d in t.shape)
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return "tensor { dtype: %s tensor_shape { %s } tensor_content: %s }" % (enum, shape, _quote(raw))


def _attr_text(value):
    """The AttrValue text of a non-tensor argument, or None to leave it out."""
    import torch
    if value is None:
        return None
    if isinstance(value, bool):
        return "b: %s" % ("true" if value else "false")
    if isinstance(value, int):
        return "i: %d" % value
    if isinstance(value, float):
        return "f: %r" % value
    if isinstance(value, str):
        return "s: %s" % _quote(value)
    if isinstance(value, torch.dtype):
        return "type: %s" % _DTYPES[_dtype_name(value)][0]
    if isinstance(value, (list, tuple)) and all(isinstance(v, bool) for v in value):
        return "list { %s }" % " ".join("b: %s" % ("true" if v else "false") for v in value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return "list { %s }" % " ".join("i: %d" % v for v in value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return "list { %s }" % " ".join("f: %r" % float(v) for v in value)
    return "s: %s" % _quote(str(value))  # devices, layouts, memory formats


def _is_tensor_type(t, torch):
    if isinstance(t, torch._C.OptionalType):
        t = t.getElementType()
    if isinstance(t, torch._C.ListType):
        t = t.getElementType()
        if isinstance(t, torch._C.OptionalType):
            t = t.getElementType()
    return isinstance(t, torch._C.TensorType)


def to_aten_text(program):
    """The text of an ExportedProgram's graph as an ATen graph file."""
    import torch
    from torch.export.graph_signature import InputKind
    specs = {s.arg.name: s for s in program.graph_signature.input_specs}
    state = dict(program.state_dict)
    state.update(program.constants)
    alias = {}   # getitem node -> "producer:i"
    lines = []
    absent = []

    def ref(value):
        if value is None:
            if not absent:
                absent.append(True)
                lines.insert(0, 'node { name: "%s" op: "_Absent" }' % ABSENT)
            return ABSENT
        if isinstance(value, (bool, int, float)):  # a Python number as a Tensor argument
            name = "_scalar_%d" % len(lines)
            t = torch.tensor(value)
            lines.append('node { name: "%s" op: "Const" attr { key: "dtype" value { type: %s } }'
                         ' attr { key: "value" value { %s } } }'
                         % (name, _DTYPES[_dtype_name(t.dtype)][0], _tensor_text(t)))
            return name
        return alias.get(value.name, value.name)

    for node in program.graph.nodes:
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is not None and spec.kind != InputKind.USER_INPUT:
                value = state[spec.target]
                lines.append('node { name: "%s" op: "Const" attr { key: "_target" value { s: %s } }'
                             ' attr { key: "dtype" value { type: %s } }'
                             ' attr { key: "value" value { %s } } }'
                             % (node.name, _quote(spec.target),
                                _DTYPES[_dtype_name(value.dtype)][0], _tensor_text(value)))
                continue
            val = node.meta.get("val")
            dims = " ".join("dim { size: %d }" % (d if isinstance(d, int) else -1)
                            for d in val.shape)
            lines.append('node { name: "%s" op: "Placeholder" attr { key: "dtype" value { type: %s } }'
                         ' attr { key: "shape" value { shape { %s } } } }'
                         % (node.name, _DTYPES[_dtype_name(val.dtype)][0], dims))
        elif node.op == "call_function" and node.target is operator.getitem:
            alias[node.name] = "%s:%d" % (ref(node.args[0]), node.args[1])
        elif node.op == "call_function":
            schema = node.target._schema
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
                        inputs += [ref(v) for v in value]
                        attrs.append(("N_" + arg.name, "i: %d" % len(value)))
                    else:
                        inputs.append(ref(value))
                    continue
                text = _attr_text(value)
                if text is not None:
                    attrs.append((arg.name, text))
            lines.append('node { name: "%s" op: "%s" %s %s }' % (
                node.name, str(node.target),
                " ".join("input: %s" % _quote(x) for x in inputs),
                " ".join('attr { key: "%s" value { %s } }' % kv for kv in attrs)))
        elif node.op == "output":
            for i, value in enumerate(node.args[0]):
                lines.append('node { name: "output_%d" op: "_Retval" input: %s'
                             ' attr { key: "index" value { i: %d } } }' % (i, _quote(ref(value)), i))
        else:
            raise ValueError("graft.aten: %s nodes (`%s`) are not read yet" % (node.op, node.name))
    return "\n".join(lines) + "\n"


# ---- reading the file form back ----

_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\]|\\.)*")|([{}:])|([^\s{}:"]+))')


def _unescape(s):
    out, i = bytearray(), 0
    raw = s.encode("latin-1")
    while i < len(raw):
        c = raw[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        n = raw[i + 1]
        if 0x30 <= n <= 0x37:
            j = i + 1
            while j < len(raw) and j < i + 4 and 0x30 <= raw[j] <= 0x37:
                j += 1
            out.append(int(raw[i + 1:j], 8))
            i = j
            continue
        out.append({ord("n"): 10, ord("t"): 9, ord("r"): 13}.get(n, n))
        i += 2
    return bytes(out)


def parse_text_proto(text):
    """A protobuf text message as nested dicts; every field a list of values
    (messages as dicts, strings as bytes, the rest as their tokens)."""
    tokens = [m for m in _TOKEN.finditer(text) if m.group(1) is None and m.group(0).strip()]
    pos = 0

    def message(end):
        nonlocal pos
        out = {}
        while pos < len(tokens) and (end is None or tokens[pos].group(3) != end):
            name = tokens[pos].group(4)
            pos += 1
            if tokens[pos].group(3) == ":":
                pos += 1
            if tokens[pos].group(3) == "{":
                pos += 1
                value = message("}")
                pos += 1
            else:
                tok = tokens[pos]
                pos += 1
                value = _unescape(tok.group(2)[1:-1]) if tok.group(2) else tok.group(4)
                while pos < len(tokens) and tokens[pos].group(2):  # adjacent strings join
                    value += _unescape(tokens[pos].group(2)[1:-1])
                    pos += 1
            out.setdefault(name, []).append(value)
        return out

    return message(None)


def _tensor_value(tensor):
    import torch
    enum = tensor["dtype"][0]
    name = next(k for k, v in _DTYPES.items() if v[0] == enum)
    dtype = getattr(torch, name)
    shape = [int(d["size"][0]) for d in tensor.get("tensor_shape", [{}])[0].get("dim", [])]
    raw = tensor.get("tensor_content", [b""])[0]
    count = 1
    for d in shape:
        count *= d
    if not raw and count:  # a scalar list field instead of content
        field = {"DT_FLOAT": "float_val", "DT_DOUBLE": "double_val", "DT_INT64": "int64_val"}.get(
            enum, "int_val")
        vals = [float(v) for v in tensor.get(field, [])] or [0.0]
        return torch.tensor(vals * (count // len(vals)), dtype=dtype).reshape(shape)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).clone()


def _attr_value(attr):
    import torch
    if "list" in attr:
        lst = attr["list"][0]
        for key, cast in (("i", int), ("f", float), ("b", lambda v: v == "true")):
            if key in lst:
                return [cast(v) for v in lst[key]]
        return []
    if "i" in attr:
        return int(attr["i"][0])
    if "f" in attr:
        return float(attr["f"][0])
    if "b" in attr:
        return attr["b"][0] == "true"
    if "type" in attr:
        name = next(k for k, v in _DTYPES.items() if v[0] == attr["type"][0])
        return getattr(torch, name)
    if "s" in attr:
        return attr["s"][0].decode()
    return None


def _topological(nodes):
    """Nodes with every producer before its readers (a rewrite appends the
    nodes it makes), file order otherwise."""
    by_name = {n["name"][0].decode(): n for n in nodes}
    done, out = set(), []
    for start in nodes:
        stack = [(start, False)]
        while stack:
            n, expanded = stack.pop()
            name = n["name"][0].decode()
            if name in done:
                continue
            if expanded:
                done.add(name)
                out.append(n)
                continue
            stack.append((n, True))
            for i in reversed(n.get("input", [])):
                producer = by_name.get(i.decode().lstrip("^").partition(":")[0])
                if producer is not None and producer["name"][0].decode() not in done:
                    stack.append((producer, False))
    return out


def from_aten_text(text):
    """A GraphModule running an ATen graph file's graph: Consts become its
    parameters and buffers (by their `_target`, `_` for `.`; new ones by
    node name), Placeholders its inputs in file order, `_Retval`s its
    outputs in `index` order."""
    import torch
    import torch.fx
    graph_def = parse_text_proto(text)
    nodes = _topological(graph_def.get("node", []))
    graph = torch.fx.Graph()
    root = torch.nn.Module()
    env, outputs = {}, []

    def attrs(n):
        return {a["key"][0].decode(): a["value"][0] for a in n.get("attr", [])}

    def read(name):
        base, _, port = name.partition(":")
        if base == ABSENT:
            return None
        value = env[base]
        return graph.call_function(operator.getitem, (value, int(port))) if port else value

    for n in nodes:
        name, op = n["name"][0].decode(), n["op"][0].decode()
        inputs = [i.decode() for i in n.get("input", [])]
        a = attrs(n)
        if op == "_Absent":
            continue
        if op == "Const":
            target = a["_target"]["s"][0].decode() if "_target" in a else name
            attr_name = "c_" + re.sub(r"\W", "_", target)
            root.register_buffer(attr_name, _tensor_value(a["value"]["tensor"][0]))
            env[name] = graph.get_attr(attr_name)
        elif op == "Placeholder":
            env[name] = graph.placeholder(name)
        elif op == "_Retval":
            outputs.append((int(_attr_value(a["index"])), read(inputs[0])))
        else:
            _, fn, overload = op.split(".")
            target = getattr(getattr(torch.ops.aten, fn), overload)
            args, kwargs, pos = [], {}, 0
            for arg in target._schema.arguments:
                if arg.kwarg_only:  # given by name
                    if arg.name in a:
                        kwargs[arg.name] = _attr_value(a[arg.name])
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
                    args.append(_attr_value(a[arg.name]))
                elif arg.has_default_value():
                    args.append(arg.default_value)
                else:
                    args.append(None)
            env[name] = graph.call_function(target, tuple(args), kwargs)
    graph.output(tuple(v for _, v in sorted(outputs, key=lambda p: p[0])))
    return torch.fx.GraphModule(root, graph)
