#include "engine/hooks.h"

#include <functional>
#include <regex>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/surgery.h"

namespace graft {

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kNone:
      return "nothing";
    case ValueType::kBool:
      return "bool";
    case ValueType::kInt:
      return "int";
    case ValueType::kFloat:
      return "float";
    case ValueType::kString:
      return "string";
    case ValueType::kTensor:
      return "tensor";
    case ValueType::kNode:
      return "node";
    case ValueType::kConst:
      return "constant";
    case ValueType::kList:
      return "list";
    case ValueType::kRanges:
      return "ranges";
    case ValueType::kGraph:
      return "graph";
    case ValueType::kAny:
      return "any";
  }
  return "?";
}

bool Accepts(ValueType want, ValueType have) {
  if (want == have || want == ValueType::kAny || have == ValueType::kAny)
    return true;
  switch (want) {
    case ValueType::kFloat:
      return have == ValueType::kInt;
    case ValueType::kTensor:
      return have == ValueType::kNode;
    case ValueType::kNode:
      return have == ValueType::kTensor;
    case ValueType::kConst:
      return have == ValueType::kInt || have == ValueType::kFloat ||
             have == ValueType::kTensor || have == ValueType::kNode;
    default:
      return false;
  }
}

absl::Status HookRegistry::Register(std::string name, HookSignature signature,
                                    HookFn fn) {
  if (hooks_.count(name) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("hook `", name, "` is already registered"));
  }
  Hook hook{name, std::move(signature), std::move(fn)};
  hooks_.emplace(std::move(name), std::move(hook));
  return absl::OkStatus();
}

const Hook* HookRegistry::Find(const std::string& name) const {
  auto it = hooks_.find(name);
  return it == hooks_.end() ? nullptr : &it->second;
}

std::vector<const Hook*> HookRegistry::All() const {
  std::vector<const Hook*> out;
  for (const auto& [name, hook] : hooks_) out.push_back(&hook);
  return out;
}

absl::StatusOr<ConstTensor> ConstantOf(const Graph& graph, Endpoint tensor,
                                       bool deferred_ok) {
  const Node& node = graph.node(tensor.node);
  if (node.op() != "Const" || tensor.port != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("`", graph.TensorName(tensor), "` is not a constant (",
                     node.op(), ")"));
  }
  const tf::AttrValue* value = node.attr("value");
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("Const `", node.name(), "` has no value"));
  }
  if (deferred_ok) {
    std::optional<ConstTensor> deferred =
        DeferredTensor(value->tensor(), node.value_content_apart());
    if (deferred) return *std::move(deferred);
  }
  return FromTensorProto(value->tensor(), node.value_content());
}

namespace {

// `content`: the tensor's bytes when they are kept apart from `attr`
// (Node::value_content()).
Value FromAttr(const tf::AttrValue& attr, absl::string_view content = {}) {
  switch (attr.value_case()) {
    case tf::AttrValue::kB:
      return Value::Bool(attr.b());
    case tf::AttrValue::kI:
      return Value::Int(attr.i());
    case tf::AttrValue::kF:
      return Value::Float(attr.f());
    case tf::AttrValue::kS:
      return Value::String(attr.s());
    case tf::AttrValue::kType:
      return Value::String(DataTypeName(attr.type()));
    case tf::AttrValue::kShape: {
      std::vector<Value> dims;
      for (const auto& d : attr.shape().dim())
        dims.push_back(Value::Int(d.size()));
      return Value::List(std::move(dims));
    }
    case tf::AttrValue::kTensor: {
      absl::StatusOr<ConstTensor> t =
          content.empty() ? FromTensorProto(attr.tensor())
                          : FromTensorProto(attr.tensor(), content);
      return t.ok() ? Value::Constant(*t) : Value();
    }
    case tf::AttrValue::kList: {
      std::vector<Value> items;
      for (int64_t i : attr.list().i()) items.push_back(Value::Int(i));
      for (float f : attr.list().f()) items.push_back(Value::Float(f));
      for (const std::string& s : attr.list().s())
        items.push_back(Value::String(s));
      for (bool b : attr.list().b()) items.push_back(Value::Bool(b));
      for (int t : attr.list().type()) {
        items.push_back(
            Value::String(DataTypeName(static_cast<tf::DataType>(t))));
      }
      return Value::List(std::move(items));
    }
    default:
      return Value();
  }
}

}  // namespace

