#include "dsl/checker.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/parser.h"
#include "engine/dialect.h"
#include "engine/files.h"
#include "engine/op_registry.h"

namespace graft::dsl {
namespace {

using K = Expr::Kind;
using OK = OperandPattern::Kind;

void CollectNames(const Expr& e, std::set<std::string>* out) {
  if ((e.kind == K::kName || e.kind == K::kPort) && !e.text.empty())
    out->insert(e.text);
  if (e.kind == K::kCreate && !e.op_of.empty()) out->insert(e.op_of);
  if (e.op_expr) CollectNames(*e.op_expr, out);
  for (const auto& a : e.args) CollectNames(*a, out);
  for (const auto& attr : e.attrs) {
    if (attr.spread) out->insert(attr.name);
    if (attr.value) CollectNames(*attr.value, out);
  }
}

// Whether `e` reads a name bound in an optional part (it may stay unbound:
// `bound(name)` says).
bool ReadsOptional(const Expr& e, const Names& names) {
  std::set<std::string> read;
  CollectNames(e, &read);
  return std::any_of(read.begin(), read.end(), [&](const std::string& n) {
    auto it = names.find(n);
    return it != names.end() && it->second.optional;
  });
}

// The slots of the names `e` reads that the search binds before evaluating
// it; true when it reads an optional part's name, so that it waits for the
// whole match instead.
bool ReadSlots(const Expr& e, const Names& names, const SlotTable& slots,
               std::vector<int>* out) {
  std::set<std::string> read;
  CollectNames(e, &read);
  bool at_end = false;
  for (const std::string& n : read) {
    auto info = names.find(n);
    if (info != names.end() && info->second.optional) {
      at_end = true;
      continue;
    }
    if (int slot = slots.Find(n); slot >= 0) out->push_back(slot);
  }
  return at_end;
}

// A shipped library named by its path from before the libraries were
// grouped by dialect (`rules/fold_batch_norms.graft`, `rules/gtt/x.graft`,
// `rules/onnxoptimizer/x.graft`): the file under a dialect's folder
// (`rules/tf/...`, `rules/onnx/...`; the default dialect's first). Any
// other path as it is.
std::string RenamedLibraryPath(const std::string& path) {
  std::error_code ec;
  if (path.empty() || std::filesystem::exists(path, ec)) return path;
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  const std::vector<std::filesystem::path> parts(normal.begin(), normal.end());
  std::vector<const Dialect*> dialects = {&DefaultDialect()};
  for (const Dialect* d : Dialects()) {
    if (d != dialects[0]) dialects.push_back(d);
  }
  for (size_t i = parts.size(); i-- > 0;) {
    if (parts[i] != "rules") continue;
    for (const Dialect* d : dialects) {
      std::filesystem::path candidate;
      for (size_t j = 0; j <= i; ++j) candidate /= parts[j];
      candidate /= std::filesystem::path(std::string(d->rules_folder())).filename();
      for (size_t j = i + 1; j < parts.size(); ++j) candidate /= parts[j];
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    }
    break;
  }
  return path;
}

// Splits `a and b and c` into its conjuncts.
void Conjuncts(const ExprPtr& e, std::vector<ExprPtr>* out) {
  if (e->kind == K::kBinary && e->text == "and") {
    Conjuncts(e->args[0], out);
    Conjuncts(e->args[1], out);
  } else {
    out->push_back(e);
  }
}

}  // namespace

Checker::Checker(const CompileOptions& options, const HookRegistry& hooks,
                 Diagnostics* d)
    : options_(options),
      hooks_(hooks),
      d_(d),
      evaluator_(std::make_shared<Evaluator>(hooks)) {}

void Checker::Error(const RuleFile& f, Loc loc, std::string msg,
                    std::vector<std::string> notes) {
  // once where it is written (a named pattern's `where` is checked at each
  // call)
  if (!reported_.emplace(f.path, loc.line, loc.col, msg).second) return;
  d_->Error(f.path, loc, std::move(msg), std::move(notes));
}

void Checker::Load(const std::string& named, const std::string* text,
                   const std::string& from, Loc from_loc) {
  const std::string path = text != nullptr ? named : RenamedLibraryPath(named);
  if (std::find(set_->files_.begin(), set_->files_.end(), path) !=
      set_->files_.end())
    return;
  std::string source;
  if (text != nullptr) {
    source = *text;
  } else {
    absl::StatusOr<std::string> bytes =
        ReadFile(path, kMaxTextFileBytes, "a rule file");
    if (!bytes.ok()) {
      std::string why(bytes.status().message());
      if (from.empty()) {
        d_->Error(path, {},
                  absl::IsNotFound(bytes.status()) ? "cannot read the rule file"
                                                   : why);
      } else {
        d_->Error(from, from_loc,
                  absl::StrCat("cannot import `", path, "`: ", why));
      }
      return;
    }
    source = *std::move(bytes);
  }
  set_->files_.push_back(path);
  auto file = std::make_shared<RuleFile>(ParseRuleFile(path, source, d_));
  set_->asts_.push_back(file);
  loaded_.push_back(file);
  for (const Import& imp : file->imports) {
    Load(PathRelativeTo(path, imp.path), nullptr, path, imp.loc);
  }
}

std::unique_ptr<RuleSet> Checker::Compile(const std::vector<std::string>& paths,
                                          const std::string* text) {
  set_ = std::make_unique<RuleSet>();
  for (const std::string& p : paths) {
    // One spelling of each file (`./rules/x.graft` is `rules/x.graft`).
    Load(text != nullptr ? p : std::filesystem::path(p).lexically_normal().string(),
         text, "", {});
  }
  CheckDialects();
  CollectParams();
  CollectPatternDefs();
  ExpandGuards();
  CheckPlans();
  CheckPatternDefs();
  CheckOutputOrder();
  for (const auto& file : set_->asts_) {
    for (const Require& req : file->requirements) {
      Names names;  // params only
      ValueType t = CheckExpr(*file, *req.expr, &names, true);
      if (t != ValueType::kBool && t != ValueType::kAny) {
        Error(*file, req.expr->loc,
              absl::StrCat("`require` needs a bool, not ", AValueType(t)));
      }
      checks_->requirements.push_back(
          {req.expr, absl::StrCat(file->path, ":", req.loc.line)});
    }
  }
  std::map<std::string, std::pair<std::string, Loc>> seen;
  for (const auto& file : set_->asts_) {
    for (const Rule& rule : file->rules) {
      auto [it, fresh] =
          seen.emplace(rule.name, std::make_pair(file->path, rule.loc));
      if (!fresh) {
        d_->Error(
            file->path, rule.loc,
            absl::StrCat("duplicate rule `", rule.name, "`"),
            {absl::StrCat("first defined at ", it->second.first, ":",
                          it->second.second.line, ":", it->second.second.col)});
        continue;
      }
      CompileRuleVariants(*file, rule);
    }
  }
  for (const auto& file : set_->asts_) {
    // A file of no rules is a library of patterns and guards for the files
    // that import it, each of which may use some.
    const bool library = file->rules.empty();
    for (const PatternDef& def : file->pattern_defs) {
      if (!library && pattern_def_uses_[file->path + ":" + def.name] == 0 &&
          !d_->has_errors()) {
        Error(*file, def.loc,
              absl::StrCat("pattern `", def.name, "` is never used"));
      }
    }
    for (const GuardDef& def : file->guard_defs) {
      if (!library && guard_def_uses_[file->path + ":" + def.name] == 0 &&
          !d_->has_errors()) {
        Error(*file, def.loc,
              absl::StrCat(def.kind(), " `", def.name, "` is never used"));
      }
    }
    for (const Plan& plan : file->plans) {
      if (plan_uses_[plan.name] == 0 && !d_->has_errors()) {
        Error(*file, plan.loc,
              absl::StrCat("plan `", plan.name, "` is never used"));
      }
    }
  }
  Lint();
  if (d_->has_errors()) return nullptr;
  return std::move(set_);
}

// `plan name = expr`, in file order: an expression of params and earlier
// plans, computed once per graph before any rule runs.
void Checker::CheckPlans() {
  for (const auto& file : set_->asts_) {
    for (const Plan& plan : file->plans) {
      if (param_types_.count(plan.name) || plan_types_.count(plan.name)) {
        Error(*file, plan.loc,
              absl::StrCat("`", plan.name, "` is already a ",
                           param_types_.count(plan.name) ? "param" : "plan"));
        continue;
      }
      Names names;  // params and earlier plans only
      ValueType t = CheckExpr(*file, *plan.expr, &names, true);
      plan_types_[plan.name] = t;
      checks_->plans.push_back({plan.name, plan.expr,
                                absl::StrCat(file->path, ":", plan.loc.line),
                                StageOf(*file)});
    }
  }
}

int Checker::StageOf(const RuleFile& f) {
  auto [it, fresh] = stages_.emplace(f.path, -1);
  if (!fresh) return std::max(it->second, 0);  // (an import cycle: 0)
  int stage = 0;
  for (const Import& imp : f.imports) {
    std::string path = PathRelativeTo(f.path, imp.path);
    for (const auto& ast : set_->asts_) {
      if (ast->path == path) stage = std::max(stage, StageOf(*ast));
    }
  }
  if (!f.imports.empty() && !f.plans.empty()) ++stage;
  stages_[f.path] = stage;
  return stage;
}

// `output order expr`: a list of nodes from params and hooks, at most one
// in a rule set.
void Checker::CheckOutputOrder() {
  const RuleFile* first = nullptr;
  for (const auto& file : set_->asts_) {
    for (const OutputOrder& order : file->output_orders) {
      if (first != nullptr) {
        Error(*file, order.loc,
              absl::StrCat("the output order is given twice (first in ",
                           first->path, ")"));
        continue;
      }
      first = file.get();
      Names names;  // params only
      ValueType t = CheckExpr(*file, *order.expr, &names, true);
      if (t != ValueType::kList && t != ValueType::kAny) {
        Error(*file, order.expr->loc,
              absl::StrCat("`output order` needs a list of nodes, not ",
                           AValueType(t)));
      }
      set_->output_order_ = {order.expr,
                             absl::StrCat(file->path, ":", order.loc.line),
                             {params_, evaluator_, checks_}};
    }
  }
}

// `for t in plan`: the plan must be one; `t` is an item (a node or a
// tensor). With patterns, the pattern must bind `t` (the rule is anchored
// on its root and keeps the matches whose `t` is an item); without, the
// rule is anchored on the items' nodes.
bool Checker::CheckFor(const RuleFile& f, const Rule& rule, Names* names) {
  auto plan = plan_types_.find(rule.for_source);
  if (plan == plan_types_.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : plan_types_) known.push_back(k);
    Error(f, rule.for_loc,
          absl::StrCat("`for` iterates a plan; `", rule.for_source,
                       "` is not one"),
          Suggest(rule.for_source, known));
    return false;
  }
  ++plan_uses_[rule.for_source];
  if (plan->second != ValueType::kList && plan->second != ValueType::kAny) {
    Error(f, rule.for_loc,
          absl::StrCat("`for` iterates a list; plan `", rule.for_source,
                       "` is ", AValueType(plan->second)));
    return false;
  }
  if (names->count(rule.for_var) == 0) {
    (*names)[rule.for_var] = {NameInfo::Kind::kTensor, ValueType::kAny,
                              rule.for_loc, 0};
  }
  return true;
}

