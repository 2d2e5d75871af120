// Fuzz target: an ONNX model's bytes, read as graft reads a .onnx file,
// then validated, saved and read back (the same graph).
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/onnx_model.h"
#include "fuzz/graph_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<graft::Graph> graph = graft::ParseOnnx(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  if (graph.ok()) graft::fuzz::ExerciseGraph(*graph);
  return 0;
}
