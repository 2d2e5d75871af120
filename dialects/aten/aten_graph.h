// PyTorch's ATen graphs (torch.fx GraphModules of ATen ops, as
// torch.export and AOTAutograd produce them) in graft's IR, and their file
// form: the IR's own GraphDef (engine/graph_file.h), `.aten.pb` or
// `.aten.pbtxt`, as graft's Python face (`graft.aten`) writes and reads it.
//
// A call_function node is a node whose op is its target as torch.fx prints
// it (`aten.conv2d.default`); its Tensor arguments are its inputs in the
// schema's order (a `Tensor?` left out reads `_absent`, an `_Absent` node),
// every other argument an attr of the same name (dialects/aten/aten_ops.h).
// `getitem(x, i)` is no node: its readers read `x:i`. Parameters, buffers
// and lifted constants are Consts (their values, so rules can fold them),
// with the attr `_target` naming their state-dict entry; user inputs are
// Placeholders; each graph output is a `_Retval` node (attr `index`).
#ifndef GRAFT_DIALECTS_ATEN_ATEN_GRAPH_H_
#define GRAFT_DIALECTS_ATEN_ATEN_GRAPH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dialect.h"
#include "engine/graph.h"

namespace graft {

// An ATen graph's origin: it carries nothing a writer needs beyond the
// graph, and names the dialect.
struct AtenOrigin : DialectOrigin {
  absl::string_view dialect() const override { return "aten"; }
};

// `.aten.pb`, `.aten.pbtxt` (any case).
bool IsAtenPath(absl::string_view path);

// Reads an ATen graph file (binary left in the file's mapping).
absl::StatusOr<Graph> LoadAtenGraph(const std::string& path, bool allow_empty = false);

}  // namespace graft

#endif  // GRAFT_DIALECTS_ATEN_ATEN_GRAPH_H_
