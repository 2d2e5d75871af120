// The analyses as native hooks for rules:
//   bytes(t), lifetime(t), topo_order(n), in_forward(n), in_backward(n),
//   cost.flops(n), cost.time_us(n), peak_bytes(device)
// Each is computed once per graph version and reused until the graph
// changes.
#ifndef GRAFT_ANALYSIS_HOOKS_H_
#define GRAFT_ANALYSIS_HOOKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/hooks.h"

namespace graft::analysis {

struct AnalysisHookOptions {
  std::string device =
      "h100_sxm";          // the cost hooks' profile (a name or a YAML file)
  std::string loss, seed;  // found when empty
  std::vector<std::string> outputs;  // fetched, live to the end
};

// Fails when the device profile cannot be loaded.
absl::Status RegisterAnalysisHooks(HookRegistry& registry,
                                   const AnalysisHookOptions& options = {});

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_HOOKS_H_
