#include "analysis/schedule.h"

#include <deque>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/graph_algorithms.h"

namespace graft::analysis {
namespace {

// Ops whose kernels TensorFlow's executor counts inexpensive: it runs them
// inline, first in first out, as soon as they are ready (constants when the
// step starts), where other ops wait on its stack.
bool Inexpensive(const std::string& op) {
  static const absl::flat_hash_set<std::string> kOps = {
      "Const",         "HostConst", "VarHandleOp", "NoOp",
      "ControlTrigger", "Identity", "IdentityN",   "StopGradient",
      "PreventGradient", "Shape",   "ShapeN",      "Size",
      "Rank",          "Reshape",   "ExpandDims",  "Squeeze",
      "BroadcastGradientArgs",      "Switch",      "Merge",
      "Enter",         "Exit",      "NextIteration"};
  return kOps.contains(op);
}

// An op whose outputs no op reads (a variable's update; a fetched loss)
// only frees what it reads. TensorFlow's executor hands an expensive op to
// its thread pool when it has inline work too, and the pool runs it at
// once; left on the stack below what its siblings make ready, it would
// wait, and hold what it reads, to the end of the pass.
bool ReadByNoOp(const Node& n) {
  for (int p = 0; p < n.num_used_ports(); ++p) {
    if (!n.consumers(p).empty()) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<NodeId>> ExecutorOrder(const Graph& graph,
                                                  int threads) {
  std::vector<int> pending(graph.id_limit(), 0);
  // Inexpensive, first in, first out; each with whether the op that made
  // it ready ran on a pool thread (it runs on that thread, and so do the
  // ops it makes ready).
  std::deque<std::pair<NodeId, bool>> inline_ready;
  std::vector<NodeId> ready;    // the others: last readied runs first
  std::deque<NodeId> together;  // siblings the thread pool runs at once
  auto make_ready = [&](NodeId id, bool from_pool) {
    const Node& n = graph.node(id);
    if (Inexpensive(n.op()) || ReadByNoOp(n)) {
      inline_ready.emplace_back(id, from_pool);
    } else {
      ready.push_back(id);
    }
  };
  graph.ForEachNode([&](const Node& n) {
    int count = static_cast<int>(n.control_inputs().size());
    for (Endpoint e : n.inputs()) {
      count += e.node != kNoNode && !IsBackEdge(graph, e.node, n.id()) ? 1 : 0;
    }
    pending[n.id()] = count;
    if (count == 0) make_ready(n.id(), false);
  });
  std::vector<NodeId> order;
  while (!inline_ready.empty() || !together.empty() || !ready.empty()) {
    NodeId id;
    bool from_pool = false;
    if (!inline_ready.empty()) {
      std::tie(id, from_pool) = inline_ready.front();
      inline_ready.pop_front();
    } else if (!together.empty()) {
      id = together.front();
      together.pop_front();
      from_pool = true;
    } else {
      id = ready.back();
      ready.pop_back();
    }
    order.push_back(id);
    const size_t before = ready.size();
    const Node& n = graph.node(id);
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (InputSlot s : n.consumers(p)) {
        if (!IsBackEdge(graph, id, s.node) && --pending[s.node] == 0)
          make_ready(s.node, from_pool);
      }
    }
    for (NodeId c : n.control_consumers()) {
      if (--pending[c] == 0) make_ready(c, from_pool);
    }
    // The expensive ops it made ready, the stack's top: the executor runs
    // one inline and hands the others to its thread pool, which runs them
    // at once; one made ready by an op that ran together with others still
    // to run goes on on its thread, through the inexpensive ops it runs
    // inline (a weight's gradient on to its reduction and update, through
    // an Identity).
    const size_t readied = ready.size() - before;
    if (threads > 1 && (readied >= 2 || (from_pool && readied == 1 &&
                                         !together.empty()))) {
      together.insert(together.end(), ready.end() - readied, ready.end());
      ready.resize(before);
    }
  }
  if (static_cast<int>(order.size()) != graph.num_nodes()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the graph has a cycle: ", graph.num_nodes() - order.size(),
        " node(s) never become ready"));
  }
  return order;
}

}  // namespace graft::analysis
