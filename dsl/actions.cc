#include "dsl/actions.h"

#include <optional>

#include "absl/algorithm/container.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"
#include "engine/surgery.h"

namespace graft::dsl {
namespace {

using AK = Action::Kind;

// Sets type attrs a new node's op needs from the dtypes of its inputs
// (`BiasAdd(a, b)` gets `T` from `a`; `Print(x, xs)` its list `U` from
// `xs`, a type list that is the op's last input taking the rest).
void InferTypeAttrs(const Graph& g, NodeSpec* spec) {
  if (!DialectOf(g).has_type_attrs()) return;  // ONNX nodes carry none
  const OpRegistry& ops = OpRegistry::For(g);
  const tf::OpDef* def = ops.Find(spec->op);
  if (def == nullptr) return;
  size_t index = 0;
  for (int a = 0; a < def->input_arg_size(); ++a) {
    const tf::OpDef::ArgDef& arg = def->input_arg(a);
    if (index >= spec->inputs.size()) break;
    if (const std::string& list = arg.type_list_attr(); !list.empty()) {
      auto it = spec->attrs.find(list);
      if (it != spec->attrs.end()) {
        index += it->second.list().type_size();
        continue;
      }
      if (a + 1 != def->input_arg_size()) break;  // how many is unknown
      tf::AttrValue& types = spec->attrs[list];
      types.mutable_list();  // an empty list when there are none
      for (; index < spec->inputs.size(); ++index) {
        const Endpoint& in = spec->inputs[index];
        types.mutable_list()->add_type(BaseType(
            ops.OutputType(g.node(in.node), in.port)));
      }
      break;
    }
    if (!arg.type_attr().empty() && spec->attrs.count(arg.type_attr()) == 0) {
      tf::DataType t = ops.OutputType(
          g.node(spec->inputs[index].node), spec->inputs[index].port);
      if (t != tf::DT_INVALID)
        spec->attrs[arg.type_attr()].set_type(BaseType(t));
    }
    int count = 1;
    if (!arg.number_attr().empty()) {
      auto it = spec->attrs.find(arg.number_attr());
      if (it == spec->attrs.end()) {
        count = static_cast<int>(spec->inputs.size() - index);
        spec->attrs[arg.number_attr()].set_i(count);
      } else {
        count = static_cast<int>(it->second.i());
      }
    }
    index += count;
  }
}

bool IsFloating(tf::DataType t) {
  return t == tf::DT_FLOAT || t == tf::DT_HALF || t == tf::DT_BFLOAT16 ||
         t == tf::DT_DOUBLE;
}

class ActionRunner : public NodeFactory {
 public:
  ActionRunner(const RewriteProgram& program, const Evaluator& evaluator,
               NodeId root, Bindings& bindings, Rewriter& rewriter,
               RewritePlan* plan)
      : program_(program),
        evaluator_(evaluator),
        root_(root),
        b_(bindings),
        r_(rewriter),
        plan_(plan) {}

  absl::Status Run(const Action& a) {
    switch (a.kind) {
      case AK::kLet:
      case AK::kAssign:
        return RunLetOrAssign(a);
      case AK::kReroute:
      case AK::kSwap:
        return RunRerouteOrSwap(a);
      case AK::kReplace:
        return RunReplace(a);
      case AK::kErase:
        return RunErase(a);
      case AK::kRename:
        return RunRename(a);
      case AK::kDevice:
        return RunDevice(a);
      case AK::kControl:
      case AK::kUncontrol:
        return RunControl(a);
      case AK::kClone:
        return RunClone(a);
      case AK::kSplice:
        return RunSplice(a);
      case AK::kFail:
        return RunFail(a);
      case AK::kSet:
        return RunSet(a);
      case AK::kUnset:
        return RunUnset(a);
      case AK::kFor:
        return RunFor(a);
    }
    return absl::OkStatus();
  }