absl::StatusOr<ConstTensor> ToConstant(const HookContext& ctx, const Value& v,
                                       bool deferred_ok) {
  switch (v.type) {
    case ValueType::kConst:
      return deferred_ok ? *v.constant : Materialize(*v.constant);
    case ValueType::kInt:
      return ConstTensor::Scalar(static_cast<double>(v.i), tf::DT_INT32);
    case ValueType::kFloat:
      return ConstTensor::Scalar(v.f);
    case ValueType::kTensor:
    case ValueType::kNode:
      return ConstantOf(ctx.graph, v.tensor, deferred_ok);
    case ValueType::kList: {
      // A nested list of numbers: [[1, 2], [3, 4]] has shape [2, 2].
      ConstTensor t;
      std::vector<double> flat;
      std::function<bool(const Value&, size_t)> walk = [&](const Value& x,
                                                           size_t depth) {
        if (x.is_number()) {
          flat.push_back(x.number());
          return depth == t.shape.size();
        }
        if (x.type != ValueType::kList) return false;
        if (depth == t.shape.size())
          t.shape.push_back(static_cast<int64_t>(x.list.size()));
        if (t.shape[depth] != static_cast<int64_t>(x.list.size())) return false;
        for (const Value& item : x.list) {
          if (!walk(item, depth + 1)) return false;
        }
        return true;
      };
      if (!walk(v, 0)) {
        return absl::InvalidArgumentError(
            "a constant list must be numbers, in a regular shape");
      }
      t.values = Eigen::Map<Eigen::ArrayXd>(
          flat.data(), static_cast<Eigen::Index>(flat.size()));
      return t;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("expected a constant, got a ", ValueTypeName(v.type)));
  }
}

