// Constant math over matched Const tensors and numbers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "builtins/internal.h"
#include "engine/const_tensor.h"
#include "engine/op_registry.h"

namespace graft::builtins {

namespace {

absl::StatusOr<Value> ConstUnary(const HookContext& ctx, Args a,
                                 const char* op) {
  // (Unary rounds a large float weight from its bytes, decoding any other)
  absl::StatusOr<ConstTensor> x =
      ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
  if (!x.ok()) return x.status();
  absl::StatusOr<ConstTensor> r = Unary(*std::move(x), op);
  if (!r.ok()) return r.status();
  return Value::Constant(*std::move(r));
}

absl::StatusOr<Value> MinMax(const HookContext& ctx, Args a, const char* op) {
  absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
  if (!x.ok()) return x.status();
  if (a.size() == 1) return Value::Constant(Reduce(*x, op));
  for (size_t i = 1; i < a.size(); ++i) {
    absl::StatusOr<ConstTensor> y = ToConstant(ctx.graph, a[i]);
    if (!y.ok()) return y.status();
    absl::StatusOr<ConstTensor> r = Broadcast(*x, *y, op);
    if (!r.ok()) return r.status();
    x = *std::move(r);
  }
  return Value::Constant(*std::move(x));
}

// floor / ceil / round of a number, as an int (round: halves away from
// zero, as C's `llround`).
absl::StatusOr<Value> ToInt(Args a, double (*fn)(double), const char* name) {
  double x = fn(a[0].number());
  if (!(std::fabs(x) < 9.2e18)) {
    return absl::OutOfRangeError(
        absl::StrCat("`", name, "(", a[0].number(), ")` is not a 64-bit int"));
  }
  return Value::Int(static_cast<int64_t>(x));
}

// The padding of the convolution that SpaceToBatchND(block, paddings) ->
// VALID Conv2D(filter) -> BatchToSpaceND(block, crops) computes, as TF's
// with_space_to_batch builds it: "VALID" (the padding added is cropped
// again), "SAME" (each spatial side padded as SAME pads the dilated
// filter: total (k-1)·rate, the smaller half first), or "" (neither).
std::string AtrousPadding(const ConstTensor& pads, const ConstTensor& crops,
                          const ConstTensor& filter, const ConstTensor& block) {
  if (pads.shape != std::vector<int64_t>{2, 2} || crops.shape != pads.shape ||
      filter.shape.size() != 4 || block.values.size() != 2)
    return "";
  bool valid = true, same = true;
  for (int d = 0; d < 2; ++d) {
    const double before = pads.values[2 * d], after = pads.values[2 * d + 1];
    const double crop_before = crops.values[2 * d],
                 crop_after = crops.values[2 * d + 1];
    const double total = (filter.shape[d] - 1) * block.values[d];
    const double half = std::floor(total / 2);
    if (crop_before != 0) return "";
    valid = valid && before == 0 && after - crop_after == 0;
    same = same && before == half && after - crop_after == total - half;
  }
  return valid ? "VALID" : same ? "SAME" : "";
}

// x[..., start:end, ...] along `axis` (negative from the back), as
// numpy slicing with a step of 1; start and end clamped to the axis.
absl::StatusOr<ConstTensor> SliceAxis(const ConstTensor& x, int64_t axis, int64_t start,
                                      int64_t end) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    return absl::InvalidArgumentError(
        absl::StrCat("slice_axis: axis out of range for ", x.ShapeString()));
  const int64_t n = x.shape[axis];
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  start = clamp(start);
  end = std::max(start, clamp(end));
  ConstTensor values = Materialize(x);
  ConstTensor out;
  out.dtype = x.dtype;
  out.shape = x.shape;
  out.shape[axis] = end - start;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  out.values.reserve(out.num_elements());
  for (int64_t o = 0; o < outer; ++o) {
    auto from = values.values.begin() + (o * n + start) * inner;
    out.values.insert(out.values.end(), from, from + (end - start) * inner);
  }
  return out;
}

// Whether `ok(value, dtype)` holds for every value of a constant (and it
// has one): all_close's and all_equal's walk.
template <typename Pred>
absl::StatusOr<Value> EveryValue(const HookContext& ctx, const Value& c, Pred ok) {
  absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, c);
  if (!x.ok()) return x.status();
  for (double e : Materialize(*x).values)
    if (!ok(e, x->dtype)) return Value::Bool(false);
  return Value::Bool(x->num_elements() > 0);
}

}  // namespace

