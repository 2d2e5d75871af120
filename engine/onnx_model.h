// ONNX models (ModelProto, `.onnx`) as graft graphs: the ONNX dialect's
// codec. The graph IR is the one TensorFlow graphs use; an ONNX model maps
// onto it as
//   graph input (not an initializer)  ->  Placeholder node named as the value
//   initializer                       ->  Const node named as the initializer
//   node                              ->  node (op: op_type; another domain's
//                                         op: `domain.op_type`), named as
//                                         the node (unnamed: `op_type_N`)
//   graph output                      ->  `_Retval` node reading the value
//   absent optional input ("")        ->  an input from the `_absent` node
// and ONNX's value names become endpoints (`node:port`). Everything else
// (the model's header, opset imports, functions, metadata, doc strings,
// attrs graft does not model: graphs, type protos) is kept in the graph's
// OnnxOrigin and written back as it was. Saving writes the nodes in
// topological order (the original order where it is one); a node or
// initializer no rewrite touched is written from its original message, so
// an unmodified model keeps every initializer's bytes.
#ifndef GRAFT_ENGINE_ONNX_MODEL_H_
#define GRAFT_ENGINE_ONNX_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "proto/onnx.pb.h"

namespace graft {

struct OnnxOrigin {
  // The model, its graph without node, initializer, input, output and
  // value_info (those are rebuilt from the graph on save).
  onnx::ModelProto model;
  int64_t opset = 0;  // of the default domain
  std::map<std::string, onnx::NodeProto> nodes;           // by node name
  std::map<std::string, onnx::TensorProto> initializers;  // by name
  std::vector<onnx::ValueInfoProto> inputs;   // in order
  std::vector<onnx::ValueInfoProto> outputs;  // in order
  std::map<std::string, onnx::ValueInfoProto> value_info;  // by value name
  // Each node's output value names as read (by node name); a node that
  // takes another's name (a rewrite's replacement) takes its values' names.
  std::map<std::string, std::vector<std::string>> output_names;
};

// The op a node of `domain` with `op_type` has in the graph.
std::string OnnxOpName(absl::string_view domain, absl::string_view op_type);

// Whether `path` names an ONNX model (by its .onnx extension).
bool IsOnnxPath(absl::string_view path);

// An ONNX model's bytes as a graph; `source` names them in errors.
absl::StatusOr<Graph> ParseOnnx(absl::string_view bytes,
                                const std::string& source);

// The graph (read by ParseOnnx, then rewritten) as ONNX model bytes.
absl::StatusOr<std::string> SerializeOnnx(const Graph& graph);

}  // namespace graft

#endif  // GRAFT_ENGINE_ONNX_MODEL_H_
