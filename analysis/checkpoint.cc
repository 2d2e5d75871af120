#include "analysis/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/name_regex.h"
#include "engine/op_registry.h"

namespace graft::analysis {
namespace {

void SortNodesBySchedule(const TrainingGraph& g, std::vector<NodeId>* ids) {
  std::sort(ids->begin(), ids->end(), [&](NodeId a, NodeId b) {
    int sa = StepOf(g, a), sb = StepOf(g, b);
    return sa != sb ? sa < sb : a < b;
  });
}

// Whether a backward op reads `t`.
bool ReadByBackward(const TrainingGraph& g, Endpoint t) {
  for (InputSlot s : g.graph.node(t.node).consumers(t.port)) {
    if (g.regions.in_backward(s.node)) return true;
  }
  return false;
}

// The bytes a tensor adds to the peak: none when shared or persistent.
int64_t CountedBytes(const TensorLife& t) {
  return t.persistent || t.aliased ? 0 : t.bytes;
}

// The forward tensors of recomputable ops that backward ops read.
std::vector<Endpoint> SavedTensors(const TrainingGraph& g) {
  std::vector<Endpoint> out;
  g.graph.ForEachNode([&](const Node& n) {
    if (!Recomputable(g, n.id())) return;
    for (int p = 0; p < n.num_used_ports(); ++p) {
      if (ReadByBackward(g, {n.id(), p})) out.push_back({n.id(), p});
    }
  });
  SortBySchedule(g, &out);
  return out;
}

// The forward ops that depend on an input (a Placeholder): what varies
// from step to step. A tensor made from constants alone (a `zeros_like` of
// a static shape) may be computed at any time and say nothing of where the
// graph narrows.
std::vector<bool> Varying(const TrainingGraph& g) {
  std::vector<bool> varying(g.graph.id_limit(), false);
  std::vector<NodeId> todo;
  g.graph.ForEachNode([&](const Node& n) {
    // A tf.function's variables come in as resource placeholders: like a
    // VarHandleOp, not an input (Keras 3's dropout masks, drawn from its
    // seed generator's variable, would otherwise look like activations).
    if (IsFedInput(n, g.shapes)) {
      varying[n.id()] = true;
      todo.push_back(n.id());
    }
  });
  while (!todo.empty()) {
    const Node& n = g.graph.node(todo.back());
    todo.pop_back();
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (InputSlot s : n.consumers(p)) {
        if (!varying[s.node] && g.regions.in_forward(s.node)) {
          varying[s.node] = true;
          todo.push_back(s.node);
        }
      }
    }
  }
  return varying;
}

// Bottleneck tensors of the forward graph: at its producer's step, the
// tensor of a recomputable op (that depends on the inputs) that holds
// nearly all (>= 90%) of the bytes that later forward ops still read. (Not
// "the only one": a small tensor that crosses the whole forward pass, as
// the labels' reshape the loss reads at the end, would leave no
// bottleneck at all.)
std::vector<Endpoint> Bottlenecks(const TrainingGraph& g) {
  std::vector<bool> varying = Varying(g);
  size_t steps = g.memory.schedule.size();
  std::vector<int64_t> crossing(steps + 1, 0);
  std::vector<std::pair<Endpoint, int64_t>> crossing_tensors;  // and bytes
  g.graph.ForEachNode([&](const Node& n) {
    if (!Recomputable(g, n.id()) || !varying[n.id()]) return;
    int a = StepOf(g, n.id());
    for (int p = 0; p < n.num_used_ports(); ++p) {
      int last = -1;
      for (InputSlot s : n.consumers(p)) {
        if (g.regions.in_forward(s.node))
          last = std::max(last, StepOf(g, s.node));
      }
      if (a < 0 || last <= a) continue;
      int64_t bytes = std::max<int64_t>(g.shapes.at({n.id(), p}).bytes(), 1);
      crossing[a] += bytes;
      crossing[last] -= bytes;
      crossing_tensors.push_back({{n.id(), p}, bytes});
    }
  });
  for (size_t i = 1; i < crossing.size(); ++i) crossing[i] += crossing[i - 1];
  std::vector<Endpoint> out;
  for (const auto& [t, bytes] : crossing_tensors) {
    if (10 * bytes >= 9 * crossing[StepOf(g, t.node)]) out.push_back(t);
  }
  SortBySchedule(g, &out);
  return out;
}

// k of `candidates`, evenly spaced (none at the very ends).
std::vector<Endpoint> Evenly(const std::vector<Endpoint>& candidates,
                             size_t k) {
  std::vector<Endpoint> out;
  size_t n = candidates.size();
  if (k >= n) return candidates;
  for (size_t i = 1; i <= k; ++i) out.push_back(candidates[i * n / (k + 1)]);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool ExpensiveOp(const std::string& op) {
  static const absl::flat_hash_set<std::string> kOps = {"Conv2D",
                                                        "Conv3D",
                                                        "DepthwiseConv2dNative",
                                                        "MatMul",
                                                        "BatchMatMul",
                                                        "BatchMatMulV2",
                                                        "BatchMatMulV3",
                                                        "Conv2DBackpropInput",
                                                        "Einsum"};
  return kOps.contains(op);
}

// Which segment a tensor falls in: the number of checkpoints scheduled
// before its producer.
size_t SegmentIndex(const TrainingGraph& g, const std::vector<int>& cp_steps,
                    Endpoint t) {
  return std::lower_bound(cp_steps.begin(), cp_steps.end(), StepOf(g, t.node)) -
         cp_steps.begin();
}

std::vector<int> CheckpointSteps(const TrainingGraph& g,
                                 absl::Span<const Endpoint> checkpoints) {
  std::vector<int> steps;
  for (Endpoint c : checkpoints) steps.push_back(StepOf(g, c.node));
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::vector<std::vector<NodeId>> SegmentsOf(
    const TrainingGraph& g, absl::Span<const Endpoint> checkpoints);

bool MatMulLike(const std::string& op) {
  return op == "MatMul" || absl::StartsWith(op, "BatchMatMul") ||
         absl::StartsWith(op, "Conv2DBackprop");
}

// The peak the rewrite of `checkpoints` leaves, simulated on the graph's
// schedule (with the gradient order of OrderedLifetimes): a recomputed
// tensor's original dies after its last forward reader; each segment's
// copies are made between the step before the segment's first backward
// reader and that reader, the ones backward ops read live to their last
// reader and the others only while the segment is recomputed; a shared
// buffer lives to the last reader of any tensor sharing it.
int64_t PlannedPeak(const TrainingGraph& g, const Lifetimes& base,
                    absl::Span<const Endpoint> checkpoints) {
  const int steps = base.steps;
  // Live bytes at each step (index 2 x step) and between each step and the
  // next (2 x step + 1), when a segment's copies run.
  std::vector<int64_t> delta(2 * steps + 3, 0);
  auto live = [&](int from, int to, int64_t bytes) {
    if (bytes <= 0 || from < 0) return;
    from = std::min(from, steps);
    to = std::max(from, std::min(to, steps));
    delta[2 * from] += bytes;
    delta[2 * to + 1] -= bytes;
  };
  // Live between `step - 1` and `step` only (what a segment's copies hold
  // while they run).
  auto live_before = [&](int step, int64_t bytes) {
    if (bytes <= 0 || step < 1 || step >= steps) return;
    delta[2 * step - 1] += bytes;
    delta[2 * step] -= bytes;
  };
  auto counted = [&](Endpoint t) -> int64_t {
    auto it = base.of.find(t);
    return it == base.of.end() ? 0 : it->second.bytes;
  };
  auto readers = [&](Endpoint t, bool backward) {
    std::pair<int, int> span = {steps, -1};  // first, last
    for (InputSlot s : g.graph.node(t.node).consumers(t.port)) {
      if (g.regions.in_backward(s.node) != backward) continue;
      span.first = std::min(span.first, StepOf(g, s.node));
      span.second = std::max(span.second, StepOf(g, s.node));
    }
    return span;
  };
  absl::flat_hash_set<Endpoint> rerouted;
  // What the copies read from outside their segment (the checkpoints) lives
  // until they are made.
  absl::flat_hash_map<Endpoint, int> read_by_copies;
  for (const std::vector<NodeId>& segment : SegmentsOf(g, checkpoints)) {
    std::vector<Endpoint> outputs = SegmentOutputs(g, segment);
    int first = steps;
    for (Endpoint t : outputs) first = std::min(first, readers(t, true).first);
    for (Endpoint t : outputs) {
      rerouted.insert(t);
      int last = readers(t, true).second;
      if (last >= first) live(first, last, counted(t));
    }
    // The copies run one after another at `first`: each lives from its
    // turn to its last reader among them (or, read by backward ops, to the
    // end); their largest sum is the spike at `first`.
    absl::flat_hash_map<NodeId, int> turn;
    for (size_t i = 0; i < segment.size(); ++i) turn[segment[i]] = i;
    std::vector<int64_t> spike(segment.size() + 1, 0);
    for (NodeId id : segment) {
      const Node& n = g.graph.node(id);
      for (int p = 0; p < n.num_used_ports(); ++p) {
        int end = turn[id];
        if (rerouted.contains({id, p})) {
          end = static_cast<int>(segment.size()) - 1;
        } else {
          for (InputSlot s : n.consumers(p)) {
            auto it = turn.find(s.node);
            if (it != turn.end()) end = std::max(end, it->second);
          }
        }
        spike[turn[id]] += counted({id, p});
        spike[end + 1] -= counted({id, p});
      }
    }
    int64_t most = 0, now_in = 0;
    for (int64_t d : spike) most = std::max(most, now_in += d);
    live_before(first, most);
    absl::flat_hash_set<NodeId> in(segment.begin(), segment.end());
    for (NodeId id : segment) {
      const Node& n = g.graph.node(id);
      for (Endpoint e : n.inputs()) {
        if (!e.valid() || in.contains(e.node)) continue;
        int& until = read_by_copies[e];
        until = std::max(until, first);
      }
    }
  }
  for (const auto& [t, span] : base.holds_shared) {
    int until = rerouted.contains(t) ? readers(t, false).second : span.free;
    auto extended = read_by_copies.find(t);
    if (extended != read_by_copies.end())
      until = std::max(until, extended->second);
    if (until >= span.alloc) live(span.alloc, until, span.bytes);
  }
  for (const auto& [t, span] : base.of) {
    auto extended = read_by_copies.find(t);
    if (extended != read_by_copies.end()) {
      live(span.alloc, std::max(span.free, extended->second), span.bytes);
    } else if (!rerouted.contains(t)) {
      live(span.alloc, span.free, span.bytes);
    } else {
      live(span.alloc, std::max(span.alloc, readers(t, false).second),
           span.bytes);
    }
  }
  for (const auto& [op, span] : base.scratch) live(span.alloc, span.free, span.bytes);
  int64_t peak = 0, now = 0;
  for (int64_t d : delta) peak = std::max(peak, now += d);
  return peak;
}

absl::StatusOr<std::vector<Endpoint>> ForBudget(const TrainingGraph& g,
                                                int64_t budget,
                                                double headroom) {
  std::vector<Endpoint> saved = SavedTensors(g);
  int64_t peak = 0;
  for (const DeviceMemory& d : g.memory.devices)
    peak = std::max(peak, d.peak_bytes);
  // Fits as it is (by the memory report, or by the simulation that planned
  // an earlier rewrite: applying the library again changes nothing).
  if (peak <= budget) return saved;
  Lifetimes base = OrderedLifetimes(g);
  if (PlannedPeak(g, base, saved) <= budget) return saved;
  // A planned rewrite aims below the budget by the headroom: the
  // simulation models the rewrite, not the graph the runtime's passes make
  // of it (ResNet-18's budget plans measured 3-10% above the simulation in
  // TensorFlow with Grappler on).
  const int64_t target = HeadroomTarget(budget, headroom);
  int64_t best = peak;
  std::vector<Endpoint> best_plan;
  std::string best_of;
  auto fits = [&](const std::vector<Endpoint>& candidates, size_t k) {
    std::vector<Endpoint> plan = Evenly(candidates, k);
    int64_t p = PlannedPeak(g, base, plan);
    if (p < best) {
      best = p;
      best_plan = plan;
      best_of = absl::StrCat(k, " checkpoints of ", candidates.size());
    }
    return p <= target;
  };
  // The most checkpoints (the least recomputation) whose simulated peak
  // fits: first a few of the saved tensors recomputed, spread evenly (for a
  // budget near the peak), down to as many checkpoints as there are
  // bottlenecks; then whole blocks recomputed between bottlenecks (for a
  // low budget).
  std::vector<Endpoint> bottlenecks = Bottlenecks(g);
  for (size_t k = saved.size(); k > bottlenecks.size(); --k) {
    if (fits(saved, k)) return Evenly(saved, k);
  }
  for (size_t k = bottlenecks.size(); k >= 1; --k) {
    if (fits(bottlenecks, k)) return Evenly(bottlenecks, k);
  }
  // Within the budget but not its headroom: the lowest simulated peak.
  if (best <= budget && !best_plan.empty()) return best_plan;
  int64_t scratch = 0;
  for (const auto& [op, span] : base.scratch) scratch = std::max(scratch, span.bytes);
  return absl::FailedPreconditionError(absl::StrCat(
      "a peak of ", budget, " bytes cannot be reached: the graph's peak is ",
      peak, " bytes and the best the checkpoints reach is about ", best,
      " bytes (", best_of.empty() ? "none planned" : best_of, ")",
      scratch > 0 ? absl::StrCat("; a kernel's scratch of up to ", scratch,
                                 " bytes (the CPU kernels'; --cpu-kernels) "
                                 "is in every plan's peak")
                  : ""));
}

// `checkpoints` with the tensors of each segment whose recomputation would
// save nothing kept as well: the tensors the backward reads of it are no
// larger than what the segment reads from outside that nothing else keeps
// to the backward pass (a dense layer's sigmoid recomputed from its matmul
// keeps the matmul's output instead of the sigmoid's, as large).
std::vector<Endpoint> KeepWhereRecomputingSavesNothing(
    const TrainingGraph& g, std::vector<Endpoint> checkpoints) {
  absl::flat_hash_map<Endpoint, int64_t> bytes;
  for (const TensorLife& t : g.memory.tensors)
    bytes[t.tensor] = CountedBytes(t);
  auto size = [&](Endpoint t) {
    auto it = bytes.find(t);
    return it == bytes.end() ? int64_t{0} : it->second;
  };
  std::vector<Endpoint> kept = checkpoints;
  for (const std::vector<NodeId>& segment : SegmentsOf(g, checkpoints)) {
    absl::flat_hash_set<NodeId> in(segment.begin(), segment.end());
    absl::flat_hash_set<Endpoint> held;
    for (NodeId id : segment) {
      for (Endpoint e : g.graph.node(id).inputs()) {
        if (e.valid() && !in.contains(e.node) && !ReadByBackward(g, e))
          held.insert(e);
      }
    }
    int64_t replaced = 0, holding = 0;
    std::vector<Endpoint> outputs = SegmentOutputs(g, segment);
    for (Endpoint t : outputs) replaced += size(t);
    for (Endpoint t : held) holding += size(t);
    if (holding >= replaced)
      kept.insert(kept.end(), outputs.begin(), outputs.end());
  }
  SortBySchedule(g, &kept);
  return kept;
}

}  // namespace

int StepOf(const TrainingGraph& g, NodeId id) {
  return id < static_cast<NodeId>(g.memory.step_of.size())
             ? g.memory.step_of[id]
             : -1;
}

void SortBySchedule(const TrainingGraph& g, std::vector<Endpoint>* ts) {
  std::sort(ts->begin(), ts->end(), [&](Endpoint a, Endpoint b) {
    int sa = StepOf(g, a.node), sb = StepOf(g, b.node);
    return sa != sb ? sa < sb : a < b;
  });
}

int64_t HeadroomTarget(int64_t budget, double headroom) {
  return budget - static_cast<int64_t>(std::clamp(headroom, 0.0, 0.9) *
                                       static_cast<double>(budget));
}

Lifetimes OrderedLifetimes(const TrainingGraph& g) {
  Lifetimes out;
  out.steps = static_cast<int>(g.memory.schedule.size());
  absl::flat_hash_set<NodeId> early;
  for (NodeId id : EarlyGradientOps(g)) early.insert(id);
  std::vector<int> last_read;  // by index in g.memory.tensors
  for (const TensorLife& t : g.memory.tensors) {
    Lifetimes::Span span{t.alloc, std::max(t.alloc, HeldUntil(t)),
                         CountedBytes(t)};
    const Node& n = g.graph.node(t.tensor.node);
    int first_reader = out.steps, last_other = -1, first_matmul = out.steps;
    bool bias_grad = false;
    for (InputSlot s : n.consumers(t.tensor.port)) {
      const std::string& op = g.graph.node(s.node).op();
      int step = StepOf(g, s.node);
      first_reader = std::min(first_reader, step);
      if (op == "BiasAddGrad") {
        bias_grad = true;
        continue;
      }
      if (MatMulLike(op)) first_matmul = std::min(first_matmul, step);
      last_other = std::max(last_other, step);
    }
    if (bias_grad && first_matmul < out.steps)
      span.free = std::max(span.alloc, last_other);
    if (early.contains(t.tensor.node) && first_reader < out.steps)
      span.alloc = std::max(span.alloc, first_reader);
    out.of[t.tensor] = span;
    last_read.push_back(span.free);
  }
  // Each shared buffer counted from its owner's producer to the last reader
  // of the owner or of a tensor sharing it.
  for (const SharedHold& h : SharedBufferHolds(g.memory, last_read))
    out.holds_shared[h.tensor] = {h.from, h.to, h.bytes};
  for (size_t step = 0; step < g.memory.scratch_of_step.size(); ++step) {
    const int k = static_cast<int>(step);
    if (g.memory.scratch_of_step[step] > 0)
      out.scratch[{g.memory.schedule[step], 0}] = {k, k, g.memory.scratch_of_step[step]};
  }
  return out;
}

bool Recomputable(const TrainingGraph& g, NodeId id) {
  if (id < 0 || id >= g.graph.id_limit() || !g.regions.in_forward(id))
    return false;
  const Node& n = g.graph.node(id);
  if (!n.alive() || n.num_used_ports() == 0) return false;
  static const absl::flat_hash_set<std::string> kNever = {
      "Const",       "Placeholder",   "PlaceholderWithDefault",
      "VarHandleOp", "VariableV2",    "ReadVariableOp",
      "Enter",       "Exit",          "Merge",
      "Switch",      "NextIteration", "LoopCond"};
  if (kNever.contains(n.op())) return false;
  const tf::OpDef* def = OpRegistry::For(g.graph).Find(n.op());
  return def != nullptr && !def->is_stateful();
}

absl::StatusOr<std::vector<Endpoint>> ChooseCheckpoints(
    const TrainingGraph& g, const CheckpointOptions& options) {
  const std::string& s = options.strategy;
  if (s == "memory") {
    // sqrt(N) checkpoints for N layers (the forward graph's convolutions
    // and matmuls; a layer holds several bottlenecks: matmul, bias, relu),
    // chosen evenly among the bottlenecks.
    std::vector<Endpoint> candidates = Bottlenecks(g);
    if (candidates.empty()) candidates = SavedTensors(g);
    size_t layers = 0;
    g.graph.ForEachNode([&](const Node& n) {
      if (Recomputable(g, n.id()) && ExpensiveOp(n.op())) ++layers;
    });
    if (layers == 0) layers = candidates.size();
    size_t k =
        static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(layers))));
    return Evenly(candidates, k);
  }
  if (s == "speed" || s == "list") {
    std::shared_ptr<const NameRegex> re;
    if (s == "list") {
      absl::StatusOr<std::shared_ptr<const NameRegex>> compiled =
          NameRegex::Compile(options.names);
      if (!compiled.ok()) return compiled.status();
      re = *std::move(compiled);
    }
    // Every output of the ops named (list) or of the expensive ops (speed):
    // what computes them is never done twice.
    std::vector<Endpoint> out;
    g.graph.ForEachNode([&](const Node& n) {
      if (!Recomputable(g, n.id())) return;
      if (!(re ? re->FullMatch(n.name()) : ExpensiveOp(n.op()))) return;
      for (int p = 0; p < n.num_used_ports(); ++p) out.push_back({n.id(), p});
    });
    SortBySchedule(g, &out);
    return re ? out : KeepWhereRecomputingSavesNothing(g, std::move(out));
  }
  if (s == "budget") {
    if (options.budget_bytes <= 0) {
      return absl::InvalidArgumentError(
          "strategy `budget` needs budget_bytes > 0");
    }
    return ForBudget(g, options.budget_bytes, options.budget_headroom);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown checkpoint strategy `", s,
                   "`: expected list, speed, memory or budget"));
}

