// The gradient-checkpointing planner: which forward tensors of a training
// graph to keep for the backward pass (checkpoints), and which forward ops
// to recompute, in segments, from them (rules/tf/checkpoint.graft rewrites).
//
// Strategies: `list` (tensors whose node names match a regex), `speed`
// (outputs of convolutions and matmuls), `memory` (about sqrt(N) of the N
// bottleneck tensors of the forward graph, evenly along the schedule, as
// openai's memory_saving_gradients), `budget` (the fewest recomputed ops
// whose estimated peak fits a byte budget, less a headroom). Stateful forward ops (random,
// assign, variable reads) are never recomputed: what they produce stays as
// it is.
#ifndef GRAFT_ANALYSIS_CHECKPOINT_H_
#define GRAFT_ANALYSIS_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "analysis/memory.h"
#include "analysis/regions.h"
#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

struct CheckpointOptions {
  std::string strategy = "memory";  // list, speed, memory or budget
  std::string names;                // list: a regex over node names
  int64_t budget_bytes = 0;         // budget: the peak to fit
  // budget: the fraction of budget_bytes a planned rewrite leaves free for
  // what its simulation does not see (the runtime's graph passes, thread
  // timing); a graph whose estimate already fits is left as it is.
  double budget_headroom = 0.1;
};

// What the planner reads of a graph.
struct TrainingGraph {
  const Graph& graph;
  const ShapeMap& shapes;
  const Regions& regions;
  const MemoryReport& memory;
};

// The schedule step of `id`, or -1 when it is not scheduled.
int StepOf(const TrainingGraph& g, NodeId id);

// `ts` in schedule order (their producers' steps; ports in order).
void SortBySchedule(const TrainingGraph& g, std::vector<Endpoint>* ts);

// What a planner aims for under `budget`: `headroom` (a fraction, at most
// 0.9) of it lower, for what its estimate does not see (the runtime's own
// graph passes, thread timing).
int64_t HeadroomTarget(int64_t budget, double headroom);

// Whether a forward op may be recomputed: in the forward region, with
// outputs, not stateful (random, assign, variable reads), not a constant
// or an input.
bool Recomputable(const TrainingGraph& g, NodeId id);

// The checkpoints of `strategy`, in schedule order. `budget` fails, saying
// the best peak it can reach, when the budget cannot be met.
absl::StatusOr<std::vector<Endpoint>> ChooseCheckpoints(
    const TrainingGraph& g, const CheckpointOptions& options);

// The forward ops to recompute: for the tensors the backward pass reads
// that are not checkpoints, what computes them from the checkpoints (and
// from what is never recomputed), grouped by the checkpoints before them;
// each segment in schedule order, no segment empty.
std::vector<std::vector<NodeId>> RecomputeSegments(
    const TrainingGraph& g, absl::Span<const Endpoint> checkpoints);

// The tensors of `segment`'s nodes that backward ops read.
std::vector<Endpoint> SegmentOutputs(const TrainingGraph& g,
                                     absl::Span<const NodeId> segment);

// One tensor from outside `segment` for each of its entry nodes (those that
// read nothing the segment computes), a varying one before a constant: what
// a segment's copies are held back by. Holding back these inputs, rather
// than putting control inputs on the copies, orders the recomputation
// without an op TensorFlow's fusions expect to have data inputs only (a
// Conv2D feeding a BiasAdd, which oneDNN's layout pass merges) gaining a
// control input.
std::vector<Endpoint> SegmentEntries(const TrainingGraph& g,
                                     absl::Span<const NodeId> segment);

// What a segment's copies wait for, so that they run just before the first
// backward op that reads the segment: the backward producers of that op's
// other inputs (the gradient seed when it has none, so that the copies
// never run in the forward pass).
std::vector<NodeId> RecomputeTrigger(const TrainingGraph& g,
                                     absl::Span<const NodeId> segment);

// Gradient ops that read forward tensors and wait for nothing of the
// backward pass (as a division's gradient, -x / y / y): the executor runs
// them during the forward pass, and their outputs live until the backward
// pass reads them. Those that LateTrigger can delay, in schedule order.
std::vector<NodeId> EarlyGradientOps(const TrainingGraph& g);

// What such an op can wait for so that it runs just before its first
// backward reader: the backward producers of that reader's other inputs
// that do not depend on the op (empty when there are none).
std::vector<NodeId> LateTrigger(const TrainingGraph& g, NodeId op);

// Each tensor's buffer as the training libraries (checkpoint, swap) leave
// the graph before their own rewrites: the memory report's lifetimes with
// the gradient order those libraries apply (rules/tf/gradient_order.graft,
// early_gradients.graft): a BiasAddGrad runs before the matmuls that read
// the same gradient (so it no longer keeps the gradient alive), and an early
// gradient op runs just before its first backward reader.
struct Lifetimes {
  struct Span {
    int alloc = 0, free = 0;
    int64_t bytes = 0;  // 0: shared or persistent (not counted)
  };
  absl::flat_hash_map<Endpoint, Span> of;
  // A tensor that shares an earlier one's buffer (a Reshape, an Identity)
  // and is read after that one's readers: it holds the buffer's bytes from
  // the step after them, or after an earlier such tensor's, to its own last
  // reader.
  absl::flat_hash_map<Endpoint, Span> holds_shared;
  // A kernel's scratch (Eigen's convolution gradients without oneDNN) while
  // its op runs, keyed by the op's output 0 (so by its node and device).
  absl::flat_hash_map<Endpoint, Span> scratch;
  int steps = 0;
};
Lifetimes OrderedLifetimes(const TrainingGraph& g);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_CHECKPOINT_H_
