// Graph queries: uses, consumers, dtypes, ranks, names and scopes, attrs.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dialects/tf/tf_ops.h"
#include "absl/strings/str_replace.h"
#include "builtins/internal.h"
#include "engine/name_regex.h"
#include "dialects/onnx/onnx_convert.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/op_registry.h"
#include "dialects/onnx/validate_onnx.h"

namespace graft::builtins {

void RegisterGraphQueryHooks(HookRegistry& r) {
  Add(r, "uses", {VT::kAny}, VT::kInt, false,
      "data consumers of a tensor; of a node: of all its outputs, plus control",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& n = ctx.graph.node(a[0].tensor.node);
        if (a[0].type == VT::kTensor) {
          return Value::Int(
              static_cast<int64_t>(n.consumers(a[0].tensor.port).size()));
        }
        int64_t count = static_cast<int64_t>(n.control_consumers().size());
        for (int p = 0; p < n.num_used_ports(); ++p)
          count += n.consumers(p).size();
        return Value::Int(count);
      });
  Add(r, "unused", {VT::kTensor}, VT::kBool, true, "no tensor has a consumer",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        for (const Value& v : a) {
          if (!ctx.graph.node(v.tensor.node).consumers(v.tensor.port).empty()) {
            return Value::Bool(false);
          }
        }
        return Value::Bool(true);
      });
  Add(r, "consumed_by", {VT::kTensor, VT::kOpList}, VT::kBool, false,
      "some consumer's op matches one of the globs (`FakeQuant*|Relu`)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& n = ctx.graph.node(a[0].tensor.node);
        const std::vector<std::string> globs = SplitGlobs(a[1].s);
        for (InputSlot s : n.consumers(a[0].tensor.port)) {
          if (GlobsMatch(globs, ctx.graph.node(s.node).op()))
            return Value::Bool(true);
        }
        return Value::Bool(false);
      });
  Add(r, "opset", {}, VT::kInt, false,
      "the ONNX model's opset of the default domain (0 for a TensorFlow graph)",
      [](const HookContext& ctx, Args) -> absl::StatusOr<Value> {
        return Value::Int(OnnxOf(ctx.graph) != nullptr ? OnnxOf(ctx.graph)->opset : 0);
      });
  Add(r, "is_absent", {VT::kTensor}, VT::kBool, false,
      "an optional input left out (ONNX's empty name, ATen's None)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(ctx.graph.node(a[0].tensor.node).op() == onnx_internal::kAbsentOp);
      });
  Add(r, "is_const", {VT::kTensor}, VT::kBool, false, "produced by a Const",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(ctx.graph.node(a[0].tensor.node).op() == "Const");
      });
  Add(r, "dtype", {VT::kTensor}, VT::kString, false,
      "the tensor's dtype (`float32`), or `unknown`",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        // An ONNX node's types follow from its inputs' (T of Add), as the
        // validator infers them.
        tf::DataType t = OnnxOf(ctx.graph) != nullptr
                             ? validate_onnx::HeldTypes(ctx.graph).types().Of(a[0].tensor)
                             : TensorflowOps().OutputType(
                                   ctx.graph.node(a[0].tensor.node), a[0].tensor.port);
        return Value::String(t == tf::DT_INVALID ? "unknown" : DataTypeName(t));
      });
  Add(r, "rank", {VT::kTensor}, VT::kInt, false, "the tensor's rank, or -1",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        auto shape = StaticShape(ctx.graph, a[0].tensor);
        return Value::Int(shape ? static_cast<int64_t>(shape->size()) : -1);
      });
  Add(r, "name_matches", {VT::kNode, VT::kRegex}, VT::kBool, false,
      "the node's whole name matches the regex",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<std::shared_ptr<const NameRegex>> re = RegexOf(a[1]);
        if (!re.ok()) return re.status();
        return Value::Bool(
            (*re)->FullMatch(ctx.graph.node(a[0].tensor.node).name()));
      });
  Add(r, "scope_matches", {VT::kNode, VT::kRegex}, VT::kBool, false,
      "the node's scope (its name up to the last `/`) matches the regex",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<std::shared_ptr<const NameRegex>> re = RegexOf(a[1]);
        if (!re.ok()) return re.status();
        const std::string& name = ctx.graph.node(a[0].tensor.node).name();
        size_t slash = name.rfind('/');
        return Value::Bool((*re)->FullMatch(
            slash == std::string::npos ? "" : name.substr(0, slash)));
      });
  Add(r, "has_control_edge", {VT::kNode, VT::kNode}, VT::kBool, false,
      "a control edge runs from the first node to the second",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& to = ctx.graph.node(a[1].tensor.node);
        for (NodeId c : to.control_inputs()) {
          if (c == a[0].tensor.node) return Value::Bool(true);
        }
        return Value::Bool(false);
      });
  Add(r, "attr", {VT::kNode, VT::kString, VT::kAny}, VT::kAny, false,
      "attr(n, \"name\", default): the attr, its op default, or the given "
      "default",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<Value> v =
            AttrValueOf(ctx.graph, ctx.graph.node(a[0].tensor.node), a[1].s);
        return v.ok() ? *v : a[2];
      });
  Add(r, "has_attr", {VT::kNode, VT::kString}, VT::kBool, false,
      "the node sets the attr itself (not only its op's default)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(ctx.graph.node(a[0].tensor.node).attr(a[1].s) !=
                           nullptr);
      });
  Add(r, "missing_defaults", {}, VT::kList, false,
      "[n, \"attr\"] for every attr a node does not set and its op "
      "(TensorFlow's registry) gives a default",
      [](const HookContext& ctx, Args) -> absl::StatusOr<Value> {
        std::vector<Value> out;
        ctx.graph.ForEachNode([&](const Node& n) {
          const tf::OpDef* op = TensorflowOps().Find(n.op());
          if (op == nullptr) return;
          for (const auto& a : op->attr()) {
            if (a.has_default_value() && n.attr(a.name()) == nullptr) {
              out.push_back(Value::List(
                  {Value::NodeRef(n.id()), Value::String(a.name())}));
            }
          }
        });
        return Value::List(std::move(out));
      });
  Add(r, "replace_all", {VT::kString, VT::kString, VT::kString}, VT::kString,
      false,
      "replace_all(s, from, to): `s` with every `from` replaced by `to` "
      "(an op's name: \"TensorArrayReadV3\" to \"TensorArrayReadV2\")",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        if (a[1].s.empty())
          return absl::InvalidArgumentError("replace_all: nothing to replace");
        return Value::String(absl::StrReplaceAll(a[0].s, {{a[1].s, a[2].s}}));
      });
  Add(r, "len", {VT::kList}, VT::kInt, false, "the number of items of a list",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        return Value::Int(static_cast<int64_t>(a[0].list.size()));
      });
  AddBuiltinHook(
      r, "slice", {VT::kList, VT::kInt, VT::kInt}, VT::kList,
      "slice(xs, a [, b]): items a to b-1 (to the end without b), as "
      "Python's xs[a:b]: negative bounds count from the end, bounds past "
      "either end are clamped",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        const int64_t n = static_cast<int64_t>(a[0].list.size());
        auto bound = [n](int64_t at) {
          return std::clamp<int64_t>(at < 0 ? at + n : at, 0, n);
        };
        int64_t lo = bound(a[1].i), hi = a.size() > 2 ? bound(a[2].i) : n;
        std::vector<Value> out;
        for (int64_t i = lo; i < hi; ++i) out.push_back(a[0].list[i]);
        return Value::List(std::move(out));
      },
      false, /*optional=*/1);
  Add(r, "consecutive", {VT::kList}, VT::kList, false,
      "consecutive(xs): each item with the next, [[xs[0], xs[1]], [xs[1], "
      "xs[2]], ...] (a plan's pairs along an order)",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        std::vector<Value> out;
        for (size_t i = 0; i + 1 < a[0].list.size(); ++i)
          out.push_back(Value::List({a[0].list[i], a[0].list[i + 1]}));
        return Value::List(std::move(out));
      });
  Add(r, "readers", {VT::kTensor}, VT::kList, false,
      "the nodes that read a tensor, at any input position (each once, in "
      "id order)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::vector<NodeId> ids;
        for (InputSlot s :
             ctx.graph.node(a[0].tensor.node).consumers(a[0].tensor.port))
          ids.push_back(s.node);
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        return NodeList(ids);
      });
  Add(r, "range", {VT::kInt, VT::kInt}, VT::kList, false,
      "range(a, b): the ints a, a+1, ..., b-1 (at most 1,000,000)",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        int64_t lo = a[0].i, hi = a[1].i;
        if (static_cast<double>(hi) - static_cast<double>(lo) > 1e6) {
          return absl::OutOfRangeError(
              absl::StrCat("range(", lo, ", ", hi, ") is too long"));
        }
        std::vector<Value> out;
        for (int64_t i = lo; i < hi; ++i) out.push_back(Value::Int(i));
        return Value::List(std::move(out));
      });
  Add(r, "in_scope", {VT::kNode, VT::kString}, VT::kBool, false,
      "the node is under the name scope (`scope/...`); an empty scope holds "
      "every node",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const std::string& name = ctx.graph.node(a[0].tensor.node).name();
        const std::string& scope = a[1].s;
        return Value::Bool(scope.empty() || name.rfind(scope + "/", 0) == 0);
      });
  Add(r, "consumers_in_scope", {VT::kTensor, VT::kString}, VT::kBool, false,
      "every consumer of the tensor is under the scope (an empty scope holds "
      "all)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const std::string& scope = a[1].s;
        if (scope.empty()) return Value::Bool(true);
        for (InputSlot s :
             ctx.graph.node(a[0].tensor.node).consumers(a[0].tensor.port)) {
          if (ctx.graph.node(s.node).name().rfind(scope + "/", 0) != 0)
            return Value::Bool(false);
        }
        return Value::Bool(true);
      });
  Add(r, "same_node", {VT::kNode, VT::kNode}, VT::kBool, false,
      "the two are the same node (`==` compares two constants by value)",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(a[0].tensor.node == a[1].tensor.node);
      });
}

}  // namespace graft::builtins
