// Fuzz target: an ONNX model in the text form (`.onnxtxt`), read as graft
// reads one (text to model bytes, then the ONNX codec), then validated,
// saved and read back (the same graph), its shapes inferred.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/shapes.h"
#include "dialects/onnx/onnx_model.h"
#include "fuzz/graph_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<std::string> bytes = graft::OnnxTextToBinary(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnxtxt");
  if (!bytes.ok()) return 0;
  absl::StatusOr<graft::Graph> graph = graft::ParseOnnx(*bytes, "fuzz.onnxtxt");
  if (!graph.ok()) return 0;
  graft::fuzz::ExerciseGraph(*graph);
  (void)graft::analysis::InferShapes(*graph);  // the ONNX shape functions, symbols and all
  return 0;
}
