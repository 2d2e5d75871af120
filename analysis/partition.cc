#include "analysis/partition.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "analysis/cost.h"
#include "boost/graph/adjacency_list.hpp"
#include "boost/graph/push_relabel_max_flow.hpp"
#include "engine/op_registry.h"

namespace graft::analysis {
namespace {

// The cut problem: the forward ops, and the tensors of theirs that forward
// ops or the backward read.
struct Problem {
  struct Op {
    NodeId node = kNoNode;
    int64_t cost = -1;  // scaled; -1: never recomputed
    bool light = false; // no matrix FLOPs: an element-wise op, say
    double flops = 0;
  };
  struct Tensor {
    Endpoint endpoint;
    int op = 0;              // index into ops
    int64_t bytes = 0;       // real bytes; 0 for graph inputs
    int64_t scaled = 0;      // bytes in the cut's units
    bool needed = false;     // the backward reads it
    bool swappable = false;  // may wait in host memory
    bool read_by_backward_op = false;  // not only a graph output
    std::vector<int> readers;  // forward ops, by index
  };
  std::vector<Op> ops;
  std::vector<Tensor> tensors;  // in the order their ops run
  int64_t all_scaled = 0;       // the tensors' scaled bytes together
  // >= 0: each cut swaps out its swappable saved tensors until the bytes
  // it leaves on the device are at most this many.
  int64_t swap_to = -1;
  int64_t swap_small_bytes = 0;  // swapped only when the larger do not fit
};

// One cut's outcome.
struct Cut {
  std::vector<bool> recomputed;  // by op index
  std::vector<bool> saved;       // by tensor index
  std::vector<bool> swapped;     // by tensor index, of `saved`
  int64_t bytes = 0;             // saved on the device
  int64_t swapped_bytes = 0;
  double flops = 0;
  int64_t cost = 0;  // scaled
};

// Capacities, in three tiers: matrix FLOPs in units of 2^-24 of all of
// them, times 2^17; bytes in units of 2^-16 of all the tensors'; an op
// without matrix FLOPs 1. At lambda = 1 all bytes together weigh less than
// one FLOP unit and a tensor more than an element-wise op: the fewest
// FLOPs, then the fewest bytes, then the fewest element-wise ops
// recomputed. At lambda = 2^43 one byte unit outweighs all recomputation
// (the least bytes); lambda x bytes stays below 2^59.
constexpr int64_t kInfinite = int64_t{1} << 60;
constexpr int kCostBits = 24;
constexpr int kTieBits = 17;
constexpr int kBytesBits = 16;
constexpr double kLeastLambdaLog2 = kCostBits + kTieBits + 2;
constexpr int64_t kLightCost = 1;

// What the step holds anyway (parameters, the batch, constants): saving
// it costs nothing, recomputing it means nothing.
bool IsGraphInput(const Node& n) {
  return n.op() == "Placeholder" || n.op() == "Const" || n.op() == "_Absent";
}

bool NeverRecomputed(const Graph& graph, const Node& n,
                     const absl::flat_hash_set<std::string>& pinned,
                     const absl::flat_hash_set<std::string>& functional) {
  if (pinned.contains(n.name()) || IsGraphInput(n)) return true;
  const tf::OpDef* def = OpRegistry::For(graph).Find(n.op());
  if (def == nullptr) return !functional.contains(n.name());
  if (def->summary() == "mutates") return true;
  // A random op called so that it draws nothing (an attention kernel with
  // a dropout of 0), as the caller vouches, is a function of its inputs.
  return def->is_stateful() && !functional.contains(n.name());
}

absl::StatusOr<Problem> BuildProblem(const Graph& graph, const ShapeMap& shapes,
                                     const PartitionOptions& options) {
  // The backward: what depends on its inputs, and the gradients' _Retvals.
  std::vector<bool> backward(graph.id_limit(), false);
  std::deque<NodeId> todo;
  for (const std::string& name : options.backward_inputs) {
    NodeId id = graph.FindId(name);
    if (id == kNoNode) continue;
    backward[id] = true;
    todo.push_back(id);
  }
  for (const std::string& name : options.backward_ops) {
    NodeId id = graph.FindId(name);
    if (id == kNoNode || backward[id]) continue;
    backward[id] = true;
    todo.push_back(id);
  }
  if (todo.empty()) {
    return absl::InvalidArgumentError(
        "partition: none of the backward's inputs is in the graph (a joint "
        "forward-backward graph, its tangents named)");
  }
  while (!todo.empty()) {
    const Node& n = graph.node(todo.front());
    todo.pop_front();
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (InputSlot s : n.consumers(p)) {
        if (!backward[s.node]) {
          backward[s.node] = true;
          todo.push_back(s.node);
        }
      }
    }
  }
  graph.ForEachNode([&](const Node& n) {
    if (n.op() == "_Retval") backward[n.id()] = true;
  });

