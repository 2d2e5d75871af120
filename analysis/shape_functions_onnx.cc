// Shape functions of the ONNX dialect's ops (NCHW, numpy broadcasting),
// for `graft mem` and `graft cost` on ONNX models: convolutions, pooling,
// Gemm and MatMul, elementwise ops, and the shape ops around them.
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "analysis/shape_functions_internal.h"
#include "engine/const_tensor.h"

namespace graft::analysis {
namespace {

int64_t Axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// Y = op(X): the shape of input 0.
void SameAsInput(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  for (TensorInfo& t : out) t = in.In(n, 0);
  for (TensorInfo& t : out) t.value.reset();
}

// Numpy broadcasting of every input.
void Broadcast(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  TensorInfo t = in.In(n, 0);
  for (int i = 1; i < n.num_inputs(); ++i) t = BroadcastShapes(t, in.In(n, i));
  t.value.reset();
  if (!out.empty()) out[0] = t;
}

// Conv and pooling: [N, C, spatial...] -> [N, M, out...], each spatial
// dimension floor((in + pads - ((k - 1) * d + 1)) / s) + 1 (SAME_*: ceil(in / s)).
void Window(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out,
            bool conv) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || x.dims.size() < 3 || out.empty()) return;
  const size_t spatial = x.dims.size() - 2;
  Dims kernel = AttrInts(n, "kernel_shape");
  const TensorInfo& w = in.In(n, 1);
  if (kernel.empty() && conv && w.known_rank && w.dims.size() == x.dims.size())
    kernel.assign(w.dims.begin() + 2, w.dims.end());
  if (kernel.size() != spatial) return;
  Dims strides = AttrInts(n, "strides"), dilations = AttrInts(n, "dilations"),
       pads = AttrInts(n, "pads");
  const std::string auto_pad = AttrString(n, "auto_pad", "NOTSET");
  Dims dims = {x.dims[0], conv ? (w.known_rank && !w.dims.empty() ? w.dims[0] : -1)
                               : x.dims[1]};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t s = i < strides.size() ? strides[i] : 1;
    int64_t d = i < dilations.size() ? dilations[i] : 1;
    int64_t before = i < pads.size() ? pads[i] : 0;
    int64_t after = i + spatial < pads.size() ? pads[i + spatial] : 0;
    const std::string pad = auto_pad == "VALID"                  ? "VALID"
                            : absl::StartsWith(auto_pad, "SAME") ? "SAME"
                                                                  : "EXPLICIT";
    int64_t o = WindowOut(x.dims[i + 2], kernel[i], s, d, pad, before, after);
    if (!conv && AttrInt(n, "ceil_mode", 0) == 1 && pad == "EXPLICIT" && o >= 0) {
      int64_t eff = (kernel[i] - 1) * d + 1;
      int64_t span = x.dims[i + 2] + before + after - eff;
      if (span >= 0 && span % s != 0) ++o;
    }
    dims.push_back(o);
  }
  for (TensorInfo& t : out) t = Shaped(dims);
}

void Conv(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  Window(in, n, out, true);
}
void Pool(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  Window(in, n, out, false);
}

void GlobalPool(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || x.dims.size() < 2 || out.empty()) return;
  Dims dims = {x.dims[0], x.dims[1]};
  dims.resize(x.dims.size(), 1);
  out[0] = Shaped(dims);
}

// Gemm: op(A) [M, K] times op(B) [K, N] -> [M, N].
void Gemm(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo &a = in.In(n, 0), &b = in.In(n, 1);
  if (!a.known_rank || !b.known_rank || a.dims.size() != 2 || b.dims.size() != 2 ||
      out.empty())
    return;
  int64_t m = AttrInt(n, "transA", 0) ? a.dims[1] : a.dims[0];
  int64_t cols = AttrInt(n, "transB", 0) ? b.dims[0] : b.dims[1];
  out[0] = Shaped({m, cols});
}

