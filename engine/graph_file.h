// The graph IR's own file form: a GraphDef (proto/graph.proto), binary
// (`.pb`) or text (`.pbtxt`), which is also TensorFlow's file format.
// Dialects whose graphs have no file form of their own are written in it
// (an ATen graph: `.aten.pb`).
//
// Binary graphs keep the bytes they were read from: saving a graph writes
// every unmodified node and graph-level field back byte for byte, so a load
// and save with no rewrite gives the identical file, and a rewrite changes
// only the bytes of the nodes it touched. Modified and new nodes are
// serialized deterministically (attrs sorted by name). Errors are located
// (`source: error: what`, `source:line:col: error: what` for text).
#ifndef GRAFT_ENGINE_GRAPH_FILE_H_
#define GRAFT_ENGINE_GRAPH_FILE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"

namespace graft {

// Binary GraphDef bytes that `owner` keeps alive as long as the graph (its
// untouched nodes are written back from them); `fd`, when the bytes are a
// mapping of an open file, lets a save copy them inside the kernel.
absl::StatusOr<Graph> ParseGraphDef(std::shared_ptr<const void> owner,
                                    absl::string_view bytes,
                                    absl::string_view source, int fd = -1);
absl::StatusOr<Graph> ParseGraphDefText(const std::string& text,
                                        absl::string_view source);

// Whether `path` names a text GraphDef: `.pbtxt`, `.txt`, `.prototxt`.
bool IsTextGraphPath(absl::string_view path);

// Reads a GraphDef file: binary from a read-only mapping (the graph keeps
// it for the unmodified bytes it writes back), or text. Anything unusual (a
// directory, an empty or huge file, no mmap) goes the plain way, which says
// what is wrong; an empty file is an error naming `what` unless
// `allow_empty`.
absl::StatusOr<Graph> ReadGraphFile(const std::string& path, bool text, bool allow_empty,
                                    absl::string_view what);

// The graph as a GraphDef, binary or text.
std::string SerializeGraphDef(const Graph& graph, bool text);
// The same written atomically; a binary graph with a source streams its
// unmodified bytes from it.
absl::Status SaveGraphDef(const Graph& graph, const std::string& path, bool text);

}  // namespace graft

#endif  // GRAFT_ENGINE_GRAPH_FILE_H_
