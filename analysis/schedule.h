// A deterministic schedule close to TensorFlow's executor. Ops whose
// kernels TensorFlow counts inexpensive (constants, variable handles,
// shapes, reshapes, identities, control flow) run as soon as they are
// ready, first in first out, as the executor runs them inline; the others
// wait on a stack: the nodes with no inputs in file order, then, as each
// node runs, the consumers it makes ready in edge order; the last readied
// runs next. On the training graphs of tests/interop, and the graphs
// Grappler makes of them, this orders 88-98% of node pairs as TensorFlow's
// single-threaded executor does (docs/benchmarks.md). Loops of TF1 control
// flow are cut at their back edges (NextIteration -> Merge), so a graph
// with while loops schedules.
#ifndef GRAFT_ANALYSIS_SCHEDULE_H_
#define GRAFT_ANALYSIS_SCHEDULE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"

namespace graft::analysis {

// Live nodes in executor order; fails, counting them, when nodes sit on a
// cycle that is not a loop's back edge.
absl::StatusOr<std::vector<NodeId>> ExecutorOrder(const Graph& graph);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SCHEDULE_H_
