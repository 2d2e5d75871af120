// Fuzz target: a text GraphDef file, loaded, then validated, diffed, saved
// and reloaded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dialects/graph_io.h"
#include "fuzz/graph_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<graft::Graph> graph =
      graft::ParseGraph(std::string(reinterpret_cast<const char*>(data), size),
                        graft::GraphFormat::kText, "fuzz.pbtxt");
  if (graph.ok()) graft::fuzz::ExerciseGraph(*graph);
  return 0;
}
