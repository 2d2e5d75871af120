// Fuzz target: a SavedModel's saved_model.pb as graft reads one (the
// MetaGraph chosen by tag, its graph and function library), then the
// graph exercised as the GraphDef loaders' targets do and every library
// function's body read as a graph and written back; and the SavedModel
// frozen (signatures inlined; no variables/ to read constants from), and
// which variable each function arg holds followed through the calls.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dialects/tf/freeze.h"
#include "dialects/tf/function_body.h"
#include "dialects/tf/saved_model.h"
#include "dialects/tf/variable_reads.h"
#include "fuzz/graph_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<graft::Graph> graph = graft::ParseSavedModel(
      std::string(reinterpret_cast<const char*>(data), size),
      "fuzz/saved_model.pb");
  if (!graph.ok()) return 0;
  const graft::tf::FunctionDefLibrary& library = graph->header().library();
  graft::VariableReads reads = graft::VariableReads::Of(*graph);
  for (const graft::tf::FunctionDef& f : library.function()) {
    absl::StatusOr<graft::Graph> body = graft::FunctionBodyGraph(f, library);
    if (!body.ok()) continue;
    for (int i = 0; i < f.signature().input_arg_size(); ++i)
      (void)reads.KeyOf(f.signature().name(), i);
    if (reads.Expose(f.signature().name(), *body).ok())
      (void)graft::VariableReads::Restore(*body);
    (void)graft::FunctionFromBody(*body, f, library);
  }
  (void)graft::CheckpointFunctions(*graph);
  graft::fuzz::ExerciseGraph(*graph);
  absl::StatusOr<graft::Graph> again = graft::ParseSavedModel(
      std::string(reinterpret_cast<const char*>(data), size),
      "fuzz/saved_model.pb");
  if (!again.ok()) return 0;
  graft::FreezeOptions options;
  options.max_nodes = 100000;
  absl::StatusOr<graft::Graph> frozen =
      graft::FreezeSavedModel(*std::move(again), options);
  if (frozen.ok()) graft::fuzz::ExerciseGraph(*frozen);
  return 0;
}