// ---- patterns ----

// Every file of a rule set is for one dialect (an import too), one graft
// knows.
void Checker::CheckDialects() {
  const RuleFile* first = nullptr;
  for (const auto& file : set_->asts_) {
    const std::string dialect =
        file->dialect.empty() ? std::string(DefaultDialect().name()) : file->dialect;
    if (FindDialect(dialect) == nullptr) {
      std::vector<std::string> known;
      for (const Dialect* d : Dialects()) known.emplace_back(d->name());
      Error(*file, file->dialect_loc, absl::StrCat("unknown dialect `", dialect, "`"),
            Suggest(dialect, known));
      continue;
    }
    if (first == nullptr) {
      first = file.get();
    } else if (dialect != set_->dialect()) {
      Error(*file, file->dialect.empty() ? Loc{1, 1} : file->dialect_loc,
            absl::StrCat("this file's rules are for ", dialect, " graphs; `",
                         first->path, "`'s are for ", set_->dialect(),
                         " graphs: one rule set is for one dialect"));
    }
  }
}

const Dialect& DialectOf(const RuleFile& f) {
  const Dialect* dialect = f.dialect.empty() ? &DefaultDialect() : FindDialect(f.dialect);
  return dialect != nullptr ? *dialect : DefaultDialect();
}

