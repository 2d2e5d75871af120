// Pipelines inside library functions: each selected function body (a
// graph, engine/function_body.h) gets the steps in order, its own fixpoint;
// bodies a rewrite changed are validated and written back into the graph's
// library.
#ifndef GRAFT_DSL_FUNCTIONS_H_
#define GRAFT_DSL_FUNCTIONS_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "dsl/runner.h"

namespace graft::dsl {

// Whether `functions` ("all", "none", or a comma-separated list) names
// well-formed choices; an error names an unknown function of `graph`.
absl::Status CheckFunctionSelection(const Graph& graph,
                                    const std::string& functions);

// Runs `steps` in the bodies of `graph`'s library functions that
// `options.functions` selects, adding to `report` (rule counts, rewrites,
// one FunctionReport each). A body that cannot be read as a graph is
// skipped (and said) unless named; a step that does not converge, or a
// body that no longer validates, is an error naming the function.
struct StepRules {
  std::string name;  // for errors
  const RuleSet* rules;
};
absl::Status RunOnFunctions(Graph& graph, const std::vector<StepRules>& steps,
                            const RunOptions& options,
                            report::ApplyReport* report);

// A library function's body as RunOnFunctions shows it to the rules: a
// SavedModel's variable reads and a frozen graph's constant arguments as
// constants (graft explain looks into bodies through this).
struct ShownBody {
  std::string function;
  Graph body;
  int variable_reads = 0;
  int constant_args = 0;
};
// Calls `fn` with every body of a TensorFlow graph's library that
// RunOnFunctions rewrites with functions "all" (not a SavedModel's
// checkpoint functions, nor a body that cannot be read as a graph), in
// library order, one body at a time.
absl::Status ForEachShownBody(const Graph& graph,
                              const std::function<void(const ShownBody&)>& fn);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_FUNCTIONS_H_
