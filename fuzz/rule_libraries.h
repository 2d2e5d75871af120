// The shipped rule libraries the apply fuzz targets run, compiled once per
// process with every hook (builtins and analyses); aborts when a file does
// not compile (the targets run from the repository root).
#ifndef GRAFT_FUZZ_RULE_LIBRARIES_H_
#define GRAFT_FUZZ_RULE_LIBRARIES_H_

#include <memory>
#include <vector>

#include "dsl/compiler.h"
#include "engine/graph.h"

namespace graft::fuzz {

// One compiled set per file, in order; the first call's files are kept.
const std::vector<std::unique_ptr<dsl::RuleSet>>& RuleLibraries(
    const std::vector<const char*>& files);

// Applies a set to a fixpoint (at most 200 rewrites): false when it does not
// converge; aborts when a valid graph turns invalid or a second application
// changes anything.
bool ApplyToFixpoint(Graph& graph, const dsl::RuleSet& set);

}  // namespace graft::fuzz

#endif  // GRAFT_FUZZ_RULE_LIBRARIES_H_