const OpRegistry& OpsOf(const RuleFile& f) { return DialectOf(f).Ops(); }

void Checker::CheckOp(const RuleFile& f, const std::string& op, Loc loc) {
  const OpRegistry& ops = OpsOf(f);
  if (op.find('*') != std::string::npos || ops.Find(op) != nullptr) return;
  Error(f, loc, absl::StrCat("unknown op `", op, "`"),
        Suggest(op, ops.OpNames()));
}

std::vector<std::string> KnownOps(const RuleFile& f, const NodePattern& p) {
  if (!p.ref.empty()) return {};
  for (const std::string& op : p.ops) {
    if (OpsOf(f).Find(op) == nullptr) return {};
  }
  return p.ops;
}

// A pattern's operands an op it names cannot have: the op never matches.
void Checker::CheckOperandCount(const RuleFile& f, const NodePattern& p,
                                int data, bool variadic) {
  for (const std::string& op : p.ops) {
    const tf::OpDef* def = OpsOf(f).Find(op);
    if (def == nullptr) continue;
    auto [min, max] = OpRegistry::InputCounts(*def);
    int fixed = variadic ? data - 1 : data;
    bool can = variadic ? (max < 0 || fixed <= max)
                        : fixed >= min && (max < 0 || fixed <= max);
    if (can) continue;
    std::string takes =
        max == min  ? absl::StrCat(min)
        : max < 0   ? absl::StrCat("at least ", min)
                    : absl::StrCat(min, " to ", max);
    Error(f, p.loc,
          absl::StrCat("`", op, "` takes ", takes, " data input(s); this "
                       "pattern gives it ", variadic ? "at least " : "", fixed,
                       ", so it never matches"));
  }
}

