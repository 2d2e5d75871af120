// The analyses as native hooks for rules:
//   bytes(t), lifetime(t), topo_order(n), in_forward(n), in_backward(n),
//   backward_readers(t), cost.flops(n), cost.time_us(n), peak_bytes(device)
// and the schedule hooks that return nodes:
//   node_at_step(k), first_reader(t [, region]), last_reader(t [, region]),
//   steps_before(n, k), time_before(n, us), gradient_of(n)
// Shapes and regions are computed once per graph and then kept up to date
// as rewrites edit it (in time proportional to each edit, from the graph's
// edit log); the schedule and liveness are global, and computed again when
// first asked for after an edit (plans read them once per graph).
#ifndef GRAFT_ANALYSIS_HOOKS_H_
#define GRAFT_ANALYSIS_HOOKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "analysis/kernel_scratch.h"
#include "analysis/shapes.h"
#include "engine/hooks.h"

namespace graft::analysis {

struct AnalysisHookOptions {
  std::string device =
      "h100_sxm";          // the cost hooks' profile (a name or a YAML file)
  std::string loss, seed;  // found when empty
  std::vector<std::string> outputs;  // fetched, live to the end
  ShapeOptions shapes;               // input shapes the graph leaves unknown
  std::string default_device;        // of unplaced ops, for memory ("": none)
  // The CPU kernels whose scratch the memory model and the planners count
  // (Eigen's convolution gradients' im2col buffers without oneDNN).
  CpuKernels cpu_kernels = CpuKernels::kOneDnn;
};

// Fails when the device profile cannot be loaded.
absl::Status RegisterAnalysisHooks(HookRegistry& registry,
                                   const AnalysisHookOptions& options = {});

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_HOOKS_H_
