// Pieces of transformer models as exporters write them, recognized natively
// so that the fusion rules that read them stay short.
#include <optional>
#include <vector>

#include "builtins/internal.h"
#include "engine/const_tensor.h"

namespace graft::builtins {

namespace {

// The single value of a Const input of `n`, or none.
std::optional<int64_t> ScalarInput(const Graph& graph, const Node& n, int i) {
  if (i >= n.num_inputs()) return std::nullopt;
  const Endpoint e = n.input(i);
  if (e.node == kNoNode || graph.node(e.node).op() != "Const") return std::nullopt;
  absl::StatusOr<ConstTensor> c = ConstantOf(graph, e);
  if (!c.ok() || c->values.size() != 1) return std::nullopt;
  return SaturatedInt<int64_t>(c->values[0]);
}

// `s` is Slice(x, [start], [end], [last axis], [1]) of x's last axis of
// `h` elements, taking [from, to); read by one node only.
bool SlicesLastAxis(const Graph& graph, Endpoint s, Endpoint x, int64_t rank, int64_t h,
                    int64_t from, int64_t to) {
  const Node& n = graph.node(s.node);
  if (n.op() != "Slice" || n.num_inputs() != 5 || n.input(0) != x ||
      n.consumers(s.port).size() != 1)
    return false;
  std::optional<int64_t> start = ScalarInput(graph, n, 1), end = ScalarInput(graph, n, 2),
                         axis = ScalarInput(graph, n, 3), step = ScalarInput(graph, n, 4);
  if (!start || !end || !axis || !step || *step != 1) return false;
  if (*axis != -1 && *axis != rank - 1) return false;
  const int64_t e = std::min(*end < 0 ? *end + h : *end, h);
  return *start == from && e == to;
}

}  // namespace

void RegisterTransformerHooks(HookRegistry& r) {
  Add(r, "rotates_half", {VT::kTensor, VT::kTensor, VT::kInt, VT::kInt}, VT::kBool, false,
      "rotates_half(rot, x, rank, h): rot is rotary embeddings' rotate_half "
      "of x (of that rank), Concat(Neg(x[..., h/2:]), x[..., :h/2]) over "
      "x's last axis of h elements (even), its Slices, Neg and Concat read "
      "by nothing else",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Graph& g = ctx.graph;
        const Endpoint rot = a[0].tensor, x = a[1].tensor;
        const int64_t rank = a[2].i, h = a[3].i;
        const Node& cat = g.node(rot.node);
        if (h <= 0 || h % 2 != 0 || cat.op() != "Concat" || cat.num_inputs() != 2 ||
            cat.consumers(rot.port).size() != 1)
          return Value::Bool(false);
        const tf::AttrValue* axis_attr = cat.attr("axis");
        const int64_t axis = axis_attr != nullptr ? axis_attr->i() : 0;
        if (axis != -1 && axis != rank - 1) return Value::Bool(false);
        const Node& neg = g.node(cat.input(0).node);
        if (neg.op() != "Neg" || neg.consumers(cat.input(0).port).size() != 1)
          return Value::Bool(false);
        return Value::Bool(SlicesLastAxis(g, neg.input(0), x, rank, h, h / 2, h) &&
                           SlicesLastAxis(g, cat.input(1), x, rank, h, 0, h / 2));
      });
}

}  // namespace graft::builtins