void Checker::CollectPatternDefs() {
  for (const auto& file : set_->asts_) {
    std::map<std::string, const PatternDef*>& defs = pattern_defs_[file->path];
    for (const PatternDef& def : file->pattern_defs) {
      auto [it, fresh] = defs.emplace(def.name, &def);
      if (!fresh) {
        Error(*file, def.loc,
              absl::StrCat("duplicate pattern `", def.name, "`"),
              {absl::StrCat("first defined at ", file->path, ":",
                            it->second->loc.line, ":", it->second->loc.col)});
      }
    }
  }
}

// Registers the names a pattern binds; returns the pattern node index.
// A named pattern is expanded in place: the names it binds are the rule's.
int Checker::AddPattern(const RuleFile& f, const NodePattern& p,
                        const std::string& binding, const std::string& what,
                        std::vector<PatternNode>* pnodes, Names* names,
                        const std::map<std::string, int>& stmts, int slot,
                        const std::string& tensor) {
  if (!p.ref.empty()) {
    auto [def_file, def] = FindPatternDef(f, p.ref);
    if (def == nullptr) {
      std::vector<std::string> known;
      for (const auto& [file, defs] : pattern_defs_) {
        for (const auto& [k, v] : defs) known.push_back(k);
      }
      Error(f, p.loc,
            absl::StrCat("unknown pattern `", p.ref,
                         "` (ops start with a capital letter)"),
            Suggest(p.ref, known));
    } else if (std::find(expanding_.begin(), expanding_.end(), p.ref) !=
               expanding_.end()) {
      Error(f, p.loc, absl::StrCat("pattern `", p.ref, "` uses itself"));
    } else {
      ++pattern_def_uses_[def_file->path + ":" + p.ref];
      expanding_.push_back(p.ref);
      int index = AddPatternCall(f, p, *def_file, *def, binding, tensor, what,
                                 pnodes, names, stmts, slot);
      expanding_.pop_back();
      return index;
    }
    // Reported; an any-op node keeps the rest of the rule checkable.
    NodePattern any;
    return AddPattern(f, any, binding, what, pnodes, names, stmts, slot);
  }
  int index = slot;
  if (index < 0) {
    index = static_cast<int>(pnodes->size());
    pnodes->emplace_back();
  }
  PatternNode pn;
  pn.ops = p.ops;
  pn.binding = binding;
  pn.what = what;
  pn.has_operands = p.has_operands;
  for (const std::string& op : p.ops) CheckOp(f, op, p.loc);
  // `Op(.., t, ..)`: one operand read at any position.
  std::vector<OK> data;
  for (const OperandPattern& o : p.operands) {
    if (o.kind != OK::kControl) data.push_back(o.kind);
  }
  if (std::count(data.begin(), data.end(), OK::kGap) > 0) {
    bool shape = data.size() == 3 && data[0] == OK::kGap &&
                 data[2] == OK::kGap && data[1] != OK::kGap &&
                 data[1] != OK::kVariadic;
    if (!shape) {
      Error(f, p.loc,
            "`..` goes on both sides of one operand: `Op(.., t, ..)` reads "
            "`t` at any input position");
    }
    pn.anywhere = true;
  }
  if (p.has_operands && !pn.anywhere) {
    bool variadic =
        std::count(data.begin(), data.end(), OK::kVariadic) > 0;
    CheckOperandCount(f, p, static_cast<int>(data.size()), variadic);
  }
  // The operand that stands in for an optional node when it is absent: the
  // one marked `?`, or the first data operand.
  const int marked = MarkedStandIn(f, p);
  const int stand_in = marked >= 0 ? marked : 0;
  if (p.optional) {
    bool ok = p.has_operands && !data.empty() && !pn.anywhere &&
              data[stand_in] != OK::kVariadic;
    if (!ok && marked < 0) {
      Error(f, p.loc,
            "an optional node needs a first operand to stand in for it (as "
            "in `BiasAdd?(conv, b)`)");
    }
    pn.optional = true;
    pn.stand_in = stand_in;
  }
  for (size_t i = 0, k = 0; i < p.operands.size(); ++i) {
    if (p.operands[i].kind == OK::kGap) continue;
    // An optional node's operands but the one standing in are bound only
    // when the node is there.
    bool data_operand = p.operands[i].kind != OK::kControl;
    bool optional_part =
        p.optional && (!data_operand || static_cast<int>(k) != stand_in);
    if (data_operand) ++k;
    optional_depth_ += optional_part ? 1 : 0;
    AddOperand(f, p, i, what, &pn, pnodes, names, stmts);
    optional_depth_ -= optional_part ? 1 : 0;
  }
  (*pnodes)[index] = std::move(pn);
  return index;
}

