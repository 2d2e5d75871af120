// What the graph fuzz targets do with a graph that loaded: everything a
// command does with it afterwards (validate, diff, stats, save, reload, the
// constants a frozen graph passes into its functions shown and taken back), so
// that a malformed graph the loader accepts cannot crash a later stage.
#ifndef GRAFT_FUZZ_GRAPH_OPS_H_
#define GRAFT_FUZZ_GRAPH_OPS_H_

#include "engine/graph.h"

namespace graft::fuzz {

void ExerciseGraph(const Graph& graph);

}  // namespace graft::fuzz

#endif  // GRAFT_FUZZ_GRAPH_OPS_H_
