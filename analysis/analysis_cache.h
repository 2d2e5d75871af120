// The analyses the hooks share: one per graph being worked on, computed
// when a hook first needs each part and kept up to date from the graph's
// edit log. Internal to analysis/ (hooks.cc, planner_hooks.cc).
#ifndef GRAFT_ANALYSIS_ANALYSIS_CACHE_H_
#define GRAFT_ANALYSIS_ANALYSIS_CACHE_H_

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/cost.h"
#include "analysis/hooks.h"
#include "analysis/memory.h"
#include "analysis/regions.h"
#include "analysis/shapes.h"
#include "engine/kept_per_graph.h"

namespace graft::analysis {

// The analyses of one graph version, each computed when a hook first needs
// it (a rule that only asks for `bytes` never schedules the graph).
struct Analyses {
  const Graph* graph = nullptr;
  ShapeMap shapes;
  std::mutex mu;  // guards the lazily computed parts below
  std::optional<absl::StatusOr<Regions>> regions;
  // The loss and seed the regions were first found with (by name): later
  // versions of the graph keep them, rather than guessing again on a graph
  // the rewrites have made less plain.
  std::string found_loss, found_seed;
  std::optional<absl::StatusOr<MemoryReport>> memory;
  absl::flat_hash_map<Endpoint, size_t>
      life_of;  // tensor -> memory->tensors index
  // What each recompute segment's copies wait for, found with the schedule
  // when the segments were planned (the hooks' plan, once per apply): a
  // segment's first reader is the same until its own rewrite, and the
  // schedule is not found again after every rewrite to say so.
  std::map<std::vector<NodeId>, std::vector<NodeId>> recompute_triggers;
  // The schedule the swap candidates were planned on (once per apply): each
  // swap-in's trigger is found on it, as TFLMS finds every trigger on the
  // graph it plans, rather than on a schedule found again after every swap.
  std::shared_ptr<const MemoryReport> swap_schedule;
  // Its gradient carriers (GradientCarriers), where swap-ins wait.
  std::shared_ptr<const std::vector<bool>> swap_carriers;
};

// The analyses of the graph versions hooks were last asked about. Safe to
// share between threads (rule sets that use these hooks are): each caller
// holds the analyses it reads.
class Cache {
 public:
  Cache(AnalysisHookOptions options, DeviceProfile profile)
      : options_(std::move(options)), model_(std::move(profile)) {}

  // The analyses of `graph` now: those of an earlier version brought up to
  // date from the graph's edit log, or computed anew.
  std::shared_ptr<Analyses> For(const Graph& graph) {
    std::unique_lock<std::recursive_mutex> lock;
    auto entry = kept_.For(
        graph, &lock,
        [&] {
          auto a = std::make_unique<Analyses>();
          a->graph = &graph;
          a->shapes = InferShapes(graph, options_.shapes);
          return a;
        },
        [&](Analyses& a, std::vector<NodeId> touched) {
          Update(graph, touched, a);
        });
    return std::shared_ptr<Analyses>(entry, entry->value.get());
  }

  // Shapes and regions follow the edits; the schedule and liveness are
  // computed again when next asked for.
  void Update(const Graph& graph, const std::vector<NodeId>& touched,
              Analyses& a) {
    std::lock_guard<std::mutex> lock(a.mu);
    UpdateShapes(graph, options_.shapes, touched, &a.shapes);
    if (a.regions && a.regions->ok()) {
      if (!UpdateRegions(graph, touched, &**a.regions)) a.regions.reset();
    } else {
      a.regions.reset();
    }
    a.memory.reset();
    a.life_of.clear();
    // The swap plan's schedule holds while every node it scheduled lives
    // (another rule of the set may erase one); then triggers are found on
    // the graph's schedule again.
    if (a.swap_schedule &&
        std::any_of(touched.begin(), touched.end(), [&](NodeId id) {
          const std::vector<int>& step_of = a.swap_schedule->step_of;
          return !graph.node(id).alive() &&
                 id < static_cast<NodeId>(step_of.size()) && step_of[id] >= 0;
        }))
      a.swap_schedule.reset();
  }

  const absl::StatusOr<Regions>& RegionsOf(Analyses& a) {
    std::lock_guard<std::mutex> lock(a.mu);
    if (!a.regions && !a.found_seed.empty()) {
      a.regions = FindRegions(*a.graph, a.shapes, a.found_loss, a.found_seed);
      if (!a.regions->ok()) a.regions.reset();  // renamed or removed
    }
    if (!a.regions)
      a.regions = FindRegions(*a.graph, a.shapes, options_.loss, options_.seed);
    if (a.regions->ok() && a.found_seed.empty()) {
      a.found_loss = a.graph->node((*a.regions)->loss).name();
      a.found_seed = a.graph->node((*a.regions)->seed).name();
    }
    return *a.regions;
  }

  const absl::StatusOr<MemoryReport>& MemoryOf(Analyses& a) {
    std::lock_guard<std::mutex> lock(a.mu);
    if (!a.memory) {
      MemoryOptions m;
      m.outputs = options_.outputs;
      m.default_device = options_.default_device;
      m.cpu_kernels = options_.cpu_kernels;
      m.threads = 1;  // plans are made for one op at a time, on any machine
      a.memory = SimulateMemory(*a.graph, a.shapes, m);
      if (a.memory->ok()) {
        for (size_t i = 0; i < (*a.memory)->tensors.size(); ++i) {
          a.life_of[(*a.memory)->tensors[i].tensor] = i;
        }
      }
    }
    return *a.memory;
  }

  const RooflineModel& model() const { return model_; }

 private:
  AnalysisHookOptions options_;
  RooflineModel model_;
  KeptPerGraph<Analyses> kept_{4};  // graphs worked on at once
};

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_ANALYSIS_CACHE_H_
