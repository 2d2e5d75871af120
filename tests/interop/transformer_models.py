"""Small transformer models in the op sequences torch.onnx.export writes for
Hugging Face's BertModel, GPT2Model and LlamaModel at opset 14 (static
shapes, random weights), built with the onnx package so the tests need no torch:

  bert    embeddings (three Gathers, two Adds) -> LayerNorm; per layer:
          Q/K/V MatMul + Add bias -> Reshape -> Transpose, scores MatMul,
          Div by sqrt(head size), Add of the extended mask (from the
          int64 attention_mask: two Unsqueezes, Cast, Sub from 1, Mul by the
          float minimum), Softmax, MatMul, Transpose, Reshape, output MatMul
          + Add bias + Add residual -> LayerNorm; MatMul + Add bias -> Gelu
          (erf form) -> MatMul + Add bias + Add residual -> LayerNorm.
  gpt2    token and position Gathers, Add; per layer: LayerNorm ->
          Reshape to rows -> Gemm (Conv1D) -> Reshape -> Split into Q/K/V ->
          heads, scores, Div, Where on the causal mask, Softmax, MatMul,
          merge heads -> Gemm -> Add residual -> LayerNorm -> Gemm -> FastGelu
          (tanh form, "gelu_new") -> Gemm -> Add residual; final LayerNorm.
  llama   Hugging Face's LlamaModel: RMSNorms (Pow, ReduceMean, Add,
          Sqrt, Reciprocal, Mul, Mul), causal attention without biases,
          SiLU-gated MLP; with rotary=True, rotary embeddings on Q and K
          as transformers 4.36 exports them (cos/sin tables Gathered by
          position_ids and Unsqueezed; x * cos + rotate_half(x) * sin,
          rotate_half two Slices, a Neg and a Concat).

Pass another opset for the same op sequences there: 17 (LayerNormalization
is a standard op), 23 (RMSNormalization too); from 18 ReduceMean takes its
axes as an input. LayerNorm is torch's decomposition
at opset 14 (ReduceMean, Sub, Pow 2,
ReduceMean, Add epsilon, Sqrt, Div, Mul gamma, Add beta)."""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 14  # Hugging Face's exports' default; 17 also works (ReduceMean's axes an attr)


