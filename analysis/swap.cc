#include "analysis/swap.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/name_regex.h"
#include "engine/op_registry.h"

namespace graft::analysis {
namespace {

// The schedule step of t's first backward reader, or -1.
int FirstBackwardRead(const TrainingGraph& g, Endpoint t) {
  int first = -1;
  for (InputSlot s : g.graph.node(t.node).consumers(t.port)) {
    if (!g.regions.in_backward(s.node)) continue;
    int step = StepOf(g, s.node);
    if (step >= 0 && (first < 0 || step < first)) first = step;
  }
  return first;
}

bool Stateful(const Graph& graph, NodeId id) {
  const tf::OpDef* def = OpRegistry::For(graph).Find(graph.node(id).op());
  return def == nullptr || def->is_stateful();
}

// The last forward reader of t, or t's producer when none.
int LastForwardRead(const TrainingGraph& g, Endpoint t) {
  int last = StepOf(g, t.node);
  for (InputSlot s : g.graph.node(t.node).consumers(t.port)) {
    if (g.regions.in_forward(s.node)) last = std::max(last, StepOf(g, s.node));
  }
  return last;
}

// The estimated time (us) of t's copy over `model`'s host link.
double TransferMicros(const TrainingGraph& g, const RooflineModel& model,
                      Endpoint t) {
  double gbps = model.profile().host_bandwidth_gbps;
  return gbps > 0 ? static_cast<double>(
                        std::max<int64_t>(g.shapes.at(t).bytes(), 0)) /
                        (gbps * 1e3)
                  : 0;
}

// Of `candidates`, the fewest (largest first at each peak) that bring the
// accelerator's live bytes under `budget`, estimated on the schedule.
absl::StatusOr<std::vector<Endpoint>> WithinBudget(
    const TrainingGraph& g, const RooflineModel& model,
    const std::vector<Endpoint>& candidates, const SwapOptions& options) {
  const DeviceMemory* device = nullptr;
  for (const DeviceMemory& d : g.memory.devices) {
    if (options.accelerator.empty()
            ? device == nullptr || d.peak_bytes > device->peak_bytes
            : d.device == options.accelerator)
      device = &d;
  }
  if (device == nullptr) {
    return absl::NotFoundError(absl::StrCat("no tensors on the accelerator `",
                                            options.accelerator, "`"));
  }
  // Live bytes per step on that device, as the library leaves the graph
  // (its gradient order applied), from the tensors that own buffers and
  // those holding a shared buffer (a Reshape's) after its owner: each
  // span's bytes added at its first step and taken at the step after its
  // last, then summed along the schedule.
  const int steps = static_cast<int>(g.memory.schedule.size());
  std::vector<int64_t> live(steps + 1, 0);
  auto add_on_device = [&](Endpoint t, const Lifetimes::Span& span) {
    const std::string& d = g.graph.node(t.node).device();
    if (span.bytes <= 0 || span.alloc >= steps || span.free < span.alloc ||
        !(d.empty() || d == device->device))
      return;
    live[span.alloc] += span.bytes;
    live[std::min(span.free, steps - 1) + 1] -= span.bytes;
  };
  Lifetimes lifetimes = OrderedLifetimes(g);
  for (const auto& [t, span] : lifetimes.of) add_on_device(t, span);
  for (const auto& [t, span] : lifetimes.holds_shared) add_on_device(t, span);
  for (const auto& [op, span] : lifetimes.scratch) add_on_device(op, span);
  for (int k = 1; k <= steps; ++k) live[k] += live[k - 1];
  std::vector<Endpoint> chosen;
  auto peak_step = [&] {
    return static_cast<int>(std::max_element(live.begin(), live.end()) -
                            live.begin());
  };
  // Fits as it is (applying the library again changes nothing).
  const int64_t ordered_peak = live[peak_step()];
  if (ordered_peak <= options.budget_bytes) return chosen;
  // A planned swap aims below the budget by the headroom: TensorFlow with
  // Grappler on measured the CIFAR ResNet's plan at half its peak 4% above
  // the estimate.
  const int64_t target =
      HeadroomTarget(options.budget_bytes, options.budget_headroom);
  // Each candidate's bytes and the steps it is off the accelerator when
  // swapped: from the op its copy out holds back (else after its last
  // forward reader), before its first backward reader.
  struct Window {
    int after = 0, before = 0;
    int64_t bytes = 0;
  };
  std::vector<Window> windows;
  for (Endpoint t : candidates) {
    int after = LastForwardRead(g, t);
    absl::StatusOr<std::optional<NodeId>> deadline =
        SwapOutDeadline(g, model, t, options.wait_steps, options.wait_ops);
    if (deadline.ok() && deadline->has_value())
      after = std::max(after, StepOf(g, **deadline) - 1);
    windows.push_back({after, FirstBackwardRead(g, t), g.shapes.at(t).bytes()});
  }
  std::vector<bool> used(candidates.size(), false);
  while (true) {
    int peak = peak_step();
    if (live[peak] <= target) break;
    // The largest candidate off the accelerator at the peak.
    int best = -1;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Window& w = windows[i];
      if (!used[i] && w.after < peak && peak < w.before &&
          w.bytes > (best < 0 ? 0 : windows[best].bytes)) {
        best = static_cast<int>(i);
      }
    }
    if (best < 0) {
      // Within the budget but not its headroom: every swap that helped.
      if (live[peak] <= options.budget_bytes) break;
      return absl::FailedPreconditionError(
          absl::StrCat("an accelerator peak of ", options.budget_bytes,
                       " bytes cannot be reached by swapping: ", device->device,
                       " peaks at ", device->peak_bytes,
                       " bytes as graft mem schedules it, at about ",
                       ordered_peak,
                       " in the gradient order the library applies, and at "
                       "about ",
                       live[peak], " with every swap that helps (",
                       candidates.size(), " forward tensor(s) of at least ",
                       options.threshold_bytes, " bytes waiting at least ",
                       options.min_distance, " steps for the backward pass)"));
    }
    used[best] = true;
    const Window& w = windows[best];
    for (int k = w.after + 1; k < w.before; ++k) live[k] -= w.bytes;
    chosen.push_back(candidates[best]);
  }
  SortBySchedule(g, &chosen);
  return chosen;
}

}  // namespace

