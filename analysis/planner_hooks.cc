#include "analysis/planner_hooks.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "analysis/checkpoint.h"
#include "analysis/swap.h"

namespace graft::analysis {
namespace {

using VT = ValueType;
using Args = absl::Span<const Value>;

// The schedule of no graph: what reads only the regions need not schedule
// the graph after every edit.
const MemoryReport kNoSchedule;

// Calls `fn` with the training graph the hooks see now (regions found), or
// fails as finding them failed. Its schedule is `schedule` when given (one
// planned earlier, or kNoSchedule), else the graph's as it is now.
absl::StatusOr<Value> WithTrainingGraph(
    Cache& cache, const Graph& graph,
    const std::function<absl::StatusOr<Value>(const TrainingGraph&)>& fn,
    const MemoryReport* schedule = nullptr) {
  std::shared_ptr<Analyses> an = cache.For(graph);
  // Plans rest on every node's shape and cost: a node that does not match
  // its op stops them with the validator's message.
  if (absl::Status s = an->shapes.CheckSignatures(); !s.ok()) return s;
  const absl::StatusOr<Regions>& regions = cache.RegionsOf(*an);
  if (!regions.ok()) return regions.status();
  if (schedule != nullptr)
    return fn(TrainingGraph{graph, an->shapes, *regions, *schedule});
  const absl::StatusOr<MemoryReport>& memory = cache.MemoryOf(*an);
  if (!memory.ok()) return memory.status();
  return fn(TrainingGraph{graph, an->shapes, *regions, *memory});
}

// WithTrainingGraph on the schedule the swaps were planned on (as TFLMS
// finds its triggers on the graph it plans), when `t` is a tensor that
// plan saw; else on the graph's schedule as it is now.
absl::StatusOr<Value> WithSwapPlan(
    Cache& cache, const Graph& graph, Endpoint t,
    const std::function<absl::StatusOr<Value>(
        const TrainingGraph&, const std::vector<bool>* carriers)>& fn) {
  std::shared_ptr<const MemoryReport> planned;
  std::shared_ptr<const std::vector<bool>> carriers;
  {
    std::shared_ptr<Analyses> an = cache.For(graph);
    std::lock_guard<std::mutex> lock(an->mu);
    planned = an->swap_schedule;
    carriers = an->swap_carriers;
  }
  if (planned && (t.node >= static_cast<NodeId>(planned->step_of.size()) ||
                  planned->step_of[t.node] < 0))
    planned.reset();  // not a tensor the plan saw: its carriers neither
  return WithTrainingGraph(
      cache, graph,
      [&](const TrainingGraph& g) {
        return fn(g, planned ? carriers.get() : nullptr);
      },
      planned.get());
}

}  // namespace

void RegisterSwapHooks(HookRegistry& r, std::shared_ptr<Cache> cache) {
  AddBuiltinHook(
      r, "swap_candidates",
      {VT::kInt, VT::kInt, VT::kString, VT::kInt, VT::kFloat, VT::kString,
       VT::kOpList, VT::kInt},
      VT::kList,
      "forward tensors backward ops read, of at least `threshold` bytes, "
      "first read back at least `min_distance` steps later, their producers "
      "not matching `exclude`; with `budget_bytes` > 0, the fewest that bring "
      "the `accelerator`'s peak under it, aiming `headroom` of it lower, "
      "each off it from the op its copy out holds back (`wait_ops`, within "
      "`wait_steps`: swap_out_deadline)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              SwapOptions options;
              options.threshold_bytes = a[0].i;
              options.min_distance = static_cast<int>(a[1].i);
              options.exclude = a[2].s;
              options.budget_bytes = a.size() > 3 ? a[3].i : 0;
              if (a.size() > 4) options.budget_headroom = a[4].number();
              options.accelerator = a.size() > 5 ? a[5].s : "";
              if (a.size() > 6) options.wait_ops = a[6].s;
              if (a.size() > 7) options.wait_steps = static_cast<int>(a[7].i);
              absl::StatusOr<std::vector<Endpoint>> ts =
                  SwapCandidates(g, cache->model(), options);
              if (!ts.ok()) return ts.status();
              std::shared_ptr<Analyses> an = cache->For(ctx.graph);
              std::lock_guard<std::mutex> lock(an->mu);
              an->swap_schedule = std::make_shared<MemoryReport>(g.memory);
              an->swap_carriers =
                  std::make_shared<std::vector<bool>>(GradientCarriers(g));
              return TensorList(*ts);
            });
      },
      false, /*optional=*/5);
  AddBuiltinHook(
      r, "swap_trigger", {VT::kTensor, VT::kInt, VT::kInt}, VT::kNode,
      "the op a swap-in of t waits for: it starts the transfer time (bytes "
      "over the device profile's host link) before t's first backward "
      "reader, between lb and ub steps before it",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Endpoint t = a[0].tensor;
        return WithSwapPlan(
            *cache, ctx.graph, t,
            [&](const TrainingGraph& g,
                const std::vector<bool>* planned) -> absl::StatusOr<Value> {
              absl::StatusOr<NodeId> n =
                  SwapTrigger(g, cache->model(), t, static_cast<int>(a[1].i),
                              static_cast<int>(a[2].i),
                              planned ? *planned : GradientCarriers(g));
              if (!n.ok()) return n.status();
              return Value::NodeRef(*n);
            });
      });
  AddBuiltinHook(
      r, "swap_out_deadline", {VT::kTensor, VT::kInt, VT::kOpList}, VT::kList,
      "the forward op that waits for t's copy to the host: of those after "
      "t's last forward reader whose op matches `wait_ops` (`A|B*`; "
      "contractions by default), the first that starts the transfer time "
      "after t's producer (or the last within ub steps of it); [] when none "
      "follows",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Endpoint t = a[0].tensor;
        return WithSwapPlan(
            *cache, ctx.graph, t,
            [&](const TrainingGraph& g,
                const std::vector<bool>*) -> absl::StatusOr<Value> {
              absl::StatusOr<std::optional<NodeId>> n = SwapOutDeadline(
                  g, cache->model(), t, static_cast<int>(a[1].i),
                  a.size() > 2 ? absl::string_view(a[2].s) : kSwapWaitOps);
              if (!n.ok()) return n.status();
              std::vector<NodeId> out;
              if (n->has_value()) out.push_back(**n);
              return NodeList(out);
            });
      },
      false, /*optional=*/1);
}

