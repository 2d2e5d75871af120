// Pipelines inside a graph's bodies (engine/dialect.h: a TensorFlow
// graph's library functions, an ONNX model's subgraphs): each selected body
// gets the steps in order, its own fixpoint; the dialect validates the
// bodies a rewrite changed and writes them back.
#ifndef GRAFT_DSL_FUNCTIONS_H_
#define GRAFT_DSL_FUNCTIONS_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "dsl/runner.h"
#include "engine/dialect.h"

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

// Calls `fn` with every body (engine/dialect.h: a TensorFlow graph's
// library functions) that RunOnFunctions rewrites with functions "all" (not a SavedModel's
// checkpoint functions, nor a body that cannot be read as a graph), in
// library order, one body at a time.
absl::Status ForEachShownBody(const Graph& graph,
                              const std::function<void(const ShownBody&)>& fn);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_FUNCTIONS_H_
