#include "fuzz/graph_ops.h"

#include <cstdlib>

#include "dialects/tf/constant_args.h"
#include "dialects/tf/function_body.h"
#include "engine/graph_diff.h"
#include "dialects/graph_io.h"
#include "engine/graph_stats.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/validate.h"

namespace graft::fuzz {

void ExerciseGraph(const Graph& graph) {
  (void)Validate(graph);
  (void)ComputeGraphStats(graph);
  if (OnnxOf(graph) != nullptr) {
    // An ONNX model with a cycle is not written (ONNX needs an order).
    absl::StatusOr<std::string> bytes = SerializeOnnx(graph);
    if (!bytes.ok()) return;
    // External data is referred to where it was: read it from there.
    const std::string& folder = OnnxOf(graph)->folder;
    absl::StatusOr<Graph> again = ParseOnnx(
        *bytes, "again.onnx", nullptr,
        folder.empty() ? std::nullopt : std::optional<std::string>(folder));
    if (!again.ok()) std::abort();
    if (!DiffGraphs(graph, *again).empty()) std::abort();
    return;
  }
  std::string binary = SerializeGraph(graph, GraphFormat::kBinary);
  absl::StatusOr<Graph> again =
      ParseGraph(binary, GraphFormat::kBinary, "again.pb");
  // What graft writes, graft reads back, the same.
  if (!again.ok()) std::abort();
  if (!DiffGraphs(graph, *again).empty()) std::abort();
  (void)SerializeGraph(graph, GraphFormat::kText);
  // The constants a frozen graph passes into its functions, shown in each
  // body and taken back: the body is as it was.
  const tf::FunctionDefLibrary& library = graph.header().library();
  ConstantArgs constants = ConstantArgs::Of(graph);
  for (const tf::FunctionDef& f : library.function()) {
    absl::StatusOr<Graph> body = FunctionBodyGraph(f, library);
    if (!body.ok()) continue;
    const int nodes = body->num_nodes();
    absl::StatusOr<int> shown = constants.Expose(f.signature().name(), *body);
    if (!shown.ok()) continue;
    if (!ConstantArgs::Restore(*body).ok() || body->num_nodes() != nodes) std::abort();
  }
}

}  // namespace graft::fuzz
