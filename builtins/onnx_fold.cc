// ONNX nodes whose every input is a constant, evaluated as onnxruntime
// evaluates them (onnxsim's constant folding): elementwise math and
// comparisons with NumPy broadcasting, Where, Cast, and the views Gather,
// Transpose, Unsqueeze and Squeeze. Only small results are folded, so that
// folding never makes a model much larger.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "builtins/internal.h"
#include "engine/const_tensor.h"
#include "dialects/onnx/onnx_model.h"

namespace graft::builtins {

namespace {

// Folded results are at most this many elements.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

bool IsInteger(tf::DataType t) {
  switch (t) {
    case tf::DT_INT8: case tf::DT_INT16: case tf::DT_INT32: case tf::DT_INT64:
    case tf::DT_UINT8: case tf::DT_UINT16: case tf::DT_UINT32: case tf::DT_UINT64:
      return true;
    default:
      return false;
  }
}

bool IsFloat(tf::DataType t) { return t == tf::DT_FLOAT || t == tf::DT_DOUBLE; }

// Elements of a shape, or -1 past kMaxFoldedElements.
int64_t ElementsOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxFoldedElements) return -1;
  }
  return n;
}

// The shape NumPy broadcasting gives, or none.
std::optional<std::vector<int64_t>> BroadcastShape(
    const std::vector<const ConstTensor*>& in) {
  size_t rank = 0;
  for (const ConstTensor* t : in) rank = std::max(rank, t->shape.size());
  std::vector<int64_t> out(rank, 1);
  for (const ConstTensor* t : in) {
    const size_t off = rank - t->shape.size();
    for (size_t i = 0; i < t->shape.size(); ++i) {
      const int64_t d = t->shape[i];
      if (d == out[off + i] || d == 1) continue;
      if (out[off + i] != 1) return std::nullopt;
      out[off + i] = d;
    }
  }
  return out;
}

// Flat index into `t` of the element at `index` of the broadcast shape.
int64_t SourceIndex(const ConstTensor& t, const std::vector<int64_t>& index) {
  const size_t off = index.size() - t.shape.size();
  int64_t flat = 0;
  for (size_t i = 0; i < t.shape.size(); ++i)
    flat = flat * t.shape[i] + (t.shape[i] == 1 ? 0 : index[off + i]);
  return flat;
}

