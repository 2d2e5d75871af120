// Summary numbers of a graph, for `graft stats`.
#ifndef GRAFT_ENGINE_GRAPH_STATS_H_
#define GRAFT_ENGINE_GRAPH_STATS_H_

#include "engine/graph.h"
#include "proto/report.pb.h"

namespace graft {

// Node and edge counts, op, device and dtype histograms, inputs and outputs.
// The caller fills in path, format and size.
report::GraphStats ComputeGraphStats(const Graph& graph);

}  // namespace graft

#endif  // GRAFT_ENGINE_GRAPH_STATS_H_
