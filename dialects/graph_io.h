// Reading and writing graphs: binary GraphDef (`.pb`) and text GraphDef
// (`.pbtxt`), chosen by extension unless a format is given.
//
// Binary graphs keep the bytes they were read from: saving a graph writes
// every unmodified node and graph-level field back byte for byte, so a load
// and save with no rewrite gives the identical file, and a rewrite changes
// only the bytes of the nodes it touched. Modified and new nodes are
// serialized deterministically (attrs sorted by name).
//
// Every error message is a located diagnostic, `path: error: what` or
// `path:line:col: error: what` for text syntax errors.
#ifndef GRAFT_DIALECTS_GRAPH_IO_H_
#define GRAFT_DIALECTS_GRAPH_IO_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/file_writer.h"
#include "engine/files.h"
#include "engine/graph.h"

namespace graft {

// kOnnx: an ONNX model (dialects/onnx/onnx_model.h), the ONNX dialect's graph.
enum class GraphFormat { kAuto, kBinary, kText, kOnnx };

// "auto", "pb" / "binary", "pbtxt" / "text", "onnx".
absl::StatusOr<GraphFormat> ParseGraphFormat(absl::string_view name);
// `format` unless it is kAuto; else text for `.pbtxt`, `.txt`, `.prototxt`
// and binary for anything else.
GraphFormat ResolveGraphFormat(absl::string_view path, GraphFormat format);

// Reads and parses a graph file. An empty file (0 bytes, which protobuf
// would read as a graph of no nodes) is an error unless `allow_empty`.
// A SavedModel folder reads as its "serve" MetaGraph (dialects/tf/saved_model.h)
// and saves (format auto) as a SavedModel folder again.
absl::StatusOr<Graph> LoadGraph(const std::string& path,
                                GraphFormat format = GraphFormat::kAuto,
                                bool allow_empty = false);
// Parses graph bytes; `source_name` names them in errors.
absl::StatusOr<Graph> ParseGraph(std::string bytes, GraphFormat format,
                                 absl::string_view source_name);

// The same for bytes someone else holds: `owner` keeps them alive as long
// as the graph (binary graphs keep the bytes of their untouched nodes).
absl::StatusOr<Graph> ParseGraphView(std::shared_ptr<const void> owner,
                                     absl::string_view bytes,
                                     GraphFormat format,
                                     absl::string_view source_name);

// Serializes a graph (format must not be kAuto).
std::string SerializeGraph(const Graph& graph, GraphFormat format);
// Serializes and writes atomically: a temporary file beside `path`, then a
// rename. On failure nothing is left at `path` or beside it.
absl::Status SaveGraph(const Graph& graph, const std::string& path,
                       GraphFormat format = GraphFormat::kAuto);

}  // namespace graft

#endif  // GRAFT_DIALECTS_GRAPH_IO_H_