// The root: the one statement no other pattern refers to; -1 (reported)
// when there is none or more than one.
int Checker::FindRoot(const RuleFile& f, const Rule& rule, const Names& names) {
  std::vector<int> roots;
  for (size_t i = 0; i < rule.patterns.size(); ++i) {
    if (names.at(rule.patterns[i].name).uses == 0)
      roots.push_back(static_cast<int>(i));
  }
  if (roots.size() == 1) return roots[0];
  if (roots.empty()) {
    // A statement among its own operands is the plainest cycle: say so.
    std::function<const OperandPattern*(const NodePattern&, const std::string&)>
        self = [&](const NodePattern& p,
                   const std::string& name) -> const OperandPattern* {
      for (const OperandPattern& o : p.operands) {
        if (o.name == name && o.kind != OK::kBound) return &o;
        if (o.nested) {
          if (const OperandPattern* found = self(*o.nested, name)) return found;
        }
      }
      return nullptr;
    };
    for (const PatternStmt& s : rule.patterns) {
      if (const OperandPattern* o = self(s.pattern, s.name)) {
        Error(f, o->loc,
              absl::StrCat("`", s.name,
                           "` is its own operand: a node cannot read itself"));
        return -1;
      }
    }
    Error(f, rule.match_loc,
          "the patterns refer to each other in a cycle: no root");
    return -1;
  }
  std::vector<std::string> list;
  for (int r : roots)
    list.push_back(absl::StrCat("`", rule.patterns[r].name, "`"));
  Error(f, rule.match_loc,
        absl::StrCat("the pattern has ", roots.size(), " roots (",
                     absl::StrJoin(list, ", "),
                     "); connect them, or split the rule"));
  return -1;
}

// ---- rules ----

