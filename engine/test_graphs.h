// Helpers for engine tests: graphs from inline text GraphDef.
#ifndef GRAFT_ENGINE_TEST_GRAPHS_H_
#define GRAFT_ENGINE_TEST_GRAPHS_H_

#include <string>
#include <vector>

#include "engine/graph.h"
#include "dialects/graph_io.h"
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

// Text NodeDefs to build test graphs from (GraphFromText of their sum).
inline std::string PlaceholderNode(const std::string& name,
                                   std::vector<int> dims,
                                   const std::string& dtype = "DT_FLOAT") {
  std::string shape;
  for (int d : dims) shape += " dim { size: " + std::to_string(d) + " }";
  return "node { name: \"" + name +
         "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: " + dtype +
         " } } attr { key: \"shape\" value { shape {" + shape + " } } } }\n";
}

// A 1-D Const of `values` (DT_INT32), or of `size` zeros (DT_FLOAT).
inline std::string IntConstNode(const std::string& name,
                                std::vector<int> values) {
  std::string vals;
  for (int v : values) vals += " int_val: " + std::to_string(v);
  return "node { name: \"" + name +
         "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "
         "attr { key: \"value\" value { tensor { dtype: DT_INT32 "
         "tensor_shape { dim { size: " +
         std::to_string(values.size()) + " } }" + vals + " } } } }\n";
}
inline std::string FloatConstNode(const std::string& name, int size) {
  return "node { name: \"" + name +
         "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
         "attr { key: \"value\" value { tensor { dtype: DT_FLOAT "
         "tensor_shape { dim { size: " +
         std::to_string(size) + " } } } } } }\n";
}

// A float op (attr T = DT_FLOAT) with `inputs` and extra attrs in text.
inline std::string OpNode(const std::string& name, const std::string& op,
                          std::vector<std::string> inputs,
                          const std::string& attrs = "") {
  std::string in;
  for (const std::string& i : inputs) in += " input: \"" + i + "\"";
  return "node { name: \"" + name + "\" op: \"" + op + "\"" + in +
         " attr { key: \"T\" value { type: DT_FLOAT } }" + attrs + " }\n";
}

// Conv2D attrs: strides [1, s, s, 1] and a padding.
inline std::string ConvAttrs(int stride, const std::string& padding) {
  std::string s = std::to_string(stride);
  return " attr { key: \"strides\" value { list { i: 1 i: " + s + " i: " + s +
         " i: 1 } } } attr { key: \"padding\" value { s: \"" + padding +
         "\" } }";
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
