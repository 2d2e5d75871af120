// Fuzz target: an ONNX model in the text form rewritten by the ONNX rule
// libraries that need no table (batch-norm folding, weight-only QDQ,
// dynamic and blockwise quantization), each to a fixpoint under a small rewrite
// limit; the result must validate whenever the input did, applying again must
// change nothing, and the result must save and read back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dialects/onnx/onnx_model.h"
#include "fuzz/graph_ops.h"
#include "fuzz/rule_libraries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<std::string> bytes = graft::OnnxTextToBinary(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnxtxt");
  if (!bytes.ok()) return 0;
  for (const auto& set :
       graft::fuzz::RuleLibraries({"rules/onnx/fold_batch_norms.graft",
                                   "rules/onnx/quantize_qdq.graft",
                                   "rules/onnx/quantize_dynamic.graft",
                                   "rules/onnx/quantize_nbits.graft"})) {
    absl::StatusOr<graft::Graph> graph =
        graft::ParseOnnx(*bytes, "fuzz.onnxtxt");
    if (!graph.ok()) return 0;
    if (!graft::fuzz::ApplyToFixpoint(*graph, *set)) continue;
    graft::fuzz::ExerciseGraph(*graph);
  }
  return 0;
}