namespace {

void Add(HookRegistry& r, const char* name, std::vector<ValueType> params,
         ValueType result, bool variadic, const char* doc, HookFn fn) {
  AddBuiltinHook(r, name, std::move(params), result, doc, std::move(fn),
                 variadic);
}

using VT = ValueType;
using Args = absl::Span<const Value>;

absl::StatusOr<Value> ConstUnary(const HookContext& ctx, Args a,
                                 const char* op) {
  absl::StatusOr<ConstTensor> x = ToConstant(ctx, a[0]);
  if (!x.ok()) return x.status();
  absl::StatusOr<ConstTensor> r = Unary(*x, op);
  if (!r.ok()) return r.status();
  return Value::Constant(*std::move(r));
}

absl::StatusOr<Value> MinMax(const HookContext& ctx, Args a, const char* op) {
  absl::StatusOr<ConstTensor> x = ToConstant(ctx, a[0]);
  if (!x.ok()) return x.status();
  if (a.size() == 1) return Value::Constant(Reduce(*x, op));
  for (size_t i = 1; i < a.size(); ++i) {
    absl::StatusOr<ConstTensor> y = ToConstant(ctx, a[i]);
    if (!y.ok()) return y.status();
    absl::StatusOr<ConstTensor> r = Broadcast(*x, *y, op);
    if (!r.ok()) return r.status();
    x = *std::move(r);
  }
  return Value::Constant(*std::move(x));
}

// Nodes of a node value or a list of them.
std::vector<NodeId> NodesOf(const Value& v) {
  std::vector<NodeId> out;
  if (v.type == VT::kList) {
    for (const Value& item : v.list) out.push_back(item.tensor.node);
  } else {
    out.push_back(v.tensor.node);
  }
  return out;
}

Value NodeList(const std::vector<NodeId>& ids) {
  std::vector<Value> items;
  for (NodeId id : ids) items.push_back(Value::NodeRef(id));
  return Value::List(std::move(items));
}

Value TensorList(const std::vector<Endpoint>& ts) {
  std::vector<Value> items;
  for (Endpoint t : ts) items.push_back(Value::Tensor(t));
  return Value::List(std::move(items));
}

// Walk options from hook arguments a[first..]: inclusive, within, stop_at,
// control; absent ones keep their defaults; an empty `within` is all nodes.
surgery::WalkOptions WalkOptionsOf(Args a, size_t first,
                                   absl::flat_hash_set<NodeId>* within) {
  surgery::WalkOptions o;
  if (a.size() > first) o.inclusive = a[first].b;
  if (a.size() > first + 1 && !a[first + 1].list.empty()) {
    for (NodeId id : NodesOf(a[first + 1])) within->insert(id);
    o.within = within;
  }
  if (a.size() > first + 2) {
    for (const Value& t : a[first + 2].list) o.stop_at.push_back(t.tensor);
  }
  if (a.size() > first + 3) o.control = a[first + 3].b;
  return o;
}

// The graph surgery hooks: walks, filters, views, nodes by name, and the
// `graph` params of pre-/post-processing grafts.
void RegisterSurgeryHooks(HookRegistry& r) {
  // forward_walk / backward_walk(seeds [, inclusive [, within [, stop_at [,
  // control]]]])
  for (const char* name : {"forward_walk", "backward_walk"}) {
    bool forward = std::string(name) == "forward_walk";
    AddBuiltinHook(
        r, name, {VT::kAny, VT::kBool, VT::kList, VT::kList, VT::kBool},
        VT::kList,
        forward ? "nodes reachable from seeds (a node or list): (seeds, "
                  "inclusive = true, "
                  "within = [] (all), stop_at = [] tensors, control = false)"
                : "nodes the seeds depend on: (seeds, inclusive = true, within "
                  "= [] (all), "
                  "stop_at = [] tensors, control = false)",
        [forward](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          absl::flat_hash_set<NodeId> within;
          surgery::WalkOptions options = WalkOptionsOf(a, 1, &within);
          std::vector<NodeId> seeds = NodesOf(a[0]);
          return NodeList(
              forward ? surgery::ForwardWalk(ctx.graph, seeds, options)
                      : surgery::BackwardWalk(ctx.graph, seeds, options));
        },
        false, 4);
  }
  AddBuiltinHook(
      r, "walks_intersection",
      {VT::kAny, VT::kAny, VT::kBool, VT::kBool, VT::kList, VT::kBool},
      VT::kList,
      "nodes forward of the first seeds and backward of the second: "
      "(forward_seeds, "
      "backward_seeds, forward_inclusive = true, backward_inclusive = true, "
      "within = [] (all), "
      "control = false)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::flat_hash_set<NodeId> within;
        surgery::WalkOptions forward, backward;
        forward.inclusive = a.size() > 2 ? a[2].b : true;
        backward.inclusive = a.size() > 3 ? a[3].b : true;
        if (a.size() > 4 && !a[4].list.empty()) {
          for (NodeId id : NodesOf(a[4])) within.insert(id);
          forward.within = backward.within = &within;
        }
        forward.control = backward.control = a.size() > 5 && a[5].b;
        return NodeList(surgery::WalksIntersection(
            ctx.graph, NodesOf(a[0]), NodesOf(a[1]), forward, backward));
      },
      false, 4);
  Add(r, "filter_ops", {VT::kList, VT::kString}, VT::kList, false,
      "the nodes whose op matches `A|B*`",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return NodeList(surgery::FilterByOp(ctx.graph, NodesOf(a[0]), a[1].s));
      });
  Add(r, "filter_names", {VT::kList, VT::kString}, VT::kList, false,
      "the nodes whose whole name matches the regex",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<std::vector<NodeId>> ids =
            surgery::FilterByName(ctx.graph, NodesOf(a[0]), a[1].s);
        if (!ids.ok()) return ids.status();
        return NodeList(*ids);
      });
  Add(r, "subgraph_inputs", {VT::kList}, VT::kList, false,
      "the tensors the nodes read from outside them",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return TensorList(
            surgery::SubgraphView(ctx.graph, NodesOf(a[0])).inputs());
      });
  Add(r, "subgraph_outputs", {VT::kList}, VT::kList, false,
      "the tensors of the nodes read outside them, or by nothing",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return TensorList(
            surgery::SubgraphView(ctx.graph, NodesOf(a[0])).outputs());
      });
  Add(r, "contains", {VT::kString}, VT::kBool, false,
      "the graph has a node of that name",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(ctx.graph.Contains(a[0].s));
      });
  Add(r, "node_named", {VT::kString}, VT::kNode, false,
      "the node of that name (an error if none)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<NodeId> id = surgery::GetByName(ctx.graph, a[0].s);
        if (!id.ok()) return id.status();
        return Value::NodeRef(*id);
      });
  Add(r, "graph_op", {VT::kGraph, VT::kString}, VT::kString, false,
      "the op of the named node of a `graph` param, or \"\" (no such node, no "
      "graph)",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        const Node* n = a[0].graph ? a[0].graph->FindNode(a[1].s) : nullptr;
        return Value::String(n ? n->op() : "");
      });
  for (const char* name : {"check_preprocessing", "check_postprocessing"}) {
    bool pre = std::string(name) == "check_preprocessing";
    Add(r, name, {VT::kGraph}, VT::kBool, false,
        "the `graph` param can be grafted onto this graph (an error says why "
        "not); true "
        "when no graph is given",
        [pre](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          if (a[0].graph == nullptr) return Value::Bool(true);
          absl::Status s =
              pre ? surgery::CheckPreprocessing(ctx.graph, *a[0].graph)
                  : surgery::CheckPostprocessing(ctx.graph, *a[0].graph);
          if (!s.ok())
            return absl::Status(s.code(),
                                absl::StrCat("`", a[0].s, "`: ", s.message()));
          return Value::Bool(true);
        });
  }
}

}  // namespace

