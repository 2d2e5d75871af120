// Helpers for engine tests: graphs from inline text GraphDef.
#ifndef GRAFT_ENGINE_TEST_GRAPHS_H_
#define GRAFT_ENGINE_TEST_GRAPHS_H_

#include <string>

#include "engine/graph.h"
#include "engine/graph_io.h"
#include "gtest/gtest.h"

namespace graft::testing {

// Parses a text GraphDef; fails the test on error.
inline Graph GraphFromText(const std::string& text) {
  absl::StatusOr<Graph> graph =
      ParseGraph(text, GraphFormat::kText, "inline.pbtxt");
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? std::move(*graph) : Graph();
}

// Node id by name; fails the test when missing.
inline NodeId Id(const Graph& graph, absl::string_view name) {
  NodeId id = graph.FindId(name);
  EXPECT_NE(id, kNoNode) << "no node `" << name << "`";
  return id;
}

// "a:1" style names of a node's data inputs, for readable assertions.
inline std::vector<std::string> InputNames(const Graph& graph,
                                           absl::string_view node) {
  std::vector<std::string> names;
  for (Endpoint e : graph.node(Id(graph, node)).inputs()) {
    names.push_back(graph.TensorName(e));
  }
  return names;
}

}  // namespace graft::testing

#endif  // GRAFT_ENGINE_TEST_GRAPHS_H_