class Builder:
    """Nodes and initializers, named as torch names them (`/layer.0/...`)."""

    def __init__(self, seed, opset=OPSET, data=None):
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0
        self.data = data  # an open file: weights go there (external data)

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name, shape, scale=0.2):
        if self.data is None:
            return self.const(name, self.rng.normal(0, scale, shape).astype(np.float32))
        # LLM-scale: N(0, 1/fan_in), as such models start, so the output is not chaos
        w = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(shape[0] ** -0.5)
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape,
                        data_location=TensorProto.EXTERNAL)
        for k, v in (("location", os.path.basename(self.data.name)),
                     ("offset", str(self.data.tell())), ("length", str(w.nbytes))):
            t.external_data.add(key=k, value=v)
        self.data.write(w.tobytes())
        self.inits.append(t)
        return name

    def op(self, op_type, inputs, scope, **attrs):
        self.count += 1
        out = "%s/%s_%d_output_0" % (scope, op_type, self.count)
        self.nodes.append(helper.make_node(op_type, inputs, [out],
                                          name="%s/%s_%d" % (scope, op_type, self.count),
                                          **attrs))
        return out

    def scalar(self, value, dtype=np.float32):
        self.count += 1
        return self.const("onnx::Const_%d" % self.count, np.array(value, dtype))

    def reduce_mean(self, x, axes, scope):
        """ReduceMean keeping dims: `axes` an attr, from opset 18 an input."""
        if self.opset >= 18:
            return self.op("ReduceMean", [x, self.shape(list(axes))], scope)
        return self.op("ReduceMean", [x], scope, axes=list(axes))

    def layer_norm(self, x, hidden, scope, eps=1e-12, axes=(-1,)):
        mean = self.reduce_mean(x, axes, scope)
        d = self.op("Sub", [x, mean], scope)
        sq = self.op("Pow", [d, self.scalar(2.0)], scope)
        var = self.reduce_mean(sq, axes, scope)
        e = self.op("Add", [var, self.scalar(eps)], scope)
        s = self.op("Sqrt", [e], scope)
        n = self.op("Div", [d, s], scope)
        gamma = self.const(scope + ".weight",
                           self.rng.uniform(0.5, 1.5, hidden).astype(np.float32))
        beta = self.const(scope + ".bias", self.rng.normal(0, 0.1, hidden).astype(np.float32))
        return self.op("Add", [self.op("Mul", [n, gamma], scope), beta], scope)

    def linear(self, x, n_in, n_out, scope):
        w = self.weight(scope + ".weight", (n_in, n_out))
        b = self.weight(scope + ".bias", (n_out,), 0.05)
        return self.op("Add", [b, self.op("MatMul", [x, w], scope)], scope)

    def rms_norm(self, x, hidden, scope, eps=1e-6):
        """torch's export of LLaMA's RMSNorm: Pow 2, ReduceMean, Add eps,
        Sqrt, Reciprocal (rsqrt), Mul, Mul by the weight."""
        ms = self.reduce_mean(self.op("Pow", [x, self.scalar(2.0)], scope), [-1], scope)
        r = self.op("Reciprocal", [self.op("Sqrt", [self.op("Add", [ms, self.scalar(eps)], scope)],
                                           scope)], scope)
        w = self.const(scope + ".weight", self.rng.uniform(0.5, 1.5, hidden).astype(np.float32))
        return self.op("Mul", [self.op("Mul", [x, r], scope), w], scope)

    def gelu_erf(self, x, scope):
        d = self.op("Div", [x, self.scalar(math.sqrt(2.0))], scope)
        e = self.op("Erf", [d], scope)
        a = self.op("Add", [e, self.scalar(1.0)], scope)
        m = self.op("Mul", [x, a], scope)
        return self.op("Mul", [m, self.scalar(0.5)], scope)

    def gelu_tanh(self, x, scope):
        half = self.op("Mul", [x, self.scalar(0.5)], scope)
        cube = self.op("Pow", [x, self.scalar(3.0)], scope)
        inner = self.op("Add", [x, self.op("Mul", [cube, self.scalar(0.044715)], scope)], scope)
        t = self.op("Tanh", [self.op("Mul", [inner, self.scalar(math.sqrt(2.0 / math.pi))],
                                     scope)], scope)
        return self.op("Mul", [half, self.op("Add", [t, self.scalar(1.0)], scope)], scope)

    def shape(self, dims):
        return self.scalar(dims, np.int64)

    def heads(self, x, batch, seq, n_heads, head, scope, perm=(0, 2, 1, 3)):
        r = self.op("Reshape", [x, self.shape([batch, seq, n_heads, head])], scope)
        return self.op("Transpose", [r], scope, perm=list(perm))

    def rotary(self, x, cos, sin, head, scope):
        """x * cos + rotate_half(x) * sin over [B, N, S, head]."""
        half = head // 2
        x1 = self.op("Slice", [x, self.shape([0]), self.shape([half]), self.shape([3]),
                               self.shape([1])], scope)
        x2 = self.op("Slice", [x, self.shape([half]), self.shape([np.iinfo(np.int64).max]),
                               self.shape([3]), self.shape([1])], scope)
        rot = self.op("Concat", [self.op("Neg", [x2], scope), x1], scope, axis=-1)
        return self.op("Add", [self.op("Mul", [x, cos], scope),
                               self.op("Mul", [rot, sin], scope)], scope)

    def attention_core(self, q, k, v, batch, seq, n_heads, head, scope, bias=None,
                       causal=None, rotary=None):
        qh = self.heads(q, batch, seq, n_heads, head, scope)
        if rotary is None:
            kh = self.heads(k, batch, seq, n_heads, head, scope, (0, 2, 3, 1))
        else:  # rotated in [B, N, S, H], then K transposed for the scores
            cos, sin = rotary
            qh = self.rotary(qh, cos, sin, head, scope)
            kh = self.rotary(self.heads(k, batch, seq, n_heads, head, scope), cos, sin,
                             head, scope)
            kh = self.op("Transpose", [kh], scope, perm=[0, 1, 3, 2])
        vh = self.heads(v, batch, seq, n_heads, head, scope)
        scores = self.op("MatMul", [qh, kh], scope)
        scores = self.op("Div", [scores, self.scalar(math.sqrt(head))], scope)
        if bias is not None:
            scores = self.op("Add", [scores, bias], scope)
        if causal is not None:
            scores = self.op("Where", [causal, scores, self.scalar(np.finfo(np.float32).min)],
                             scope)
        probs = self.op("Softmax", [scores], scope, axis=-1)
        ctx = self.op("MatMul", [probs, vh], scope)
        ctx = self.op("Transpose", [ctx], scope, perm=[0, 2, 1, 3])
        return self.op("Reshape", [ctx, self.shape([batch, seq, n_heads * head])], scope)

    def extended_mask(self, mask):
        """HF's get_extended_attention_mask: [B, S] ints -> [B, 1, 1, S]
        floats, 0 where kept and the float minimum where masked."""
        m = self.op("Unsqueeze", [mask, self.shape([1])], "")
        m = self.op("Unsqueeze", [m, self.shape([2])], "")
        m = self.op("Cast", [m], "", to=TensorProto.FLOAT)
        m = self.op("Sub", [self.scalar(1.0), m], "")
        return self.op("Mul", [m, self.scalar(np.finfo(np.float32).min)], "")

    def model(self, inputs, outputs, name, opset):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="pytorch", producer_version="2.5.0")
        m.ir_version = 10 if opset >= 21 else 8
        if self.data is None:  # with external data: checked once written
            onnx.checker.check_model(m, full_check=True)
        return m


