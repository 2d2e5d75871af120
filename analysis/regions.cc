#include "analysis/regions.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/surgery.h"

namespace graft::analysis {

namespace {

bool IsConstLike(const Graph& g, Endpoint e) {
  const std::string& op = g.node(e.node).op();
  return op == "Const" || op == "Shape";
}

// The node whose Shape feeds `seed`'s shape input, or kNoNode.
NodeId LossOfSeed(const Graph& g, const Node& seed) {
  if (seed.op() == "OnesLike" && seed.num_inputs() == 1)
    return seed.input(0).node;
  if (seed.op() != "Fill" || seed.num_inputs() != 2) return kNoNode;
  const Node& dims = g.node(seed.input(0).node);
  if (dims.op() == "Shape" && dims.num_inputs() == 1) return dims.input(0).node;
  return kNoNode;
}

// A Fill of ones whose shape is a constant or Shape(x).
bool IsSeedFill(const Graph& g, const Node& n) {
  if (n.op() != "Fill" || n.num_inputs() != 2) return false;
  if (!IsConstLike(g, n.input(0)) || g.node(n.input(1).node).op() != "Const")
    return false;
  const Node& value = g.node(n.input(1).node);
  const tf::AttrValue* v = value.attr("value");
  if (v == nullptr) return false;
  const tf::TensorProto& t = v->tensor();
  bool one = (t.float_val_size() == 1 && t.float_val(0) == 1.0f) ||
             (t.double_val_size() == 1 && t.double_val(0) == 1.0) ||
             value.value_content() == absl::string_view("\0\0\x80\x3f", 4);
  return one;
}

}  // namespace

absl::StatusOr<Regions> FindRegions(const Graph& graph, const ShapeMap& shapes,
                                    const std::string& loss,
                                    const std::string& seed) {
  Regions r;
  if (!loss.empty()) {
    r.loss = graph.FindId(loss);
    if (r.loss == kNoNode)
      return absl::NotFoundError(absl::StrCat("no loss node `", loss, "`"));
  }
  if (!seed.empty()) {
    r.seed = graph.FindId(seed);
    if (r.seed == kNoNode)
      return absl::NotFoundError(absl::StrCat("no seed node `", seed, "`"));
  } else {
    // tf.gradients seeds with a Fill of ones; OnesLike(loss) only counts
    // when there is no such Fill.
    std::vector<NodeId> candidates;
    for (NodeId id : graph.NodesWithOp("Fill")) {
      const Node& n = graph.node(id);
      NodeId l = LossOfSeed(graph, n);
      if (IsSeedFill(graph, n) &&
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
    if (candidates.size() != 1) {
      return absl::NotFoundError(absl::StrCat(
          candidates.empty()
              ? "found no gradient seed (a Fill of ones, or OnesLike(loss))"
              : absl::StrCat("found ", candidates.size(), " gradient seeds"),
          "; name the loss with --loss and the seed with --seed"));
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
    // depends on an input.
    absl::flat_hash_set<NodeId> after_seed(downstream.begin(),
                                           downstream.end());
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
        if (graph.node(a).op() == "Placeholder") {
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
  }
  r.forward.assign(graph.id_limit(), false);
  r.backward.assign(graph.id_limit(), false);
  for (NodeId id : surgery::BackwardWalk(graph, {r.loss})) r.forward[id] = true;
  for (NodeId id : downstream) {
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

}  // namespace graft::analysis