// MatMul as numpy's: 1-D operands promoted and their dimension dropped,
// leading dimensions broadcast.
void MatMul(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  TensorInfo a = in.In(n, 0), b = in.In(n, 1);
  if (!a.known_rank || !b.known_rank || a.dims.empty() || b.dims.empty() || out.empty())
    return;
  // onnxruntime's FusedMatMul: either operand's last two axes swapped first
  // (its batch transposes are not read here)
  if (n.op() == "com.microsoft.FusedMatMul") {
    if (AttrInt(n, "transBatchA", 0) || AttrInt(n, "transBatchB", 0)) return;
    for (auto [t, attr] : {std::pair{&a, "transA"}, std::pair{&b, "transB"}}) {
      if (!AttrInt(n, attr, 0)) continue;
      if (t->dims.size() < 2) return;
      std::swap(t->dims[t->dims.size() - 1], t->dims[t->dims.size() - 2]);
    }
  }
  const bool a_vector = a.dims.size() == 1, b_vector = b.dims.size() == 1;
  if (a_vector) a.dims.insert(a.dims.begin(), 1);
  if (b_vector) b.dims.push_back(1);
  TensorInfo batch = BroadcastShapes(Shaped(Dims(a.dims.begin(), a.dims.end() - 2)),
                                     Shaped(Dims(b.dims.begin(), b.dims.end() - 2)));
  if (!batch.known_rank) return;
  Dims dims = batch.dims;
  if (!a_vector) dims.push_back(a.dims[a.dims.size() - 2]);
  if (!b_vector) dims.push_back(b.dims.back());
  out[0] = Shaped(dims);
}

void Flatten(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || out.empty()) return;
  int64_t axis = Axis(AttrInt(n, "axis", 1), x.dims.size());
  if (axis < 0 || axis > static_cast<int64_t>(x.dims.size())) return;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(x.dims.size()); ++i)
    (i < axis ? outer : inner) = MulDims(i < axis ? outer : inner, x.dims[i]);
  out[0] = Shaped({outer, inner});
}

void Concat(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& first = in.In(n, 0);
  if (!first.known_rank || out.empty()) return;
  int64_t axis = Axis(AttrInt(n, "axis", 0), first.dims.size());
  if (axis < 0 || axis >= static_cast<int64_t>(first.dims.size())) return;
  Dims dims = first.dims;
  for (int i = 1; i < n.num_inputs(); ++i) {
    const TensorInfo& t = in.In(n, i);
    if (!t.known_rank || t.dims.size() != dims.size()) return;
    // the other axes equal in every input: a cache's past keys [B, "4", P,
    // "16"] joined with the new ones [B, 4, 1, 16] are [B, 4, P + 1, 16]
    for (size_t d = 0; d < dims.size(); ++d)
      dims[d] = static_cast<int64_t>(d) == axis ? SumDims(dims[d], t.dims[d])
                                                : EqualDims(dims[d], t.dims[d]);
  }
  out[0] = Shaped(dims);
}

// Reshape by a known shape input: 0 copies the input's dimension (unless
// allowzero), -1 takes what is left; by an unknown one of known length,
// that rank.
void Reshape(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  const std::optional<Dims>& shape = in.Value(n, 1);
  if (out.empty()) return;
  if (!shape.has_value()) {  // the target's length gives the rank
    const TensorInfo& target = in.In(n, 1);
    if (target.known_rank && target.dims.size() == 1 && target.dims[0] >= 0)
      out[0] = Shaped(Dims(target.dims[0], -1));
    return;
  }
  Dims dims = *shape;
  int unknown = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !AttrInt(n, "allowzero", 0))
      dims[i] = x.known_rank && i < x.dims.size() ? x.dims[i] : -1;
    if (dims[i] == -1 && (*shape)[i] == -1) unknown = static_cast<int>(i);
  }
  if (unknown >= 0) {
    // What is left: the input's elements over the others', symbolic
    // dimensions cancelling in pairs ([B, S, 4, 16] to [B, S, -1]: 64).
    std::multiset<int64_t> symbols;
    int64_t total = 1, rest = 1;
    bool decided = x.known_rank;
    for (int64_t d : x.dims) {
      if (IsSymbolicDim(d)) symbols.insert(d);
      else total = MulDims(total, d);
    }
    for (size_t i = 0; i < dims.size() && decided; ++i) {
      if (static_cast<int>(i) == unknown) continue;
      if (!IsSymbolicDim(dims[i])) {
        rest = MulDims(rest, dims[i]);
      } else if (auto it = symbols.find(dims[i]); it != symbols.end()) {
        symbols.erase(it);
      } else {
        decided = false;
      }
    }
    decided = decided && total >= 0 && rest > 0 && total % rest == 0;
    const int64_t quotient = decided ? total / rest : -1;
    if (!decided)
      dims[unknown] = -1;
    else if (symbols.empty())
      dims[unknown] = quotient;
    else if (symbols.size() == 1 && quotient == 1)  // [B, S] to [-1, S]: B
      dims[unknown] = *symbols.begin();
    else  // a product of symbols: the same product, the same symbol
      dims[unknown] = DerivedSymbolicDim("product", [&] {
        Dims factors(symbols.begin(), symbols.end());
        factors.push_back(quotient);
        return factors;
      }());
  }
  out[0] = Shaped(dims);
}

