#include "analysis/regions.h"

#include "absl/strings/match.h"

#include <iterator>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/status_marks.h"
#include "engine/surgery.h"

namespace graft::analysis {

namespace {

bool IsConstLike(const Graph& g, Endpoint e) {
  if (!e.valid()) return false;
  const std::string& op = g.node(e.node).op();
  return op == "Const" || op == "Shape";
}

// The node whose Shape feeds `seed`'s shape input, or kNoNode.
// (Inputs that name no node of the graph give kNoNode.)
NodeId LossOfSeed(const Graph& g, const Node& seed) {
  if (seed.op() == "OnesLike" && seed.num_inputs() == 1)
    return seed.input(0).valid() ? seed.input(0).node : kNoNode;
  if (seed.op() != "Fill" || seed.num_inputs() != 2 || !seed.input(0).valid())
    return kNoNode;
  const Node& dims = g.node(seed.input(0).node);
  if (dims.op() == "Shape" && dims.num_inputs() == 1 && dims.input(0).valid())
    return dims.input(0).node;
  return kNoNode;
}

bool IsOne(const Node& value);

// A Fill of ones whose shape is a constant or Shape(x).
bool IsSeedFill(const Graph& g, const Node& n) {
  if (n.op() != "Fill" || n.num_inputs() != 2) return false;
  if (!IsConstLike(g, n.input(0)) || !n.input(1).valid() ||
      g.node(n.input(1).node).op() != "Const")
    return false;
  return IsOne(g.node(n.input(1).node));
}

// A Const whose one value is 1 (float or double).
bool IsOne(const Node& value) {
  const tf::AttrValue* v = value.attr("value");
  if (value.op() != "Const" || v == nullptr) return false;
  const tf::TensorProto& t = v->tensor();
  return (t.float_val_size() == 1 && t.float_val(0) == 1.0f) ||
         (t.double_val_size() == 1 && t.double_val(0) == 1.0) ||
         value.value_content() == absl::string_view("\0\0\x80\x3f", 4);
}

// A variable's initial value, read by assignments only: Keras initializes
// its batch norms' scales with Fills of ones, which are no gradient seed.
bool OnlyAssigned(const Graph& g, const Node& n) {
  bool read = false;
  for (int p = 0; p < n.num_used_ports(); ++p) {
    for (InputSlot s : n.consumers(p)) {
      const std::string& op = g.node(s.node).op();
      if (op != "Assign" && op != "AssignVariableOp") return false;
      read = true;
    }
  }
  return read;
}

// A GradientTape's seed (tf.function graphs): a Const of ones whose value
// only ops of the tape's gradient (`gradient_tape/...`) read.
bool IsTapeSeed(const Node& n, const Graph& g) {
  if (!IsOne(n) || n.num_used_ports() == 0) return false;
  auto in_tape = [&](NodeId id) {
    return absl::StartsWith(g.node(id).name(), "gradient_tape/");
  };
  for (int p = 0; p < n.num_used_ports(); ++p) {
    for (InputSlot s : n.consumers(p)) {
      if (!in_tape(s.node)) return false;
    }
  }
  return true;  // what waits for it (control edges) reads no value
}

}  // namespace

absl::StatusOr<Regions> FindRegions(const Graph& graph, const ShapeMap& shapes,
                                    const std::string& loss,
                                    const std::string& seed) {
  Regions r;
  if (!loss.empty()) {
    r.loss = graph.FindId(loss);
    if (r.loss == kNoNode)
      return NotApplicable(
          absl::NotFoundError(absl::StrCat("no loss node `", loss, "`")));
  }
  if (!seed.empty()) {
    r.seed = graph.FindId(seed);
    if (r.seed == kNoNode)
      return NotApplicable(
          absl::NotFoundError(absl::StrCat("no seed node `", seed, "`")));
  } else {
    // tf.gradients seeds with a Fill of ones; OnesLike(loss) only counts
    // when there is no such Fill.
    std::vector<NodeId> candidates;
    for (NodeId id : graph.NodesWithOp("Fill")) {
      const Node& n = graph.node(id);
      NodeId l = LossOfSeed(graph, n);
      if (IsSeedFill(graph, n) && !OnlyAssigned(graph, n) &&
          (r.loss == kNoNode || l == kNoNode || l == r.loss)) {
        candidates.push_back(id);
      }
    }
    if (candidates.empty()) {
      for (NodeId id : graph.NodesWithOp("OnesLike")) {
        NodeId l = LossOfSeed(graph, graph.node(id));
        if (r.loss == kNoNode || l == r.loss) candidates.push_back(id);
      }
    }
    if (candidates.empty()) {
      for (NodeId id : graph.NodesWithOp("Const")) {
        if (IsTapeSeed(graph.node(id), graph)) candidates.push_back(id);
      }
    }
    if (candidates.size() != 1) {
      // No gradient at all: the training analyses do not apply (a body of
      // the step's `tf.cond`s); several: the graph must say which.
      absl::Status none_or_many = absl::NotFoundError(absl::StrCat(
          candidates.empty()
              ? "found no gradient seed (a Fill of ones, OnesLike(loss), or "
                "a GradientTape's constant of ones)"
              : absl::StrCat("found ", candidates.size(), " gradient seeds"),
          "; name the loss with --loss and the seed with --seed"));
      return candidates.empty() ? NotApplicable(none_or_many) : none_or_many;
    }
    r.seed = candidates[0];
  }
  surgery::WalkOptions control;
  control.control = true;
  std::vector<NodeId> downstream =
      surgery::ForwardWalk(graph, {r.seed}, control);
  if (r.loss == kNoNode) r.loss = LossOfSeed(graph, graph.node(r.seed));
  if (r.loss == kNoNode) {
    // The float tensor of the seed's shape that nothing reads and that
    // depends on an input, computed from no gradient (a tf.function's
    // output Identity, which waits for the updates through control edges,
    // counts: its data input is the loss). A traced step's variables are
    // resource placeholders: what depends on them alone (tf-keras's legacy
    // optimizers' coefficients, left unread) is no loss.
    std::vector<NodeId> data_downstream =
        surgery::ForwardWalk(graph, {r.seed}, surgery::WalkOptions());
    absl::flat_hash_set<NodeId> after_seed(data_downstream.begin(),
                                           data_downstream.end());
    const TensorInfo& seed_shape = shapes.at({r.seed, 0});
    std::vector<NodeId> sinks;
    graph.ForEachNode([&](const Node& n) {
      if (after_seed.contains(n.id()) || shapes.num_outputs(n.id()) == 0 ||
          n.HasConsumers())
        return;
      const TensorInfo& t = shapes.at({n.id(), 0});
      if (t.dtype != tf::DT_FLOAT && t.dtype != tf::DT_DOUBLE &&
          t.dtype != tf::DT_HALF && t.dtype != tf::DT_BFLOAT16) {
        return;
      }
      if (!t.known_rank || !seed_shape.known_rank || t.dims != seed_shape.dims)
        return;
      for (NodeId a : surgery::BackwardWalk(graph, {n.id()})) {
        if (IsFedInput(graph.node(a), shapes)) {
          sinks.push_back(n.id());
          return;
        }
      }
    });
    if (sinks.size() != 1) {
      return absl::NotFoundError(
          absl::StrCat("cannot tell the loss (", sinks.size(),
                       " candidates); name it with --loss"));
    }
    r.loss = sinks[0];
    const Node& sink = graph.node(r.loss);
    if (sink.op() == "Identity" && sink.num_inputs() == 1 &&
        sink.input(0).valid() && !sink.control_inputs().empty())
      r.loss = sink.input(0).node;
  }
  r.forward.assign(graph.id_limit(), false);
  r.backward.assign(graph.id_limit(), false);
  r.downstream.assign(graph.id_limit(), false);
  for (NodeId id : surgery::BackwardWalk(graph, {r.loss})) r.forward[id] = true;
  for (NodeId id : downstream) {
    r.downstream[id] = true;
    if (!r.forward[id]) r.backward[id] = true;
  }
  graph.ForEachNode([&](const Node& n) {
    if (!r.backward[n.id()]) return;
    for (Endpoint e : n.inputs()) {
      if (e.node != kNoNode && r.forward[e.node]) {
        std::vector<NodeId>& readers = r.backward_consumers[e];
        if (readers.empty() || readers.back() != n.id())
          readers.push_back(n.id());
      }
    }
  });
  return r;
}

bool UpdateRegions(const Graph& graph, const std::vector<NodeId>& touched,
                   Regions* r) {
  for (NodeId id : touched) {
    if (id == r->loss || id == r->seed) return false;
  }
  size_t n = graph.id_limit();
  r->forward.resize(n, false);
  r->backward.resize(n, false);
  r->downstream.resize(n, false);
  r->backward_consumers.clear();
  auto down_of = [&](const Node& node) {
    if (!node.alive()) return false;
    for (Endpoint e : node.inputs()) {
      if (e.valid() && r->downstream[e.node]) return true;
    }
    for (NodeId c : node.control_inputs()) {
      if (c != kNoNode && r->downstream[c]) return true;
    }
    return false;
  };
  auto forward_of = [&](const Node& node) {
    if (!node.alive()) return false;
    for (int p = 0; p < node.num_used_ports(); ++p) {
      for (InputSlot s : node.consumers(p)) {
        if (r->forward[s.node]) return true;
      }
    }
    return false;
  };
  // Each flag is a fixpoint over an acyclic graph: redo a node when a
  // neighbour it depends on changed, until nothing changes.
  std::set<NodeId> down_work(touched.begin(), touched.end());
  std::set<NodeId> forward_work = down_work, changed = down_work;
  while (!down_work.empty()) {
    NodeId id = *down_work.begin();
    down_work.erase(down_work.begin());
    if (id == r->seed) continue;
    const Node& node = graph.node(id);
    bool v = down_of(node);
    if (v == r->downstream[id]) continue;
    r->downstream[id] = v;
    changed.insert(id);
    for (int p = 0; p < node.num_used_ports(); ++p) {
      for (InputSlot s : node.consumers(p)) down_work.insert(s.node);
    }
    for (NodeId c : node.control_consumers()) down_work.insert(c);
  }
  while (!forward_work.empty()) {
    NodeId id = *forward_work.rbegin();
    forward_work.erase(std::prev(forward_work.end()));
    if (id == r->loss) continue;
    const Node& node = graph.node(id);
    bool v = forward_of(node);
    if (v == r->forward[id]) continue;
    r->forward[id] = v;
    changed.insert(id);
    for (Endpoint e : node.inputs()) {
      if (e.valid()) forward_work.insert(e.node);
    }
  }
  for (NodeId id : changed) {
    r->backward[id] = r->downstream[id] && !r->forward[id];
  }
  return true;
}

}  // namespace graft::analysis
