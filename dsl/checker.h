// The checker: loads rule files (with their imports), resolves names and
// types, reports located diagnostics, lints, and builds the compiled rules
// (dsl/compiled_rule.h). Internal to the compiler; its entry points are in
// dsl/compiler.h. Params live in checker_params.cc, lint in lint.cc.
#ifndef GRAFT_DSL_CHECKER_H_
#define GRAFT_DSL_CHECKER_H_

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dsl/actions.h"
#include "dsl/ast.h"
#include "dsl/compiled_rule.h"
#include "dsl/compiler.h"
#include "dsl/diagnostics.h"
#include "dsl/matcher.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"

namespace graft::dsl {

struct NameInfo {
  enum class Kind {
    kPattern,
    kTensor,
    kList,
    kLet,
    kCreated,
    kParam,
    kControl,
    kItem  // a list comprehension's variable: each may reuse the name
  };
  Kind kind;
  ValueType type;
  Loc loc;
  int uses = 0;
  bool optional = false;  // bound in the optional part of a pattern
  // The file of a name a named pattern binds (`loc` is there); nullptr for
  // the rule's own.
  const RuleFile* file = nullptr;
  // A pattern node's ops, when its pattern names them (no glob): what its
  // attrs are checked against.
  std::vector<std::string> ops = {};
};

using Names = std::map<std::string, NameInfo>;

// The ops a pattern names, when each is a known op (no glob, not a named
// pattern); else none.
std::vector<std::string> KnownOps(const RuleFile& f, const NodePattern& p);

// The op registry of a rule file's dialect (`dialect onnx`: ONNX's).
const OpRegistry& OpsOf(const RuleFile& f);
// The dialect a rule file's rules are for.
const Dialect& DialectOf(const RuleFile& f);

// The value type of a param declared as `type` (int, float, bool, ...).
ValueType ParamType(const std::string& type);

class Checker {
 public:
  Checker(const CompileOptions& options, const HookRegistry& hooks,
          Diagnostics* d);
  std::unique_ptr<RuleSet> Compile(const std::vector<std::string>& paths,
                                   const std::string* text);

 private:
  void Load(const std::string& path, const std::string* text,
            const std::string& from, Loc from_loc);
  void CheckDialects();
  void Error(const RuleFile& f, Loc loc, std::string msg,
             std::vector<std::string> notes = {});

  // ---- params (checker_params.cc) ----
  void CollectParams();
  void DeclareParams();
  void CheckParamValues();
  Value DefaultValue(const RuleFile& file, const Param& p);
  absl::StatusOr<Value> ParseParam(const std::string& type,
                                   const std::string& text);
  Value LoadRanges(const std::string& path);
  Value LoadGraphParam(const std::string& path);
  // Params named in `{...}` of a name template or a string count as used.
  void CountTemplateParams(const std::string& text);

  // ---- lint (lint.cc) ----
  void Lint();

  // ---- patterns ----
  void CollectPatternDefs();
  void CheckOperandCount(const RuleFile& f, const NodePattern& p, int data,
                         bool variadic);
  // `n.attr` of a pattern node whose ops the pattern names: an attr none
  // of them has is an error at the name.
  void CheckAttrName(const RuleFile& f, const std::string& node,
                     const std::vector<std::string>& ops,
                     const std::string& attr, Loc loc);
  void CheckOp(const RuleFile& f, const std::string& op, Loc loc);
  // `binding`: the statement the pattern is; `tensor`: the name its output
  // is bound to (`w: Const`).
  int AddPattern(const RuleFile& f, const NodePattern& p,
                 const std::string& binding, const std::string& what,
                 std::vector<PatternNode>* pnodes, Names* names,
                 const std::map<std::string, int>& stmts, int slot = -1,
                 const std::string& tensor = "");
  // ---- named patterns with parameters (checker_pattern_calls.cc) ----
  void CheckPatternDefs();
  int AddPatternCall(const RuleFile& f, const NodePattern& p,
                     const RuleFile& def_file, const PatternDef& def,
                     const std::string& binding, const std::string& tensor,
                     const std::string& what, std::vector<PatternNode>* pnodes,
                     Names* names, const std::map<std::string, int>& stmts,
                     int slot);
  int MarkedStandIn(const RuleFile& f, const NodePattern& p);
  bool AddOperand(const RuleFile& f, const NodePattern& p, size_t i,
                  const std::string& what, PatternNode* pn,
                  std::vector<PatternNode>* pnodes, Names* names,
                  const std::map<std::string, int>& stmts);
  void Bind(const RuleFile& f, const std::string& name, NameInfo::Kind kind,
            ValueType type, Loc loc, Names* names);
  int FindRoot(const RuleFile& f, const Rule& rule, const Names& names);