absl::StatusOr<std::vector<Endpoint>> SwapCandidates(
    const TrainingGraph& g, const RooflineModel& model,
    const SwapOptions& options) {
  std::shared_ptr<const NameRegex> exclude;
  if (!options.exclude.empty()) {
    absl::StatusOr<std::shared_ptr<const NameRegex>> re =
        NameRegex::Compile(options.exclude);
    if (!re.ok()) return re.status();
    exclude = *std::move(re);
  }
  // Steps are counted without the identities and no-ops the schedule runs
  // in between (the library's own among them: a second apply finds the
  // distances the first did); ops_before[k]: such ops before step k.
  const int steps = static_cast<int>(g.memory.schedule.size());
  std::vector<int> ops_before(steps + 1, 0);
  for (int k = 0; k < steps; ++k) {
    const std::string& op = g.graph.node(g.memory.schedule[k]).op();
    ops_before[k + 1] =
        ops_before[k] + (op == "Identity" || op == "NoOp" ? 0 : 1);
  }
  std::vector<Endpoint> out;
  g.graph.ForEachNode([&](const Node& n) {
    if (!g.regions.in_forward(n.id()) || n.op() == "Const" ||
        n.op() == "VarHandleOp" || n.op() == "ReadVariableOp")
      return;
    if (exclude && exclude->FullMatch(n.name())) return;
    for (int p = 0; p < n.num_used_ports(); ++p) {
      Endpoint t{n.id(), p};
      if (g.shapes.at(t).bytes() < options.threshold_bytes) continue;
      int first = FirstBackwardRead(g, t);
      if (first < 0 || ops_before[first] - ops_before[StepOf(g, n.id())] <
                           options.min_distance)
        continue;
      out.push_back(t);
    }
  });
  SortBySchedule(g, &out);
  if (options.budget_bytes > 0) return WithinBudget(g, model, out, options);
  return out;
}

