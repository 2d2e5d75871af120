// The checker's rewrite actions: what each action reads must be bound and
// of the right kind; what it binds gets a name.
#include "absl/strings/str_cat.h"
#include "dsl/checker.h"
#include "engine/dialect.h"

namespace graft::dsl {

using AK = Action::Kind;

// A name a rewrite action binds (let, a new node, a copy, a spliced node).
void Checker::BindAction(const RuleFile& f, const std::string& name,
                         NameInfo::Kind kind, ValueType type, Loc loc,
                         Names* names) {
  if (names->count(name)) {
    Error(f, loc, absl::StrCat("`", name, "` is already bound"));
  } else {
    (*names)[name] = {kind, type, loc, 0};
  }
}

void Checker::BindItem(const RuleFile& f, const std::string& name, Loc loc,
                       Names* names) {
  auto it = names->find(name);
  if (it == names->end() || it->second.kind != NameInfo::Kind::kItem)
    BindAction(f, name, NameInfo::Kind::kItem, ValueType::kAny, loc, names);
}

void Checker::RequireNode(const RuleFile& f, const std::string& name, Loc loc,
                          Names* names) {
  auto it = names->find(name);
  if (it == names->end()) {
    Error(f, loc, absl::StrCat("unknown name `", name, "`"));
    return;
  }
  it->second.uses++;
  // A `let` of a value whose type is known only when the rule runs (a
  // plan's list item: `let n = pair[0]`) is checked then.
  bool let_node = it->second.kind == NameInfo::Kind::kLet &&
                  (it->second.type == ValueType::kNode ||
                   it->second.type == ValueType::kTensor ||
                   it->second.type == ValueType::kAny);
  if ((it->second.kind == NameInfo::Kind::kLet && !let_node) ||
      it->second.kind == NameInfo::Kind::kList) {
    Error(f, loc, absl::StrCat("`", name, "` is not a node"));
  }
}

// replace / reroute / swap: tensors (reroute and swap also take lists).
void Checker::CheckTensorAction(const RuleFile& f, const Action& a,
                                Names* names) {
  for (const ExprPtr& x : {a.a, a.b}) {
    ValueType t = CheckExpr(f, *x, names, false);
    bool list_ok = a.kind != AK::kReplace && t == ValueType::kList;
    if (t != ValueType::kTensor && t != ValueType::kNode &&
        t != ValueType::kAny && !list_ok) {
      Error(f, x->loc, absl::StrCat("expected a tensor, not ", AValueType(t)));
    }
  }
  for (const ExprPtr& n : a.filter_nodes) CheckNodes(f, *n, names);
}

void Checker::CheckNodes(const RuleFile& f, const Expr& e, Names* names) {
  ValueType t = CheckExpr(f, e, names, false);
  if (t != ValueType::kNode && t != ValueType::kTensor &&
      t != ValueType::kList && t != ValueType::kAny) {
    Error(f, e.loc,
          absl::StrCat("expected a node or a list of nodes, not ",
                       AValueType(t)));
  }
}

void Checker::CheckAttrName(const RuleFile& f, const Action& a, Names* names) {
  if (a.b == nullptr) return;
  ValueType t = CheckExpr(f, *a.b, names, false);
  if (t != ValueType::kString && t != ValueType::kAny) {
    Error(f, a.b->loc,
          absl::StrCat("expected the attr's name, a string, not ",
                       AValueType(t)));
  }
}

// `clone a, b as a2, b2`: nodes, one copy name each; `clone set as copies`:
// one list, its copies one lookup (`copies[t]`).
void Checker::CheckClone(const RuleFile& f, const Action& a, Names* names) {
  if (a.has_name_template &&
      a.name_template.find("{node}") == std::string::npos) {
    Error(f, a.loc,
          "a clone's name template needs `{node}` (the original's name), as "
          "in `named \"{node}/recompute\"`");
  }
  std::vector<ValueType> types;
  for (const ExprPtr& e : a.clone_from)
    types.push_back(CheckExpr(f, *e, names, false));
  bool set = types.size() == 1 && types[0] == ValueType::kList;
  // A value known only when the rule runs (a `for` item): a set's copies or
  // a node's copy, as it turns out.
  bool either = types.size() == 1 && types[0] == ValueType::kAny &&
                a.clone_to.size() == 1;
  if (set || either) {
    if (a.clone_to.size() != 1) {
      Error(f, a.loc,
            "`clone` of a set names one lookup for its copies (as in `clone "
            "seg as copies`, then `copies[t]`)");
    }
    for (const auto& [from, to] : a.replacements) {
      CheckExpr(f, *from, names, false);
      CheckExpr(f, *to, names, false);
    }
    if (a.has_name_template) CountTemplateParams(a.name_template);
    for (const auto& [n, loc] : a.clone_to) {
      BindAction(f, n, NameInfo::Kind::kLet,
                 set ? ValueType::kCopies : ValueType::kAny, loc, names);
    }
    return;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != ValueType::kNode && types[i] != ValueType::kTensor &&
        types[i] != ValueType::kAny) {
      Error(f, a.clone_from[i]->loc,
            absl::StrCat("`clone` copies nodes, or one list of them; this is ",
                         AValueType(types[i])));
    }
  }
  if (a.clone_from.size() != a.clone_to.size()) {
    Error(f, a.loc,
          absl::StrCat("`clone` copies ", a.clone_from.size(),
                       " node(s) but names ", a.clone_to.size(), " copies"));
  }
  for (const auto& [from, to] : a.replacements) {
    CheckExpr(f, *from, names, false);
    CheckExpr(f, *to, names, false);
  }
  for (const auto& [n, loc] : a.clone_to) {
    BindAction(f, n, NameInfo::Kind::kCreated, ValueType::kNode, loc, names);
  }
}