std::vector<std::vector<NodeId>> RecomputeSegments(
    const TrainingGraph& g, absl::Span<const Endpoint> checkpoints) {
  return SegmentsOf(g, checkpoints);
}

namespace {

std::vector<std::vector<NodeId>> SegmentsOf(
    const TrainingGraph& g, absl::Span<const Endpoint> checkpoints) {
  absl::flat_hash_set<Endpoint> kept(checkpoints.begin(), checkpoints.end());
  std::vector<int> cp_steps = CheckpointSteps(g, checkpoints);
  std::vector<std::vector<NodeId>> groups(cp_steps.size() + 1);
  for (Endpoint t : SavedTensors(g)) {
    if (!kept.contains(t))
      groups[SegmentIndex(g, cp_steps, t)].push_back(t.node);
  }
  std::vector<std::vector<NodeId>> out;
  for (std::vector<NodeId>& group : groups) {
    // What computes the group's tensors, back to the checkpoints and to
    // what is never recomputed.
    absl::flat_hash_set<NodeId> in(group.begin(), group.end());
    std::vector<NodeId> todo = group;
    while (!todo.empty()) {
      NodeId id = todo.back();
      todo.pop_back();
      for (Endpoint e : g.graph.node(id).inputs()) {
        if (!e.valid() || kept.contains(e) || !Recomputable(g, e.node))
          continue;
        if (in.insert(e.node).second) todo.push_back(e.node);
      }
    }
    if (in.empty()) continue;
    std::vector<NodeId> segment(in.begin(), in.end());
    SortNodesBySchedule(g, &segment);
    out.push_back(std::move(segment));
  }
  return out;
}

}  // namespace