  absl::flat_hash_set<std::string> pinned(options.pinned.begin(),
                                          options.pinned.end());
  absl::flat_hash_set<std::string> free(options.free.begin(),
                                        options.free.end());
  absl::flat_hash_set<std::string> functional(options.functional.begin(),
                                              options.functional.end());
  absl::flat_hash_set<std::string> swappable(options.swappable.begin(),
                                             options.swappable.end());
  Problem problem;
  problem.swap_small_bytes = options.swap_small_bytes;
  std::vector<int> op_index(graph.id_limit(), -1);
  double total_flops = 0;
  graph.ForEachNode([&](const Node& n) {
    if (backward[n.id()]) return;
    op_index[n.id()] = static_cast<int>(problem.ops.size());
    Problem::Op op;
    op.node = n.id();
    bool never = NeverRecomputed(graph, n, pinned, functional);
    if (!never && free.contains(n.name())) {
      op.cost = 0;
    } else if (!never) {
      op.flops = UsesMatrixUnits(n.op()) ? std::max(0.0, Flops(shapes, n)) : 0;
      op.light = op.flops <= 0;
      op.cost = op.light ? kLightCost : 1;  // a matrix op's: rescaled below
      total_flops += op.flops;
    }
    problem.ops.push_back(op);
  });
  // Matrix FLOPs in units of 2^-24 of all of them (at least 1), times 2^17.
  double cost_scale = std::ldexp(1.0, kCostBits) / std::max(total_flops, 1.0);
  for (Problem::Op& op : problem.ops) {
    if (op.cost <= 0 || op.light) continue;
    op.cost = std::max<int64_t>(1, std::llround(op.flops * cost_scale)) << kTieBits;
  }

  for (const Problem::Op& op : problem.ops) {
    const Node& n = graph.node(op.node);
    for (int p = 0; p < n.num_used_ports(); ++p) {
      Problem::Tensor t;
      t.endpoint = {n.id(), p};
      t.op = op_index[n.id()];
      t.swappable = swappable.contains(n.name());
      for (InputSlot s : n.consumers(p)) {
        if (backward[s.node]) {
          t.needed = true;
          t.read_by_backward_op |= graph.node(s.node).op() != "_Retval";
        } else {
          t.readers.push_back(op_index[s.node]);
        }
      }
      if (!t.needed && t.readers.empty()) continue;
      if (!IsGraphInput(n)) {
        t.bytes = shapes.at(t.endpoint).bytes();
        if (t.bytes < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "partition: the size of ", n.name(), ":", p, " (", n.op(),
              ") is not known (", shapes.at(t.endpoint).ShapeString(), ")"));
        }
      }
      problem.tensors.push_back(std::move(t));
    }
  }
  // Bytes in units of 2^-16 of all the tensors' (a tensor at least 1).
  double all_bytes = 0;
  for (const Problem::Tensor& t : problem.tensors) all_bytes += t.bytes;
  double bytes_scale = std::ldexp(1.0, kBytesBits) / std::max(all_bytes, 1.0);
  for (Problem::Tensor& t : problem.tensors) {
    t.scaled = t.bytes == 0 ? 0
                            : std::max<int64_t>(1, std::llround(t.bytes * bytes_scale));
    problem.all_scaled += t.scaled;
  }
  return problem;
}

// Moves `cut`'s swappable saved tensors to host memory, earliest made
// first (the backward reads them last: the longest off the device), until
// the bytes left on the device are at most problem.swap_to (what the
// backward recomputes from one reads the copy brought back). What only the
// graph's outputs read stays: the forward returns it anyway.
void SwapOut(const Problem& problem, Cut* cut) {
  cut->swapped.assign(problem.tensors.size(), false);
  // Tensors below swap_small_bytes (a copy's fixed cost outweighs their
  // bytes) only when the larger ones are not enough.
  for (bool small : {false, true}) {
    for (size_t j = 0; j < problem.tensors.size() && cut->bytes > problem.swap_to; ++j) {
      const Problem::Tensor& t = problem.tensors[j];
      if (!cut->saved[j] || cut->swapped[j] || !t.swappable || t.bytes == 0 ||
          (t.bytes < problem.swap_small_bytes) != small)
        continue;
      bool read_by_recomputation = false;
      for (int r : t.readers) read_by_recomputation |= cut->recomputed[r];
      if (!t.read_by_backward_op && !read_by_recomputation) continue;
      cut->swapped[j] = true;
      cut->bytes -= t.bytes;
      cut->swapped_bytes += t.bytes;
    }
  }
}

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS,
                                                boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, int64_t,
        boost::property<boost::edge_residual_capacity_t, int64_t,
                        boost::property<boost::edge_reverse_t,
                                        FlowTraits::edge_descriptor>>>>;