  // for x in list { actions }: the body once per item, `x` bound to it.
  absl::Status RunFor(const Action& a) {
    absl::StatusOr<Value> list = Eval(*a.a);
    if (!list.ok()) return list.status();
    if (list->type != ValueType::kList) {
      return absl::InvalidArgumentError(
          absl::StrCat("`for` iterates a list, not ", AValueType(list->type)));
    }
    for (const Value& item : list->list) {
      absl::Status s = Bind(a.name, item);
      for (const Action& inner : a.body) {
        if (s.ok()) s = Run(inner);
      }
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Value> Create(const Expr& e,
                               const std::string& binding) override;
  absl::Status BindItem(const std::string& name, Value item) override {
    return Bind(name, std::move(item));
  }

 private:
  const Graph& graph() const { return r_.graph(); }

  absl::StatusOr<Value> Eval(const Expr& e) {
    return evaluator_.Eval(graph(), b_, e, this);
  }

  absl::Status Bind(const std::string& name, Value v) {
    if (!b_.Set(name, std::move(v)))
      return absl::InternalError(absl::StrCat("`", name, "` has no slot"));
    return absl::OkStatus();
  }

  absl::StatusOr<NodeId> NodeArg(const std::string& name) const {
    const Value* v = b_.Find(name);
    if (v == nullptr ||
        (v->type != ValueType::kNode && v->type != ValueType::kTensor)) {
      return absl::NotFoundError(absl::StrCat("`", name, "` is not a node"));
    }
    return v->tensor.node;
  }

  static absl::StatusOr<Endpoint> AsTensor(const Value& v) {
    if (v.type != ValueType::kTensor && v.type != ValueType::kNode) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a tensor, got ", AValueType(v.type)));
    }
    return v.tensor;
  }

  absl::StatusOr<Endpoint> TensorArg(const Expr& e) {
    absl::StatusOr<Value> v = Eval(e);
    if (!v.ok()) return v.status();
    return AsTensor(*v);
  }

  // A node (a tensor's node), or each node of a list.
  absl::StatusOr<std::vector<NodeId>> NodesArg(const Expr& e) {
    absl::StatusOr<std::vector<Endpoint>> ts = TensorsArg(e);
    if (!ts.ok()) return ts.status();
    std::vector<NodeId> out;
    for (Endpoint t : *ts) out.push_back(t.node);
    return out;
  }

  // A tensor, or each tensor of a list.
  absl::StatusOr<std::vector<Endpoint>> TensorsArg(const Expr& e) {
    absl::StatusOr<Value> v = Eval(e);
    if (!v.ok()) return v.status();
    if (v->type != ValueType::kList) {
      absl::StatusOr<Endpoint> t = AsTensor(*v);
      if (!t.ok()) return t.status();
      return std::vector<Endpoint>{*t};
    }
    std::vector<Endpoint> out;
    for (const Value& item : v->list) {
      absl::StatusOr<Endpoint> t = AsTensor(item);
      if (!t.ok()) return t.status();
      out.push_back(*t);
    }
    return out;
  }

  // The consumers an action's `only` / `except` set allows; `also_except`
  // are never allowed unless the set is `only`.
  absl::StatusOr<ConsumerFilter> FilterOf(const Action& a,
                                          std::vector<NodeId> also_except) {
    std::vector<NodeId> nodes;
    for (const ExprPtr& e : a.filter_nodes) {
      absl::StatusOr<std::vector<NodeId>> n = NodesArg(*e);
      if (!n.ok()) return n.status();
      nodes.insert(nodes.end(), n->begin(), n->end());
    }
    if (a.filter == Action::Filter::kOnly) return ConsumerFilter::Only(nodes);
    nodes.insert(nodes.end(), also_except.begin(), also_except.end());
    return ConsumerFilter::Except(nodes);
  }

  // reroute / replace of one tensor: the consumers the filter allows read
  // `to`; replace also removes `from`'s node.
  absl::Status RerouteOne(const Action& a, Endpoint from, Endpoint to) {
    // Never the new tensor's own node (it must not read itself), nor nodes
    // this rewrite already replaced or erased (they go; their inputs do not
    // matter, and may not fit the new tensor).
    std::vector<NodeId> never = {to.node};
    never.insert(never.end(), plan_->remove.begin(), plan_->remove.end());
    never.insert(never.end(), plan_->erase.begin(), plan_->erase.end());
    absl::StatusOr<ConsumerFilter> filter = FilterOf(a, std::move(never));
    if (!filter.ok()) return filter.status();
    absl::StatusOr<int> n = r_.Reroute(from, to, *filter);
    if (!n.ok()) return n.status();
    if (a.kind == AK::kReplace && from.port == 0) {
      plan_->remove.push_back(from.node);
      if (created_.count(to.node) > 0)
        plan_->takeover.emplace_back(from.node, to.node);
    }
    return absl::OkStatus();
  }

  // let s = expr; x = Op(...)
  absl::Status RunLetOrAssign(const Action& a) {
    absl::StatusOr<Value> v =
        a.kind == AK::kAssign && a.a->kind == Expr::Kind::kCreate
            ? Create(*a.a, a.name)
            : Eval(*a.a);
    if (!v.ok()) return v.status();
    return Bind(a.name, *std::move(v));
  }

  // reroute t -> u / swap t, u: lists (from walks and views) go pairwise,
  // as graph_editor's reroute_ts.
  absl::Status RunRerouteOrSwap(const Action& a) {
    absl::StatusOr<std::vector<Endpoint>> from = TensorsArg(*a.a);
    if (!from.ok()) return from.status();
    absl::StatusOr<std::vector<Endpoint>> to = TensorsArg(*a.b);
    if (!to.ok()) return to.status();
    if (from->size() != to->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot pair ", from->size(), " tensor(s) with ", to->size()));
    }
    if (a.kind == AK::kReroute) {
      for (size_t i = 0; i < from->size(); ++i) {
        absl::Status s = RerouteOne(a, (*from)[i], (*to)[i]);
        if (!s.ok()) return s;
      }
      return absl::OkStatus();
    }
    absl::StatusOr<ConsumerFilter> filter = FilterOf(a, {});
    if (!filter.ok()) return filter.status();
    return r_.Swap(*from, *to, *filter).status();
  }

  // replace t with u
  absl::Status RunReplace(const Action& a) {
    absl::StatusOr<Endpoint> from = TensorArg(*a.a);
    if (!from.ok()) return from.status();
    absl::StatusOr<Endpoint> to = TensorArg(*a.b);
    if (!to.ok()) return to.status();
    return RerouteOne(a, *from, *to);
  }

  // erase n (or a list)
  absl::Status RunErase(const Action& a) {
    absl::StatusOr<std::vector<NodeId>> n = NodesArg(*a.a);
    if (!n.ok()) return n.status();
    plan_->erase.insert(plan_->erase.end(), n->begin(), n->end());
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> StringArg(const Expr& e) {
    absl::StatusOr<Value> v = Eval(e);
    if (!v.ok()) return v.status();
    if (v->type != ValueType::kString)
      return absl::InvalidArgumentError("expected a string");
    return Substitute(v->s, graph(), b_);
  }

  // rename n to "..."
  absl::Status RunRename(const Action& a) {
    absl::StatusOr<NodeId> n = NodeArg(a.name);
    if (!n.ok()) return n.status();
    absl::StatusOr<std::string> text = StringArg(*a.a);
    if (!text.ok()) return text.status();
    return r_.Rename(*n, *text);
  }

  // device n "..." (n a node or a list)
  absl::Status RunDevice(const Action& a) {
    absl::StatusOr<std::vector<NodeId>> nodes = NodesArg(*a.a);
    if (!nodes.ok()) return nodes.status();
    absl::StatusOr<std::string> text = StringArg(*a.b);
    if (!text.ok()) return text.status();
    for (NodeId n : *nodes) {
      absl::Status s = r_.SetDevice(n, *text);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // control a -> b / uncontrol a -> b: each node of `a` to each of `b`.
  absl::Status RunControl(const Action& a) {
    absl::StatusOr<std::vector<NodeId>> from = NodesArg(*a.a);
    if (!from.ok()) return from.status();
    absl::StatusOr<std::vector<NodeId>> to = NodesArg(*a.b);
    if (!to.ok()) return to.status();
    for (NodeId f : *from) {
      for (NodeId t : *to) {
        absl::Status s = a.kind == AK::kControl ? r_.AddControlEdge(f, t)
                                                : r_.RemoveControlEdge(f, t);
        if (!s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // clone a, b as a2, b2 with {x -> y}; clone set as copies named "{node}/c"
  absl::Status RunClone(const Action& a) {
    std::vector<NodeId> nodes;
    bool set = false;
    for (const ExprPtr& e : a.clone_from) {
      absl::StatusOr<Value> v = Eval(*e);
      if (!v.ok()) return v.status();
      set = v->type == ValueType::kList;
      absl::StatusOr<std::vector<NodeId>> n = NodesArg(*e);
      if (!n.ok()) return n.status();
      nodes.insert(nodes.end(), n->begin(), n->end());
    }
    // x -> y, or xs -> ys: the lists paired item by item.
    absl::flat_hash_map<Endpoint, Endpoint> replacements;
    for (const auto& [from, to] : a.replacements) {
      absl::StatusOr<std::vector<Endpoint>> f = TensorsArg(*from);
      if (!f.ok()) return f.status();
      absl::StatusOr<std::vector<Endpoint>> t = TensorsArg(*to);
      if (!t.ok()) return t.status();
      if (f->size() != t->size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("`with` replaces ", f->size(), " tensor(s) by ",
                         t->size()));
      }
      for (size_t i = 0; i < f->size(); ++i) replacements[(*f)[i]] = (*t)[i];
    }
    // `{node}` in the template is the original's name.
    std::string name = Substitute(a.name_template, graph(), b_);
    size_t at = name.find("{node}");
    std::string prefix = at == std::string::npos ? "" : name.substr(0, at);
    std::string suffix = at == std::string::npos
                             ? ""
                             : name.substr(at + std::string("{node}").size());
    absl::StatusOr<CloneResult> copies =
        r_.Clone(nodes, replacements, prefix, suffix);
    if (!copies.ok()) return copies.status();
    for (NodeId id : copies->created) created_.insert(id);
    if (set) return Bind(a.clone_to[0].first, Value::Copies(copies->mapping));
    for (size_t i = 0; i < nodes.size(); ++i) {
      NodeId copy = copies->mapping.at(nodes[i]);
      created_.insert(copy);
      absl::Status s = Bind(a.clone_to[i].first, Value::NodeRef(copy));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status RunSplice(const Action& a);

  // fail "message {n}"
  absl::Status RunFail(const Action& a) {
    absl::StatusOr<Value> v = Eval(*a.a);
    if (!v.ok()) return v.status();
    return FailRewrite(Substitute(v->s, graph(), b_));
  }

  // The attr `set` / `unset` name: `n.attr`, or `n[expr]`'s string.
  absl::StatusOr<std::string> AttrName(const Action& a) {
    if (a.b == nullptr) return a.target;
    absl::StatusOr<Value> v = Eval(*a.b);
    if (!v.ok()) return v.status();
    if (v->type != ValueType::kString || v->s.empty() || v->s == "op" ||
        v->s == "name" || v->s == "device") {
      return absl::InvalidArgumentError(
          absl::StrCat("`", v->s, "` is not an attr name"));
    }
    return v->s;
  }

  // set n.attr = value, set n[name] = value
  absl::Status RunSet(const Action& a) {
    absl::StatusOr<NodeId> n = NodeArg(a.name);
    if (!n.ok()) return n.status();
    absl::StatusOr<std::string> name = AttrName(a);
    if (!name.ok()) return name.status();
    absl::StatusOr<Value> v = Eval(*a.a);
    if (!v.ok()) return v.status();
    absl::StatusOr<tf::AttrValue> attr =
        ToAttr(graph().node(*n).op(), *name, *v, graph());
    if (!attr.ok()) return attr.status();
    return r_.SetAttr(*n, *name, *std::move(attr));
  }

  // unset n.attr, unset n[name]
  absl::Status RunUnset(const Action& a) {
    absl::StatusOr<NodeId> n = NodeArg(a.name);
    if (!n.ok()) return n.status();
    absl::StatusOr<std::string> name = AttrName(a);
    if (!name.ok()) return name.status();
    return r_.RemoveAttr(*n, *name);
  }

  absl::Status AddInputs(const std::vector<Value>& args, NodeSpec* spec);
  absl::StatusOr<Endpoint> AbsentInput();
  absl::StatusOr<Endpoint> InputOf(const Value& v, size_t i, const NodeSpec& spec);
  absl::StatusOr<tf::DataType> ConstDtype(const Expr& e);
  absl::Status FitConstants(const NodeSpec& spec);
  absl::Status AddAttrs(const Expr& e, NodeSpec* spec);

  const RewriteProgram& program_;
  const Evaluator& evaluator_;
  NodeId root_;
  Bindings& b_;
  Rewriter& r_;
  RewritePlan* plan_;
  std::set<NodeId> created_;
  int shared_depth_ = 0;  // inside how many `shared Op(...)` being built
};

// splice "g.pbtxt" [for "node"] [prefix "p/"] [inputs {...}] [take {...}]
absl::Status ActionRunner::RunSplice(const Action& a) {
  auto it = program_.splices.find(&a - program_.actions.data());
  if (it == program_.splices.end())
    return absl::InternalError("splice graph not loaded");
  const SpliceSource& source = it->second;
  if (source.graph == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.what, " names no graph file"));
  }
  const Graph& g = graph();
  const tf::GraphDef* def = source.whole.get();
  tf::GraphDef part;
  if (!a.splice_root.empty()) {
    absl::StatusOr<tf::GraphDef> p =
        surgery::AncestorsOf(*source.graph, {Substitute(a.splice_root, g, b_)});
    if (!p.ok()) return Prefixed(absl::StrCat(source.what, ": "), p.status());
    part = *std::move(p);
    def = &part;
  }
  absl::flat_hash_map<std::string, Endpoint> input_map;
  for (const auto& [name, expr] : a.splice_inputs) {
    absl::StatusOr<Endpoint> t = TensorArg(*expr);
    if (!t.ok()) return t.status();
    input_map[Substitute(name, g, b_)] = *t;
  }
  absl::StatusOr<SpliceResult> spliced =
      r_.Splice(*def, Substitute(a.prefix, g, b_), input_map);
  if (!spliced.ok()) return spliced.status();
  for (NodeId id : spliced->created) created_.insert(id);
  for (const auto& [binding, node] : a.take) {
    std::string name = Substitute(node, g, b_);
    auto m = spliced->mapping.find(name);
    if (m == spliced->mapping.end()) {
      return absl::NotFoundError(
          absl::StrCat(source.what, " has no node `", name, "` to take"));
    }
    absl::Status s = Bind(binding.first, Value::NodeRef(m->second));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// The dtype a `Const(...) { dtype: d }` asks for, or DT_INVALID.
absl::StatusOr<tf::DataType> ActionRunner::ConstDtype(const Expr& e) {
  for (const AttrItem& item : e.attrs) {
    if (item.spread || item.name != "dtype") continue;
    absl::StatusOr<Value> v = Eval(*item.value);
    if (!v.ok()) return v.status();
    if (v->type != ValueType::kString)
      return absl::InvalidArgumentError("a Const's `dtype` is a dtype name");
    return ParseDataType(v->s);
  }
  return tf::DT_INVALID;
}

// A new node's data inputs: tensors, or the tensors of a list (`xs...`).
absl::Status ActionRunner::AddInputs(const std::vector<Value>& args,
                                     NodeSpec* spec) {
  // Each input with the argument it came from; a list is spread, each item
  // an input.
  std::vector<std::pair<const Value*, size_t>> items;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type != ValueType::kList) {
      items.emplace_back(&args[i], i);
      continue;
    }
    for (const Value& v : args[i].list) items.emplace_back(&v, i);
  }
  // A left-out input at the end is no input at all (ONNX writes none): it
  // is dropped, so that the node is what reading it back gives.
  const bool has_absent = DialectOf(graph()).AbsentInput().has_value();
  while (has_absent && !items.empty() &&
         items.back().first->type == ValueType::kString &&
         items.back().first->s.empty()) {
    items.pop_back();
  }
  for (const auto& [v, i] : items) {
    absl::StatusOr<Endpoint> t = InputOf(*v, i, *spec);
    if (!t.ok()) return t.status();
    spec->inputs.push_back(*t);
  }
  return absl::OkStatus();
}

// The dialect's stand-in for a left-out input (ONNX: what the reader makes
// for an input named ""), made when the graph has none.
absl::StatusOr<Endpoint> ActionRunner::AbsentInput() {
  std::optional<AbsentInputNode> absent = DialectOf(graph()).AbsentInput();
  if (!absent.has_value())
    return absl::InvalidArgumentError("this dialect has no left-out inputs");
  NodeId id = graph().FindId(absent->name);
  if (id == kNoNode) {
    NodeSpec spec;
    spec.name = absent->name;
    spec.op = absent->op;
    absl::StatusOr<NodeId> made = r_.AddNode(std::move(spec));
    if (!made.ok()) return made.status();
    id = *made;
  }
  return Endpoint{id, 0};
}

// A list item or argument as an input: a tensor, or "" for an ONNX optional
// input left out (its name written empty), so that a later one can be given.
absl::StatusOr<Endpoint> ActionRunner::InputOf(const Value& v, size_t i, const NodeSpec& spec) {
  if (v.type == ValueType::kTensor || v.type == ValueType::kNode) return v.tensor;
  if (v.type == ValueType::kString && v.s.empty() &&
      DialectOf(graph()).AbsentInput().has_value())
    return AbsentInput();
  return absl::InvalidArgumentError(absl::StrCat("argument ", i + 1, " of `", spec.op, "` is ",
                                                 AValueType(v.type),
                                                 ", not a tensor; wrap constants in `Const(...)`"));
}

// `{ ..conv.attrs, name: value }`: copied attrs, then set ones.
absl::Status ActionRunner::AddAttrs(const Expr& e, NodeSpec* spec) {
  const Graph& g = graph();
  for (const AttrItem& item : e.attrs) {
    if (item.spread) {
      const Value* v = b_.Find(item.name);
      if (v == nullptr)
        return absl::NotFoundError(
            absl::StrCat("`", item.name, "` is not bound"));
      const Node& from = g.node(v->tensor.node);
      for (const auto& [k, attr] : from.attrs()) spec->attrs[k] = attr;
      spec->value_content = from.value_content_apart();
      continue;
    }
    absl::StatusOr<Value> v = Eval(*item.value);
    if (!v.ok()) return v.status();
    absl::StatusOr<tf::AttrValue> attr = ToAttr(spec->op, item.name, *v, g);
    if (!attr.ok()) return attr.status();
    spec->attrs[item.name] = *std::move(attr);
    if (item.name == "value") spec->value_content = nullptr;
  }
  return absl::OkStatus();
}

// A constant this rewrite built takes the dtype its new reader needs
// (a float32 bias for a float16 BiasAdd becomes float16), between floating
// dtypes only; anything else is left for validation to report.
absl::Status ActionRunner::FitConstants(const NodeSpec& spec) {
  std::optional<std::vector<tf::DataType>> required =
      OpRegistry::For(graph()).InputTypes(spec.op, spec.attrs);
  if (!required || required->size() != spec.inputs.size())
    return absl::OkStatus();  // validation says what is wrong
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    Endpoint in = spec.inputs[i];
    if (in.port != 0 || created_.count(in.node) == 0) continue;
    const Node& c = graph().node(in.node);
    const tf::AttrValue* dtype = c.attr("dtype");
    if (c.op() != "Const" || dtype == nullptr) continue;
    tf::DataType want = BaseType((*required)[i]);
    if (want == dtype->type() || !IsFloating(want) ||
        !IsFloating(dtype->type()))
      continue;
    absl::StatusOr<ConstTensor> value = ConstantOf(graph(), in);
    if (value.ok()) value = CastTo(*value, want);
    if (!value.ok()) return value.status();
    tf::AttrValue type_attr, value_attr;
    type_attr.set_type(want);
    *value_attr.mutable_tensor() = ToTensorProto(*value);
    absl::Status s = r_.SetAttr(in.node, "dtype", std::move(type_attr));
    if (s.ok()) s = r_.SetAttr(in.node, "value", std::move(value_attr));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Op(a, b) { attrs } named "template": a new node.
absl::StatusOr<Value> ActionRunner::Create(const Expr& e,
                                           const std::string& binding) {
  const Graph& g = graph();
  NodeSpec spec;
  spec.op = e.text;
  if (!e.op_of.empty()) {
    const Value* of = b_.Find(e.op_of);
    if (of == nullptr)
      return absl::NotFoundError(absl::StrCat("`", e.op_of, "` is not bound"));
    spec.op = g.node(of->tensor.node).op();
  }
  if (e.op_expr) {
    absl::StatusOr<Value> op = Eval(*e.op_expr);
    if (!op.ok()) return op.status();
    if (op->type != ValueType::kString || op->s.empty() ||
        !absl::c_all_of(
            op->s, [](char c) { return absl::ascii_isalnum(c) || c == '_'; })) {
      return absl::InvalidArgumentError(
          absl::StrCat("`op(...)`: `", op->s, "` is not an op name"));
    }
    spec.op = op->s;
  }
  const Node& root = g.node(root_);
  spec.device = root.device();
  // `shared Op(...)`: every node built inside it is shared too
  const bool shared = e.shared || shared_depth_ > 0;
  std::vector<Value> args;
  {
    if (e.shared) ++shared_depth_;
    absl::Cleanup leave = [&] {
      if (e.shared) --shared_depth_;
    };
    for (const auto& a : e.args) {
      absl::StatusOr<Value> v = Eval(*a);
      if (!v.ok()) return v.status();
      args.push_back(*std::move(v));
    }
  }
  if (spec.op == "Const" && e.args.size() == 1) {
    // A computed constant is encoded where it is, not copied first.
    bool computed = args[0].type == ValueType::kConst;
    absl::StatusOr<ConstTensor> c =
        computed ? ConstTensor() : ToConstant(g, args[0]);
    if (!c.ok()) return c.status();
    const ConstTensor* t = computed ? args[0].constant.get() : &*c;
    // `Const(v) { dtype: d }`: the value converted to d (rounded; an error
    // when a value does not fit), never a tensor of another dtype under d.
    absl::StatusOr<tf::DataType> want = ConstDtype(e);
    if (!want.ok()) return want.status();
    ConstTensor converted;
    if (*want != tf::DT_INVALID && *want != t->dtype) {
      absl::StatusOr<ConstTensor> cast = CastTo(*t, *want);
      if (!cast.ok()) return Prefixed("Const: ", cast.status());
      converted = *std::move(cast);
      t = &converted;
    }
    spec.attrs["dtype"].set_type(t->dtype);
    tf::TensorProto value;
    if (t->deferred != nullptr) {
      // Its bytes are made when they are written (or read).
      value = TensorProtoWithoutContent(*t);
      spec.value_content = t->deferred;
    } else {
      value = ToTensorProto(*t);
    }
    spec.attrs["value"].mutable_tensor()->Swap(&value);
  } else {
    absl::Status s = AddInputs(args, &spec);
    if (!s.ok()) return s;
  }
  absl::Status s = AddAttrs(e, &spec);
  if (!s.ok()) return s;
  InferTypeAttrs(g, &spec);
  absl::Status fit = FitConstants(spec);
  if (!fit.ok()) return fit;
  spec.name =
      e.has_name_template
          ? Substitute(e.name_template, g, b_)
          : absl::StrCat(root.name(), "/", binding.empty() ? spec.op : binding);
  if (shared) {
    // an equal node already there (not one this rewrite removes) serves
    std::vector<NodeId> going = plan_->remove;
    going.insert(going.end(), plan_->erase.begin(), plan_->erase.end());
    NodeId equal = surgery::EqualNode(g, spec, going);
    if (equal != kNoNode) return Value::NodeRef(equal);
  }
  absl::StatusOr<NodeId> id = r_.AddNode(std::move(spec));
  if (!id.ok()) return id.status();
  created_.insert(*id);
  return Value::NodeRef(*id);
}

}  // namespace

absl::Status RunRewrite(const RewriteProgram& program,
                        const Evaluator& evaluator, NodeId root,
                        Bindings& bindings, Rewriter& rewriter,
                        RewritePlan* plan) {
  ActionRunner runner(program, evaluator, root, bindings, rewriter, plan);
  for (const Action& action : program.actions) {
    absl::Status s = runner.Run(action);
    if (!s.ok()) {
      return Prefixed(absl::StrCat(program.path, ":", action.loc.line, ": "),
                      s);
    }
  }
  return absl::OkStatus();
}

}  // namespace graft::dsl
