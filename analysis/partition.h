// The forward/backward partition of a joint training graph (forward and
// backward in one graph, the backward fed by its own inputs, as
// AOTAutograd traces one): which forward tensors the forward saves for the
// backward; every other forward tensor the backward reads is recomputed
// there from what is saved.
//
// The choice is a minimum cut (after Checkmate's and torch's min-cut
// partitioners) that prices both sides: saving a tensor costs lambda x its
// bytes, recomputing an op costs its matrix FLOPs (convolutions, matrix
// products, attention: what a compiler cannot fuse away; element-wise ops
// none) plus a thousandth of a FLOP per byte it writes (so that among equal
// FLOPs fewer and smaller ops are recomputed). A
// search over lambda finds the least recomputation whose saved bytes fit a
// budget. Inputs of the graph (parameters, the batch) are held anyway:
// saving them costs nothing. Where the caller names tensors that may wait
// in host memory, each cut first swaps them out, earliest made first (the
// backward reads them last), until what stays on the device fits: a swap
// costs transfer time, not FLOPs (tensors under 64 KiB only when the
// larger are not enough).
#ifndef GRAFT_ANALYSIS_PARTITION_H_
#define GRAFT_ANALYSIS_PARTITION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

struct PartitionOptions {
  // The backward pass's inputs (AOTAutograd's tangents): the backward is
  // what depends on them, and every `_Retval` (the gradients).
  std::vector<std::string> backward_inputs;
  // Ops of the backward that need none of its inputs (a weight's
  // transpose, a mask's complement) but that it computes itself, as the
  // trace that made the graph placed them.
  std::vector<std::string> backward_ops;
  // Forward ops never recomputed (random draws, reads of state the step
  // mutates); stateful and mutating ops of the registry are never either.
  std::vector<std::string> pinned;
  // Forward ops whose recomputation costs nothing (views and aliases: new
  // metadata over their input's bytes).
  std::vector<std::string> free;
  // Ops the caller knows to be pure functions of their inputs as called:
  // outside the dialect's registry (a compiler's own prims), or random in
  // it but drawing nothing here (an attention kernel whose dropout is 0):
  // recomputable; other unknown ops are not, nor any registry op that
  // mutates.
  std::vector<std::string> functional;
  // Forward ops whose saved outputs may wait for the backward in host
  // memory (an accelerator's tensors): swapped out after the forward,
  // brought back before their first backward reader. When any is named,
  // the budget is of the bytes the forward leaves on the device, and
  // swapping comes before recomputing.
  std::vector<std::string> swappable;
  // Smaller tensors are swapped only when the larger ones cannot fit the
  // budget (each copy has a fixed cost: a launch, a synchronization).
  int64_t swap_small_bytes = 64 << 10;
  // Saved bytes to fit: budget_bytes when >= 0, else budget_fraction of
  // `default_bytes`.
  double budget_fraction = 1.0;
  int64_t budget_bytes = -1;
};

struct PartitionPlan {
  std::vector<Endpoint> saved;        // forward tensors the backward reads
  std::vector<NodeId> recomputed;     // forward ops run again
  std::vector<Endpoint> swapped;      // of `saved`, those in host memory
  int64_t saved_bytes = 0;            // of `saved` on the device, inputs
                                      // not counted
  int64_t swapped_bytes = 0;          // of `swapped`
  int64_t default_bytes = 0;          // saving all the backward reads
                                      // (views recomputed from their base)
  int64_t least_bytes = 0;            // the fewest any partition saves
                                      // (leaves on the device)
  int64_t budget_bytes = 0;
  bool budget_met = true;             // false: `least_bytes` > budget
  double recomputed_flops = 0;
  int cuts = 0;                       // minimum cuts solved
};

// The plan for `options`. Fails when no backward input is in the graph or
// a forward tensor the backward reads has an unknown size.
absl::StatusOr<PartitionPlan> PlanPartition(const Graph& graph,
                                            const ShapeMap& shapes,
                                            const PartitionOptions& options);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_PARTITION_H_