// The minimum cut of `problem` where saving a tensor costs lambda x its
// scaled bytes: vertices S, T, one per op ("recomputed" when on T's side)
// and one per tensor ("available to the backward" when on T's side).
// S -> op: the op's cost (cut: recomputed); op -> tensor: lambda x bytes
// (cut: saved); tensor -> reader op and needed tensor -> T: infinite (what
// a recomputed op or the backward reads is available).
Cut SolveCut(const Problem& problem, double lambda, bool keep_light = false,
             const std::vector<bool>* kept = nullptr) {
  const int ops = static_cast<int>(problem.ops.size());
  const int n = 2 + ops + static_cast<int>(problem.tensors.size());
  FlowGraph g(n);
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  auto residual = boost::get(boost::edge_residual_capacity, g);
  auto add = [&](int u, int v, int64_t cap) {
    auto e = boost::add_edge(u, v, g).first;
    auto r = boost::add_edge(v, u, g).first;
    capacity[e] = cap;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };
  // An op never recomputed is S itself (rather than S's by an infinite
  // edge): only finite edges leave S, so no flow, and no vertex's excess,
  // exceeds their sum (infinite ones into a vertex would overflow).
  // All saved bytes together stay below 2^61 (a graph of millions of
  // tensors, each at least one unit, would pass it at the largest lambda).
  lambda = std::min(lambda, std::ldexp(1.0, 61) /
                                static_cast<double>(std::max<int64_t>(problem.all_scaled, 1)));
  const int source = 0, sink = 1;
  std::vector<bool> never(ops);
  for (int i = 0; i < ops; ++i) {
    const Problem::Op& op = problem.ops[i];
    never[i] = op.cost < 0 || (keep_light && op.light) ||
               (kept != nullptr && (*kept)[i]);
    if (!never[i]) add(source, 2 + i, op.cost);
  }
  auto op_vertex = [&](int i) { return never[i] ? source : 2 + i; };
  for (size_t j = 0; j < problem.tensors.size(); ++j) {
    const Problem::Tensor& t = problem.tensors[j];
    int v = 2 + ops + static_cast<int>(j);
    double save = lambda * static_cast<double>(t.scaled);
    add(op_vertex(t.op), v, static_cast<int64_t>(std::min(save, std::ldexp(1.0, 59))));
    for (int r : t.readers) {
      if (!never[r]) add(v, 2 + r, kInfinite);
    }
    if (t.needed) add(v, sink, kInfinite);
  }
  boost::push_relabel_max_flow(g, source, sink);
  // S's side: what the residual graph reaches from S.
  std::vector<bool> reached(n, false);
  std::deque<int> todo = {source};
  reached[source] = true;
  while (!todo.empty()) {
    int u = todo.front();
    todo.pop_front();
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      int v = static_cast<int>(boost::target(*e, g));
      if (!reached[v] && residual[*e] > 0) {
        reached[v] = true;
        todo.push_back(v);
      }
    }
  }
  Cut cut;
  cut.recomputed.assign(ops, false);
  cut.saved.assign(problem.tensors.size(), false);
  for (int i = 0; i < ops; ++i) {
    if (!never[i] && !reached[2 + i]) {  // a free op too
      cut.recomputed[i] = true;
      cut.flops += problem.ops[i].flops;
      cut.cost += problem.ops[i].cost;
    }
  }
  for (size_t j = 0; j < problem.tensors.size(); ++j) {
    const Problem::Tensor& t = problem.tensors[j];
    if (cut.recomputed[t.op]) continue;
    bool wanted = t.needed;
    for (int r : t.readers) wanted = wanted || cut.recomputed[r];
    if (!wanted) continue;
    cut.saved[j] = true;
    cut.bytes += t.bytes;
  }
  if (problem.swap_to >= 0) SwapOut(problem, &cut);
  return cut;
}