void Transpose(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || out.empty()) return;
  Dims perm = AttrInts(n, "perm");
  if (perm.empty()) {
    perm.resize(x.dims.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (perm.size() != x.dims.size()) return;
  Dims dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(x.dims.size())) return;
    dims.push_back(x.dims[p]);
  }
  out[0] = Shaped(dims);
}

void ShapeOf(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || out.empty()) return;
  // Dims [start, end) (opset 15), clamped as ONNX says.
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(AttrInt(n, "start", 0)), end = clamp(AttrInt(n, "end", rank));
  Dims dims(x.dims.begin() + start, x.dims.begin() + std::max(start, end));
  out[0] = Shaped({static_cast<int64_t>(dims.size())});
  // A value holds known and symbolic dimensions alike (not unknown ones).
  if (std::none_of(dims.begin(), dims.end(), [](int64_t d) { return d == -1; }))
    out[0].value = dims;
}

// Unsqueeze / Squeeze by their axes (an attr before opset 13, then input 1).
void Axes(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out,
          bool insert) {
  const TensorInfo& x = in.In(n, 0);
  Dims axes = AttrInts(n, "axes");
  if (axes.empty() && in.Value(n, 1).has_value()) axes = *in.Value(n, 1);
  if (!x.known_rank || out.empty() || (insert && axes.empty())) return;
  const size_t rank = x.dims.size() + (insert ? axes.size() : 0);
  std::vector<bool> marked(insert ? rank : x.dims.size(), false);
  for (int64_t a : axes) {
    int64_t k = Axis(a, marked.size());
    if (k < 0 || k >= static_cast<int64_t>(marked.size())) return;
    marked[k] = true;
  }
  Dims dims;
  if (insert) {
    for (size_t i = 0, j = 0; i < rank; ++i) dims.push_back(marked[i] ? 1 : x.dims[j++]);
  } else {
    for (size_t i = 0; i < x.dims.size(); ++i) {
      if (axes.empty() ? x.dims[i] == 1 : marked[i]) continue;
      if (axes.empty() && x.dims[i] < 0) return;  // might be 1
      dims.push_back(x.dims[i]);
    }
  }
  out[0] = Shaped(dims);
}
void Unsqueeze(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  Axes(in, n, out, true);
}
void Squeeze(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  Axes(in, n, out, false);
}

// Pad: each dimension grows by its pads, [begin..., end...] (an attr before
// opset 11, then input 1; opset 18's `axes` input names the padded ones).
void Pad(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  Dims pads = AttrInts(n, "pads");
  if (pads.empty() && in.Value(n, 1).has_value()) pads = *in.Value(n, 1);
  if (!x.known_rank || out.empty() || n.num_inputs() > 3) return;
  const size_t rank = x.dims.size();
  if (pads.size() != 2 * rank) return;
  Dims dims = x.dims;
  for (size_t i = 0; i < rank; ++i)
    dims[i] = AddDims(dims[i], AddDims(pads[i], pads[i + rank]));
  out[0] = Shaped(dims);
}

// ReduceMean and the like over `axes` (an attr; input 1 from opset 18),
// every axis when none, kept as 1 with keepdims (the default).
void Reduce(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  Dims axes = AttrInts(n, "axes");
  if (axes.empty() && n.num_inputs() > 1) {
    if (!in.Value(n, 1).has_value()) return;
    axes = *in.Value(n, 1);
  }
  if (!x.known_rank || out.empty()) return;
  if (axes.empty() && AttrInt(n, "noop_with_empty_axes", 0)) return SameAsInput(in, n, out);
  std::vector<bool> reduced(x.dims.size(), axes.empty());
  for (int64_t a : axes) {
    int64_t k = Axis(a, x.dims.size());
    if (k < 0 || k >= static_cast<int64_t>(x.dims.size())) return;
    reduced[k] = true;
  }
  const bool keep = AttrInt(n, "keepdims", 1) != 0;
  Dims dims;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (!reduced[i]) dims.push_back(x.dims[i]);
    else if (keep) dims.push_back(1);
  }
  out[0] = Shaped(dims);
}

// Gather: data's dimensions before the axis, the indices', then data's after.
void Gather(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo &data = in.In(n, 0), &indices = in.In(n, 1);
  if (!data.known_rank || !indices.known_rank || out.empty()) return;
  const int64_t axis = Axis(AttrInt(n, "axis", 0), data.dims.size());
  if (axis < 0 || axis >= static_cast<int64_t>(data.dims.size())) return;
  Dims dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  out[0] = Shaped(dims);
}