std::vector<bool> GradientCarriers(const TrainingGraph& g) {
  const Graph& graph = g.graph;
  auto reads_activation = [&](NodeId id) {
    for (Endpoint e : graph.node(id).inputs()) {
      if (!e.valid() || !g.regions.in_forward(e.node)) continue;
      const std::string& op = graph.node(e.node).op();
      if (op != "Const" && op != "ReadVariableOp" && op != "VarHandleOp")
        return true;
    }
    return false;
  };
  std::vector<bool> out(graph.id_limit(), false);
  const std::vector<NodeId>& schedule = g.memory.schedule;
  for (auto it = schedule.rbegin(); it != schedule.rend(); ++it) {
    const Node& n = graph.node(*it);
    if (!g.regions.in_backward(*it) || Stateful(graph, *it)) continue;
    bool carries = false;
    for (int p = 0; p < n.num_used_ports() && !carries; ++p) {
      for (InputSlot s : n.consumers(p)) {
        if (g.regions.in_backward(s.node) && !Stateful(graph, s.node) &&
            (out[s.node] || reads_activation(s.node))) {
          carries = true;
          break;
        }
      }
    }
    out[*it] = carries;
  }
  return out;
}

absl::StatusOr<NodeId> SwapTrigger(const TrainingGraph& g,
                                   const RooflineModel& model, Endpoint t,
                                   int lb, int ub,
                                   const std::vector<bool>& carriers) {
  int first = FirstBackwardRead(g, t);
  if (first < 0) {
    return absl::NotFoundError(absl::StrCat(
        "`", g.graph.TensorName(t), "` has no backward reader to swap in for"));
  }
  const double transfer_us = TransferMicros(g, model, t);
  // Back from the first reader until the ops before it cover the transfer,
  // between lb and ub steps (and never before t's producer).
  int producer = StepOf(g, t.node);
  int step = first - std::max(lb, 1);
  double covered = 0;
  for (int k = first - 1; k >= 0 && k > producer; --k) {
    covered += model.Cost(g.graph, g.shapes, g.memory.schedule[k]).time_us;
    step = k;
    if (first - k >= lb && covered >= transfer_us) break;
    if (first - k >= ub) break;
  }
  step = std::max(step, producer + 1);
  if (step >= first) step = first - 1;
  if (step <= producer) {
    return absl::NotFoundError(absl::StrCat("no op runs between `",
                                            g.graph.TensorName(t),
                                            "` and its first backward reader"));
  }
  // The nearest op there that carries the gradient on (earlier first, else
  // later).
  auto carries = [&](int k) {
    NodeId id = g.memory.schedule[k];
    return id < static_cast<NodeId>(carriers.size()) && carriers[id];
  };
  for (int k = step; k > producer; --k) {
    if (carries(k)) return g.memory.schedule[k];
  }
  for (int k = step + 1; k < first; ++k) {
    if (carries(k)) return g.memory.schedule[k];
  }
  return g.memory.schedule[step];
}

absl::StatusOr<std::optional<NodeId>> SwapOutDeadline(
    const TrainingGraph& g, const RooflineModel& model, Endpoint t, int ub,
    absl::string_view wait_ops) {
  const int producer = StepOf(g, t.node);
  if (producer < 0) {
    return absl::NotFoundError(absl::StrCat(
        "`", g.graph.TensorName(t), "` is not produced in the schedule"));
  }
  const int last_read = LastForwardRead(g, t);
  const std::string& device = g.graph.node(t.node).device();
  const double transfer_us = TransferMicros(g, model, t);
  const int steps = static_cast<int>(g.memory.schedule.size());
  const std::vector<std::string> waits = SplitGlobs(wait_ops);
  // Forward from the producer: the ops after it cover the transfer.
  std::optional<NodeId> deadline;
  double covered = 0;
  for (int k = producer + 1; k < steps; ++k) {
    const NodeId op = g.memory.schedule[k];
    const Node& n = g.graph.node(op);
    if (k > last_read && g.regions.in_forward(op) && n.num_inputs() > 0 &&
        n.device() == device && GlobsMatch(waits, n.op())) {
      if (deadline && k - producer > ub) break;
      deadline = op;
      if (covered >= transfer_us || k - producer >= ub) break;
    }
    if (covered < transfer_us)
      covered += model.Cost(g.graph, g.shapes, op).time_us;
  }
  return deadline;
}

}  // namespace graft::analysis
