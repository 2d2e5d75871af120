// Writing an ONNX model's files (the model and its external data) for
// SaveGraph, and the buffered piece writer both writers use. Internal to
// graph_io.
#ifndef GRAFT_DIALECTS_ONNX_GRAPH_IO_ONNX_H_
#define GRAFT_DIALECTS_ONNX_GRAPH_IO_ONNX_H_

#include <string>

#include "absl/status/status.h"
#include "engine/graph.h"
#include "engine/file_writer.h"

namespace graft {

// An ONNX model and its data files (dialects/onnx/onnx_model.h): each data file
// written whole and renamed into place, the model last; a failure removes
// the data files it created.
absl::Status SaveOnnx(const Graph& graph, const std::string& path);

}  // namespace graft

#endif  // GRAFT_DIALECTS_ONNX_GRAPH_IO_ONNX_H_