  // ---- expressions ----
  ValueType CheckExpr(const RuleFile& f, const Expr& e, Names* names,
                      bool in_guard);
  ValueType CheckName(const RuleFile& f, const Expr& e, Names* names);
  ValueType CheckCall(const RuleFile& f, const Expr& e, Names* names,
                      bool in_guard);
  ValueType CheckBinary(const RuleFile& f, const Expr& e, Names* names,
                        bool in_guard);
  void CheckComparison(const RuleFile& f, const Expr& e, ValueType a,
                       ValueType b);
  ValueType CheckCreate(const RuleFile& f, const Expr& e, Names* names,
                        bool in_guard);
  ValueType CheckIndex(const RuleFile& f, const Expr& e, Names* names,
                       bool in_guard);
  // A string argument's text when the rules compile (written out, or a
  // param's); nullptr when computed as the rule runs.
  const std::string* TextKnownNow(const Expr& arg) const;
  void CompileRegexArg(const RuleFile& f, const Expr& arg);
  // An op list written out (or a param's): each op one of the dialect's
  // registry, each `Name*` matching one.
  void CheckOpListArg(const RuleFile& f, const Expr& arg);

  // ---- actions ----
  // A loop's variable (`for x in xs { ... }`, `[... for x in xs]`): a
  // later loop may use the same name.
  void BindItem(const RuleFile& f, const std::string& name, Loc loc,
                Names* names);
  void BindAction(const RuleFile& f, const std::string& name,
                  NameInfo::Kind kind, ValueType type, Loc loc, Names* names);
  void RequireNode(const RuleFile& f, const std::string& name, Loc loc,
                   Names* names);
  void CheckAction(const RuleFile& f, const Rule& rule, const Action& a,
                   Names* names);
  void CheckTensorAction(const RuleFile& f, const Action& a, Names* names);
  void CheckClone(const RuleFile& f, const Action& a, Names* names);
  void CheckSplice(const RuleFile& f, const Rule& rule, const Action& a,
                   Names* names);
  void CheckUnused(const RuleFile& f, const Names& names);
  // An action's node operand: a node, a tensor's node, or a list of them.
  void CheckNodes(const RuleFile& f, const Expr& e, Names* names);
  // `set` / `unset`: `n[name]`'s name is a string.
  void CheckAttrName(const RuleFile& f, const Action& a, Names* names);

  // ---- named guards (checker_guards.cc) ----
  // Each `guard name(a, b) = expr` checked (its expression reads only its
  // parameters, params and plans) and inlined at every call in the files'
  // rules, plans, requirements and output orders.
  void ExpandGuards();
  void CheckGuardDef(const RuleFile& f, const GuardDef& def,
                     const std::set<std::string>& plans);
  ExprPtr ExpandGuardCalls(const RuleFile& f, const ExprPtr& e);
  void ExpandGuardCalls(const RuleFile& f, Action* a);
  ExprPtr InlineGuard(const RuleFile& f, const Expr& call,
                      const RuleFile& def_file, const GuardDef& def);
  // The guard `name` as `f` sees it (its own, then its imports' nearest
  // first), with its file; {} when none.
  std::pair<const RuleFile*, const GuardDef*> FindGuardDef(
      const RuleFile& f, const std::string& name) const {
    return FindVisible(f, guard_defs_, name);
  }

  // ---- plans and rules ----
  void CheckPlans();
  // The stage of a file's rules and plans (Rule::stage): 0, or for a file
  // that imports others the latest of theirs, plus one when it has plans.
  int StageOf(const RuleFile& f);
  std::map<std::string, int> stages_;  // by path; -1 while being found
  void CheckOutputOrder();
  // The rule compiled, one variant per choice of the alternatives of the
  // named patterns it calls (tried in turn, the largest first).
  void CompileRuleVariants(const RuleFile& f, const Rule& rule);
  std::unique_ptr<CompiledRule> CompileRule(const RuleFile& f, const Rule& rule);
  // The next choice of alternatives after the variant just compiled; false
  // after the last.
  bool NextVariant();
  // A `for` clause: its var's name info, or false (reported).
  bool CheckFor(const RuleFile& f, const Rule& rule, Names* names);
  // A match's `where`s (split into conjuncts) and `let`s, in the order
  // written: a `let` binds a name of its expression's type for what follows
  // it, and waits for the conjuncts before it (`lets[i].guards_before`).
  std::vector<Guard> CheckGuards(const RuleFile& f, const Rule& rule,
                                 std::vector<MatchLet>* lets,
                                 Names* names);
  void AddWhere(const RuleFile& f, const ExprPtr& where, Names* names,
                std::vector<Guard>* guards);
  std::unique_ptr<CompiledRule> BuildRule(const RuleFile& f, const Rule& rule,
                                          CompiledPattern pattern,
                                          const Names& names);

