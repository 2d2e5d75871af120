// The swap planner (TFLMS, IBM's Large Model Support): which forward
// tensors to move to host memory between the forward and backward passes,
// which forward op waits for each copy out so the forward pass never runs
// ahead of the host link, and when to bring each back so the transfer ends
// as its first backward reader starts (rules/tf/swap.graft rewrites).
#ifndef GRAFT_ANALYSIS_SWAP_H_
#define GRAFT_ANALYSIS_SWAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/checkpoint.h"
#include "analysis/cost.h"

namespace graft::analysis {

// The forward ops a swap-out holds back by default: contractions, whose
// first input a gate may delay without splitting a fusion (a matmul or
// convolution with the bias and activation after it).
inline constexpr char kSwapWaitOps[] =
    "MatMul|BatchMatMul*|Conv*|DepthwiseConv2dNative*|Einsum";

struct SwapOptions {
  int64_t threshold_bytes = 1 << 20;  // smaller tensors stay
  // Ops (not identities or no-ops) from the producer to the first backward
  // reader.
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
  // The ops a copy out may hold back (`A|B*`, SwapOutDeadline), and how
  // many steps after the producer at most.
  std::string wait_ops = kSwapWaitOps;
  int wait_steps = 10000;
};

// Forward tensors that backward ops read, of at least `threshold_bytes`,
// whose first backward reader runs at least `min_distance` ops (not
// identities or no-ops) after the producer in the schedule; in schedule order.
// With a budget, the fewest of them that bring the accelerator's estimated peak
// under it: a swapped tensor is off the accelerator from the op its copy out
// holds back (SwapOutDeadline; else its last forward reader) to its first
// backward reader.
absl::StatusOr<std::vector<Endpoint>> SwapCandidates(
    const TrainingGraph& g, const RooflineModel& model,
    const SwapOptions& options);

// The forward op that waits for the copy of `t` to the host to end: of the
// ops on t's device matching `wait_ops` (`A|B*`) after t's last forward
// reader, the first that starts at least the estimated transfer time (its
// bytes over the host link of `model`'s device) after t's producer, or the
// last within `ub` steps of the producer. None when no such op follows.
// Without it a forward pass faster than the link (or an executor's
// threads) keeps every activation whose copy is still queued: on two CPU
// devices with Grappler on, 9 MiB of a 5 MiB plan.
absl::StatusOr<std::optional<NodeId>> SwapOutDeadline(
    const TrainingGraph& g, const RooflineModel& model, Endpoint t, int ub,
    absl::string_view wait_ops = kSwapWaitOps);

// The op a swap-in of `t` waits for: the one whose start precedes t's first
// backward reader by the estimated transfer time (its bytes over the host
// link of `model`'s device), kept between `lb` and `ub` steps before that
// reader (TFLMS's bounds), the nearest there of `carriers`
// (GradientCarriers of `g`).
absl::StatusOr<NodeId> SwapTrigger(const TrainingGraph& g,
                                   const RooflineModel& model, Endpoint t,
                                   int lb, int ub,
                                   const std::vector<bool>& carriers);

// The ops of the backward pass that carry the gradient on to earlier
// layers, by node id: stateless, with a value that some later op combines
// with a forward activation. Not a weight's gradient branch (a bias
// gradient, its Identity, the optimizer's step on it), which runtimes fuse
// and rewrite: with oneDNN, TensorFlow's Grappler loses a step's values
// when a swap-in waits for one.
std::vector<bool> GradientCarriers(const TrainingGraph& g);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SWAP_H_
