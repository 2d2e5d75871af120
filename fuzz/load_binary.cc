// Fuzz target: a binary GraphDef file, loaded as `graft` loads one (the
// top-level scan, large tensors cut out of their NodeDefs), then validated,
// diffed, saved and reloaded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dialects/graph_io.h"
#include "fuzz/graph_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<graft::Graph> graph =
      graft::ParseGraph(std::string(reinterpret_cast<const char*>(data), size),
                        graft::GraphFormat::kBinary, "fuzz.pb");
  if (graph.ok()) graft::fuzz::ExerciseGraph(*graph);
  return 0;
}