def bert(layers=2, hidden=64, n_heads=4, batch=2, seq=16, vocab=100, seed=0, opset=OPSET):
    b = Builder(seed, opset)
    head = hidden // n_heads
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])
    types = helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, [batch, seq])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq])
    s = "/embeddings"
    words = b.op("Gather", [b.weight("embeddings.word_embeddings.weight", (vocab, hidden)),
                            "input_ids"], s)
    tok = b.op("Gather", [b.weight("embeddings.token_type_embeddings.weight", (2, hidden)),
                          "token_type_ids"], s)
    pos_ids = b.const("embeddings.position_ids", np.arange(seq, dtype=np.int64)[None, :])
    pos = b.op("Gather", [b.weight("embeddings.position_embeddings.weight", (seq, hidden)),
                          pos_ids], s)
    x = b.layer_norm(b.op("Add", [b.op("Add", [words, tok], s), pos], s), hidden,
                     s + "/LayerNorm")
    ext = b.extended_mask("attention_mask")
    for i in range(layers):
        s = "/encoder/layer.%d" % i
        q = b.linear(x, hidden, hidden, s + "/attention/self/query")
        k = b.linear(x, hidden, hidden, s + "/attention/self/key")
        v = b.linear(x, hidden, hidden, s + "/attention/self/value")
        ctx = b.attention_core(q, k, v, batch, seq, n_heads, head, s + "/attention/self", ext)
        o = b.linear(ctx, hidden, hidden, s + "/attention/output/dense")
        x = b.layer_norm(b.op("Add", [o, x], s), hidden, s + "/attention/output/LayerNorm")
        h = b.gelu_erf(b.linear(x, hidden, 4 * hidden, s + "/intermediate/dense"),
                       s + "/intermediate")
        o = b.linear(h, 4 * hidden, hidden, s + "/output/dense")
        x = b.layer_norm(b.op("Add", [o, x], s), hidden, s + "/output/LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/Identity"))
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        [batch, seq, hidden])
    return b.model([ids, types, mask], [out], "bert", opset)


def gpt2(layers=2, hidden=64, n_heads=4, batch=2, seq=16, vocab=100, seed=1, opset=OPSET):
    b = Builder(seed, opset)
    head = hidden // n_heads
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])
    x = b.op("Add", [
        b.op("Gather", [b.weight("wte.weight", (vocab, hidden)), "input_ids"], "/wte"),
        b.op("Gather", [b.weight("wpe.weight", (seq, hidden)),
                        b.const("position_ids", np.arange(seq, dtype=np.int64)[None, :])],
             "/wpe")], "")
    causal = b.const("h.bias", np.tril(np.ones((1, 1, seq, seq), bool)))

    def conv1d(t, n_in, n_out, scope):  # HF Conv1D: addmm over rows
        rows = b.op("Reshape", [t, b.shape([-1, n_in])], scope)
        y = b.op("Gemm", [rows, b.weight(scope + ".weight", (n_in, n_out)),
                          b.weight(scope + ".bias", (n_out,), 0.05)], scope)
        return b.op("Reshape", [y, b.shape([batch, seq, n_out])], scope)

    for i in range(layers):
        s = "/h.%d" % i
        a = b.layer_norm(x, hidden, s + "/ln_1", eps=1e-5)
        qkv = conv1d(a, hidden, 3 * hidden, s + "/attn/c_attn")
        split = ["%s/attn/Split_%s" % (s, n) for n in "qkv"]
        b.nodes.append(helper.make_node("Split", [qkv, b.shape([hidden] * 3)], split,
                                        name=s + "/attn/Split", axis=2))
        ctx = b.attention_core(*split, batch, seq, n_heads, head, s + "/attn", causal=causal)
        x = b.op("Add", [conv1d(ctx, hidden, hidden, s + "/attn/c_proj"), x], s)
        a = b.layer_norm(x, hidden, s + "/ln_2", eps=1e-5)
        h = b.gelu_tanh(conv1d(a, hidden, 4 * hidden, s + "/mlp/c_fc"), s + "/mlp/act")
        x = b.op("Add", [x, conv1d(h, 4 * hidden, hidden, s + "/mlp/c_proj")], s)
    x = b.layer_norm(x, hidden, "/ln_f", eps=1e-5)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/Identity"))
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        [batch, seq, hidden])
    return b.model([ids], [out], "gpt2", opset)


