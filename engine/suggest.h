// Names close to a misspelt one: what "did you mean" notes suggest (rule
// files, the validator's unknown ops).
#ifndef GRAFT_ENGINE_SUGGEST_H_
#define GRAFT_ENGINE_SUGGEST_H_

#include <string>
#include <vector>

namespace graft {

// The name of `known` closest to `name` (case-insensitive, at most two
// edits away), or "".
std::string Closest(const std::string& name,
                    const std::vector<std::string>& known);

}  // namespace graft

#endif  // GRAFT_ENGINE_SUGGEST_H_