// Split: the input with the axis' extent of each part, from `split` (an
// attr before opset 13, a constant input after) or `num_outputs` equal parts.
void Split(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank) return;
  const int64_t axis = Axis(AttrInt(n, "axis", 0), x.dims.size());
  if (axis < 0 || axis >= static_cast<int64_t>(x.dims.size())) return;
  Dims sizes = AttrInts(n, "split");
  if (sizes.empty() && n.num_inputs() >= 2 && in.In(n, 1).value) sizes = *in.In(n, 1).value;
  const int64_t parts = AttrInt(n, "num_outputs", 0);
  if (sizes.empty() && parts > 0 && x.dims[axis] >= 0 && x.dims[axis] % parts == 0)
    sizes.assign(parts, x.dims[axis] / parts);
  for (size_t k = 0; k < out.size() && k < sizes.size(); ++k) {
    Dims dims = x.dims;
    dims[axis] = sizes[k];
    out[k] = Shaped(dims);
  }
}

// onnxruntime's SkipLayerNormalization: the output and the residual sum
// (output 3) have the input's shape.
void SkipNorm(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  for (size_t k : {0, 3}) {
    if (k >= out.size()) continue;
    out[k] = in.In(n, 0);
    out[k].value.reset();
  }
}

// onnxruntime's Attention: [B, S, H] -> [B, S, V], V the value width
// (qkv_hidden_sizes[2], else a third of the packed weights' columns).
void Attention(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo &x = in.In(n, 0), &w = in.In(n, 1);
  if (!x.known_rank || x.dims.size() != 3 || out.empty()) return;
  Dims sizes = AttrInts(n, "qkv_hidden_sizes");
  int64_t v = sizes.size() == 3 ? sizes[2] : -1;
  if (sizes.empty() && w.known_rank && w.dims.size() == 2 && w.dims[1] >= 0 && w.dims[1] % 3 == 0)
    v = w.dims[1] / 3;
  out[0] = Shaped({x.dims[0], x.dims[1], v});
}

// onnxruntime's MultiHeadAttention: query [B, S, D] -> [B, S, Dv], Dv the
// value's width (a 3-D value [B, L, Dv], or its heads [B, N, L, Hv]: N * Hv).
void MultiHeadAttention(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& q = in.In(n, 0);
  if (!q.known_rank || q.dims.size() != 3 || out.empty()) return;
  const TensorInfo& v = n.num_inputs() > 2 ? in.In(n, 2) : q;
  int64_t width = -1;
  if (v.known_rank && v.dims.size() == 3) width = v.dims[2];
  if (v.known_rank && v.dims.size() == 4 && v.dims[1] >= 0 && v.dims[3] >= 0)
    width = v.dims[1] * v.dims[3];
  out[0] = Shaped({q.dims[0], q.dims[1], width});
}

// onnxruntime's GroupQueryAttention: query [B, S, D] with key and value
// apart -> [B, S, D] (N heads of Q's width); a packed query (no key: its
// width (N + 2 KV) H) is left unknown.
void GroupQueryAttention(const ShapeInputs& in, const Node& n,
                         std::vector<TensorInfo>& out) {
  const TensorInfo& q = in.In(n, 0);
  if (!q.known_rank || q.dims.size() != 3 || out.empty() || n.num_inputs() < 3)
    return;
  const TensorInfo& k = in.In(n, 1);
  if (!k.known_rank || k.dims.size() != 3) return;
  out[0] = q;
  out[0].value.reset();
}

// onnxruntime's EmbedLayerNormalization: ids [B, S] -> [B, S, H], H the
// word embeddings' width; its mask index [B].
void EmbedNorm(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo &ids = in.In(n, 0), &word = in.In(n, 2);
  if (!ids.known_rank || ids.dims.size() != 2 || out.empty()) return;
  const int64_t width = word.known_rank && word.dims.size() == 2 ? word.dims[1] : -1;
  out[0] = Shaped({ids.dims[0], ids.dims[1], width});
  if (out.size() > 1) out[1] = Shaped({ids.dims[0]});
  if (out.size() > 2) out[2] = out[0];
}

// ConstantOfShape: the shape its input's value gives.
void ConstantOfShape(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const std::optional<Dims>& shape = in.Value(n, 0);
  if (!shape.has_value() || out.empty()) return;
  for (int64_t d : *shape)
    if (d == -1 || (d < 0 && !IsSymbolicDim(d))) return;
  out[0] = Shaped(*shape);
}