std::vector<Endpoint> SegmentOutputs(const TrainingGraph& g,
                                     absl::Span<const NodeId> segment) {
  std::vector<Endpoint> out;
  for (NodeId id : segment) {
    const Node& n = g.graph.node(id);
    if (!n.alive()) continue;
    for (int p = 0; p < n.num_used_ports(); ++p) {
      if (ReadByBackward(g, {id, p})) out.push_back({id, p});
    }
  }
  return out;
}

std::vector<Endpoint> SegmentEntries(const TrainingGraph& g,
                                     absl::Span<const NodeId> segment) {
  absl::flat_hash_set<NodeId> inside(segment.begin(), segment.end());
  std::vector<Endpoint> out;
  for (NodeId id : segment) {
    const Node& n = g.graph.node(id);
    if (!n.alive()) continue;
    Endpoint gate;
    bool entry = true;
    for (Endpoint e : n.inputs()) {
      if (!e.valid()) continue;
      if (inside.count(e.node)) {
        entry = false;
        break;
      }
      // A tensor that varies (not a constant) is the one to hold back.
      if (!gate.valid() || (g.graph.node(gate.node).op() == "Const" &&
                            g.graph.node(e.node).op() != "Const"))
        gate = e;
    }
    if (entry && gate.valid() &&
        std::find(out.begin(), out.end(), gate) == out.end())
      out.push_back(gate);
  }
  return out;
}

