// The swap planner (TFLMS, IBM's Large Model Support): which forward
// tensors to move to host memory between the forward and backward passes,
// and when to bring each back so the transfer ends as its first backward
// reader starts (rules/tf/swap.graft rewrites).
#ifndef GRAFT_ANALYSIS_SWAP_H_
#define GRAFT_ANALYSIS_SWAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/checkpoint.h"
#include "analysis/cost.h"

namespace graft::analysis {

struct SwapOptions {
  int64_t threshold_bytes = 1 << 20;  // smaller tensors stay
  // Steps from the producer to the first backward reader.
  int min_distance = 50;
  std::string exclude;  // a regex over producer names never swapped ("")
  // > 0: only the candidates that bring the accelerator's peak under this
  // many bytes (largest first at each peak); none when it is already
  // under; an error naming the best reachable peak when they cannot.
  int64_t budget_bytes = 0;
  // The fraction of budget_bytes a planned swap aims below it, for what the
  // estimate does not see (the runtime's graph passes, thread timing);
  // within the budget but not the headroom, every swap that still helps.
  double budget_headroom = 0.1;
  std::string accelerator;  // whose peak the budget is for ("": the largest)
};

// Forward tensors that backward ops read, of at least `threshold_bytes`,
// whose first backward reader runs at least `min_distance` schedule steps
// after the producer; in schedule order. With a budget, the fewest of them
// that bring the accelerator's estimated peak under it: a swapped tensor is
// off the accelerator from its last forward reader to its first backward
// one.
absl::StatusOr<std::vector<Endpoint>> SwapCandidates(
    const TrainingGraph& g, const SwapOptions& options);

// The op a swap-in of `t` waits for: the one whose start precedes t's first
// backward reader by the estimated transfer time (its bytes over the host
// link of `model`'s device), kept between `lb` and `ub` steps before that
// reader (TFLMS's bounds).
absl::StatusOr<NodeId> SwapTrigger(const TrainingGraph& g,
                                   const RooflineModel& model, Endpoint t,
                                   int lb, int ub);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SWAP_H_