void AddBuiltinHook(HookRegistry& registry, const std::string& name,
                    std::vector<ValueType> params, ValueType result,
                    const std::string& doc, HookFn fn, bool variadic,
                    int optional) {
  HookSignature sig;
  sig.params = std::move(params);
  sig.result = result;
  sig.variadic = variadic;
  sig.optional = optional;
  sig.doc = doc;
  (void)registry.Register(name, std::move(sig),
                          std::move(fn));  // names are unique by construction
}

absl::StatusOr<Value> AttrValueOf(const Node& node, const std::string& name) {
  if (const tf::AttrValue* v = node.attr(name)) {
    return FromAttr(
        *v, name == "value" ? node.value_content() : absl::string_view());
  }
  if (const tf::OpDef* op = OpRegistry::Tensorflow().Find(node.op())) {
    for (const auto& attr : op->attr()) {
      if (attr.name() == name && attr.has_default_value()) {
        return FromAttr(attr.default_value());
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("`", node.name(), "` (", node.op(),
                                          ") has no attr `", name, "`"));
}

void RegisterBuiltinHooks(HookRegistry& r) {
  RegisterSurgeryHooks(r);
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
  Add(r, "consumed_by", {VT::kTensor, VT::kString}, VT::kBool, false,
      "some consumer's op matches the glob (`FakeQuant*`)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& n = ctx.graph.node(a[0].tensor.node);
        for (InputSlot s : n.consumers(a[0].tensor.port)) {
          if (GlobMatch(a[1].s, ctx.graph.node(s.node).op()))
            return Value::Bool(true);
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
  Add(r, "is_const", {VT::kTensor}, VT::kBool, false, "produced by a Const",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(ctx.graph.node(a[0].tensor.node).op() == "Const");
      });
  Add(r, "dtype", {VT::kTensor}, VT::kString, false,
      "the tensor's dtype (`float32`), or `unknown`",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        tf::DataType t = OpRegistry::Tensorflow().OutputType(
            ctx.graph.node(a[0].tensor.node), a[0].tensor.port);
        return Value::String(t == tf::DT_INVALID ? "unknown" : DataTypeName(t));
      });
  Add(r, "rank", {VT::kTensor}, VT::kInt, false, "the tensor's rank, or -1",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        auto shape = StaticShape(ctx.graph, a[0].tensor);
        return Value::Int(shape ? static_cast<int64_t>(shape->size()) : -1);
      });
  Add(r, "name_matches", {VT::kNode, VT::kString}, VT::kBool, false,
      "the node's whole name matches the regex",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        try {
          return Value::Bool(std::regex_match(
              ctx.graph.node(a[0].tensor.node).name(), std::regex(a[1].s)));
        } catch (const std::regex_error& e) {
          return absl::InvalidArgumentError(
              absl::StrCat("bad regex `", a[1].s, "`"));
        }
      });
  Add(r, "scope_matches", {VT::kNode, VT::kString}, VT::kBool, false,
      "the node's scope (its name up to the last `/`) matches the regex",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const std::string& name = ctx.graph.node(a[0].tensor.node).name();
        size_t slash = name.rfind('/');
        std::string scope =
            slash == std::string::npos ? "" : name.substr(0, slash);
        try {
          return Value::Bool(std::regex_match(scope, std::regex(a[1].s)));
        } catch (const std::regex_error& e) {
          return absl::InvalidArgumentError(
              absl::StrCat("bad regex `", a[1].s, "`"));
        }
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
            AttrValueOf(ctx.graph.node(a[0].tensor.node), a[1].s);
        return v.ok() ? *v : a[2];
      });
  Add(r, "len", {VT::kList}, VT::kInt, false, "the number of items of a list",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        return Value::Int(static_cast<int64_t>(a[0].list.size()));
      });
  Add(r, "rsqrt", {VT::kConst}, VT::kConst, false, "1 / sqrt(x), elementwise",
      [](const HookContext& ctx, Args a) {
        return ConstUnary(ctx, a, "rsqrt");
      });
  Add(r, "sqrt", {VT::kConst}, VT::kConst, false, "sqrt(x), elementwise",
      [](const HookContext& ctx, Args a) {
        return ConstUnary(ctx, a, "sqrt");
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
        absl::StatusOr<ConstTensor> x = ToConstant(ctx, a[0]);
        if (!x.ok()) return x.status();
        std::vector<int64_t> shape;
        for (const Value& d : a[1].list) shape.push_back(d.i);
        absl::StatusOr<ConstTensor> y = Reshape(*x, shape);
        if (!y.ok()) return y.status();
        return Value::Constant(*std::move(y));
      });
  for (const char* name : {"channel_min", "channel_max"}) {
    bool is_min = std::string(name) == "channel_min";
    Add(r, name, {VT::kConst, VT::kNode}, VT::kConst, false,
        "per output channel min / max of a filter, in the layout of the given "
        "conv/matmul",
        [is_min](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          absl::StatusOr<ConstTensor> w = ToConstant(ctx, a[0]);
          if (!w.ok()) return w.status();
          const Node& op = ctx.graph.node(a[1].tensor.node);
          const tf::AttrValue* tb = op.attr("transpose_b");
          absl::StatusOr<ConstTensor> r =
              ChannelReduce(*w, op.op(), tb != nullptr && tb->b(), is_min);
          if (!r.ok()) return r.status();
          return Value::Constant(*std::move(r));
        });
  }
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
            ToConstant(ctx, a[0], /*deferred_ok=*/true);
        if (!w.ok()) return w.status();
        absl::StatusOr<ConstTensor> s = ToConstant(ctx, a[1]);
        if (!s.ok()) return s.status();
        const Node& op = ctx.graph.node(a[2].tensor.node);
        const tf::AttrValue* tb = op.attr("transpose_b");
        absl::StatusOr<ConstTensor> r = ScaleOutputChannels(
            *std::move(w), *s, op.op(), tb != nullptr && tb->b());
        if (!r.ok()) return r.status();
        return Value::Constant(*std::move(r));
      });
}

}  // namespace graft