// The cuts lambda reaches lie on the convex hull of (bytes, FLOPs): a
// budget between two of them gets the one below it, often with bytes to
// spare. Spends them: each recomputed matrix op, the costliest first, is
// kept (computed once, its output saved) when the cut at `lambda` with it
// kept still fits and recomputes less.
Cut SpendTheSlack(const Problem& problem, double lambda, int64_t budget,
                  Cut best, int* cuts) {
  std::vector<int> candidates;
  for (size_t i = 0; i < problem.ops.size(); ++i) {
    if (best.recomputed[i] && !problem.ops[i].light && problem.ops[i].cost > 0)
      candidates.push_back(static_cast<int>(i));
  }
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return problem.ops[a].cost > problem.ops[b].cost;
  });
  std::vector<bool> kept(problem.ops.size(), false);
  for (int i : candidates) {
    if (!best.recomputed[i]) continue;
    kept[i] = true;
    Cut cut = SolveCut(problem, lambda, false, &kept);
    ++*cuts;
    if (cut.bytes <= budget && cut.cost < best.cost) {
      best = std::move(cut);
    } else {
      kept[i] = false;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<PartitionPlan> PlanPartition(const Graph& graph,
                                            const ShapeMap& shapes,
                                            const PartitionOptions& options) {
  absl::StatusOr<Problem> problem = BuildProblem(graph, shapes, options);
  if (!problem.ok()) return problem.status();
  PartitionPlan plan;
  // The default: nothing recomputed but free ops (views), the fewest bytes
  // so. lambda = 1: no matrix FLOPs recomputed, the fewest bytes so; the
  // largest lambda: any saved byte outweighs all recomputation (the least
  // bytes). Between them a bisection over log2(lambda) for the cheapest
  // cut that fits.
  // With swapping, the least is swapping all it may, of the cut that
  // saves the fewest bytes or of the one that recomputes no matrix FLOPs.
  plan.default_bytes = SolveCut(*problem, 1, /*keep_light=*/true).bytes;
  plan.budget_bytes =
      options.budget_bytes >= 0
          ? options.budget_bytes
          : static_cast<int64_t>(std::floor(options.budget_fraction *
                                            static_cast<double>(plan.default_bytes)));
  const bool swap = !options.swappable.empty();
  if (swap) problem->swap_to = 0;
  Cut least = SolveCut(*problem, std::exp2(kLeastLambdaLog2));
  if (swap) {
    Cut all_swapped = SolveCut(*problem, 1);
    if (all_swapped.bytes < least.bytes) least = std::move(all_swapped);
    problem->swap_to = plan.budget_bytes;
  }
  Cut best = SolveCut(*problem, 1);
  plan.cuts = swap ? 4 : 3;
  plan.least_bytes = least.bytes;
  if (best.bytes > plan.budget_bytes) {
    best = least;
    if (least.bytes > plan.budget_bytes) {
      plan.budget_met = false;
    } else {
      // swapping no more than the budget asks
      if (swap) {
        best = SolveCut(*problem, std::exp2(kLeastLambdaLog2));
        ++plan.cuts;
      }
      double lo = 0, hi = kLeastLambdaLog2, best_lambda = hi;
      for (int i = 0; i < 40 && hi - lo > 1e-3; ++i) {
        double mid = (lo + hi) / 2;
        Cut cut = SolveCut(*problem, std::exp2(mid));
        ++plan.cuts;
        if (cut.bytes <= plan.budget_bytes) {
          hi = mid;
          if (cut.cost < best.cost ||
              (cut.cost == best.cost && cut.bytes < best.bytes)) {
            best = cut;
            best_lambda = mid;
          }
        } else {
          lo = mid;
        }
      }
      best = SpendTheSlack(*problem, std::exp2(best_lambda), plan.budget_bytes,
                           std::move(best), &plan.cuts);
    }
  }
  for (size_t j = 0; j < problem->tensors.size(); ++j) {
    if (best.saved[j]) plan.saved.push_back(problem->tensors[j].endpoint);
    if (swap && best.swapped[j]) plan.swapped.push_back(problem->tensors[j].endpoint);
  }
  for (size_t i = 0; i < problem->ops.size(); ++i) {
    if (best.recomputed[i]) plan.recomputed.push_back(problem->ops[i].node);
  }
  plan.saved_bytes = best.bytes;
  plan.swapped_bytes = best.swapped_bytes;
  plan.recomputed_flops = best.flops;
  return plan;
}

}  // namespace graft::analysis
