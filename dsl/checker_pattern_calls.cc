// Named patterns with parameters: `pattern name(a, b) = r: Op(...) where e`,
// called in a rule as `n = name(x, y)`. Each call expands the pattern in
// place: its parameters become the call's names (`_`: a name of its own),
// its root `r` the call's node, and every other name it binds one of its
// own at that call, so a rule may call it twice; its `where`, with the same
// names, holds with the rule's.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/checker.h"

namespace graft::dsl {
namespace {

using K = Expr::Kind;
using OK = OperandPattern::Kind;
using Renames = std::map<std::string, std::string>;

// Each name a pattern binds or reads, with how often it is written.
void CountPatternNames(const NodePattern& p, std::map<std::string, int>* out) {
  for (const auto& [arg, loc] : p.ref_args) {
    if (arg != "_") ++(*out)[arg];
  }
  for (const OperandPattern& o : p.operands) {
    if (!o.name.empty()) ++(*out)[o.name];
    if (o.nested) CountPatternNames(*o.nested, out);
  }
}

// The first place `name` is written in `p`, for a located message.
bool FindPatternName(const NodePattern& p, const std::string& name, Loc* loc) {
  for (const auto& [arg, at] : p.ref_args) {
    if (arg == name) return *loc = at, true;
  }
  for (const OperandPattern& o : p.operands) {
    if (o.name == name) return *loc = o.loc, true;
    if (o.nested && FindPatternName(*o.nested, name, loc)) return true;
  }
  return false;
}

// The names an expression reads (a comprehension's variable excepted).
void ReadNames(const Expr& e, const std::set<std::string>& hidden,
               std::vector<std::pair<std::string, Loc>>* out) {
  if ((e.kind == K::kName || e.kind == K::kPort) && !hidden.count(e.text))
    out->push_back({e.text, e.loc});
  if (e.op_expr) ReadNames(*e.op_expr, hidden, out);
  for (const AttrItem& attr : e.attrs) {
    if (attr.value) ReadNames(*attr.value, hidden, out);
  }
  if (e.kind == K::kListComp && e.args.size() == 2) {
    ReadNames(*e.args[1], hidden, out);
    std::set<std::string> inner = hidden;
    inner.insert(e.text);
    ReadNames(*e.args[0], inner, out);
    return;
  }
  for (const ExprPtr& a : e.args) {
    if (a) ReadNames(*a, hidden, out);
  }
}

// `p` with its names renamed (those not in `renames` kept).
NodePattern Renamed(const NodePattern& p, const Renames& renames) {
  auto rename = [&](const std::string& name) {
    auto it = renames.find(name);
    return it == renames.end() ? name : it->second;
  };
  NodePattern out = p;
  for (auto& [arg, loc] : out.ref_args) {
    if (arg != "_") arg = rename(arg);
  }
  for (OperandPattern& o : out.operands) {
    if (!o.name.empty()) o.name = rename(o.name);
    if (o.nested)
      o.nested = std::make_shared<NodePattern>(Renamed(*o.nested, renames));
  }
  return out;
}

// `e` with its names renamed (a comprehension's variable hides one).
ExprPtr Renamed(const ExprPtr& e, const Renames& renames) {
  if (!e) return e;
  auto out = std::make_shared<Expr>(*e);
  if (e->kind == K::kName || e->kind == K::kPort) {
    auto it = renames.find(e->text);
    if (it != renames.end()) out->text = it->second;
  }
  out->op_expr = Renamed(e->op_expr, renames);
  for (AttrItem& attr : out->attrs) attr.value = Renamed(attr.value, renames);
  if (e->kind == K::kListComp && e->args.size() == 2) {
    Renames inner = renames;
    inner.erase(e->text);
    out->args = {Renamed(e->args[0], inner), Renamed(e->args[1], renames)};
    return out;
  }
  for (ExprPtr& a : out->args) a = Renamed(a, renames);
  return out;
}

}  // namespace

// Each pattern with parameters: its parameters named once and written in
// it (in each of its alternatives), its root not one of them, each name of
// its own read (by its `where`, or twice in its body: a join), its `where`
// reading only its own names, params and plans. A pattern of alternatives
// takes parameters and names no root; its `where` reads only them (each
// alternative's other names are its own). One in error is not expanded at
// its calls (said once).
void Checker::CheckPatternDefs() {
  std::set<std::string> plans;
  for (const auto& file : set_->asts_) {
    for (const Plan& plan : file->plans) plans.insert(plan.name);
  }
  for (const auto& file : set_->asts_) {
    for (const PatternDef& def : file->pattern_defs) {
      size_t errors = d_->errors().size();
      auto error = [&](Loc loc, const std::string& msg) {
        Error(*file, loc, absl::StrCat("pattern `", def.name, "` ", msg));
      };
      std::vector<const NodePattern*> alternatives = {&def.pattern};
      for (const NodePattern& p : def.or_patterns) alternatives.push_back(&p);
      const bool alternates = alternatives.size() > 1;
      if (alternates && !def.has_params) {
        error(def.loc,
              "has alternatives, so it takes parameters (`pattern name(a) = "
              "x(a) | y(a)`): the other names of each alternative are its own");
      }
      if (alternates && !def.root.empty()) {
        error(def.root_loc,
              absl::StrCat("names its root `", def.root,
                           "`, but it has alternatives: a call names the root "
                           "of the one that matched"));
      }
      std::vector<std::map<std::string, int>> written(alternatives.size());
      for (size_t i = 0; i < alternatives.size(); ++i)
        CountPatternNames(*alternatives[i], &written[i]);
      std::vector<std::pair<std::string, Loc>> read;
      if (def.where) ReadNames(*def.where, {}, &read);
      std::set<std::string> in_where;
      for (const auto& [name, loc] : read) in_where.insert(name);
      std::set<std::string> own = {def.root};
      if (alternates) {
        for (const auto& [param, loc] : def.params) own.insert(param);
      } else {
        for (const auto& [name, count] : written[0]) own.insert(name);
      }
      for (const auto& [name, loc] : read) {
        if (own.count(name) || param_types_.count(name) || plans.count(name))
          continue;
        error(loc, alternates
                       ? absl::StrCat("reads `", name,
                                      "`, which is none of its parameters (a "
                                      "`where` of alternatives reads only them)")
                       : absl::StrCat("reads `", name,
                                      "`, which it neither binds nor takes as "
                                      "a parameter"));
      }
      std::set<std::string> params;
      for (const auto& [param, loc] : def.params) {
        if (!params.insert(param).second) {
          error(loc, absl::StrCat("names `", param, "` twice"));
          continue;
        }
        if (param == def.root) {
          error(loc, absl::StrCat("names `", param,
                                  "` as a parameter and as its root"));
          continue;
        }
        for (size_t i = 0; i < alternatives.size(); ++i) {
          if (written[i].count(param)) continue;
          error(alternates ? alternatives[i]->loc : loc,
                alternates ? absl::StrCat("never matches its parameter `", param,
                                          "` in alternative ", i + 1,
                                          " (write it in each alternative)")
                           : absl::StrCat("never matches its parameter `", param,
                                          "` (write it in the pattern)"));
        }
      }
      // (without parameters the names are the rule's, which may use them
      // or not)
      for (size_t i = 0; i < alternatives.size(); ++i) {
        for (const auto& [name, count] : written[i]) {
          if (!def.has_params || params.count(name) || count > 1 ||
              in_where.count(name))
            continue;
          Loc loc = def.loc;
          FindPatternName(*alternatives[i], name, &loc);
          error(loc, absl::StrCat("binds `", name,
                                  "` but never reads it; write `_` to match "
                                  "any input"));
        }
      }
      if (!def.root.empty() && !in_where.count(def.root)) {
        error(def.root_loc, absl::StrCat("names its root `", def.root,
                                         "` but its `where` never reads it"));
      }
      if (d_->errors().size() != errors) bad_pattern_defs_.insert(&def);
    }
  }
}

// A call of the named pattern `def` (or a use of one without parameters),
// expanded in place: see the file's comment. `binding` names the call's
// node (a statement), `tensor` its output (`k: name(...)`); the `where` is
// left for CompileRule to check with the rule's.
int Checker::AddPatternCall(const RuleFile& f, const NodePattern& p,
                            const RuleFile& def_file, const PatternDef& def,
                            const std::string& binding,
                            const std::string& tensor, const std::string& what,
                            std::vector<PatternNode>* pnodes, Names* names,
                            const std::map<std::string, int>& stmts, int slot) {
  // Bounded: named patterns that use each other twice, level after level,
  // double the pattern each level.
  if (pnodes->size() >= kMaxPatternNodes) {
    if (!pattern_too_big_) {
      Error(f, p.loc,
            absl::StrCat("the pattern grows past ", kMaxPatternNodes,
                         " nodes here (named patterns that use each other "
                         "more than once nest too deep)"));
    }
    pattern_too_big_ = true;
    NodePattern any;
    return AddPattern(f, any, binding, what, pnodes, names, stmts, slot,
                      tensor);
  }
  if (def.has_params != p.ref_call) {
    Error(
        f, p.loc,
        def.has_params
            ? absl::StrCat("pattern `", def.name, "` takes ", def.params.size(),
                           " argument(s): call it as `", def.name, "(...)`")
            : absl::StrCat("pattern `", def.name,
                           "` takes no arguments: write `", def.name,
                           "` alone"));
  } else if (p.ref_args.size() != def.params.size()) {
    Error(f, p.loc,
          absl::StrCat("pattern `", def.name, "` takes ", def.params.size(),
                       " argument(s), got ", p.ref_args.size()));
  }
  // The call's own names: the node or tensor it binds, else a fresh one.
  const std::string call = !binding.empty() ? binding
                           : !tensor.empty()
                               ? tensor
                               : absl::StrCat(def.name, "#", ++pattern_calls_);
  // A pattern of alternatives: the one this variant of the rule takes.
  const NodePattern* chosen = &def.pattern;
  if (!def.or_patterns.empty()) {
    if (choice_at_ == choices_.size())
      choices_.push_back({0, def.or_patterns.size() + 1});
    size_t taken = choices_[choice_at_++].first;
    if (taken > 0) chosen = &def.or_patterns[taken - 1];
  }
  Renames renames;
  std::map<std::string, int> written;
  CountPatternNames(*chosen, &written);
  std::set<std::string> args;  // the rule's names a call binds here
  if (def.has_params) {
    for (const auto& [name, count] : written)
      renames[name] = absl::StrCat(call, ".", name);
    for (size_t i = 0; i < def.params.size(); ++i) {
      const std::string& param = def.params[i].first;
      if (i >= p.ref_args.size() || p.ref_args[i].first == "_") {
        renames[param] = absl::StrCat(call, ".", param);
      } else {
        renames[param] = p.ref_args[i].first;
        if (!names->count(p.ref_args[i].first))
          args.insert(p.ref_args[i].first);
      }
    }
  }
  if (!def.root.empty()) renames[def.root] = call;
  expanded_patterns_.push_back(Renamed(*chosen, renames));
  const NodePattern& body = expanded_patterns_.back();
  int index =
      AddPattern(def_file, body, binding, what, pnodes, names, stmts, slot);
  // A rule's call binds these names for the rule, where it is written (a
  // call inside a named pattern binds that pattern's own).
  for (const auto& [arg, loc] : p.ref_args) {
    if (!args.count(arg) || expanding_.size() > 1) continue;
    auto it = names->find(arg);
    if (it == names->end()) continue;
    it->second.file = nullptr;
    it->second.loc = loc;
  }
  // The root's name when the call binds none (the where reads it).
  if (binding.empty() && tensor.empty() && !def.root.empty()) {
    Error(f, p.loc,
          absl::StrCat("pattern `", def.name, "` reads its root `", def.root,
                       "`: name the call (`n = ", def.name,
                       "(...)` or `t: ", def.name, "(...)`)"));
    return index;
  }
  if (def.where && !bad_pattern_defs_.count(&def))
    pattern_wheres_.push_back({&def_file, Renamed(def.where, renames)});
  return index;
}

}  // namespace graft::dsl