// A bound of Range: its value, or, for a float Range, an integral float
// constant or a Cast to float of a known integer (tf2onnx's range over a
// size cast to float: Keras's causal mask); none otherwise.
std::optional<int64_t> RangeBound(const ShapeInputs& in, const Node& n, int i) {
  const std::optional<Dims>& value = in.Value(n, i);
  if (value.has_value()) return value->size() == 1 ? std::optional((*value)[0]) : std::nullopt;
  if (!n.input(i).valid()) return std::nullopt;
  const Node& p = in.graph().node(n.input(i).node);
  const tf::AttrValue* to = p.attr("to");
  if (p.op() == "Cast" && p.num_inputs() == 1 && to != nullptr &&
      (to->i() == 1 || to->i() == 11)) {  // float, double: exact for sizes below 2^24
    const std::optional<Dims>& v = in.Value(p, 0);
    if (v.has_value() && v->size() == 1 && (IsSymbolicDim((*v)[0]) ||
                                             std::abs((*v)[0]) < (int64_t{1} << 24)))
      return (*v)[0];
    return std::nullopt;
  }
  const tf::AttrValue* c = p.attr("value");
  if (p.op() != "Const" || c == nullptr || !c->has_tensor()) return std::nullopt;
  absl::StatusOr<ConstTensor> t = FromTensorProto(c->tensor(), p.value_content());
  if (!t.ok() || t->num_elements() != 1) return std::nullopt;
  const double x = Materialize(*t).values[0];
  if (x != std::floor(x) || std::abs(x) >= (int64_t{1} << 24)) return std::nullopt;
  return static_cast<int64_t>(x);
}

// Range: one dimension, (limit - start) / delta rounded up; range(0, S, 1)
// of a symbolic S has S elements, other symbolic bounds a symbol derived
// from them.
void Range(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  if (out.empty() || n.num_inputs() != 3) return;
  out[0] = Shaped({-1});
  int64_t v[3];
  for (int i = 0; i < 3; ++i) {
    const std::optional<int64_t> bound = RangeBound(in, n, i);
    if (!bound.has_value()) return;
    v[i] = *bound;
  }
  const int64_t start = v[0], limit = v[1], delta = v[2];
  if (IsSymbolicDim(start) || IsSymbolicDim(limit) || IsSymbolicDim(delta)) {
    out[0].dims[0] = start == 0 && delta == 1 ? limit
                                             : DerivedSymbolicDim("range", {start, limit, delta});
    return;
  }
  int64_t span = 0;
  if (delta == 0 || __builtin_sub_overflow(limit, start, &span) ||
      __builtin_add_overflow(span, delta + (delta > 0 ? -1 : 1), &span))
    return;
  out[0].dims[0] = std::max<int64_t>(span / delta, 0);
}

// Expand: the input broadcast with the shape its second input's value gives.
void Expand(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const std::optional<Dims>& shape = in.Value(n, 1);
  if (!shape.has_value() || out.empty()) return;
  out[0] = BroadcastShapes(in.In(n, 0), Shaped(*shape));
  out[0].value.reset();
}

// Tile(X, repeats): each dimension times its repeat (a symbolic one kept
// where its repeat is 1; unknown where the product would not fit).
void Tile(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || out.empty()) return;
  const std::optional<Dims>& repeats = in.Value(n, 1);
  const bool known = repeats.has_value() && repeats->size() == x.dims.size();
  Dims dims = x.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t r = known ? (*repeats)[i] : -1;
    if (r == 1) continue;
    const bool fits =
        r >= 0 && dims[i] >= 0 &&
        (r == 0 || dims[i] <= std::numeric_limits<int64_t>::max() / r);
    dims[i] = fits ? dims[i] * r : -1;
  }
  out[0] = Shaped(dims);
}

// Resize(X, roi, scales, sizes) with sizes over every axis: those sizes
// (symbolic ones kept); with scales or sizes not known, X's rank.
void Resize(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (out.empty() || !x.known_rank) return;
  out[0] = x;
  out[0].value.reset();
  const std::optional<Dims>& sizes = n.num_inputs() > 3 ? in.Value(n, 3) : std::nullopt;
  const bool all_axes = n.attr("axes") == nullptr;
  if (sizes.has_value() && all_axes && sizes->size() == x.dims.size()) {
    out[0].dims = *sizes;
  } else {
    std::fill(out[0].dims.begin(), out[0].dims.end(), -1);
  }
}

// GatherElements: the indices' shape.
void GatherElements(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  if (out.empty()) return;
  out[0] = in.In(n, 1);
  out[0].value.reset();
}

