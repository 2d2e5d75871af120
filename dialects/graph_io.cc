// The format dispatch: a path or format to the dialect that reads and
// writes it.
#include "dialects/graph_io.h"

#include <limits>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dialects/aten/aten_graph.h"
#include "dialects/onnx/graph_io_onnx.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/graph_file.h"
#include "dialects/tf/saved_model.h"
#include "engine/dialect.h"
#include "engine/files.h"

namespace graft {

absl::StatusOr<GraphFormat> ParseGraphFormat(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "auto") return GraphFormat::kAuto;
  if (lower == "pb" || lower == "binary") return GraphFormat::kBinary;
  if (lower == "pbtxt" || lower == "text") return GraphFormat::kText;
  if (lower == "onnx") return GraphFormat::kOnnx;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown graph format `", name, "` (expected pb, pbtxt, onnx or auto)"));
}

GraphFormat ResolveGraphFormat(absl::string_view path, GraphFormat format) {
  if (format != GraphFormat::kAuto) return format;
  std::string lower = absl::AsciiStrToLower(path);
  if (IsOnnxPath(lower)) return GraphFormat::kOnnx;
  for (const char* ext : {".pbtxt", ".txt", ".prototxt"}) {
    if (absl::EndsWith(lower, ext)) return GraphFormat::kText;
  }
  return GraphFormat::kBinary;
}

namespace {

// ONNX bytes, or its text form when `source_name` says so.
absl::StatusOr<Graph> ParseOnnxBytes(absl::string_view bytes,
                                     absl::string_view source_name,
                                     std::shared_ptr<const void> owner) {
  const std::string source(source_name);
  if (!IsOnnxTextPath(source)) return ParseOnnx(bytes, source, std::move(owner));
  absl::StatusOr<std::string> binary = OnnxTextToBinary(std::string(bytes), source);
  if (!binary.ok()) return binary.status();
  return ParseOnnx(*binary, source);
}

// Graph bytes in the IR's own file form whose name another dialect claims
// (an ATen graph, `.aten.pbtxt`) are that dialect's graph.
absl::StatusOr<Graph> Claimed(absl::StatusOr<Graph> graph, absl::string_view source_name) {
  if (graph.ok() && IsAtenPath(source_name)) graph->set_origin(std::make_shared<AtenOrigin>());
  return graph;
}

}  // namespace

absl::StatusOr<Graph> ParseGraph(std::string bytes, GraphFormat format,
                                 absl::string_view source_name) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Located(source_name,
                   "larger than 2 GiB, the limit of a GraphDef file");
  }
  if (ResolveGraphFormat(source_name, format) == GraphFormat::kText) {
    return Claimed(ParseGraphDefText(bytes, source_name), source_name);
  }
  if (ResolveGraphFormat(source_name, format) == GraphFormat::kOnnx)
    return ParseOnnxBytes(bytes, source_name, nullptr);
  auto owner = std::make_shared<const std::string>(std::move(bytes));
  absl::string_view view(*owner);
  return Claimed(ParseGraphDef(std::move(owner), view, source_name), source_name);
}

absl::StatusOr<Graph> ParseGraphView(std::shared_ptr<const void> owner,
                                     absl::string_view bytes,
                                     GraphFormat format,
                                     absl::string_view source_name) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Located(source_name,
                   "larger than 2 GiB, the limit of a GraphDef file");
  }
  if (ResolveGraphFormat(source_name, format) == GraphFormat::kText) {
    return Claimed(ParseGraphDefText(std::string(bytes), source_name), source_name);
  }
  if (ResolveGraphFormat(source_name, format) == GraphFormat::kOnnx)
    return ParseOnnxBytes(bytes, source_name, std::move(owner));
  return Claimed(ParseGraphDef(std::move(owner), bytes, source_name), source_name);
}

absl::StatusOr<Graph> LoadGraph(const std::string& path, GraphFormat format,
                                bool allow_empty) {
  // A SavedModel folder is TensorFlow's whatever the format says.
  if (format == GraphFormat::kAuto || IsSavedModelDir(path)) {
    for (const Dialect* dialect : Dialects()) {
      if (dialect->Claims(path)) return dialect->Load(path, "", allow_empty);
    }
  }
  if (format == GraphFormat::kOnnx) return FindDialect("onnx")->Load(path, "onnx", allow_empty);
  return FindDialect("tensorflow")
      ->Load(path, format == GraphFormat::kText ? "pbtxt" : "pb", allow_empty);
}

std::string SerializeGraph(const Graph& graph, GraphFormat format) {
  if (OnnxOf(graph) != nullptr && format != GraphFormat::kText) {
    absl::StatusOr<std::string> bytes = SerializeOnnx(graph);
    return bytes.ok() ? *std::move(bytes) : std::string();
  }
  return SerializeGraphDef(graph, format == GraphFormat::kText);
}

absl::Status SaveGraph(const Graph& graph, const std::string& path,
                       GraphFormat format) {
  // A SavedModel's graph is written as a SavedModel folder, or, named
  // .pb or .pbtxt (or a format given), as a GraphDef file when it has no
  // variables to lose (frozen).
  if (SavedModelOf(graph) != nullptr) {
    bool graph_file = format != GraphFormat::kAuto ||
                      absl::EndsWith(path, ".pb") || absl::EndsWith(path, ".pbtxt");
    if (!graph_file) return SaveSavedModel(graph, path);
    if (RestoresVariables(*SavedModelOf(graph)))
      return Located(path,
                     "a SavedModel with variables is not written as a "
                     "GraphDef file (its variables would be lost): freeze it "
                     "(--saved-model freeze) or write a SavedModel folder");
  }
  format = ResolveGraphFormat(path, format);
  if (OnnxOf(graph) != nullptr && format != GraphFormat::kText)
    return SaveOnnx(graph, path);
  if (format == GraphFormat::kOnnx)
    return Located(path, "a TensorFlow graph is not written as ONNX (graft "
                         "rewrites each format in its own dialect)");
  return SaveGraphDef(graph, path, format == GraphFormat::kText);
}

}  // namespace graft
