// What the api's own files share; not part of the library's face.
#ifndef GRAFT_API_INTERNAL_H_
#define GRAFT_API_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/hooks.h"
#include "analysis/memory.h"
#include "analysis/shapes.h"
#include "api/graft.h"
#include "dsl/runner.h"
#include "engine/hooks.h"

namespace graft::api {

struct Rules::Impl {
  std::unique_ptr<HookRegistry> hooks;  // the compiled rules point into it
  analysis::AnalysisHookOptions analysis;
  std::vector<dsl::CompiledStep> steps;
  std::vector<std::string> sources;  // rule files and pipeline: for staleness
  std::vector<std::string> notes;
  std::string warnings;
  int num_warnings = 0;
};

// The hooks rules may call: the builtins and the analyses.
absl::StatusOr<HookRegistry> Hooks(
    const analysis::AnalysisHookOptions& options = {});

// The shapes given as name=dims items and a batch size, checked against
// `graph` when given; an error names the bad one.
absl::StatusOr<analysis::ShapeOptions> InputShapes(
    const std::vector<std::string>& input_shapes, int64_t batch,
    const Graph* graph);

// Whether `n` recomputes a value: a rewrite's copy of a node still there
// (a copy whose original the rewrite removed moved it instead).
inline bool Recomputes(const Graph& graph, const Node& n) {
  return n.is_copy() && graph.node(n.copy_of()).alive();
}

// When `after` holds copies a rewrite's clone made of nodes still there
// (recomputation): how many, their FLOPs on `device` and the simulated
// peak before and after.
bool AddRecomputation(const Graph& before, const Graph& after,
                      const analysis::ShapeOptions& shapes,
                      const analysis::MemoryOptions& memory,
                      const std::string& device, report::Recomputation* out);
// When `after` copies tensors between devices (swapping): the step's
// estimated time on `device` before and after, copies overlapped.
bool AddStepTimes(const Graph& before, const Graph& after,
                  const analysis::ShapeOptions& shapes,
                  const std::string& default_device, const std::string& device,
                  report::StepTimes* out);
bool CopiesBetweenDevices(const Graph& graph,
                          const std::string& default_device);

}  // namespace graft::api

#endif  // GRAFT_API_INTERNAL_H_
