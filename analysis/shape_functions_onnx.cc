// Shape functions of the ONNX dialect's ops (NCHW, numpy broadcasting),
// for `graft mem` and `graft cost` on ONNX models: convolutions, pooling,
// Gemm and MatMul, elementwise ops, and the shape ops around them.
#include <numeric>

#include "analysis/shape_functions_internal.h"

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
    dims[axis] = AddDims(dims[axis], t.dims[axis]);
  }
  out[0] = Shaped(dims);
}

// Reshape by a known shape input: 0 copies the input's dimension (unless
// allowzero), -1 takes what is left.
void Reshape(const ShapeInputs& in, const Node& n, std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  const std::optional<Dims>& shape = in.Value(n, 1);
  if (!shape.has_value() || out.empty()) return;
  Dims dims = *shape;
  int unknown = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !AttrInt(n, "allowzero", 0))
      dims[i] = x.known_rank && i < x.dims.size() ? x.dims[i] : -1;
    if (dims[i] == -1 && (*shape)[i] == -1) unknown = static_cast<int>(i);
  }
  if (unknown >= 0) {
    int64_t total = x.fully_known() ? x.num_elements() : -1, rest = 1;
    for (size_t i = 0; i < dims.size(); ++i)
      if (static_cast<int>(i) != unknown) rest = MulDims(rest, dims[i]);
    dims[unknown] = total >= 0 && rest > 0 ? total / rest : -1;
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
  out[0] = Shaped({static_cast<int64_t>(x.dims.size())});
  if (x.fully_known() && !n.attr("start") && !n.attr("end")) out[0].value = x.dims;
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

}  // namespace

void AddOnnxShapeFunctions(ShapeTable* table) {
  for (const char* op :
       {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
        "LpNormalization", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",
        "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign", "Gelu", "Erf",
        "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round",
        "Sign", "Not", "Clip", "Cast", "CastLike", "Identity", "Dropout", "Softmax",
        "LogSoftmax", "QuantizeLinear", "DequantizeLinear", "LRN", "Mish", "Sin",
        "Cos"})
    (*table)[op] = SameAsInput;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum",
                         "Mean", "Equal", "Less", "LessOrEqual", "Greater",
                         "GreaterOrEqual", "And", "Or", "Xor", "Where", "Mod"})
    (*table)[op] = Broadcast;
  (*table)["Conv"] = Conv;
  (*table)["ConvInteger"] = Conv;
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) (*table)[op] = Pool;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    (*table)[op] = GlobalPool;
  (*table)["Gemm"] = Gemm;
  (*table)["MatMul"] = MatMul;
  (*table)["MatMulInteger"] = MatMul;
  (*table)["Flatten"] = Flatten;
  (*table)["Concat"] = Concat;
  (*table)["Reshape"] = Reshape;
  (*table)["Transpose"] = Transpose;
  (*table)["Shape"] = ShapeOf;
  (*table)["Unsqueeze"] = Unsqueeze;
  (*table)["Squeeze"] = Squeeze;
  (*table)["Pad"] = Pad;
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"})
    (*table)[op] = Reduce;
  (*table)["Gather"] = Gather;
  (*table)["Split"] = Split;
  // onnxruntime's fused ops that rules write (rules/onnx/transformers/).
  for (const char* op : {"com.microsoft.Gelu", "com.microsoft.FastGelu",
                         "com.microsoft.BiasGelu", "com.microsoft.QuickGelu"})
    (*table)[op] = SameAsInput;
  for (const char* op : {"com.microsoft.SkipLayerNormalization",
                         "com.microsoft.SkipSimplifiedLayerNormalization"})
    (*table)[op] = SkipNorm;
  (*table)["com.microsoft.Attention"] = Attention;
}

}  // namespace graft::analysis