void RegisterGradientOrderHooks(HookRegistry& r, std::shared_ptr<Cache> cache) {
  AddBuiltinHook(
      r, "early_gradient_ops", {}, VT::kList,
      "gradient ops that read forward tensors and wait for nothing of the "
      "backward pass, so that they run during the forward pass and their "
      "outputs wait for it (those late_trigger can delay)",
      [cache](const HookContext& ctx, Args) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              return NodeList(EarlyGradientOps(g));
            });
      });
  AddBuiltinHook(
      r, "late_trigger", {VT::kNode}, VT::kList,
      "what an early gradient op can wait for to run just before its first "
      "backward reader: that reader's other backward inputs not depending "
      "on it",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              return NodeList(LateTrigger(g, a[0].tensor.node));
            });
      });
}

void RegisterPlannerHooks(HookRegistry& r, std::shared_ptr<Cache> cache) {
  RegisterSwapHooks(r, cache);
  RegisterGradientOrderHooks(r, cache);
  AddBuiltinHook(
      r, "checkpoint_tensors", {VT::kString, VT::kString, VT::kInt, VT::kFloat},
      VT::kList,
      "the forward tensors to keep for the backward pass: strategy list "
      "(node names matching `names`), speed (conv and matmul outputs), "
      "memory (sqrt(N) bottlenecks) or budget (fit `budget_bytes`, a "
      "planned rewrite aiming `headroom` of it lower)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              CheckpointOptions options{a[0].s, a[1].s, a[2].i, a[3].number()};
              absl::StatusOr<std::vector<Endpoint>> cps =
                  ChooseCheckpoints(g, options);
              if (!cps.ok()) return cps.status();
              return TensorList(*cps);
            });
      });
  AddBuiltinHook(
      r, "recompute_segments", {VT::kList}, VT::kList,
      "the forward ops to recompute from the checkpoints, one list per "
      "segment (in schedule order)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              std::vector<Endpoint> cps;
              for (const Value& v : a[0].list) cps.push_back(v.tensor);
              std::vector<Value> segments;
              std::map<std::vector<NodeId>, std::vector<NodeId>> triggers;
              for (const std::vector<NodeId>& s : RecomputeSegments(g, cps)) {
                triggers[s] = RecomputeTrigger(g, s);
                segments.push_back(NodeList(s));
              }
              std::shared_ptr<Analyses> an = cache->For(ctx.graph);
              std::lock_guard<std::mutex> lock(an->mu);
              an->recompute_triggers = std::move(triggers);
              return Value::List(std::move(segments));
            });
      });
  AddBuiltinHook(
      r, "segment_outputs", {VT::kList}, VT::kList,
      "the tensors of a segment's nodes that backward ops read",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              return TensorList(SegmentOutputs(g, NodesOf(a[0])));
            },
            &kNoSchedule);
      });
  AddBuiltinHook(
      r, "segment_entries", {VT::kList}, VT::kList,
      "one tensor from outside a segment for each node of it that reads "
      "nothing the segment computes: what holds its copies back",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              return TensorList(SegmentEntries(g, NodesOf(a[0])));
            },
            &kNoSchedule);
      });
  AddBuiltinHook(
      r, "recompute_trigger", {VT::kList}, VT::kList,
      "what a segment's copies wait for: the backward inputs of the first "
      "backward op that reads the segment (else the gradient seed)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::vector<NodeId> segment = NodesOf(a[0]);
        {
          std::shared_ptr<Analyses> an = cache->For(ctx.graph);
          std::lock_guard<std::mutex> lock(an->mu);
          auto it = an->recompute_triggers.find(segment);
          if (it != an->recompute_triggers.end()) return NodeList(it->second);
        }
        return WithTrainingGraph(
            *cache, ctx.graph,
            [&](const TrainingGraph& g) -> absl::StatusOr<Value> {
              return NodeList(RecomputeTrigger(g, segment));
            });
      });
}

}  // namespace graft::analysis
