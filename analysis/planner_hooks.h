// The training-memory planners' hooks for rules: checkpointing
// (analysis/checkpoint.h)
//   checkpoint_tensors(strategy, names, budget_bytes, headroom),
//   recompute_segments(cps),
//   segment_outputs(segment), recompute_trigger(segment)
// and swapping (analysis/swap.h)
//   swap_candidates(threshold, min_distance, exclude), swap_trigger(t, lb, ub),
//   swap_out_deadline(t, ub)
// and the order of gradient ops (analysis/checkpoint.h)
//   early_gradient_ops(), late_trigger(op)
// Internal to analysis/: registered with the other analysis hooks.
#ifndef GRAFT_ANALYSIS_PLANNER_HOOKS_H_
#define GRAFT_ANALYSIS_PLANNER_HOOKS_H_

#include <memory>

#include "analysis/analysis_cache.h"
#include "engine/hooks.h"

namespace graft::analysis {

void RegisterPlannerHooks(HookRegistry& registry, std::shared_ptr<Cache> cache);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_PLANNER_HOOKS_H_
