// Pieces of transformer models as exporters write them, recognized natively
// so that the fusion rules that read them stay short.
#include <optional>
#include <vector>

#include "builtins/internal.h"
#include "dialects/onnx/onnx_convert.h"
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

// The axis a node's attr or constant input `i` gives as one value (Concat's
// and Split's attr, Unsqueeze's axes input from opset 13 or attr before), or
// none.
std::optional<int64_t> OneAxis(const Graph& graph, const Node& n, const char* attr, int i) {
  if (const tf::AttrValue* a = n.attr(attr)) {
    if (a->has_list()) {
      if (a->list().i_size() != 1) return std::nullopt;
      return a->list().i(0);
    }
    return a->i();
  }
  return i < 0 ? std::nullopt : ScalarInput(graph, n, i);
}

// `s` is part `part` (0 or 1) of Split(x) over x's last axis of `h`
// elements in two equal halves (no sizes given, or [h/2, h/2]; two
// outputs), read by one node only.
bool SplitsLastAxisInHalves(const Graph& graph, Endpoint s, Endpoint x, int64_t rank, int64_t h,
                            int part) {
  const Node& n = graph.node(s.node);
  if (n.op() != "Split" || n.num_inputs() < 1 || n.input(0) != x || s.port != part ||
      n.num_used_ports() != 2 || n.consumers(s.port).size() != 1)
    return false;
  const std::optional<int64_t> axis = OneAxis(graph, n, "axis", -1);
  if (axis.value_or(0) != -1 && axis.value_or(0) != rank - 1) return false;
  if (const tf::AttrValue* outputs = n.attr("num_outputs"); outputs != nullptr && outputs->i() != 2)
    return false;
  std::vector<int64_t> sizes;  // the split attr (below opset 13) or input
  if (const tf::AttrValue* split = n.attr("split")) {
    sizes.assign(split->list().i().begin(), split->list().i().end());
  } else if (n.num_inputs() > 1 && graph.node(n.input(1).node).op() != onnx_internal::kAbsentOp) {
    absl::StatusOr<ConstTensor> c = ConstantOf(graph, n.input(1));
    if (!c.ok()) return false;
    for (double v : c->values) sizes.push_back(SaturatedInt<int64_t>(v));
  }
  return sizes.empty() || sizes == std::vector<int64_t>{h / 2, h / 2};
}

// `s` is x[..., from:to] of x's last axis: a Slice, or a Split's half.
bool HalfOfLastAxis(const Graph& graph, Endpoint s, Endpoint x, int64_t rank, int64_t h,
                    int64_t from, int64_t to) {
  return SlicesLastAxis(graph, s, x, rank, h, from, to) ||
         SplitsLastAxisInHalves(graph, s, x, rank, h, from == 0 ? 0 : 1);
}

// Concat(a, b) over the last of `rank` axes, or Keras's stack of a and b
// before the last axis viewed as it: Reshape(Concat(Unsqueeze(a, rank - 1),
// Unsqueeze(b, rank - 1)) over that axis) (the view's target is the rule's
// to check: x's shape). Its pieces read by nothing else; a, b as `halves`.
bool JoinsOverLastAxis(const Graph& graph, Endpoint rot, int64_t rank, Endpoint halves[2]) {
  const Node* cat = &graph.node(rot.node);
  const bool stacked = cat->op() == "Reshape";
  if (stacked) {
    if (cat->consumers(rot.port).size() != 1 || cat->num_inputs() < 1) return false;
    rot = cat->input(0);
    cat = &graph.node(rot.node);
  }
  // Concat's axis, and the Unsqueezes' where stacked: rank - 1 of the
  // joined tensor's rank (or the same counted from its end)
  const int64_t joined_rank = stacked ? rank + 1 : rank;
  auto is_joined_axis = [&](std::optional<int64_t> a) {
    return a && (*a == rank - 1 || *a + joined_rank == rank - 1);
  };
  if (cat->op() != "Concat" || cat->num_inputs() != 2 || cat->consumers(rot.port).size() != 1 ||
      !is_joined_axis(OneAxis(graph, *cat, "axis", -1).value_or(0)))
    return false;
  for (int i = 0; i < 2; ++i) {
    halves[i] = cat->input(i);
    if (!stacked) continue;
    const Node& u = graph.node(halves[i].node);
    if (u.op() != "Unsqueeze" || u.num_inputs() < 1 || u.consumers(halves[i].port).size() != 1 ||
        !is_joined_axis(OneAxis(graph, u, "axes", 1)))
      return false;
    halves[i] = u.input(0);
  }
  return true;
}

}  // namespace

void RegisterTransformerHooks(HookRegistry& r) {
  Add(r, "rotates_half", {VT::kTensor, VT::kTensor, VT::kInt, VT::kInt}, VT::kBool, false,
      "rotates_half(rot, x, rank, h): rot is rotary embeddings' rotate_half "
      "of x (of that rank), Concat(Neg(x[..., h/2:]), x[..., :h/2]) over "
      "x's last axis of h elements (even), the halves Slices or a Split's, "
      "or Keras's stack of the two before the last axis viewed as x (the "
      "rule checks the view's shape); its pieces read by nothing else",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Graph& g = ctx.graph;
        const Endpoint rot = a[0].tensor, x = a[1].tensor;
        const int64_t rank = a[2].i, h = a[3].i;
        Endpoint halves[2];
        if (h <= 0 || h % 2 != 0 || !JoinsOverLastAxis(g, rot, rank, halves))
          return Value::Bool(false);
        const Node& neg = g.node(halves[0].node);
        if (neg.op() != "Neg" || neg.num_inputs() != 1 ||
            neg.consumers(halves[0].port).size() != 1)
          return Value::Bool(false);
        return Value::Bool(HalfOfLastAxis(g, neg.input(0), x, rank, h, h / 2, h) &&
                           HalfOfLastAxis(g, halves[1], x, rank, h, 0, h / 2));
      });
}

}  // namespace graft::builtins