// The graph a splice copies from is loaded now (a file, or a `graph`
// param), and the names the splice uses are checked against it.
void Checker::CheckSplice(const RuleFile& f, const Rule& rule, const Action& a,
                          Names* names) {
  SpliceSource source;
  bool known = true;  // the graph is known now (a file, or a param given one)
  if (!a.path_param.empty()) {
    source.what = absl::StrCat("param `", a.path_param, "`");
    auto p = param_types_.find(a.path_param);
    if (p == param_types_.end() || p->second != "graph") {
      Error(f, a.path_loc,
            absl::StrCat("`", a.path_param, "` is not a `graph` param"));
      return;
    }
    ++param_uses_[a.path_param];
    source.graph = (*params_)[a.path_param].graph;
    known = source.graph != nullptr;
  } else {
    source.what = absl::StrCat("`", a.path, "`");
    absl::StatusOr<Graph> graph = LoadGraphFile(PathRelativeTo(f.path, a.path));
    if (!graph.ok()) {
      Error(f, a.path_loc,
            absl::StrCat("cannot splice `", a.path,
                         "`: ", graph.status().message()));
      return;
    }
    source.graph = std::make_shared<const Graph>(*std::move(graph));
  }
  if (known && a.splice_root.empty()) {
    source.whole =
        std::make_shared<const tf::GraphDef>(source.graph->ToGraphDef());
  }
  // Names with `{...}` templates are looked up when the rule runs.
  auto check_name = [&](const std::string& name, Loc loc) {
    if (known && name.find('{') == std::string::npos &&
        !source.graph->Contains(name.substr(0, name.find(':')))) {
      Error(f, loc, absl::StrCat(source.what, " has no node `", name, "`"));
    }
  };
  if (!a.splice_root.empty()) check_name(a.splice_root, a.path_loc);
  for (const auto& [name, expr] : a.splice_inputs) {
    CheckExpr(f, *expr, names, false);
    check_name(name, expr->loc);
  }
  for (const auto& [binding, node] : a.take) {
    check_name(node, binding.second);
    BindAction(f, binding.first, NameInfo::Kind::kCreated, ValueType::kNode,
               binding.second, names);
  }
  splice_graphs_[&a - rule.actions.data()] = std::move(source);
}

void Checker::CheckAction(const RuleFile& f, const Rule& rule, const Action& a,
                          Names* names) {
  switch (a.kind) {
    case AK::kLet:
    case AK::kAssign: {
      ValueType t = CheckExpr(f, *a.a, names, false);
      BindAction(
          f, a.name,
          a.kind == AK::kLet ? NameInfo::Kind::kLet : NameInfo::Kind::kCreated,
          t, a.name_loc, names);
      return;
    }
    case AK::kReplace:
    case AK::kReroute:
    case AK::kSwap:
      return CheckTensorAction(f, a, names);
    case AK::kErase:
      return CheckNodes(f, *a.a, names);
    case AK::kDevice: {
      CheckNodes(f, *a.a, names);
      ValueType t = CheckExpr(f, *a.b, names, false);
      if (t != ValueType::kString && t != ValueType::kAny) {
        Error(
            f, a.b->loc,
            absl::StrCat("expected the device, a string, not ", AValueType(t)));
      }
      return;
    }
    case AK::kUnset:
      RequireNode(f, a.name, a.name_loc, names);
      return CheckAttrName(f, a, names);
    case AK::kRename:
    case AK::kSet: {
      RequireNode(f, a.name, a.name_loc, names);
      if (a.kind == AK::kSet) CheckAttrName(f, a, names);
      if (a.kind == AK::kSet &&
          (a.target == "op" || a.target == "name" || a.target == "device")) {
        Error(f, a.target_loc,
              a.target == "op"
                  ? "`set n.op` cannot change a node's op: create the node "
                    "you want (`out = NewOp(...) { ..n.attrs }`) and `replace "
                    "n with out`"
                  : absl::StrCat("`", a.target, "` is not an attr: use `",
                                 a.target == "name" ? "rename n to \"...\""
                                                    : "device n \"...\"",
                                 "`"));
      }
      ValueType t = CheckExpr(f, *a.a, names, false);
      if (a.kind != AK::kSet && t != ValueType::kString &&
          t != ValueType::kAny) {
        Error(f, a.a->loc,
              absl::StrCat("expected a string, not ", AValueType(t)));
      }
      return;
    }
    case AK::kControl:
    case AK::kUncontrol:
      CheckNodes(f, *a.a, names);
      return CheckNodes(f, *a.b, names);
    case AK::kFail: {
      ValueType t = CheckExpr(f, *a.a, names, false);
      if (t != ValueType::kString && t != ValueType::kAny) {
        Error(f, a.a->loc,
              absl::StrCat("expected the message, a string, not ",
                           AValueType(t)));
      }
      return;
    }
    case AK::kClone:
      return CheckClone(f, a, names);
    case AK::kFor: {
      ValueType t = CheckExpr(f, *a.a, names, false);
      if (t != ValueType::kList && t != ValueType::kAny) {
        Error(f, a.a->loc,
              absl::StrCat("`for` iterates a list, not ", AValueType(t)));
      }
      BindItem(f, a.name, a.name_loc, names);
      for (const Action& inner : a.body) {
        if (inner.kind == AK::kSplice) {
          Error(f, inner.loc, "`splice` cannot be repeated by `for`");
          continue;
        }
        CheckAction(f, rule, inner, names);
      }
      return;
    }
    case AK::kSplice:
      return CheckSplice(f, rule, a, names);
  }
}

}  // namespace graft::dsl
