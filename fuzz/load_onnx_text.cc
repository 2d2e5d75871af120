// Fuzz target: an ONNX model in the text form (`.onnxtxt`), read as graft
// reads one (text to model bytes, then the ONNX codec), then validated,
// saved and read back (the same graph).
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/onnx_model.h"
#include "fuzz/graph_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<std::string> bytes = graft::OnnxTextToBinary(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnxtxt");
  if (!bytes.ok()) return 0;
  absl::StatusOr<graft::Graph> graph = graft::ParseOnnx(*bytes, "fuzz.onnxtxt");
  if (graph.ok()) graft::fuzz::ExerciseGraph(*graph);
  return 0;
}