void RegisterConstantHooks(HookRegistry& r) {
  Add(r, "floor", {VT::kFloat}, VT::kInt, false,
      "the largest int not above a number",
      [](const HookContext&, Args a) { return ToInt(a, std::floor, "floor"); });
  Add(r, "ceil", {VT::kFloat}, VT::kInt, false,
      "the smallest int not below a number",
      [](const HookContext&, Args a) { return ToInt(a, std::ceil, "ceil"); });
  Add(r, "round", {VT::kFloat}, VT::kInt, false,
      "the nearest int (halves away from zero)",
      [](const HookContext&, Args a) { return ToInt(a, std::round, "round"); });
  Add(r, "rsqrt", {VT::kConst}, VT::kConst, false, "1 / sqrt(x), elementwise",
      [](const HookContext& ctx, Args a) {
        return ConstUnary(ctx, a, "rsqrt");
      });
  Add(r, "sqrt", {VT::kConst}, VT::kConst, false, "sqrt(x), elementwise",
      [](const HookContext& ctx, Args a) {
        return ConstUnary(ctx, a, "sqrt");
      });
  Add(r, "rounded", {VT::kConst}, VT::kConst, false,
      "each value rounded to the nearest integer (halves away from zero)",
      [](const HookContext& ctx, Args a) {
        return ConstUnary(ctx, a, "round");
      });
  Add(r, "elements", {VT::kConst}, VT::kInt, false,
      "the number of values of a constant",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        // counted from the shape: a large weight's values are not read
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
        if (!x.ok()) return x.status();
        return Value::Int(x->num_elements());
      });
  Add(r, "as_number", {VT::kConst}, VT::kFloat, false,
      "the value of a one-value constant, as a number (an error for any "
      "other count)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        if (x->values.size() != 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("as_number: expected a constant of one value, got ",
                           x->ShapeString()));
        }
        return Value::Float(x->values[0]);
      });
  Add(r, "all_close", {VT::kConst, VT::kFloat}, VT::kBool, false,
      "every value of the constant is v, as numpy.isclose's defaults say "
      "(|x - v| <= 1e-8 + 1e-5 |v|), or within half the precision of a "
      "float16 or bfloat16 constant: an exporter's float32 sqrt(2) is "
      "all_close to 1.4142135623730951, and so is its float16 1.414",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const double v = a[1].number();
        return EveryValue(ctx, a[0], [v](double e, tf::DataType dtype) {
          // Half a unit in the last place, relative: 2^-11 for float16's 10
          // bits of mantissa, 2^-8 for bfloat16's 7.
          const double rtol = dtype == tf::DT_HALF       ? 0x1p-11
                              : dtype == tf::DT_BFLOAT16 ? 0x1p-8
                                                         : 1e-5;
          return std::abs(e - v) <= 1e-8 + rtol * std::abs(v);
        });
      });
  Add(r, "all_equal", {VT::kConst, VT::kFloat}, VT::kBool, false,
      "every value of the constant is exactly v (an identity's unit: x + 1e-12 "
      "is not x, though all_close(1e-12, 0) holds)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const double v = a[1].number();
        return EveryValue(ctx, a[0], [v](double e, tf::DataType) { return e == v; });
      });
  Add(r, "more_distinct_than", {VT::kConst, VT::kInt}, VT::kBool, false,
      "the constant holds more than n different values (stops counting "
      "there)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        absl::flat_hash_set<double> seen;
        for (double v : Materialize(*x).values) {
          seen.insert(v);
          if (static_cast<int64_t>(seen.size()) > a[1].i)
            return Value::Bool(true);
        }
        return Value::Bool(false);
      });
  Add(r, "quantize_uint8", {VT::kConst}, VT::kList, false,
      "[q, min, max]: the constant in eight bits (quint8 over [min, max], "
      "the range holding 0) as Dequantize reads it back in MIN_FIRST mode",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        QuantizedTensor q = QuantizeUint8(*x);
        return Value::List({Value::Constant(std::move(q.values)),
                            Value::Constant(ConstTensor::Scalar(q.min)),
                            Value::Constant(ConstTensor::Scalar(q.max))});
      });
  Add(r, "sparse_entries", {VT::kConst}, VT::kList, false,
      "[keys, values]: the positions (int64) and values of an [N, 1] "
      "constant's entries of magnitude at least 1e-5 (one 0 -> 0 when there "
      "are none: a table cannot start empty), GTT's sparsify_gather",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        if (x->shape.size() != 2 || x->shape[1] != 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("sparse_entries: expected an [N, 1] constant, not ",
                           x->ShapeString()));
        }
        ConstTensor keys, values;
        keys.dtype = tf::DT_INT64;
        values.dtype = x->dtype;
        for (size_t i = 0; i < x->values.size(); ++i) {
          if (std::fabs(x->values[i]) >= 1e-5) {
            keys.values.push_back(static_cast<double>(i));
            values.values.push_back(x->values[i]);
          }
        }
        if (keys.values.empty()) {
          keys.values.push_back(0);
          values.values.push_back(0);
        }
        keys.shape = {static_cast<int64_t>(keys.values.size())};
        values.shape = keys.shape;
        return Value::List({Value::Constant(std::move(keys)),
                            Value::Constant(std::move(values))});
      });
  Add(r, "abs", {VT::kConst}, VT::kConst, false, "|x|, elementwise",
      [](const HookContext& ctx, Args a) { return ConstUnary(ctx, a, "abs"); });
  Add(r, "min", {VT::kConst}, VT::kConst, true,
      "min(x): the smallest value; min(x, y, ...): elementwise",
      [](const HookContext& ctx, Args a) { return MinMax(ctx, a, "min"); });
  Add(r, "max", {VT::kConst}, VT::kConst, true,
      "max(x): the largest value; max(x, y, ...): elementwise",
      [](const HookContext& ctx, Args a) { return MinMax(ctx, a, "max"); });
  Add(r, "reshape", {VT::kConst, VT::kList}, VT::kConst, false,
      "the constant with a new shape (one dimension may be -1)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        std::vector<int64_t> shape;
        for (const Value& d : a[1].list) shape.push_back(d.i);
        absl::StatusOr<ConstTensor> y = Reshape(*x, shape);
        if (!y.ok()) return y.status();
        return Value::Constant(*std::move(y));
      });
  AddBuiltinHook(
      r, "transposed", {VT::kConst, VT::kList}, VT::kConst,
      "transposed(c [, perm]): the constant's axes permuted, as "
      "numpy.transpose (reversed without a perm)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        std::vector<int64_t> perm;
        if (a.size() > 1) {
          for (const Value& d : a[1].list) perm.push_back(d.i);
        }
        absl::StatusOr<ConstTensor> y = Transpose(*x, std::move(perm));
        if (!y.ok()) return y.status();
        return Value::Constant(*std::move(y));
      },
      false, 1);
  Add(r, "concat", {VT::kList, VT::kInt}, VT::kConst, false,
      "concat([a, b, ...], axis): constants joined along an axis, as "
      "numpy.concatenate",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::vector<ConstTensor> parts;
        for (const Value& item : a[0].list) {
          absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, item);
          if (!x.ok()) return x.status();
          parts.push_back(*std::move(x));
        }
        absl::StatusOr<ConstTensor> y = Concat(parts, a[1].i);
        if (!y.ok()) return y.status();
        return Value::Constant(*std::move(y));
      });
  Add(r, "slice_axis", {VT::kConst, VT::kInt, VT::kInt, VT::kInt}, VT::kConst, false,
      "slice_axis(x, axis, start, end): x[..., start:end] along an axis, as numpy "
      "slicing (negative indices from the end, clamped)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> x = ToConstant(ctx.graph, a[0]);
        if (!x.ok()) return x.status();
        absl::StatusOr<ConstTensor> y = SliceAxis(*x, a[1].i, a[2].i, a[3].i);
        if (!y.ok()) return y.status();
        return Value::Constant(*std::move(y));
      });
  Add(r, "cast", {VT::kConst, VT::kString}, VT::kConst, false,
      "the constant in another dtype (\"float16\", \"int32\", ...), values "
      "rounded as that dtype holds them",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<tf::DataType> dtype = ParseDataType(a[1].s);
        if (!dtype.ok()) return dtype.status();
        // (CastTo reads a large float weight's bytes into an integer's)
        absl::StatusOr<ConstTensor> x =
            ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
        if (!x.ok()) return x.status();
        absl::StatusOr<ConstTensor> y = CastTo(*std::move(x), *dtype);
        if (!y.ok()) return y.status();
        return Value::Constant(*std::move(y));
      });
  Add(r, "dilated_filter", {VT::kConst, VT::kConst}, VT::kConst, false,
      "dilated_filter(w, [rh, rw]): an HWIO filter with rh-1 / rw-1 zero "
      "rows / columns between its taps, the filter a dilated convolution "
      "applies",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<ConstTensor> w =
            ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
        if (!w.ok()) return w.status();
        absl::StatusOr<ConstTensor> rate = ToConstant(ctx.graph, a[1]);
        if (!rate.ok()) return rate.status();
        if (rate->values.size() != 2)
          return absl::InvalidArgumentError("expected two rates, [rh, rw]");
        absl::StatusOr<ConstTensor> d =
            DilateFilter(*w, static_cast<int64_t>(rate->values[0]),
                         static_cast<int64_t>(rate->values[1]));
        if (!d.ok()) return d.status();
        return Value::Constant(*std::move(d));
      });
  Add(r, "atrous_padding", {VT::kConst, VT::kConst, VT::kConst, VT::kConst},
      VT::kString, false,
      "atrous_padding(paddings, crops, w, block): the padding of the dilated "
      "convolution that SpaceToBatchND, a VALID Conv2D and BatchToSpaceND "
      "compute (\"VALID\", \"SAME\"), or \"\" when they compute neither",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        ConstTensor c[4];
        for (int i = 0; i < 4; ++i) {
          absl::StatusOr<ConstTensor> t = ToConstant(ctx.graph, a[i]);
          if (!t.ok()) return t.status();
          c[i] = *std::move(t);
        }
        return Value::String(AtrousPadding(c[0], c[1], c[2], c[3]));
      });
}

}  // namespace graft::builtins
