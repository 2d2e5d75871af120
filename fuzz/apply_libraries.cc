// Fuzz target: a text GraphDef rewritten by every shipped rule library
// (batch-norm folding, constant folding, quantization, checkpointing: a
// graph that is no training graph stops at its plan), each to a fixpoint
// under a small rewrite limit; the result must validate whenever the input
// did, and applying again must change nothing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dialects/graph_io.h"
#include "dsl/compiler.h"
#include "dsl/functions.h"
#include "engine/graph_diff.h"
#include "fuzz/rule_libraries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const auto& set : graft::fuzz::RuleLibraries(
           {"rules/tf/fold_batch_norms.graft", "rules/tf/fold_constants.graft",
            "rules/tf/quantize.graft", "rules/tf/checkpoint.graft"})) {
    absl::StatusOr<graft::Graph> graph = graft::ParseGraph(
        std::string(reinterpret_cast<const char*>(data), size),
        graft::GraphFormat::kText, "fuzz.pbtxt");
    if (!graph.ok()) return 0;
    if (!graft::fuzz::ApplyToFixpoint(*graph, *set)) continue;
    // Inside the library functions too; the result written and diffed.
    graft::dsl::RunOptions run;
    run.max_rewrites = 200;
    graft::report::ApplyReport in_functions;
    absl::StatusOr<graft::Graph> before = graft::ParseGraph(
        std::string(reinterpret_cast<const char*>(data), size),
        graft::GraphFormat::kText, "fuzz.pbtxt");
    if (graft::dsl::RunOnFunctions(*graph, {{"fuzz", set.get()}}, run,
                                   &in_functions)
            .ok()) {
      (void)graft::SerializeGraph(*graph, graft::GraphFormat::kBinary);
      if (before.ok()) (void)graft::DiffGraphs(*before, *graph);
    }
  }
  return 0;
}
