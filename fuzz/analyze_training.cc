// Fuzz target: the training-graph analyses and planners on a fuzzed graph
// (text GraphDef, else binary), as `graft mem`, `graft cost` and the
// checkpoint and swap libraries run them: shapes, regions, schedule and
// memory, the cost of every node and the step, then every checkpoint
// strategy with its segments and triggers, the swap candidates and their
// triggers, and the early gradient ops; the forward/backward partition
// (its backward from the last Placeholder) at a budget, with and without
// swapping. Nodes that do not match their op
// are analysed as `--skip-invalid-nodes` does (left unknown), so every
// analysis must stay safe on them; each must also agree with the signature
// check (no shape for a node it refuses).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/checkpoint.h"
#include "analysis/cost.h"
#include "analysis/memory.h"
#include "analysis/partition.h"
#include "analysis/regions.h"
#include "analysis/schedule.h"
#include "analysis/shapes.h"
#include "analysis/swap.h"
#include "dialects/graph_io.h"
#include "engine/graph_algorithms.h"

namespace {

using namespace graft;            // NOLINT
using namespace graft::analysis;  // NOLINT

void Plan(const TrainingGraph& g, const RooflineModel& model) {
  int64_t peak = 0;
  for (const DeviceMemory& d : g.memory.devices)
    peak = std::max(peak, d.peak_bytes);
  for (const char* strategy : {"speed", "memory", "budget", "list"}) {
    CheckpointOptions options{strategy, "conv|dense", peak / 2};
    absl::StatusOr<std::vector<Endpoint>> cps = ChooseCheckpoints(g, options);
    if (!cps.ok()) continue;
    for (const std::vector<NodeId>& segment : RecomputeSegments(g, *cps)) {
      SegmentOutputs(g, segment);
      RecomputeTrigger(g, segment);
    }
  }
  SwapOptions swap;
  swap.threshold_bytes = 0;
  swap.min_distance = 1;
  absl::StatusOr<std::vector<Endpoint>> swaps = SwapCandidates(g, model, swap);
  if (swaps.ok()) {
    const std::vector<bool> carriers = GradientCarriers(g);
    for (size_t i = 0; i < swaps->size() && i < 8; ++i) {
      (void)SwapTrigger(g, model, (*swaps)[i], 1, 20, carriers);
      (void)SwapOutDeadline(g, model, (*swaps)[i], 20);
    }
  }
  swap.budget_bytes = peak / 2;
  (void)SwapCandidates(g, model, swap);
  for (NodeId op : EarlyGradientOps(g)) LateTrigger(g, op);
}

// The partition with the last Placeholder as the backward's input, at half
// its default, every op's outputs swappable or none: a plan that meets its
// budget fits it, and what it swaps it saves.
void Partition(const Graph& graph, const ShapeMap& shapes) {
  PartitionOptions options;
  graph.ForEachNode([&](const Node& n) {
    if (n.op() == "Placeholder") options.backward_inputs = {n.name()};
  });
  options.budget_fraction = 0.5;
  for (bool swap : {false, true}) {
    if (swap) {
      graph.ForEachNode([&](const Node& n) { options.swappable.push_back(n.name()); });
    }
    absl::StatusOr<PartitionPlan> plan = PlanPartition(graph, shapes, options);
    if (!plan.ok()) return;
    if (plan->saved_bytes < 0 || plan->swapped_bytes < 0) std::abort();
    if (plan->budget_met && plan->saved_bytes > plan->budget_bytes) std::abort();
    if (!swap && !plan->swapped.empty()) std::abort();
    for (Endpoint t : plan->swapped) {
      if (std::find(plan->saved.begin(), plan->saved.end(), t) == plan->saved.end())
        std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const RooflineModel* model = [] {
    absl::StatusOr<DeviceProfile> profile = LoadDeviceProfile("h100_sxm");
    if (!profile.ok()) std::abort();
    return new RooflineModel(*profile);
  }();
  std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Graph> graph =
      ParseGraph(bytes, GraphFormat::kText, "fuzz.pbtxt");
  if (!graph.ok()) graph = ParseGraph(bytes, GraphFormat::kBinary, "fuzz.pb");
  if (!graph.ok()) return 0;

  ShapeMap shapes = InferShapes(*graph);
  for (const auto& [id, message] : shapes.mismatched()) {
    for (int p = 0; p < shapes.num_outputs(id); ++p) {
      // A refused node gets no shape from a shape function.
      if (shapes.at({id, p}).value && !graph->node(id).attr("_output_shapes"))
        std::abort();
    }
  }
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(*graph);
  graph->ForEachNode([&](const Node& n) {
    (void)model->Cost(*graph, shapes, n.id());
    (void)MeasurementKey(shapes, n);
  });
  if (order.ok()) EstimateStepTime(*graph, shapes, *model, *order, "");
  // With several threads (siblings run together) the same nodes, each once,
  // after their inputs.
  absl::StatusOr<std::vector<NodeId>> threaded = ExecutorOrder(*graph, 2);
  if (order.ok() != threaded.ok()) std::abort();
  if (threaded.ok()) {
    if (threaded->size() != order->size()) std::abort();
    std::vector<int> step(graph->id_limit(), -1);
    for (size_t i = 0; i < threaded->size(); ++i) {
      if (step[(*threaded)[i]] != -1) std::abort();
      step[(*threaded)[i]] = static_cast<int>(i);
    }
    for (NodeId id : *threaded) {
      for (Endpoint e : graph->node(id).inputs()) {
        if (e.node != kNoNode && !IsBackEdge(*graph, e.node, id) &&
            step[e.node] > step[id])
          std::abort();
      }
    }
  }
  MemoryOptions oned;
  oned.threads = 4;  // the schedule Eigen's below assumes
  absl::StatusOr<MemoryReport> memory = SimulateMemory(*graph, shapes, oned);
  // Eigen's scratch, several threads: never below the peak without it.
  MemoryOptions eigen;
  eigen.cpu_kernels = CpuKernels::kEigen;
  eigen.threads = 4;
  absl::StatusOr<MemoryReport> with_scratch =
      SimulateMemory(*graph, shapes, eigen);
  if (memory.ok() != with_scratch.ok()) std::abort();
  if (memory.ok()) {
    for (const DeviceMemory& d : memory->devices) {
      bool found = false;
      for (const DeviceMemory& s : with_scratch->devices) {
        if (s.device != d.device) continue;
        found = true;
        if (s.peak_bytes < d.peak_bytes) std::abort();
      }
      if (!found) std::abort();
    }
  }
  Partition(*graph, shapes);
  absl::StatusOr<Regions> regions = FindRegions(*graph, shapes);
  if (memory.ok() && regions.ok())
    Plan(TrainingGraph{*graph, shapes, *regions, *memory}, *model);
  // The planners again with the kernels' scratch in every peak.
  if (with_scratch.ok() && regions.ok())
    Plan(TrainingGraph{*graph, shapes, *regions, *with_scratch}, *model);
  return 0;
}