std::vector<NodeId> RecomputeTrigger(const TrainingGraph& g,
                                     absl::Span<const NodeId> segment) {
  NodeId first = kNoNode;
  for (Endpoint t : SegmentOutputs(g, segment)) {
    for (InputSlot s : g.graph.node(t.node).consumers(t.port)) {
      if (!g.regions.in_backward(s.node)) continue;
      if (first == kNoNode || StepOf(g, s.node) < StepOf(g, first))
        first = s.node;
    }
  }
  std::vector<NodeId> out;
  if (first == kNoNode) return out;
  auto wait_for = [&](NodeId id) {
    if (g.regions.in_backward(id) &&
        std::find(out.begin(), out.end(), id) == out.end())
      out.push_back(id);
  };
  const Node& reader = g.graph.node(first);
  for (Endpoint e : reader.inputs()) {
    if (e.valid()) wait_for(e.node);
  }
  // A reader that reads forward tensors alone but waits for a backward op
  // (an early gradient op held back: rules/tf/early_gradients.graft): the
  // copies wait for the same op. (Not a reader's other orderings: the bias
  // gradient gradient_order.graft runs first is one that oneDNN fuses into
  // the filter's gradient, and an edge out of it there loses the step's
  // values.)
  if (out.empty()) {
    for (NodeId c : reader.control_inputs()) wait_for(c);
  }
  // A first reader that reads no gradient and waits for nothing (it runs
  // on forward tensors alone, at the very start of the backward pass): the
  // copies wait for the gradient seed, not run in the forward pass.
  if (out.empty() && g.regions.seed != kNoNode) out.push_back(g.regions.seed);
  return out;
}