def llama(layers=2, hidden=64, n_heads=4, inter=None, batch=2, seq=16, vocab=100, seed=2,
          opset=OPSET, rotary=False, data=None, max_positions=2048):
    """A decoder in the op sequence torch writes for Hugging Face's
    LlamaModel: token Gather; per layer RMSNorm -> Q/K/V MatMul (no bias)
    -> (rotary embeddings on Q and K) -> causal attention -> o_proj MatMul
    -> Add residual -> RMSNorm -> SiLU(gate) * up (Sigmoid, Mul, Mul) ->
    down MatMul -> Add residual; a final RMSNorm. `data`: an open file the
    weights are written to (external data, for models past 2 GiB), drawn
    from N(0, 1/fan_in)."""
    b = Builder(seed, opset, data)
    head = hidden // n_heads
    inter = inter or 8 * hidden // 3  # LLaMA's MLP width
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])
    inputs = [ids]
    x = b.op("Gather", [b.weight("embed_tokens.weight", (vocab, hidden)), "input_ids"],
             "/embed_tokens")
    causal = b.const("causal_mask", np.tril(np.ones((1, 1, seq, seq), bool)))
    tables = None
    if rotary:
        inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64,
                                                    [batch, seq]))
        inv_freq = 1.0 / (10000 ** (np.arange(0, head, 2, dtype=np.float64) / head))
        freqs = np.outer(np.arange(max_positions), inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        tables = (b.const("cos_cached", np.cos(emb).astype(np.float32)),
                  b.const("sin_cached", np.sin(emb).astype(np.float32)))
    for i in range(layers):
        s = "/layers.%d" % i
        h = b.rms_norm(x, hidden, s + "/input_layernorm")
        q, k, v = (b.op("MatMul", [h, b.weight("%s/self_attn/%s_proj.weight" % (s, n),
                                                (hidden, hidden))], s + "/self_attn")
                   for n in "qkv")
        rot = None
        if tables is not None:  # cos[position_ids].unsqueeze(1), per layer
            r = s + "/self_attn/rotary_emb"
            rot = tuple(b.op("Unsqueeze", [b.op("Gather", [t, "position_ids"], r),
                                            b.shape([1])], r) for t in tables)
        ctx = b.attention_core(q, k, v, batch, seq, n_heads, head, s + "/self_attn",
                               causal=causal, rotary=rot)
        o = b.op("MatMul", [ctx, b.weight(s + "/self_attn/o_proj.weight", (hidden, hidden))],
                 s + "/self_attn")
        x = b.op("Add", [x, o], s)
        h = b.rms_norm(x, hidden, s + "/post_attention_layernorm")
        gate = b.op("MatMul", [h, b.weight(s + "/mlp/gate_proj.weight", (hidden, inter))],
                    s + "/mlp")
        up = b.op("MatMul", [h, b.weight(s + "/mlp/up_proj.weight", (hidden, inter))], s + "/mlp")
        act = b.op("Mul", [gate, b.op("Sigmoid", [gate], s + "/mlp/act_fn")], s + "/mlp/act_fn")
        down = b.op("MatMul", [b.op("Mul", [act, up], s + "/mlp"),
                               b.weight(s + "/mlp/down_proj.weight", (inter, hidden))], s + "/mlp")
        x = b.op("Add", [x, down], s)
    x = b.rms_norm(x, hidden, "/norm")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/Identity"))
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        [batch, seq, hidden])
    return b.model(inputs, [out], "llama", opset)


def feeds(model, seed=0):
    """Random inputs for a model from this file (ids in range, a ragged mask)."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.name == "attention_mask":
            m = np.ones(shape, np.int64)
            m[0, shape[1] * 3 // 4:] = 0
            out[i.name] = m
        elif i.name == "position_ids":
            out[i.name] = np.broadcast_to(np.arange(shape[1]), shape).astype(np.int64)
        elif i.name == "token_type_ids":
            out[i.name] = rng.integers(0, 2, shape).astype(np.int64)
        else:
            out[i.name] = rng.integers(0, 100, shape).astype(np.int64)
    return out
