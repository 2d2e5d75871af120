// Running rule sets and pipelines over a graph: the library behind `graft
// apply`, `graft test` and `graft explain` (the CLI keeps only flags and
// printing).
#ifndef GRAFT_DSL_RUNNER_H_
#define GRAFT_DSL_RUNNER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dsl/compiler.h"
#include "dsl/diagnostics.h"
#include "dsl/pipeline.h"
#include "engine/graph.h"
#include "proto/report.pb.h"

namespace graft::dsl {

// One step, compiled.
struct CompiledStep {
  std::string name;  // "step 1 (fold_batch_norms.graft)"
  std::unique_ptr<RuleSet> rules;
};

// Compiles every step, each with its own params overridden by `params`
// (the command line's). With `shared_params` (a pipeline), a step skips the
// params it does not declare, but a param no step declares is an error.
// Returns false with the errors in `diagnostics`.
bool CompileSteps(const std::vector<PipelineStep>& steps,
                  const std::map<std::string, std::string>& params,
                  bool shared_params, const HookRegistry& hooks,
                  Diagnostics* diagnostics, std::vector<CompiledStep>* out);

struct RunOptions {
  int64_t max_rewrites = 0;  // 0: the default, growing with the graph
  // Graph outputs (fetch nodes) besides the nodes nothing reads.
  std::vector<std::string> outputs;
  // Ops outside TensorFlow's registry the output may use (custom ops).
  std::set<std::string> custom_ops;
  // The library functions whose bodies the steps also rewrite: "all",
  // "none", or names separated by commas.
  std::string functions = "all";
  // Raise the model's opset to this first (Dialect::RaiseOpset); 0: keep it.
  int64_t opset = 0;
};

// Applies the steps in order to `graph`, then (each its own fixpoint) to
// the bodies of the library functions `options.functions` selects, then
// validates it and every body a rewrite changed. Stops at the
// first step that fails or does not converge: the error names the step and
// (for non-convergence) the rules still firing and where, and `report`
// lists every step's outcome (later ones "not run"). On any error the graph
// is partly rewritten: write nothing.
absl::Status RunPipeline(Graph& graph, absl::Span<const CompiledStep> steps,
                         const RunOptions& options,
                         report::ApplyReport* report);

// The outcome of one `test` block of a rule file.
struct RuleTestResult {
  std::string name;     // "file:line: rule / test"
  std::string failure;  // empty when it passed
};

// Runs the `test` blocks of the rules in `set`'s first file (each applies
// its rule to its input graph and checks what must hold after). A test
// with `param` items compiles the file again with those values (`hooks`).
std::vector<RuleTestResult> RunRuleTests(const RuleSet& set,
                                         const HookRegistry& hooks);

// Where each rule of `set` (or only `rule`, when not empty) matches in
// `graph`, in node order; with `node` set, the explanation at that node
// alone, matched or not.
struct RuleExplanations {
  const ::graft::Rule* rule;
  std::vector<std::pair<NodeId, Explanation>> at;
};
std::vector<RuleExplanations> ExplainRules(const RuleSet& set,
                                           const std::string& rule,
                                           const Graph& graph,
                                           NodeId node = kNoNode);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_RUNNER_H_