  const CompileOptions& options_;
  const HookRegistry& hooks_;
  Diagnostics* d_;
  std::unique_ptr<RuleSet> set_;
  std::shared_ptr<ParamTable> params_ = std::make_shared<ParamTable>();
  std::map<std::string, std::string> param_types_;
  // Where each param was first declared (a file of the set, and the
  // declaration): another file may declare it again the same way.
  std::map<std::string, std::pair<std::string, const Param*>> param_decls_;
  std::map<std::string, int> param_uses_;
  std::map<std::string, ValueType> plan_types_;
  // Named pattern pieces by file, then name; a file sees its own and those
  // of the files it imports (nearest first).
  std::map<std::string, std::map<std::string, const PatternDef*>> pattern_defs_;
  // The named pattern `name` as `f` sees it, with its file; {} when none.
  std::pair<const RuleFile*, const PatternDef*> FindPatternDef(
      const RuleFile& f, const std::string& name) const {
    return FindVisible(f, pattern_defs_, name);
  }
  // A definition (by file, then name) as `f` sees it: its own, then its
  // imports', breadth first (the nearest wins), with its file; {} when none.
  template <typename Def>
  std::pair<const RuleFile*, const Def*> FindVisible(
      const RuleFile& f,
      const std::map<std::string, std::map<std::string, const Def*>>& by_file,
      const std::string& name) const {
    std::vector<const RuleFile*> queue = {&f};
    std::set<std::string> seen = {f.path};
    for (size_t i = 0; i < queue.size(); ++i) {
      const RuleFile* file = queue[i];
      auto defs = by_file.find(file->path);
      if (defs != by_file.end()) {
        auto it = defs->second.find(name);
        if (it != defs->second.end()) return {file, it->second};
      }
      for (const Import& imp : file->imports) {
        std::string path = PathRelativeTo(file->path, imp.path);
        if (!seen.insert(path).second) continue;
        for (const auto& ast : set_->asts_) {
          if (ast->path == path) queue.push_back(ast.get());
        }
      }
    }
    return {nullptr, nullptr};
  }
  std::map<std::string, int> pattern_def_uses_;
  // Named patterns in error (not expanded at their calls); the calls made
  // so far (each call's own names); the patterns calls expanded to (kept
  // while the set is checked); the current rule's calls' `where`s.
  std::set<const PatternDef*> bad_pattern_defs_;
  int pattern_calls_ = 0;
  std::deque<NodePattern> expanded_patterns_;
  std::vector<std::pair<const RuleFile*, ExprPtr>> pattern_wheres_;
  // The most pattern nodes a rule's named patterns expand to (said once
  // per rule).
  static constexpr size_t kMaxPatternNodes = 10'000;
  bool pattern_too_big_ = false;
  // The alternative each call of a pattern with alternatives takes in the
  // variant being compiled (taken, count), in the order of the calls, and
  // the next call's index; a rule has at most kMaxVariants variants.
  std::vector<std::pair<size_t, size_t>> choices_;
  size_t choice_at_ = 0;
  static constexpr size_t kMaxVariants = 64;
  // The errors said (file, line, column, message): each once.
  std::set<std::tuple<std::string, int, int, std::string>> reported_;
  // Named guards by file, then name (seen as named patterns are), their
  // uses, and those being inlined (a guard that calls itself is an error).
  std::map<std::string, std::map<std::string, const GuardDef*>> guard_defs_;
  std::map<std::string, int> guard_def_uses_;
  std::vector<const GuardDef*> inlining_;
  static constexpr size_t kMaxGuardNesting = 32;
  static constexpr int64_t kMaxInlinedNodes = 100'000;
  int64_t inlined_nodes_ = 0;
  bool inlining_too_much_ = false;
  struct OuterCall {
    const RuleFile* file = nullptr;
    Loc loc;
    std::string name;
  } outer_call_;  // the call being inlined that a rule (or plan) makes
  // The files loaded, as the set holds them but editable: guard calls are
  // inlined in them before they are checked.
  std::vector<std::shared_ptr<RuleFile>> loaded_;
  std::vector<std::string> expanding_;  // named patterns being expanded
  int optional_depth_ = 0;  // > 0 while adding an optional part's operands
  std::map<std::string, int> plan_uses_;
  std::shared_ptr<Evaluator> evaluator_;
  std::shared_ptr<SetChecks> checks_ = std::make_shared<SetChecks>();
  // The current rule's splice graphs, by action index.
  std::map<std::ptrdiff_t, SpliceSource> splice_graphs_;
};

}  // namespace graft::dsl

#endif  // GRAFT_DSL_CHECKER_H_
