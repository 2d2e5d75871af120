// A compiled rule: its pattern (dsl/matcher.h), its rewrite
// (dsl/actions.h) and what it shares with the other rules of its set (the
// params, the evaluator, the set's `require`s). Immutable once compiled:
// one rule set may match and rewrite from many threads at once.
#ifndef GRAFT_DSL_COMPILED_RULE_H_
#define GRAFT_DSL_COMPILED_RULE_H_

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dsl/actions.h"
#include "dsl/bindings.h"
#include "dsl/evaluator.h"
#include "dsl/matcher.h"
#include "engine/driver.h"

namespace graft::dsl {

// A file's `require` statement, with where it is.
struct Requirement {
  ExprPtr expr;
  std::string where;  // "file:line"
};

// A file's `plan name = expr`, with where it is.
struct PlanDef {
  std::string name;
  ExprPtr expr;
  std::string where;  // "file:line"
  int stage = 0;      // its file's rules' stage (Rule::stage)
};

// The plans of one graph: each computed once, when the stage of its file's
// rules starts in an apply (Prepare), and read by every match and rewrite
// after.
struct PlanValues {
  ParamTable values;
  // For each plan a `for` iterates: its items, and which items sit at a
  // node (a rule without patterns is anchored there).
  struct Items {
    absl::flat_hash_set<Endpoint> keys;
    absl::flat_hash_map<NodeId, std::vector<Value>> at_node;
  };
  std::map<std::string, Items> items;
};

// What a rule set checks before it rewrites anything (its files'
// `require`s, and that range tables name tensors of the graph). The driver
// prepares every rule, so the result is kept for the graph version it was
// computed on.
class SetChecks {
 public:
  std::vector<Requirement> requirements;
  std::vector<PlanDef> plans;
  std::set<std::string> iterated;  // plans that a `for` iterates

  absl::Status CheckOnce(const Graph& graph, const Evaluator& evaluator,
                         const ParamTable& params);

  // The plans of `graph` up to `stage`: when `fresh` (a stage starts) those
  // of `stage` computed anew unless they were at this graph version (the
  // earlier stages' kept), else those computed for it last (or now, when
  // none reach `stage`).
  absl::StatusOr<std::shared_ptr<const PlanValues>> PlansFor(
      const Graph& graph, const Evaluator& evaluator, const ParamTable& params,
      bool fresh, int stage);

 private:
  // The plans of `graph` up to `stage`: those of the stages up to
  // `computed` taken from `earlier`, the rest computed.
  absl::StatusOr<std::shared_ptr<const PlanValues>> ComputePlans(
      const Graph& graph, const Evaluator& evaluator, const ParamTable& params,
      int stage, const PlanValues* earlier, int computed);

  std::mutex mu_;
  uint64_t version_ = 0;  // graph versions are unique per process; 0: none
  absl::Status result_;
  // Per graph (by address): the version the plans were computed at.
  struct GraphPlans {
    uint64_t version = 0;
    int stage = 0;  // the last stage whose plans `values` holds
    absl::StatusOr<std::shared_ptr<const PlanValues>> values;
  };
  std::map<const Graph*, GraphPlans> plans_of_;
};

// `for var in plan`: the plan, and the slot of its var.
struct ForClause {
  std::string plan;  // empty: no `for`
  int slot = -1;
};

// What the rules of one set share.
struct RuleSetShared {
  std::shared_ptr<const ParamTable> params;
  std::shared_ptr<const Evaluator> evaluator;
  std::shared_ptr<SetChecks> checks;
};

class CompiledRule : public ::graft::Rule {
 public:
  CompiledRule(std::string name, int priority, CompiledPattern pattern,
               SlotTable slots, RewriteProgram program, RuleSetShared shared,
               ForClause for_clause = {})
      : name_(std::move(name)),
        priority_(priority),
        pattern_(std::move(pattern)),
        slots_(std::move(slots)),
        program_(std::move(program)),
        shared_(std::move(shared)),
        for_(std::move(for_clause)) {}

  const std::string& name() const override { return name_; }
  int priority() const override { return priority_; }
  // Its file's: 0, or for a file with plans one after the latest of the
  // files it imports (their rules reach a fixpoint before its plans are
  // computed).
  int stage() const override { return stage_; }
  void set_stage(int stage) { stage_ = stage; }
  // A `for` rule without patterns is tried at every node (and matches at
  // its items' nodes).
  std::vector<std::string> anchor_ops() const override;
  // The rule's other variants (one per choice of the alternatives of the
  // named patterns it calls), of the same name, tried after this one in
  // turn; their priority is at most this one's.
  void AddVariants(std::vector<std::unique_ptr<CompiledRule>> variants) {
    variants_ = std::move(variants);
  }
  absl::Status Prepare(const Graph& graph) const override;
  std::unique_ptr<MatchState> Match(const Graph& graph,
                                    NodeId root) const override;
  std::unique_ptr<MatchState> MatchReporting(
      const Graph& graph, NodeId root, std::string* guard_error) const override;
  absl::Status Rewrite(const MatchState& match, Rewriter& rewriter,
                       RewritePlan* plan) const override;

  // The match at `root`, or nullptr and in `sink` why not.
  std::unique_ptr<MatchState> Explain(const Graph& graph, NodeId root,
                                      ExplainSink* sink) const;
  // The names a match binds and the params, sorted by name.
  static std::vector<std::pair<std::string, Value>> BoundValues(
      const MatchState& match);

 private:
  // Explain for this variant alone.
  std::unique_ptr<MatchState> ExplainVariant(const Graph& graph, NodeId root,
                                             ExplainSink* sink) const;
  std::unique_ptr<MatchState> MatchAt(const Graph& graph, NodeId root,
                                      ExplainSink* sink,
                                      std::string* guard_error = nullptr) const;

  std::string name_;
  int priority_;
  int stage_ = 0;
  CompiledPattern pattern_;
  SlotTable slots_;
  RewriteProgram program_;
  RuleSetShared shared_;
  ForClause for_;
  std::vector<std::unique_ptr<CompiledRule>> variants_;
};

}  // namespace graft::dsl

#endif  // GRAFT_DSL_COMPILED_RULE_H_
