// Quantization and folding helpers: fake-quant lookup, per-channel filter
// ranges and scaling, calibrated ranges from a `ranges` param or from the
// min/max log of GTT's insert_logging.
#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "builtins/internal.h"
#include "engine/const_tensor.h"
#include "engine/files.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/op_registry.h"

namespace graft::builtins {

namespace {

// The records of a min/max log, by node: each line holding
// `NAME__print__;__requant_min_max:[min][max]` (what a Print that
// insert_logging(show_name=true, message="__requant_min_max:") put after a
// RequantizationRange logs at each run).
std::map<std::string, std::vector<std::pair<float, float>>> MinMaxRecords(
    absl::string_view log) {
  constexpr absl::string_view kPrint = "__print__";
  constexpr absl::string_view kPrefix = "__requant_min_max:";
  std::map<std::string, std::vector<std::pair<float, float>>> out;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, absl::StrCat(kPrint, ";", kPrefix))) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ';');
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view rest = parts[i];
      if (!absl::ConsumePrefix(&rest, kPrefix) ||
          !absl::EndsWith(parts[i - 1], kPrint))
        continue;
      // "[min][max]"
      std::vector<absl::string_view> values = absl::StrSplit(rest, '[');
      float lo = 0, hi = 0;
      if (values.size() != 3 || !values[0].empty() ||
          !absl::ConsumeSuffix(&values[1], "]") ||
          !absl::ConsumeSuffix(&values[2], "]") ||
          !absl::SimpleAtof(values[1], &lo) ||
          !absl::SimpleAtof(values[2], &hi))
        continue;
      absl::string_view name = parts[i - 1];
      name.remove_suffix(kPrint.size());
      out[std::string(name)].emplace_back(lo, hi);
    }
  }
  return out;
}

// The blocks of blockwise_quantized's and blockwise_dq's arguments (w,
// bits, block_size, symmetric[, axis]); w's shape into `shape` when given.
// A large weight is read from its bytes, never decoded whole.
absl::StatusOr<BlockwiseQuantized> BlockwiseOfArgs(
    const HookContext& ctx, Args a, std::vector<int64_t>* shape) {
  absl::StatusOr<ConstTensor> w =
      ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
  if (!w.ok()) return w.status();
  if (shape != nullptr) *shape = w->shape;
  return QuantizeBlockwise(*w, static_cast<int>(a[1].i), a[2].i, a[3].b,
                           a.size() > 4 ? static_cast<int>(a[4].i) : 0);
}

}  // namespace

