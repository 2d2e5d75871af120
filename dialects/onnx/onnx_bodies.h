// ONNX subgraphs (the `If`, `Loop` and `Scan` bodies a node holds as graph
// attrs) as graphs the rules rewrite, and back. In a body's graph each
// value it reads from the scopes around (a capture, dialects/onnx/onnx_model.h)
// is a Placeholder named as the value (a Const when the outer value is an
// initializer, so rules see its value), written back as the outer name,
// never as a body input or initializer.
#ifndef GRAFT_DIALECTS_ONNX_ONNX_BODIES_H_
#define GRAFT_DIALECTS_ONNX_ONNX_BODIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "dialects/onnx/onnx_model.h"
#include "proto/onnx.pb.h"

namespace graft {

// One subgraph of an ONNX graph: node `node`'s attr `attr` (`index` into
// a list of graphs; -1 for a single graph).
struct OnnxBody {
  std::string node;
  std::string attr;
  int index = -1;
  // `node/attr` (`node/attr[index]`): how flags and reports name it.
  std::string Label() const;
};

// The subgraphs of `graph`'s nodes (not nested ones: those are the
// bodies' own), in node order.
std::vector<OnnxBody> OnnxBodies(const Graph& graph);

// Subgraph `body`'s message, or nullptr when `graph` has none such.
const onnx::GraphProto* OnnxBodyProto(const Graph& graph, const OnnxBody& body);

// Subgraph `body` of `graph` as a graph: the model's opsets and functions,
// captures as Placeholders typed as the outer graph declares them.
absl::StatusOr<Graph> OnnxBodyGraph(const Graph& graph, const OnnxBody& body);

// `graph` with subgraph `body` replaced by `rewritten` (a graph made by
// OnnxBodyGraph, then rewritten). An error when the rewritten body reads
// an outer value the node does not capture.
absl::Status SetOnnxBody(Graph& graph, const OnnxBody& body, const Graph& rewritten);

}  // namespace graft

#endif  // GRAFT_DIALECTS_ONNX_ONNX_BODIES_H_
