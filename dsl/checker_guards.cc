// Named guards: `guard name(a, b) = expr`, called as a function in `where`s
// (and anywhere an expression goes) and inlined there, its parameters
// replaced by the call's arguments, before the rules are checked. A guard
// reads only its parameters, params and plans, so that a call means the
// same in every rule.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/checker.h"

namespace graft::dsl {
namespace {

using K = Expr::Kind;

using Arguments = std::map<std::string, ExprPtr>;

ExprPtr Make(K kind, Loc loc, std::string text = "") {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->loc = loc;
  e->text = std::move(text);
  return e;
}

// What stands for a call that is in error (reported): a bool that still
// reads the call's arguments, `len([args]) >= 0`, so that they are not also
// reported as never used.
ExprPtr InPlaceOfCall(const Expr& call) {
  ExprPtr list = Make(K::kList, call.loc);
  list->args = call.args;
  ExprPtr len = Make(K::kCall, call.loc, "len");
  len->args = {list};
  ExprPtr out = Make(K::kBinary, call.loc, ">=");
  out->args = {len, Make(K::kInt, call.loc)};
  return out;
}

// Whether `e` builds a node: anywhere (`Op(...)`), or, with
// `unshared_only`, other than through `shared Op(...)` (which reads an equal
// node when there is one, so it builds once); with `is_fragment`, also by
// calling a fragment (each builds nodes: each is checked to).
bool BuildsNodes(
    const Expr& e, bool unshared_only,
    const std::function<bool(const std::string&)>& is_fragment = {}) {
  if (e.kind == K::kCreate) return !(unshared_only && e.shared);
  if (e.kind == K::kCall && is_fragment && is_fragment(e.text)) return true;
  for (const AttrItem& attr : e.attrs) {
    if (attr.value && BuildsNodes(*attr.value, unshared_only, is_fragment))
      return true;
  }
  if (e.op_expr && BuildsNodes(*e.op_expr, unshared_only, is_fragment))
    return true;
  for (const ExprPtr& a : e.args) {
    if (a && BuildsNodes(*a, unshared_only, is_fragment)) return true;
  }
  return false;
}

// How many times evaluating `e` may read `param`: an `if` reads one of its
// branches, a comprehension's body counts as many (2).
int Reads(const Expr& e, const std::string& param) {
  if (e.kind == K::kName) return e.text == param ? 1 : 0;
  int n = 0;
  for (const AttrItem& attr : e.attrs) {
    if (attr.value) n += Reads(*attr.value, param);
  }
  if (e.op_expr) n += Reads(*e.op_expr, param);
  if (e.kind == K::kIf && e.args.size() == 3) {
    return n + Reads(*e.args[0], param) +
           std::max(Reads(*e.args[1], param), Reads(*e.args[2], param));
  }
  if (e.kind == K::kListComp && e.args.size() == 2) {
    int body = e.text == param ? 0 : Reads(*e.args[0], param);
    return n + Reads(*e.args[1], param) + 2 * body;
  }
  for (const ExprPtr& a : e.args) {
    if (a) n += Reads(*a, param);
  }
  return n;
}

}  // namespace

// A guard's expression reads its parameters, the set's params and plans,
// and the variables of its own list comprehensions; nothing of the rule
// that calls it.
void Checker::CheckGuardDef(const RuleFile& f, const GuardDef& def,
                            const std::set<std::string>& plans) {
  if (hooks_.Find(def.name) != nullptr || def.name == "bound") {
    Error(f, def.loc,
          absl::StrCat(def.kind(), " `", def.name, "` has a builtin's name"));
  }
  std::set<std::string> own;
  for (const auto& [param, loc] : def.params) {
    if (!own.insert(param).second) {
      Error(f, loc,
            absl::StrCat(def.kind(), " `", def.name, "` names `", param,
                         "` twice"));
    }
  }
  std::set<std::string> read;  // the parameters the expression reads
  // `visible`: the names the expression may read there; `params`: those of
  // them that are the guard's parameters (a comprehension's variable hides
  // one of its name)
  std::function<void(const Expr&, const std::set<std::string>&,
                     const std::set<std::string>&)>
      walk = [&](const Expr& e, const std::set<std::string>& visible,
                 const std::set<std::string>& params) {
        auto check = [&](const std::string& name, Loc loc) {
          if (params.count(name)) read.insert(name);
          if (visible.count(name) || param_types_.count(name) ||
              plans.count(name)) {
            return;
          }
          Error(f, loc,
                absl::StrCat(def.kind(), " `", def.name, "` reads `", name,
                             "`, which is none of its parameters (a guard "
                             "reads its parameters, params and plans)"));
        };
        if (e.kind == K::kName || e.kind == K::kPort) check(e.text, e.loc);
        if (e.kind == K::kCreate && !e.op_of.empty()) check(e.op_of, e.loc);
        for (const AttrItem& attr : e.attrs) {
          if (attr.spread) check(attr.name, attr.loc);
          if (attr.value) walk(*attr.value, visible, params);
        }
        if (e.op_expr) walk(*e.op_expr, visible, params);
        if (e.kind == K::kListComp && e.args.size() == 2) {
          walk(*e.args[1], visible, params);
          std::set<std::string> inner = visible, inner_params = params;
          inner.insert(e.text);
          inner_params.erase(e.text);
          walk(*e.args[0], inner, inner_params);
          return;
        }
        for (const auto& a : e.args) walk(*a, visible, params);
      };
  if (!def.body) return;
  walk(*def.body, own, own);
  // a parameter read by nothing would drop its argument unread
  for (const auto& [param, loc] : def.params) {
    if (!read.count(param)) {
      Error(f, loc,
            absl::StrCat(def.kind(), " `", def.name,
                         "` never reads its parameter `", param, "`"));
    }
  }
}

void Checker::ExpandGuards() {
  std::set<std::string> plans;  // the set's plans, which a guard may read
  for (const auto& file : set_->asts_) {
    for (const Plan& plan : file->plans) plans.insert(plan.name);
  }
  for (const auto& file : set_->asts_) {
    std::map<std::string, const GuardDef*>& defs = guard_defs_[file->path];
    for (const GuardDef& def : file->guard_defs) {
      auto [it, fresh] = defs.emplace(def.name, &def);
      if (!fresh) {
        Error(*file, def.loc,
              absl::StrCat("duplicate ", def.kind(), " `", def.name, "`"),
              {absl::StrCat("first defined at ", file->path, ":",
                            it->second->loc.line, ":", it->second->loc.col)});
      }
      CheckGuardDef(*file, def, plans);
    }
  }
  // once every file's definitions are known: a guard computes a value, a
  // fragment builds nodes (in rewrites), itself or by calling a fragment
  for (const auto& file : set_->asts_) {
    for (const GuardDef& def : file->guard_defs) {
      if (!def.body) continue;
      bool builds = BuildsNodes(
          *def.body, /*unshared_only=*/false, [&](const std::string& name) {
            const GuardDef* called = FindGuardDef(*file, name).second;
            return called != nullptr && called->fragment;
          });
      if (!def.fragment && builds) {
        Error(*file, def.loc,
              absl::StrCat("guard `", def.name,
                           "` builds nodes: declare it `fragment` (a guard "
                           "only computes a value)"));
      } else if (def.fragment && !builds) {
        Error(*file, def.loc,
              absl::StrCat("fragment `", def.name,
                           "` builds no nodes: declare it `guard`"));
      }
    }
  }
  for (const auto& file : loaded_) {
    for (Rule& rule : file->rules) {
      for (ExprPtr& g : rule.guards) g = ExpandGuardCalls(*file, g);
      for (LetStmt& let : rule.lets) let.expr = ExpandGuardCalls(*file, let.expr);
      for (Action& a : rule.actions) ExpandGuardCalls(*file, &a);
    }
    for (PatternDef& def : file->pattern_defs)
      def.where = ExpandGuardCalls(*file, def.where);
    for (Plan& plan : file->plans) plan.expr = ExpandGuardCalls(*file, plan.expr);
    for (Require& req : file->requirements)
      req.expr = ExpandGuardCalls(*file, req.expr);
    for (OutputOrder& order : file->output_orders)
      order.expr = ExpandGuardCalls(*file, order.expr);
  }
}

void Checker::ExpandGuardCalls(const RuleFile& f, Action* a) {
  a->a = ExpandGuardCalls(f, a->a);
  a->b = ExpandGuardCalls(f, a->b);
  for (ExprPtr& n : a->filter_nodes) n = ExpandGuardCalls(f, n);
  for (ExprPtr& n : a->clone_from) n = ExpandGuardCalls(f, n);
  for (auto& [from, to] : a->replacements) {
    from = ExpandGuardCalls(f, from);
    to = ExpandGuardCalls(f, to);
  }
  for (auto& [name, value] : a->splice_inputs)
    value = ExpandGuardCalls(f, value);
  for (Action& inner : a->body) ExpandGuardCalls(f, &inner);
}

// `e` with every call of a guard `f` sees inlined (a copy where anything
// changed; `e` itself otherwise).
ExprPtr Checker::ExpandGuardCalls(const RuleFile& f, const ExprPtr& e) {
  if (!e) return e;
  bool changed = false;
  std::vector<ExprPtr> args;
  for (const ExprPtr& a : e->args) {
    args.push_back(ExpandGuardCalls(f, a));
    changed |= args.back() != a;
  }
  std::vector<AttrItem> attrs = e->attrs;
  for (AttrItem& attr : attrs) {
    ExprPtr value = ExpandGuardCalls(f, attr.value);
    changed |= value != attr.value;
    attr.value = value;
  }
  ExprPtr op_expr = ExpandGuardCalls(f, e->op_expr);
  changed |= op_expr != e->op_expr;
  ExprPtr out = e;
  if (changed) {
    out = std::make_shared<Expr>(*e);
    out->args = std::move(args);
    out->attrs = std::move(attrs);
    out->op_expr = op_expr;
  }
  if (e->kind != K::kCall) return out;
  auto [def_file, def] = FindGuardDef(f, e->text);
  if (def == nullptr) return out;
  return InlineGuard(f, *out, *def_file, *def);
}

// The guard's expression with its parameters replaced by the call's
// arguments (its own calls inlined too). Where the guard is another file's,
// what it contributes is located at the call.
ExprPtr Checker::InlineGuard(const RuleFile& f, const Expr& call,
                             const RuleFile& def_file, const GuardDef& def) {
  ++guard_def_uses_[def_file.path + ":" + def.name];
  if (call.args.size() != def.params.size()) {
    Error(
        f, call.loc,
        absl::StrCat(def.kind(), " `", def.name, "` takes ", def.params.size(),
                     " argument(s), got ", call.args.size()));
    return InPlaceOfCall(call);
  }
  if (std::find(inlining_.begin(), inlining_.end(), &def) != inlining_.end()) {
    Error(f, call.loc,
          absl::StrCat(def.kind(), " `", def.name, "` calls itself"));
    return InPlaceOfCall(call);
  }
  // Bounded: guards calling guards may nest so deep, and inline so much in
  // all (a guard calling another twice, level after level, doubles it).
  if (inlining_.empty()) outer_call_ = {&f, call.loc, def.name};
  if (inlining_.size() >= kMaxGuardNesting || inlined_nodes_ > kMaxInlinedNodes) {
    // said once, at the call in a rule that set it off
    if (!inlining_too_much_) {
      Error(*outer_call_.file, outer_call_.loc,
            absl::StrCat("guard `", outer_call_.name,
                         "` inlines too much: guards nest at most ", kMaxGuardNesting,
                         " deep and inline at most ", kMaxInlinedNodes,
                         " expression nodes in all"));
    }
    inlining_too_much_ = true;
    return InPlaceOfCall(call);
  }
  if (!def.body) return InPlaceOfCall(call);
  // an argument is inlined where its parameter is read: one that builds
  // nodes would build them again at each read
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (call.args[i] && BuildsNodes(*call.args[i], /*unshared_only=*/true) &&
        Reads(*def.body, def.params[i].first) > 1) {
      Error(f, call.args[i]->loc,
            absl::StrCat(
                def.kind(), " `", def.name, "` reads `", def.params[i].first,
                "` more than once, and its argument builds nodes: each read "
                "would build them again (name the node first, or make it "
                "`shared`)"));
      return InPlaceOfCall(call);
    }
  }
  Arguments given;
  for (size_t i = 0; i < def.params.size(); ++i)
    given[def.params[i].first] = call.args[i];
  bool relocate = &def_file != &f;
  std::function<ExprPtr(const ExprPtr&, const Arguments&)> substitute =
      [&](const ExprPtr& e, const Arguments& args) -> ExprPtr {
    if (!e) return e;
    auto name_of = [&](const std::string& param, Loc loc) -> std::string {
      auto it = args.find(param);
      if (it == args.end()) return param;
      if (it->second->kind != K::kName) {
        Error(f, relocate ? call.loc : loc,
              absl::StrCat(def.kind(), " `", def.name, "` reads `", param,
                           "` as a node: its argument must be a name"));
        return param;
      }
      return it->second->text;
    };
    if (e->kind == K::kName) {
      auto it = args.find(e->text);
      if (it != args.end()) return it->second;
    }
    auto out = std::make_shared<Expr>(*e);
    ++inlined_nodes_;
    if (relocate) out->loc = call.loc;
    if (e->kind == K::kPort) out->text = name_of(e->text, e->loc);
    if (e->kind == K::kCreate && !e->op_of.empty())
      out->op_of = name_of(e->op_of, e->loc);
    for (AttrItem& attr : out->attrs) {
      if (attr.spread) attr.name = name_of(attr.name, attr.loc);
      attr.value = substitute(attr.value, args);
      if (relocate) attr.loc = call.loc;
    }
    out->op_expr = substitute(e->op_expr, args);
    if (e->kind == K::kListComp && e->args.size() == 2) {
      // The comprehension's variable hides a parameter of its name.
      Arguments inner = args;
      inner.erase(e->text);
      out->args = {substitute(e->args[0], inner), substitute(e->args[1], args)};
      return out;
    }
    for (ExprPtr& a : out->args) a = substitute(a, args);
    return out;
  };
  ExprPtr body = substitute(def.body, given);
  inlining_.push_back(&def);
  body = ExpandGuardCalls(def_file, body);
  inlining_.pop_back();
  return body;
}

}  // namespace graft::dsl
