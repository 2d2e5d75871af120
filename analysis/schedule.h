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
//
// With more than one thread, TensorFlow's executor runs one of the
// expensive ops a finished op makes ready inline and hands the others to
// its thread pool, which runs them at once. The schedule follows that where
// it decides what dies when: the expensive ops one op makes ready at once
// (two or more: the Slices of a concatenation's gradient; a weight's and an
// input's gradient reading the same gradient while a third reader still
// waits) run one after another before the schedule descends, so what they
// read dies when the last ends, rather than living while the stack works
// through the first one's descendants. A thread goes on with the one op its
// op makes ready (the executor runs it inline), through the inexpensive ops
// it runs inline on the way, while other siblings still run: a weight's
// gradient goes on to its reduction and its update beside the input's
// gradient, so neither it nor the activation it reads is kept to the end.
//
// An op whose outputs no op reads (a variable's update, waiting for the
// backward's readers of the variable) runs as soon as it is ready, as the
// executor's thread pool runs an op it is handed: on the stack it would sit
// below what its siblings make ready, holding what it reads to the end.
#ifndef GRAFT_ANALYSIS_SCHEDULE_H_
#define GRAFT_ANALYSIS_SCHEDULE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"

namespace graft::analysis {

// Live nodes in executor order, for an executor with `threads` inter-op
// threads; fails, counting them, when nodes sit on a cycle that is not a
// loop's back edge.
absl::StatusOr<std::vector<NodeId>> ExecutorOrder(const Graph& graph,
                                                  int threads = 1);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SCHEDULE_H_
