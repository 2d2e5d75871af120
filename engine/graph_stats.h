// Summary numbers of a graph, for `graft stats`.
#ifndef GRAFT_ENGINE_GRAPH_STATS_H_
#define GRAFT_ENGINE_GRAPH_STATS_H_

#include <map>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "proto/report.pb.h"

namespace graft {

// Node and edge counts, op, device and dtype histograms, inputs and outputs.
// The caller fills in path, format and size.
report::GraphStats ComputeGraphStats(const Graph& graph);

// The nodes a model's own tools count, by op: every node of a GraphDef; an
// ONNX graph's nodes without its initializers (Const), inputs (Placeholder)
// and outputs (_Retval), as onnx counts them.
std::map<std::string, int64_t> CountedOps(const Graph& graph);

// The bytes of the graph's constants' values (an ONNX model's
// initializers): kept-apart contents by their size, others as their
// serialized tensors.
int64_t ConstantBytes(const Graph& graph);

// "1.5 MiB" (B, KiB, MiB, GiB; a negative size with its sign).
std::string HumanSize(int64_t bytes);

// The model's outputs: an ONNX graph's output values (_Retval nodes), a
// GraphDef's nodes nothing reads.
std::vector<std::string> ModelOutputs(const Graph& graph);

}  // namespace graft

#endif  // GRAFT_ENGINE_GRAPH_STATS_H_