void RegisterQuantizationHooks(HookRegistry& r) {
  Add(r, "quantized", {VT::kTensor}, VT::kBool, false,
      "a fake-quant op reads the tensor, directly or through a Cast (a "
      "float16 tensor quantized in float32)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Graph& g = ctx.graph;
        for (InputSlot s : g.node(a[0].tensor.node).consumers(a[0].tensor.port)) {
          const Node& reader = g.node(s.node);
          if (GlobMatch("FakeQuant*", reader.op())) return Value::Bool(true);
          if (reader.op() != "Cast") continue;
          for (InputSlot c : reader.consumers(0)) {
            if (GlobMatch("FakeQuant*", g.node(c.node).op()))
              return Value::Bool(true);
          }
        }
        return Value::Bool(false);
      });
  Add(r, "fake_quant_of", {VT::kTensor}, VT::kNode, false,
      "the first fake-quant op that reads the tensor (an error if none)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        for (InputSlot s :
             ctx.graph.node(a[0].tensor.node).consumers(a[0].tensor.port)) {
          if (GlobMatch("FakeQuant*", ctx.graph.node(s.node).op()))
            return Value::NodeRef(s.node);
        }
        return absl::NotFoundError(absl::StrCat(
            "no fake-quant reads `", ctx.graph.TensorName(a[0].tensor), "`"));
      });
  for (const char* name : {"channel_min", "channel_max"}) {
    bool is_min = std::string(name) == "channel_min";
    Add(r, name, {VT::kConst, VT::kNode}, VT::kConst, false,
        "per output channel min / max of a filter, in the layout of the given "
        "conv/matmul",
        [is_min](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          // A large filter is read from its bytes, never decoded whole.
          absl::StatusOr<ConstTensor> w =
              ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
          if (!w.ok()) return w.status();
          const Node& op = ctx.graph.node(a[1].tensor.node);
          absl::StatusOr<ConstTensor> r =
              ChannelReduce(*w, op.op(), TransposedFilter(op), is_min);
          if (!r.ok()) return r.status();
          return Value::Constant(*std::move(r));
        });
  }
  for (const char* name : {"range_min", "range_max"}) {
    bool is_min = std::string(name) == "range_min";
    Add(r, name, {VT::kRanges, VT::kTensor, VT::kFloat}, VT::kFloat, false,
        "the calibrated min / max of the tensor from a `ranges` param, or the "
        "default",
        [is_min](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          // An ONNX model's ranges name its values as the file does.
          std::string key = OnnxValueName(ctx.graph, a[1].tensor);
          if (key.empty()) key = ctx.graph.TensorName(a[1].tensor);
          const TensorRange* range = a[0].ranges ? a[0].ranges->Find(key) : nullptr;
          if (range == nullptr) return Value::Float(a[2].number());
          return Value::Float(is_min ? range->min : range->max);
        });
  }
  Add(r, "requantization_ranges", {VT::kString, VT::kFloat, VT::kFloat},
      VT::kList, false,
      "requantization_ranges(log, min_percentile, max_percentile): [n, min, "
      "max] for each RequantizationRange a min/max log names, its range at "
      "those percentiles of the logged runs (GTT's "
      "freeze_requantization_ranges); a node frozen already is left out",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        if (a[0].s.empty()) {
          return absl::InvalidArgumentError(
              "min_max_log_file: give the log that insert_logging's Prints "
              "wrote");
        }
        absl::StatusOr<std::string> log =
            ReadFileBytes(a[0].s, kMaxGraphFileBytes, "a min/max log");
        if (!log.ok()) return log.status();
        auto records = MinMaxRecords(*log);
        if (records.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(a[0].s,
                           ": no line holds `NAME__print__;__requant_min_max:"
                           "[min][max]`"));
        }
        std::vector<Value> out;
        for (auto& [name, runs] : records) {
          NodeId id = ctx.graph.FindId(name);
          if (id == kNoNode) {
            if (ctx.graph.Contains(name + "/frozen_min")) continue;
            return absl::NotFoundError(absl::StrCat(
                a[0].s, " logs `", name, "`, which is not in the graph"));
          }
          if (ctx.graph.node(id).op() != "RequantizationRange") {
            return absl::InvalidArgumentError(absl::StrCat(
                a[0].s, " logs `", name, "`, a ", ctx.graph.node(id).op(),
                ", not a RequantizationRange"));
          }
          std::vector<float> mins, maxs;
          for (auto [lo, hi] : runs) {
            mins.push_back(lo);
            maxs.push_back(hi);
          }
          std::sort(mins.begin(), mins.end());
          std::sort(maxs.begin(), maxs.end());
          const float n = static_cast<float>(runs.size());
          const int last = static_cast<int>(runs.size()) - 1;
          int lo = static_cast<int>(
              std::round(n * (static_cast<float>(a[1].number()) / 100.0f)));
          int hi = static_cast<int>(std::round(
              n * (1.0f - static_cast<float>(a[2].number()) / 100.0f)));
          lo = std::clamp(lo, 0, last);
          hi = std::clamp(hi, 0, last);
          out.push_back(Value::List({Value::NodeRef(id), Value::Float(mins[lo]),
                                     Value::Float(maxs[hi])}));
        }
        return Value::List(std::move(out));
      });
  Add(r, "qparams_uint8", {VT::kFloat, VT::kFloat}, VT::kList, false,
      "[scale, zero_point]: ONNX's uint8 affine quantization of [min, max] "
      "(widened to hold 0, as onnxruntime's quantizer does): scale a float32 "
      "scalar, zero_point a uint8 scalar",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        const double lo = std::min(a[0].number(), 0.0), hi = std::max(a[1].number(), 0.0);
        double scale = (hi - lo) / 255.0;
        if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0;
        const double zero = std::clamp(std::round(-lo / scale), 0.0, 255.0);
        return Value::List({Value::Constant(ConstTensor::Scalar(scale, tf::DT_FLOAT)),
                            Value::Constant(ConstTensor::Scalar(zero, tf::DT_UINT8))});
      });
  AddBuiltinHook(
      r, "blockwise_quantized",
      {VT::kConst, VT::kInt, VT::kInt, VT::kBool, VT::kInt}, VT::kList,
      "blockwise_quantized(w, bits, block_size, symmetric, axis = 0): [q, "
      "scales, zero_points], a matrix in 4 or 8 bits per value in blocks of "
      "block_size along axis 0 per column (MatMulNBits' weight) or axis 1 per "
      "row (GatherBlockQuantized's table), as onnxruntime's quantizer writes "
      "them (q uint8 [lines, blocks, block_size * bits / 8], scales float32 "
      "[lines, blocks], zero points uint8 [lines, blocks * bits / 8], packed "
      "as "
      "q)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<BlockwiseQuantized> q = BlockwiseOfArgs(ctx, a, nullptr);
        if (!q.ok()) return q.status();
        return Value::List({Value::Constant(std::move(q->packed)),
                            Value::Constant(std::move(q->scales)),
                            Value::Constant(std::move(q->zero_points))});
      },
      false, 1);
  AddBuiltinHook(
      r, "blockwise_dq", {VT::kConst, VT::kInt, VT::kInt, VT::kBool, VT::kInt},
      VT::kList,
      "blockwise_dq(w, bits, block_size, symmetric, axis = 0): [q, scales] "
      "(symmetric) or [q, scales, zero_points], blockwise_quantized's "
      "quantization as DequantizeLinear's blocked input (opset 21, its "
      "block_size and axis): q in w's shape, int4/int8 (symmetric) or "
      "uint4/uint8; scales and zero points one per block, w's shape with "
      "the blocked axis cut to its blocks",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::vector<int64_t> shape;
        absl::StatusOr<BlockwiseQuantized> q = BlockwiseOfArgs(ctx, a, &shape);
        if (!q.ok()) return q.status();
        BlockwiseQuantized dq = AsDequantizeLinearInput(
            *q, shape[0], shape[1], static_cast<int>(a[1].i), a[2].i, a[3].b,
            a.size() > 4 ? static_cast<int>(a[4].i) : 0);
        std::vector<Value> out = {Value::Constant(std::move(dq.packed)),
                                  Value::Constant(std::move(dq.scales))};
        if (!a[3].b) out.push_back(Value::Constant(std::move(dq.zero_points)));
        return Value::List(std::move(out));
      },
      false, 1);
  Add(r, "scale_output_channels", {VT::kConst, VT::kConst, VT::kNode},
      VT::kConst, false,
      "a filter scaled per output channel, in the layout of the given "
      "conv/matmul",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        // A large filter stays undecoded: the result is scaled when its
        // bytes are needed (written out, or read).
        absl::StatusOr<ConstTensor> w =
            ToConstant(ctx.graph, a[0], /*deferred_ok=*/true);
        if (!w.ok()) return w.status();
        absl::StatusOr<ConstTensor> s = ToConstant(ctx.graph, a[1]);
        if (!s.ok()) return s.status();
        const Node& op = ctx.graph.node(a[2].tensor.node);
        absl::StatusOr<ConstTensor> r =
            ScaleOutputChannels(*std::move(w), *s, op.op(), TransposedFilter(op));
        if (!r.ok()) return r.status();
        return Value::Constant(*std::move(r));
      });
}

}  // namespace graft::builtins