std::vector<Guard> Checker::CheckGuards(const RuleFile& f, const Rule& rule,
                                        std::vector<MatchLet>* lets,
                                        Names* names) {
  std::vector<Guard> guards;
  auto check_lets_before = [&](size_t wheres) {
    while (lets->size() < rule.lets.size() &&
           rule.lets[lets->size()].wheres_before <= wheres) {
      const LetStmt& let = rule.lets[lets->size()];
      ValueType t = CheckExpr(f, *let.expr, names, true);
      const bool optional = ReadsOptional(*let.expr, *names);
      BindAction(f, let.name, NameInfo::Kind::kLet, t, let.name_loc, names);
      // A let of an optional part's names waits for the whole match, and so
      // does what reads it.
      if (optional) (*names)[let.name].optional = true;
      MatchLet compiled;
      compiled.expr = let.expr;
      compiled.guards_before = guards.size();
      lets->push_back(std::move(compiled));
    }
  };
  for (size_t i = 0; i < rule.guards.size(); ++i) {
    check_lets_before(i);
    AddWhere(f, rule.guards[i], names, &guards);
  }
  check_lets_before(rule.guards.size());
  return guards;
}

// A `where` checked (a bool) and split into its conjuncts, each a guard.
void Checker::AddWhere(const RuleFile& f, const ExprPtr& where, Names* names,
                       std::vector<Guard>* guards) {
  ValueType t = CheckExpr(f, *where, names, true);
  if (t != ValueType::kBool && t != ValueType::kAny) {
    Error(f, where->loc,
          absl::StrCat("`where` needs a bool, not ", AValueType(t)));
  }
  std::vector<ExprPtr> parts;
  Conjuncts(where, &parts);
  for (const ExprPtr& p : parts) {
    Guard guard;
    guard.expr = p;
    guards->push_back(std::move(guard));
  }
}

void Checker::CompileRuleVariants(const RuleFile& f, const Rule& rule) {
  std::vector<std::unique_ptr<CompiledRule>> variants;
  choices_.clear();
  do {
    choice_at_ = 0;
    std::unique_ptr<CompiledRule> variant = CompileRule(f, rule);
    if (variant == nullptr) return;  // (said)
    variants.push_back(std::move(variant));
    if (variants.size() > kMaxVariants) {
      Error(f, rule.loc,
            absl::StrCat("rule `", rule.name, "` has more than ", kMaxVariants,
                         " variants (the alternatives of the named patterns "
                         "it calls, each choice of them one variant)"));
      return;
    }
  } while (NextVariant());
  std::stable_sort(variants.begin(), variants.end(),
                   [](const auto& a, const auto& b) {
                     return a->priority() > b->priority();
                   });
  std::unique_ptr<CompiledRule> first = std::move(variants.front());
  variants.erase(variants.begin());
  first->AddVariants(std::move(variants));
  set_->rules_.push_back(std::move(first));
}

// Like an odometer over the calls the last variant made: the last call
// with an alternative left takes the next one, the calls after it start
// again (which calls there are may change with it).
bool Checker::NextVariant() {
  choices_.resize(std::min(choices_.size(), choice_at_));
  while (!choices_.empty() && ++choices_.back().first == choices_.back().second)
    choices_.pop_back();
  return !choices_.empty();
}

std::unique_ptr<CompiledRule> Checker::CompileRule(const RuleFile& f,
                                                   const Rule& rule) {
  size_t errors_before = d_->errors().size();
  splice_graphs_.clear();
  pattern_wheres_.clear();
  pattern_too_big_ = false;
  if (!rule.has_match)
    Error(f, rule.loc,
          absl::StrCat("rule `", rule.name, "` has no `match` block"));
  if (!rule.has_rewrite)
    Error(f, rule.loc,
          absl::StrCat("rule `", rule.name, "` has no `rewrite` block"));
  bool has_for = !rule.for_var.empty();
  if (rule.has_match && rule.patterns.empty() && !has_for) {
    Error(f, rule.match_loc, "the match block has no pattern");
  }
  if (!rule.has_match || (rule.patterns.empty() && !has_for)) return nullptr;

  std::map<std::string, int> stmts;
  Names names;
  for (size_t i = 0; i < rule.patterns.size(); ++i) {
    const PatternStmt& s = rule.patterns[i];
    if (!stmts.emplace(s.name, static_cast<int>(i)).second) {
      Error(f, s.loc, absl::StrCat("`", s.name, "` is already a pattern"));
    }
    names[s.name] = {NameInfo::Kind::kPattern, ValueType::kNode, s.loc, 0};
    names[s.name].ops = KnownOps(f, s.pattern);
  }
  // Statement patterns occupy the first slots; nested ones follow.
  CompiledPattern pattern;
  pattern.nodes.resize(rule.patterns.size());
  bool for_ok = !has_for || CheckFor(f, rule, &names);
  for (size_t i = 0; i < rule.patterns.size(); ++i) {
    const std::string& name = rule.patterns[i].name;
    AddPattern(f, rule.patterns[i].pattern, name, absl::StrCat("`", name, "`"),
               &pattern.nodes, &names, stmts, static_cast<int>(i));
  }
  if (has_for && for_ok && !rule.patterns.empty() &&
      stmts.count(rule.for_var) == 0 && names.at(rule.for_var).uses == 0) {
    Error(f, rule.for_loc,
          absl::StrCat("the pattern must bind `", rule.for_var,
                       "` (as a pattern or an operand): the rule is anchored "
                       "on the pattern's root; or leave the match to `for` "
                       "and `where` alone"));
  }
  pattern.root = rule.patterns.empty() ? -1 : FindRoot(f, rule, names);
  pattern.guards = CheckGuards(f, rule, &pattern.lets, &names);
  // the `where`s of the named patterns the rule calls, in its own names
  for (const auto& [file, where] : pattern_wheres_)
    AddWhere(*file, where, &names, &pattern.guards);
  for (const Action& a : rule.actions) CheckAction(f, rule, a, &names);
  CheckUnused(f, names);
  if (d_->errors().size() != errors_before ||
      (pattern.root < 0 && !rule.patterns.empty()))
    return nullptr;
  return BuildRule(f, rule, std::move(pattern), names);
}