// Slice by constant starts, ends, axes and steps (clamped as ONNX says); a
// whole axis keeps its dimension, known or symbolic; a symbolic length or
// bound gives a symbol derived from them.
void Slice(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank || out.empty() || n.num_inputs() < 3) return;
  // The rank stays; what the bounds do not decide is unknown (the sliced
  // axes, where they are known).
  out[0] = Shaped(Dims(x.dims.size(), -1));
  if (n.num_inputs() > 3 && in.Value(n, 3)) {
    Dims dims = x.dims;
    for (int64_t a : *in.Value(n, 3)) {
      const int64_t axis = Axis(a, dims.size());
      if (axis < 0 || axis >= static_cast<int64_t>(dims.size())) return;
      dims[axis] = -1;
    }
    out[0] = Shaped(dims);
  }
  const std::optional<Dims>&starts = in.Value(n, 1), &ends = in.Value(n, 2);
  if (!starts || !ends || starts->size() != ends->size()) return;
  Dims axes, steps(starts->size(), 1);
  if (n.num_inputs() > 3) {
    if (!in.Value(n, 3)) return;
    axes = *in.Value(n, 3);
  } else {
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (n.num_inputs() > 4) {
    if (!in.Value(n, 4)) return;
    steps = *in.Value(n, 4);
  }
  if (axes.size() != starts->size() || steps.size() != starts->size()) return;
  Dims dims = x.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = Axis(axes[i], dims.size()), step = steps[i];
    if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) || step == 0) return;
    int64_t start = (*starts)[i], end = (*ends)[i], d = x.dims[axis];
    // the whole axis: to its length, or to an end past it, or past any
    // practical length for a symbolic one (torch writes INT64_MAX or
    // 2^31 - 1; tf2onnx a TensorFlow end mask as 1e9)
    if (step == 1 && start == 0 &&
        (end == d || (end >= 1000000000 && (d < 0 || d <= end))))
      continue;
    if (d == -1 || (d < 0 && !IsSymbolicDim(d))) {
      dims[axis] = -1;
      continue;
    }
    if (IsSymbolicDim(d) || IsSymbolicDim(start) || IsSymbolicDim(end)) {
      // a function of the length and the bounds (a buffer sliced to a
      // sequence's length: min(S, positions))
      dims[axis] = DerivedSymbolicDim("slice", {d, start, end, step});
      continue;
    }
    auto clamp = [d, step](int64_t v, bool is_end) {
      if (v < 0) v = v < INT64_MIN + d ? INT64_MIN : v + d;
      if (step > 0) return std::clamp<int64_t>(v, 0, d);
      return std::clamp<int64_t>(v, is_end ? -1 : 0, d - 1);
    };
    start = clamp(start, false);
    end = clamp(end, true);
    int64_t count = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    dims[axis] = std::max<int64_t>(count, 0);
  }
  out[0] = Shaped(dims);
}

// Small integer values through the ops of exported shape arithmetic
// (torch's Shape -> Gather -> Unsqueeze -> Concat -> Reshape, its
// ConstantOfShape/Equal/Where for expand), so that a static export's
// computed shapes are known. Values are at most 1-D and kMaxValue long.
constexpr size_t kMaxValue = 64;

// One item of an elementwise op where a symbolic dimension takes part: what
// holds for every size the symbol may stand for (a size is never negative;
// x * 1 is x; a sum is a symbol of its own), else none.
std::optional<int64_t> SymbolicItem(const std::string& op, int64_t a, int64_t b, int64_t c) {
  const bool sa = IsSymbolicDim(a), sb = IsSymbolicDim(b);
  if (op == "Equal") {
    if (a == b) return 1;
    if ((sa && !sb && b < 0) || (sb && !sa && a < 0)) return 0;
    return std::nullopt;
  }
  if (op == "Where") {
    if (sa) return std::nullopt;
    return a != 0 ? b : c;
  }
  if ((op == "Mul" || op == "Div") && !sb && b == 1) return a;
  if (op == "Mul" && !sa && a == 1) return b;
  if (op == "Sub" && a == b) return 0;
  if ((op == "Add" || op == "Sub") && !sb && b == 0) return a;
  if (op == "Add" && !sa && a == 0) return b;
  // A symbol plus a size or a symbol: the sum's own symbol, as a Concat's
  // joined axis has it (a cache's past plus the step's keys)
  if (op == "Add" && (sa || a >= 0) && (sb || b >= 0)) return SumDims(a, b);
  return std::nullopt;
}

