// Fuzz target: an ONNX model's bytes, read as graft reads a .onnx file (its
// large initializers left where they are, external data mapped from a
// folder holding data files the seeds name), then validated, saved and
// read back (the same graph), its shapes inferred; each subgraph read as a
// graph and put back.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "dialects/onnx/onnx_bodies.h"
#include "analysis/shapes.h"
#include "dialects/onnx/onnx_model.h"
#include "fuzz/graph_ops.h"

namespace {

// A folder with data files of 4 KiB under the names the seeds use.
const std::string& DataFolder() {
  static const std::string* folder = [] {
    std::string dir = "/tmp/graft-fuzz-onnx-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) abort();
    for (const char* name : {"weights.bin", "external_ok.onnx.data"}) {
      std::ofstream out(dir + "/" + name, std::ios::binary);
      for (int i = 0; i < 4096; ++i) out.put(static_cast<char>(i * 7));
    }
    atexit([] {
      for (const char* name : {"weights.bin", "external_ok.onnx.data"})
        unlink((DataFolder() + "/" + name).c_str());
      rmdir(DataFolder().c_str());
    });
    return new std::string(dir);
  }();
  return *folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = std::make_shared<const std::string>(
      reinterpret_cast<const char*>(data), size);
  absl::StatusOr<graft::Graph> graph =
      graft::ParseOnnx(*bytes, "fuzz.onnx", bytes, DataFolder());
  if (!graph.ok()) return 0;
  graft::fuzz::ExerciseGraph(*graph);
  (void)graft::analysis::InferShapes(*graph);  // the ONNX shape functions, symbols and all
  for (const graft::OnnxBody& body : graft::OnnxBodies(*graph)) {
    absl::StatusOr<graft::Graph> sub = graft::OnnxBodyGraph(*graph, body);
    if (sub.ok()) (void)graft::SetOnnxBody(*graph, body, *sub);
  }
  (void)graft::SerializeOnnx(*graph);
  return 0;
}