namespace {

// Whether `op` is an early gradient op, before asking for its trigger: in
// neither region, reading a forward tensor that varies with the inputs,
// making values (floats, not shapes).
bool RunsEarly(const TrainingGraph& g, const std::vector<bool>& varying,
               const Node& n) {
  NodeId id = n.id();
  if (!n.alive() || g.regions.in_forward(id) || g.regions.in_backward(id) ||
      (id < static_cast<NodeId>(g.regions.downstream.size()) &&
       g.regions.downstream[id]))
    return false;
  bool reads_forward = false;
  for (Endpoint e : n.inputs()) {
    if (e.valid() && g.regions.in_forward(e.node) && varying[e.node])
      reads_forward = true;
  }
  if (!reads_forward) return false;
  bool values = false;
  for (int p = 0; p < n.num_used_ports(); ++p) {
    const TensorInfo& t = g.shapes.at({id, p});
    if (t.bytes() <= 0) return false;
    values = values || t.dtype == tf::DT_FLOAT || t.dtype == tf::DT_HALF ||
             t.dtype == tf::DT_BFLOAT16 || t.dtype == tf::DT_DOUBLE;
  }
  return values;
}

// Walks what `op` feeds (and, with `control`, what waits for it), each node
// once: `enter(n)` says whether the walk goes on through n.
template <typename Enter>
void WalkDownstream(const Graph& g, NodeId op, bool control, Enter enter) {
  absl::flat_hash_set<NodeId> seen = {op};
  std::vector<NodeId> todo = {op};
  auto reach = [&](NodeId n) {
    if (n != kNoNode && seen.insert(n).second && enter(n)) todo.push_back(n);
  };
  while (!todo.empty()) {
    const Node& x = g.node(todo.back());
    todo.pop_back();
    for (int p = 0; p < x.num_used_ports(); ++p) {
      for (InputSlot s : x.consumers(p)) reach(s.node);
    }
    if (control) {
      for (NodeId c : x.control_consumers()) reach(c);
    }
  }
}

// The first backward op (in schedule order) that `op` feeds, directly or
// through ops of neither region.
NodeId FirstBackwardFed(const TrainingGraph& g, NodeId op) {
  NodeId first = kNoNode;
  WalkDownstream(g.graph, op, false, [&](NodeId n) {
    if (g.regions.in_backward(n)) {
      if (first == kNoNode || StepOf(g, n) < StepOf(g, first)) first = n;
      return false;
    }
    return !g.regions.in_forward(n);
  });
  return first;
}

}  // namespace

std::vector<NodeId> EarlyGradientOps(const TrainingGraph& g) {
  std::vector<bool> varying = Varying(g);
  std::vector<NodeId> out;
  g.graph.ForEachNode([&](const Node& n) {
    if (RunsEarly(g, varying, n) && !LateTrigger(g, n.id()).empty())
      out.push_back(n.id());
  });
  SortNodesBySchedule(g, &out);
  return out;
}

std::vector<NodeId> LateTrigger(const TrainingGraph& g, NodeId op) {
  std::vector<NodeId> out;
  NodeId first = FirstBackwardFed(g, op);
  if (first == kNoNode) return out;
  // What depends on `op` (data or control) cannot be waited for.
  absl::flat_hash_set<NodeId> after = {op};
  WalkDownstream(g.graph, op, true, [&](NodeId n) {
    after.insert(n);
    return true;
  });
  for (Endpoint e : g.graph.node(first).inputs()) {
    if (e.valid() && g.regions.in_backward(e.node) && !after.contains(e.node) &&
        std::find(out.begin(), out.end(), e.node) == out.end())
      out.push_back(e.node);
  }
  return out;
}

}  // namespace graft::analysis
