// graft's builtin hooks, registered explicitly (no static initializers):
// graph queries (uses, consumed_by, dtype, rank, name_matches, ...),
// constant math (rsqrt, min, reshape, ...), graph surgery (forward_walk,
// filter_ops, subgraph_outputs, node_named, ...) and quantization
// (channel_min, range_min, scale_output_channels, ...). docs/rules.md
// lists them all.
#ifndef GRAFT_BUILTINS_BUILTINS_H_
#define GRAFT_BUILTINS_BUILTINS_H_

#include "engine/hooks.h"

namespace graft {

void RegisterBuiltinHooks(HookRegistry& registry);

}  // namespace graft

#endif  // GRAFT_BUILTINS_BUILTINS_H_