// Elementwise over values of one length (or scalars); none on overflow or
// a division by zero.
std::optional<Dims> Elementwise(const std::string& op, const std::vector<const Dims*>& v) {
  size_t len = 1;
  for (const Dims* d : v) {
    if (d->size() != 1 && len != 1 && d->size() != len) return std::nullopt;
    if (d->size() != 1) len = d->size();
  }
  if (len > kMaxValue) return std::nullopt;
  Dims out(len);
  for (size_t i = 0; i < len; ++i) {
    auto at = [&](size_t k) { return (*v[k])[v[k]->size() == 1 ? 0 : i]; };
    int64_t a = at(0), b = v.size() > 1 ? at(1) : 0, r = 0;
    const int64_t c = v.size() > 2 ? at(2) : 0;
    if (IsSymbolicDim(a) || IsSymbolicDim(b) || IsSymbolicDim(c)) {
      std::optional<int64_t> item = SymbolicItem(op, a, b, c);
      if (!item.has_value()) return std::nullopt;
      out[i] = *item;
      continue;
    }
    if (op == "Add" && __builtin_add_overflow(a, b, &r)) return std::nullopt;
    if (op == "Sub" && __builtin_sub_overflow(a, b, &r)) return std::nullopt;
    if (op == "Mul" && __builtin_mul_overflow(a, b, &r)) return std::nullopt;
    if (op == "Div") {
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      r = a / b;  // ONNX's integer Div truncates
    }
    if (op == "Equal") r = a == b;
    if (op == "Max") r = std::max(a, b);
    if (op == "Min") r = std::min(a, b);
    if (op == "Where") r = a != 0 ? b : at(2);
    out[i] = r;
  }
  return out;
}

// x[start:end:step] of a 1-D value (torch's picks from a Shape), by
// constant starts, ends, axes [0] and steps.
std::optional<Dims> SliceValue(const std::vector<const Dims*>& values) {
  if (values.size() < 3 || values[0] == nullptr) return std::nullopt;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] == nullptr || values[i]->size() != 1 || IsSymbolicDim((*values[i])[0]))
      return std::nullopt;
  }
  if (values.size() > 3 && Axis((*values[3])[0], 1) != 0) return std::nullopt;
  const int64_t step = values.size() > 4 ? (*values[4])[0] : 1;
  if (step != 1) return std::nullopt;
  const int64_t size = static_cast<int64_t>(values[0]->size());
  auto clamp = [size](int64_t v) {
    if (v < 0) v = v < -size ? 0 : v + size;
    return std::min(v, size);
  };
  const int64_t start = clamp((*values[1])[0]), end = clamp((*values[2])[0]);
  return Dims(values[0]->begin() + start, values[0]->begin() + std::max(start, end));
}

void PropagateValue(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  if (out.empty() || !out[0].known_rank || out[0].dims.size() > 1) return;
  const std::string& op = n.op();
  std::vector<const Dims*> values;  // nullptr: no usable value
  for (int i = 0; i < n.num_inputs(); ++i) {
    const std::optional<Dims>& v = in.Value(n, i);
    const bool usable = v.has_value() && v->size() <= kMaxValue && in.In(n, i).dims.size() <= 1;
    values.push_back(usable ? &*v : nullptr);
  }
  std::optional<Dims> result;
  if (op == "Cast" && AttrInt(n, "to", 0) != 6 && AttrInt(n, "to", 0) != 7) return;  // ints only
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Cast" || op == "Identity" ||
      op == "Reshape") {
    if (values.empty() || values[0] == nullptr) return;
    result = *values[0];
  } else if (op == "Concat") {
    Dims joined;
    for (const Dims* v : values) {
      if (v == nullptr) return;
      joined.insert(joined.end(), v->begin(), v->end());
    }
    result = joined;
  } else if (op == "Gather") {
    const std::optional<Dims>& indices = in.Value(n, 1);
    if (values.empty() || values[0] == nullptr || !indices.has_value()) return;
    Dims picked;
    for (int64_t k : *indices) {
      if (k < 0) k += static_cast<int64_t>(values[0]->size());
      if (k < 0 || k >= static_cast<int64_t>(values[0]->size())) return;
      picked.push_back((*values[0])[k]);
    }
    result = picked;
  } else if (op == "Slice") {
    result = SliceValue(values);
  } else if (op == "ConstantOfShape") {
    const std::optional<Dims>& shape = in.Value(n, 0);
    if (!shape.has_value() || shape->size() > 1) return;
    int64_t count = shape->empty() ? 1 : (*shape)[0], fill = 0;
    if (count < 0 || count > static_cast<int64_t>(kMaxValue)) return;
    if (const tf::AttrValue* a = n.attr("value"); a != nullptr && a->has_tensor()) {
      absl::StatusOr<ConstTensor> t = FromTensorProto(a->tensor());
      if (!t.ok() || (t->dtype != tf::DT_INT64 && t->dtype != tf::DT_INT32)) return;
      ConstTensor m = Materialize(*t);
      if (m.values.size() != 1) return;
      fill = static_cast<int64_t>(m.values[0]);
    } else if (n.attr("value") != nullptr) {
      return;
    }
    result = Dims(count, fill);
  } else {
    for (const Dims* v : values)
      if (v == nullptr) return;
    result = Elementwise(op, values);
  }
  if (!result.has_value()) return;
  const int64_t elements = out[0].dims.empty() ? 1 : out[0].dims[0];
  if (elements >= 0 && elements != static_cast<int64_t>(result->size())) return;
  out[0].value = std::move(result);
}