// Gives every name a slot, resolves the pattern's names to slots, and adds
// the compiled rule to the set.
std::unique_ptr<CompiledRule> Checker::BuildRule(const RuleFile& f,
                                                 const Rule& rule,
                                                 CompiledPattern pattern,
                                                 const Names& names) {
  SlotTable slots;
  for (const auto& [name, info] : names) slots.Add(name);
  for (PatternNode& pn : pattern.nodes) {
    if (!pn.binding.empty()) pn.slot = slots.Find(pn.binding);
    for (PatternOperand& o : pn.data) {
      if (!o.name.empty()) o.slot = slots.Find(o.name);
    }
    for (PatternOperand& o : pn.control) o.slot = slots.Find(o.name);
  }
  for (size_t i = 0; i < pattern.lets.size(); ++i) {
    MatchLet& let = pattern.lets[i];
    let.slot = slots.Find(rule.lets[i].name);
    let.at_end = ReadSlots(*let.expr, names, slots, &let.slots);
  }
  for (Guard& g : pattern.guards)
    g.at_end = ReadSlots(*g.expr, names, slots, &g.slots);
  int priority = rule.has_priority ? rule.priority
                                   : static_cast<int>(pattern.nodes.size());
  RewriteProgram program{f.path, rule.actions, std::move(splice_graphs_)};
  splice_graphs_.clear();
  RuleSetShared shared{params_, evaluator_, checks_};
  ForClause for_clause;
  if (!rule.for_var.empty()) {
    for_clause.plan = rule.for_source;
    for_clause.slot = slots.Find(rule.for_var);
    checks_->iterated.insert(rule.for_source);
    if (!pattern.nodes.empty()) {
      // The pattern binds the var; the guard keeps the plan's items.
      Guard member;
      member.for_member = true;
      member.slots.push_back(for_clause.slot);
      pattern.guards.insert(pattern.guards.begin(), std::move(member));
      for (MatchLet& let : pattern.lets) ++let.guards_before;
    }
  }
  auto compiled = std::make_unique<CompiledRule>(
      rule.name, priority, std::move(pattern), std::move(slots),
      std::move(program), std::move(shared), std::move(for_clause));
  compiled->set_stage(StageOf(f));
  return compiled;
}

void Checker::CheckUnused(const RuleFile& f, const Names& names) {
  for (const auto& [n, info] : names) {
    // A named pattern's names are there for the rules that want them.
    if (info.uses > 0 || info.kind == NameInfo::Kind::kPattern ||
        info.file != nullptr)
      continue;
    if (info.kind == NameInfo::Kind::kTensor ||
        info.kind == NameInfo::Kind::kList ||
        info.kind == NameInfo::Kind::kControl) {
      Error(f, info.loc,
            absl::StrCat(
                "`", n,
                "` is bound but never used; write `_` to match any input"));
    } else {
      Error(f, info.loc, absl::StrCat("`", n, "` is never used"));
    }
  }
}

}  // namespace graft::dsl
