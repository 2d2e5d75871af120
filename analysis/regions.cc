#include "analysis/regions.h"

#include "absl/strings/str_cat.h"
#include "engine/surgery.h"

namespace graft::analysis {

namespace {

// The node whose Shape feeds `seed`'s shape input, or kNoNode.
NodeId LossOfSeed(const Graph& g, const Node& seed) {
  if (seed.op() == "OnesLike" && seed.num_inputs() == 1) return seed.input(0).node;
  if (seed.op() != "Fill" || seed.num_inputs() != 2) return kNoNode;
  const Node& dims = g.node(seed.input(0).node);
  if (dims.op() == "Shape" && dims.num_inputs() == 1) return dims.input(0).node;
  return kNoNode;
}

}  // namespace

absl::StatusOr<Regions> FindRegions(const Graph& graph, const std::string& loss,
                                    const std::string& seed) {
  Regions r;
  if (!loss.empty()) {
    r.loss = graph.FindId(loss);
    if (r.loss == kNoNode) return absl::NotFoundError(absl::StrCat("no loss node `", loss, "`"));
  }
  if (!seed.empty()) {
    r.seed = graph.FindId(seed);
    if (r.seed == kNoNode) return absl::NotFoundError(absl::StrCat("no seed node `", seed, "`"));
  } else {
    // tf.gradients seeds with Fill(Shape(loss), 1); OnesLike(loss) only
    // counts when there is no such Fill.
    std::vector<NodeId> candidates;
    for (const char* op : {"Fill", "OnesLike"}) {
      if (!candidates.empty()) break;
      for (NodeId id : graph.NodesWithOp(op)) {
        NodeId l = LossOfSeed(graph, graph.node(id));
        if (l != kNoNode && (r.loss == kNoNode || l == r.loss)) candidates.push_back(id);
      }
    }
    if (candidates.size() != 1) {
      return absl::NotFoundError(absl::StrCat(
          candidates.empty() ? "found no gradient seed (a Fill of Shape(loss), or OnesLike(loss))"
                             : absl::StrCat("found ", candidates.size(), " gradient seeds"),
          "; name the loss with --loss and the seed with --seed"));
    }
    r.seed = candidates[0];
  }
  if (r.loss == kNoNode) r.loss = LossOfSeed(graph, graph.node(r.seed));
  if (r.loss == kNoNode) {
    return absl::NotFoundError("cannot tell the loss from the seed; name it with --loss");
  }
  r.forward.assign(graph.id_limit(), false);
  r.backward.assign(graph.id_limit(), false);
  for (NodeId id : surgery::BackwardWalk(graph, {r.loss})) r.forward[id] = true;
  surgery::WalkOptions control;
  control.control = true;
  for (NodeId id : surgery::ForwardWalk(graph, {r.seed}, control)) {
    if (!r.forward[id]) r.backward[id] = true;
  }
  graph.ForEachNode([&](const Node& n) {
    if (!r.backward[n.id()]) return;
    for (Endpoint e : n.inputs()) {
      if (e.node != kNoNode && r.forward[e.node]) {
        std::vector<NodeId>& readers = r.backward_consumers[e];
        if (readers.empty() || readers.back() != n.id()) readers.push_back(n.id());
      }
    }
  });
  return r;
}

}  // namespace graft::analysis