// out[i] = fn(inputs at i), broadcast.
std::optional<ConstTensor> Elementwise(const std::vector<const ConstTensor*>& in,
                                       tf::DataType dtype,
                                       const std::function<double(const double*)>& fn) {
  std::optional<std::vector<int64_t>> shape = BroadcastShape(in);
  if (!shape.has_value()) return std::nullopt;
  ConstTensor out;
  out.dtype = dtype;
  out.shape = *shape;
  const int64_t n = ElementsOf(out.shape);
  if (n < 0) return std::nullopt;
  out.values.resize(n);
  std::vector<int64_t> index(shape->size(), 0);
  std::vector<double> args(in.size());
  for (int64_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < in.size(); ++j) args[j] = in[j]->values[SourceIndex(*in[j], index)];
    out.values[k] = fn(args.data());
    for (int64_t i = static_cast<int64_t>(index.size()) - 1; i >= 0; --i) {
      if (++index[i] < (*shape)[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

// A value as `dtype` holds it when onnxruntime computes it: integers wrap
// to their width and truncate toward zero (Cast from float, Div), float32
// rounds to float.
double Stored(double v, tf::DataType dtype) {
  switch (dtype) {
    case tf::DT_FLOAT: return static_cast<double>(static_cast<float>(v));
    case tf::DT_BOOL: return v != 0 ? 1 : 0;
    case tf::DT_INT64: return static_cast<double>(SaturatedInt<int64_t>(std::trunc(v)));
    case tf::DT_INT32: return static_cast<double>(SaturatedInt<int32_t>(std::trunc(v)));
    case tf::DT_INT8: return static_cast<double>(SaturatedInt<int8_t>(std::trunc(v)));
    case tf::DT_UINT8: return static_cast<double>(SaturatedInt<uint8_t>(std::trunc(v)));
    default: return v;
  }
}

using Unary = double (*)(double);
const absl::flat_hash_map<std::string, Unary>& UnaryOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, Unary>{
      {"Abs", [](double x) { return std::fabs(x); }},
      {"Neg", [](double x) { return -x; }},
      {"Log", [](double x) { return std::log(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Reciprocal", [](double x) { return 1 / x; }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Not", [](double x) { return x == 0 ? 1.0 : 0.0; }},
  };
  return *ops;
}

using Binary = double (*)(double, double);
struct BinaryOp {
  Binary fn;
  bool comparison;  // bool output
};
const absl::flat_hash_map<std::string, BinaryOp>& BinaryOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, BinaryOp>{
      {"Add", {[](double a, double b) { return a + b; }, false}},
      {"Sub", {[](double a, double b) { return a - b; }, false}},
      {"Mul", {[](double a, double b) { return a * b; }, false}},
      {"Div", {[](double a, double b) { return a / b; }, false}},
      {"Pow", {[](double a, double b) { return std::pow(a, b); }, false}},
      {"Min", {[](double a, double b) { return std::min(a, b); }, false}},
      {"Max", {[](double a, double b) { return std::max(a, b); }, false}},
      {"Less", {[](double a, double b) { return a < b ? 1.0 : 0.0; }, true}},
      {"LessOrEqual", {[](double a, double b) { return a <= b ? 1.0 : 0.0; }, true}},
      {"Greater", {[](double a, double b) { return a > b ? 1.0 : 0.0; }, true}},
      {"GreaterOrEqual", {[](double a, double b) { return a >= b ? 1.0 : 0.0; }, true}},
      {"Equal", {[](double a, double b) { return a == b ? 1.0 : 0.0; }, true}},
      {"And", {[](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }, true}},
      {"Or", {[](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }, true}},
  };
  return *ops;
}

int64_t IntAttr(const Node& n, const char* name, int64_t fallback) {
  const tf::AttrValue* a = n.attr(name);
  return a != nullptr && a->value_case() == tf::AttrValue::kI ? a->i() : fallback;
}

// Axes from input 1 (opset 13 on) or the `axes` attr, made non-negative
// for a tensor of `rank`.
std::optional<std::vector<int64_t>> AxesOf(const Node& n,
                                           const std::vector<ConstTensor>& in, int64_t rank) {
  std::vector<int64_t> axes;
  if (in.size() > 1) {
    for (double v : in[1].values) axes.push_back(static_cast<int64_t>(v));
  } else if (const tf::AttrValue* a = n.attr("axes"); a != nullptr) {
    axes.assign(a->list().i().begin(), a->list().i().end());
  } else {
    return std::nullopt;
  }
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) return std::nullopt;
    if (axis < 0) axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// ReduceSum, ReduceProd, ReduceMax, ReduceMin over the axes the attr or
// input 1 gives (all when none, unless noop_with_empty_axes), keepdims as
// the node says; an integer result past 2^53 (not exact in a double) is
// left to run.
std::optional<ConstTensor> Reduce(const Node& n, const std::vector<ConstTensor>& in) {
  const std::string& op = n.op();
  const ConstTensor& x = in[0];
  if (op != "ReduceSum" && op != "ReduceProd" && op != "ReduceMax" && op != "ReduceMin")
    return std::nullopt;
  if (in.size() > 2 || (!IsFloat(x.dtype) && !IsInteger(x.dtype))) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes;
  if (in.size() > 1 || n.attr("axes") != nullptr) {
    std::optional<std::vector<int64_t>> given = AxesOf(n, in, rank);
    if (!given.has_value()) return std::nullopt;
    axes = *given;
  }
  if (axes.empty()) {
    if (IntAttr(n, "noop_with_empty_axes", 0) != 0) return x;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (ElementsOf(x.shape) == 0) return std::nullopt;  // an empty reduction's identity: left to run
  if ((op == "ReduceMax" || op == "ReduceMin") &&
      std::any_of(x.values.begin(), x.values.end(), [](double v) { return std::isnan(v); }))
    return std::nullopt;  // NaN's order: left to run
  const bool keep = IntAttr(n, "keepdims", 1) != 0;
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  ConstTensor out;
  out.dtype = x.dtype;
  std::vector<int64_t> kept;  // the output's dimensions, reduced ones as 1
  for (int64_t i = 0; i < rank; ++i) {
    kept.push_back(reduced[i] ? 1 : x.shape[i]);
    if (!reduced[i] || keep) out.shape.push_back(kept.back());
  }
  const int64_t count = ElementsOf(kept);
  out.values.assign(count, op == "ReduceSum" ? 0.0 : op == "ReduceProd" ? 1.0 : NAN);
  std::vector<int64_t> index(rank, 0);
  for (double v : x.values) {
    int64_t at = 0;
    for (int64_t i = 0; i < rank; ++i) at = at * kept[i] + (reduced[i] ? 0 : index[i]);
    double& r = out.values[at];
    if (op == "ReduceSum") r += v;
    if (op == "ReduceProd") r *= v;
    if (op == "ReduceMax") r = std::isnan(r) || v > r ? v : r;
    if (op == "ReduceMin") r = std::isnan(r) || v < r ? v : r;
    for (int64_t i = rank - 1; i >= 0 && ++index[i] == x.shape[i]; --i) index[i] = 0;
  }
  for (double& r : out.values) {
    if (IsInteger(x.dtype) && std::abs(r) > 0x1p53) return std::nullopt;
    r = Stored(r, x.dtype);
  }
  return out;
}

// Reshape to a constant target: 0 copies the dimension (unless
// allowzero), -1 takes what the others leave (engine's Reshape).
std::optional<ConstTensor> ReshapeTo(const Node& n, const ConstTensor& x,
                                     const ConstTensor& target) {
  if (!IsInteger(target.dtype) || target.shape.size() != 1) return std::nullopt;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < target.values.size(); ++i) {
    int64_t d = static_cast<int64_t>(target.values[i]);
    if (d == 0 && IntAttr(n, "allowzero", 0) == 0) {
      if (i >= x.shape.size()) return std::nullopt;
      d = x.shape[i];
    }
    shape.push_back(d);
  }
  absl::StatusOr<ConstTensor> out = Reshape(x, shape);
  if (!out.ok()) return std::nullopt;
  return *std::move(out);
}

// Concat along the `axis` attr, of one dtype (engine's Concat), within the
// fold's limit.
std::optional<ConstTensor> Join(const Node& n, const std::vector<ConstTensor>& in) {
  for (const ConstTensor& t : in)
    if (t.dtype != in[0].dtype) return std::nullopt;
  absl::StatusOr<ConstTensor> out = Concat(in, IntAttr(n, "axis", 0));
  if (!out.ok() || ElementsOf(out->shape) < 0) return std::nullopt;
  return *std::move(out);
}

// The output of `n` from its constant inputs, or none (an op or a case
// this does not evaluate).
std::optional<ConstTensor> Evaluate(const Node& n, const std::vector<ConstTensor>& in) {
  const std::string& op = n.op();
  if (in.empty()) return std::nullopt;
  const ConstTensor& x = in[0];
  if (auto it = UnaryOps().find(op); it != UnaryOps().end() && in.size() == 1) {
    if (op == "Not" ? x.dtype != tf::DT_BOOL : !IsFloat(x.dtype) && op != "Abs" && op != "Neg")
      return std::nullopt;
    Unary fn = it->second;
    const tf::DataType dtype = x.dtype;
    return Elementwise({&x}, dtype, [fn, dtype](const double* v) { return Stored(fn(v[0]), dtype); });
  }
  if (auto it = BinaryOps().find(op); it != BinaryOps().end() && in.size() == 2) {
    const ConstTensor& y = in[1];
    if (op != "Pow" && x.dtype != y.dtype) return std::nullopt;
    if ((op == "And" || op == "Or") != (x.dtype == tf::DT_BOOL)) return std::nullopt;
    if (!IsFloat(x.dtype) && !IsInteger(x.dtype) && x.dtype != tf::DT_BOOL) return std::nullopt;
    const BinaryOp b = it->second;
    const bool integer_div = op == "Div" && IsInteger(x.dtype);
    if (integer_div &&
        std::any_of(y.values.begin(), y.values.end(), [](double v) { return v == 0; }))
      return std::nullopt;  // onnxruntime raises; leave it to run
    const tf::DataType dtype = b.comparison ? tf::DT_BOOL : x.dtype;
    return Elementwise({&x, &y}, dtype, [b, dtype](const double* v) {
      return Stored(b.fn(v[0], v[1]), dtype);  // integer Div truncates toward zero
    });
  }
  if (op == "Where" && in.size() == 3) {
    if (x.dtype != tf::DT_BOOL || in[1].dtype != in[2].dtype) return std::nullopt;
    return Elementwise({&x, &in[1], &in[2]}, in[1].dtype,
                       [](const double* v) { return v[0] != 0 ? v[1] : v[2]; });
  }
  if (op == "Cast" && in.size() == 1) {
    const tf::DataType to = OnnxElemType(static_cast<int>(IntAttr(n, "to", 0)));
    if (!IsFloat(to) && !IsInteger(to) && to != tf::DT_BOOL) return std::nullopt;
    if (!IsFloat(x.dtype) && !IsInteger(x.dtype) && x.dtype != tf::DT_BOOL) return std::nullopt;
    return Elementwise({&x}, to, [to](const double* v) { return Stored(v[0], to); });
  }
  if (op == "Gather" && in.size() == 2) {
    const ConstTensor& idx = in[1];
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = IntAttr(n, "axis", 0);
    if (rank == 0 || axis < -rank || axis >= rank || !IsInteger(idx.dtype)) return std::nullopt;
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.shape[i];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x.shape[i];
    const int64_t d = x.shape[axis];
    ConstTensor out;
    out.dtype = x.dtype;
    out.shape.assign(x.shape.begin(), x.shape.begin() + axis);
    out.shape.insert(out.shape.end(), idx.shape.begin(), idx.shape.end());
    out.shape.insert(out.shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    const int64_t count = ElementsOf(out.shape);
    if (count < 0) return std::nullopt;
    out.values.reserve(count);
    for (int64_t o = 0; o < outer; ++o) {
      for (double v : idx.values) {
        int64_t j = static_cast<int64_t>(v);
        if (j < -d || j >= d) return std::nullopt;  // out of range: leave it to run
        if (j < 0) j += d;
        const double* row = x.values.data() + (o * d + j) * inner;
        out.values.insert(out.values.end(), row, row + inner);
      }
    }
    return out;
  }
  if (op == "Transpose" && in.size() == 1) {
    std::vector<int64_t> perm;
    if (const tf::AttrValue* a = n.attr("perm"); a != nullptr && a->list().i_size() > 0) {
      perm.assign(a->list().i().begin(), a->list().i().end());
    }
    absl::StatusOr<ConstTensor> out = Transpose(x, std::move(perm));
    if (!out.ok()) return std::nullopt;  // not a permutation: leave it to run
    return *std::move(out);
  }
  if ((op == "Unsqueeze" || op == "Squeeze") && in.size() <= 2) {
    const bool insert = op == "Unsqueeze";
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    std::optional<std::vector<int64_t>> axes =
        AxesOf(n, in, insert ? rank + static_cast<int64_t>(in.size() > 1 ? in[1].values.size() : 0)
                             : rank);
    if (!axes.has_value() || (insert && axes->empty())) return std::nullopt;
    ConstTensor out = x;
    if (insert) {
      for (int64_t axis : *axes) out.shape.insert(out.shape.begin() + axis, 1);
    } else {
      std::vector<int64_t> shape;
      for (int64_t i = 0; i < rank; ++i) {
        const bool dropped = axes->empty() ? x.shape[i] == 1
                                           : std::binary_search(axes->begin(), axes->end(), i);
        if (dropped && x.shape[i] != 1) return std::nullopt;
        if (!dropped) shape.push_back(x.shape[i]);
      }
      out.shape = shape;
    }
    return out;
  }
  if (op == "Shape" && in.size() == 1) {  // dims start to end (opset 15's attrs)
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(IntAttr(n, "start", 0)), end = clamp(IntAttr(n, "end", rank));
    ConstTensor out;
    out.dtype = tf::DT_INT64;
    for (int64_t i = start; i < end; ++i) out.values.push_back(static_cast<double>(x.shape[i]));
    out.shape = {static_cast<int64_t>(out.values.size())};
    return out;
  }
  if (op.rfind("Reduce", 0) == 0) return Reduce(n, in);
  if (op == "Reshape" && in.size() == 2) return ReshapeTo(n, x, in[1]);
  if (op == "Concat") return Join(n, in);
  return std::nullopt;
}

// The node of a node or tensor value, its inputs all Const nodes (read as
// they are: no Identity or Cast in between), evaluated.
std::optional<ConstTensor> Folded(const HookContext& ctx, const Value& v) {
  if (OnnxOf(ctx.graph) == nullptr) return std::nullopt;
  const Node& n = ctx.graph.node(v.tensor.node);
  // Every input a Const small enough, by its declared shape, before any is
  // read: a model's weights (an embedding a Gather reads by token ids) are
  // never read to find that a node does not fold.
  for (int i = 0; i < n.num_inputs(); ++i) {
    const Endpoint e = n.input(i);
    if (e.node == kNoNode || ctx.graph.node(e.node).op() != "Const") return std::nullopt;
    const tf::AttrValue* value = ctx.graph.node(e.node).attr("value");
    if (value == nullptr) return std::nullopt;
    std::vector<int64_t> dims;
    for (const auto& d : value->tensor().tensor_shape().dim()) dims.push_back(d.size());
    if (ElementsOf(dims) < 0) return std::nullopt;
  }
  std::vector<ConstTensor> in;
  for (int i = 0; i < n.num_inputs(); ++i) {
    absl::StatusOr<ConstTensor> c = ConstantOf(ctx.graph, n.input(i));
    if (!c.ok() || c->num_elements() > kMaxFoldedElements) return std::nullopt;
    in.push_back(*std::move(c));
  }
  return Evaluate(n, in);
}

}  // namespace

void RegisterOnnxFoldHooks(HookRegistry& r) {
  Add(r, "foldable", {VT::kNode}, VT::kBool, false,
      "an ONNX node every input of which is a Const that onnxsim-style "
      "constant folding evaluates (elementwise math and comparisons, "
      "Where, Cast, Gather, Transpose, Unsqueeze, Squeeze, Shape, Reshape, "
      "Concat, ReduceSum / Prod / Max / Min) into at most 65536 elements",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(Folded(ctx, a[0]).has_value());
      });
  Add(r, "folded", {VT::kNode}, VT::kConst, false,
      "that node's output, evaluated as onnxruntime computes it (an error "
      "where foldable is false)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::optional<ConstTensor> out = Folded(ctx, a[0]);
        if (!out.has_value())
          return absl::InvalidArgumentError(absl::StrCat(
              "`", ctx.graph.node(a[0].tensor.node).name(), "` is not foldable"));
        return Value::Constant(*std::move(out));
      });
}

}  // namespace graft::builtins