template <ShapeFn F>
void WithValue(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  F(in, n, out);
  PropagateValue(in, n, out);
}

}  // namespace

void AddOnnxShapeFunctions(ShapeTable* table) {
  for (const char* op :
       {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
        "LpNormalization", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",
        "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign", "Gelu", "Erf",
        "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round",
        "Sign", "Not", "Clip", "CastLike", "Dropout", "Softmax",
        "LogSoftmax", "QuantizeLinear", "DequantizeLinear", "LRN", "Mish", "Sin",
        "Cos", "IsNaN", "IsInf", "CumSum", "ScatterND", "ScatterElements", "Trilu"})
    (*table)[op] = SameAsInput;
  (*table)["ConstantOfShape"] = WithValue<ConstantOfShape>;
  (*table)["Expand"] = Expand;
  (*table)["Tile"] = Tile;
  (*table)["Range"] = Range;
  (*table)["GatherElements"] = GatherElements;
  (*table)["Resize"] = Resize;
  (*table)["Slice"] = WithValue<Slice>;
  for (const char* op : {"Pow", "Sum", "Mean", "Less", "LessOrEqual", "Greater",
                         "GreaterOrEqual", "And", "Or", "Xor", "Mod"})
    (*table)[op] = Broadcast;
  // Shape arithmetic carries small integer values (PropagateValue).
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Equal", "Where", "Max", "Min"})
    (*table)[op] = WithValue<Broadcast>;
  for (const char* op : {"Cast", "Identity"}) (*table)[op] = WithValue<SameAsInput>;
  (*table)["Conv"] = Conv;
  (*table)["ConvInteger"] = Conv;
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) (*table)[op] = Pool;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    (*table)[op] = GlobalPool;
  (*table)["Gemm"] = Gemm;
  (*table)["MatMul"] = MatMul;
  (*table)["MatMulInteger"] = MatMul;
  (*table)["com.microsoft.FusedMatMul"] = MatMul;
  (*table)["Flatten"] = Flatten;
  (*table)["Concat"] = WithValue<Concat>;
  (*table)["Reshape"] = WithValue<Reshape>;
  (*table)["Transpose"] = Transpose;
  (*table)["Shape"] = ShapeOf;
  (*table)["Unsqueeze"] = WithValue<Unsqueeze>;
  (*table)["Squeeze"] = WithValue<Squeeze>;
  (*table)["Pad"] = Pad;
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"})
    (*table)[op] = Reduce;
  (*table)["Gather"] = WithValue<Gather>;
  (*table)["Split"] = Split;
  // onnxruntime's fused ops that rules write (rules/onnx/transformers/).
  // (a rotation keeps its input's shape: [B, S, D] or [B, N, S, H])
  for (const char* op : {"com.microsoft.Gelu", "com.microsoft.FastGelu",
                         "com.microsoft.BiasGelu", "com.microsoft.QuickGelu",
                         "com.microsoft.RotaryEmbedding", "RotaryEmbedding"})
    (*table)[op] = SameAsInput;
  for (const char* op : {"com.microsoft.SkipLayerNormalization",
                         "com.microsoft.SkipSimplifiedLayerNormalization"})
    (*table)[op] = SkipNorm;
  (*table)["com.microsoft.Attention"] = Attention;
  (*table)["com.microsoft.EmbedLayerNormalization"] = EmbedNorm;
  (*table)["com.microsoft.MultiHeadAttention"] = MultiHeadAttention;
  (*table)["com.microsoft.GroupQueryAttention"] = GroupQueryAttention;
}

}  // namespace graft::analysis
