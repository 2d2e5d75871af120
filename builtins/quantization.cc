// Quantization and folding helpers: fake-quant lookup, per-channel filter
// ranges and scaling, calibrated ranges from a `ranges` param.
#include "absl/strings/str_cat.h"
#include "builtins/internal.h"
#include "engine/const_tensor.h"
#include "engine/op_registry.h"

namespace graft::builtins {

void RegisterQuantizationHooks(HookRegistry& r) {
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
          absl::StatusOr<ConstTensor> w = ToConstant(ctx.graph, a[0]);
          if (!w.ok()) return w.status();
          const Node& op = ctx.graph.node(a[1].tensor.node);
          const tf::AttrValue* tb = op.attr("transpose_b");
          absl::StatusOr<ConstTensor> r =
              ChannelReduce(*w, op.op(), tb != nullptr && tb->b(), is_min);
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
          const TensorRange* range =
              a[0].ranges ? a[0].ranges->Find(ctx.graph.TensorName(a[1].tensor))
                          : nullptr;
          if (range == nullptr) return Value::Float(a[2].number());
          return Value::Float(is_min ? range->min : range->max);
        });
  }
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
        const tf::AttrValue* tb = op.attr("transpose_b");
        absl::StatusOr<ConstTensor> r = ScaleOutputChannels(
            *std::move(w), *s, op.op(), tb != nullptr && tb->b());
        if (!r.ok()) return r.status();
        return Value::Constant(*std::move(r));
      });
}

}  // namespace graft::builtins
