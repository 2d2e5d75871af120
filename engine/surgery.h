// Graph surgery in the vocabulary of TF's graph_editor / graph_def_editor:
// subgraph views with their boundary, forward and backward walks, filters,
// outputs rerouted or swapped between views, and the pre-/post-processing
// grafts. Edits go through a Rewriter, so they are checked (dtype, shape,
// cycles) and can be rolled back.
#ifndef GRAFT_ENGINE_SURGERY_H_
#define GRAFT_ENGINE_SURGERY_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/name_regex.h"
#include "engine/rewriter.h"

namespace graft::surgery {

// A set of nodes and its boundary (graph_editor's SubGraphView):
//   inputs:  tensors the nodes read that are produced outside;
//   outputs: tensors the nodes produce, except those read only inside
//            (an output nothing reads is an output);
//   passthroughs: tensors given as both an input and an output.
// Nodes keep the order given; inputs and outputs are in node order, then
// input index / port order, without repeats.
class SubgraphView {
 public:
  SubgraphView(const Graph& graph, std::vector<NodeId> nodes,
               std::vector<Endpoint> passthroughs = {});

  const std::vector<NodeId>& nodes() const { return nodes_; }
  const std::vector<Endpoint>& inputs() const { return inputs_; }
  const std::vector<Endpoint>& outputs() const { return outputs_; }
  const std::vector<Endpoint>& passthroughs() const { return passthroughs_; }
  bool Contains(NodeId id) const { return set_.contains(id); }

 private:
  std::vector<NodeId> nodes_;
  absl::flat_hash_set<NodeId> set_;
  std::vector<Endpoint> inputs_, outputs_, passthroughs_;
};

struct WalkOptions {
  // Include the seeds themselves.
  bool inclusive = true;
  // Only visit these nodes (when not null).
  const absl::flat_hash_set<NodeId>* within = nullptr;
  // Do not walk through these tensors.
  std::vector<Endpoint> stop_at;
  // Also follow control edges.
  bool control = false;
};

// Nodes reachable from `seeds` along data edges (consumers), breadth first;
// each node once.
std::vector<NodeId> ForwardWalk(const Graph& graph,
                                absl::Span<const NodeId> seeds,
                                const WalkOptions& options = {});
// Nodes `seeds` depend on (producers), breadth first; each node once.
std::vector<NodeId> BackwardWalk(const Graph& graph,
                                 absl::Span<const NodeId> seeds,
                                 const WalkOptions& options = {});
// The nodes of the forward walk from `forward_seeds` that are also in the
// backward walk from `backward_seeds`, in forward-walk order.
std::vector<NodeId> WalksIntersection(const Graph& graph,
                                      absl::Span<const NodeId> forward_seeds,
                                      absl::Span<const NodeId> backward_seeds,
                                      const WalkOptions& forward = {},
                                      const WalkOptions& backward = {});

// Whether a path of data edges (and control edges with `control`) leads
// from a node of `from` to a node of `to`; a node reaches itself. Stops
// where the answer shows: WalksIntersection's emptiness without either
// whole walk.
bool Reaches(const Graph& graph, absl::Span<const NodeId> from,
             absl::Span<const NodeId> to, bool control = false);

// The nodes whose op matches one of `ops` (`|`-separated; `Conv*` globs);
// with `matching` false, the others.
std::vector<NodeId> FilterByOp(const Graph& graph,
                               absl::Span<const NodeId> nodes,
                               absl::string_view ops, bool matching = true);
// The nodes whose whole name matches the regex; with `matching` false, the
// others.
std::vector<NodeId> FilterByName(const Graph& graph,
                                 absl::Span<const NodeId> nodes,
                                 const NameRegex& regex, bool matching = true);
// The live node called `name`, or a NotFound error naming it.
absl::StatusOr<NodeId> GetByName(const Graph& graph, absl::string_view name);
// Removes the node called `name`; it must have no consumers.
absl::Status RemoveByName(Rewriter& rewriter, absl::string_view name);

// Pairwise over the outputs: consumers of to.outputs()[i] outside both
// views read from.outputs()[i] (graph_editor's reroute_outputs). The views
// must have as many outputs. Returns the number of inputs changed.
absl::StatusOr<int> RerouteOutputs(Rewriter& rewriter, const SubgraphView& from,
                                   const SubgraphView& to);
// The consumers outside both views of a's and b's outputs trade places
// (graph_editor's swap_outputs).
absl::StatusOr<int> SwapOutputs(Rewriter& rewriter, const SubgraphView& a,
                                const SubgraphView& b);

// The part of `graph` that `roots` depend on, as a GraphDef (for splicing
// only what computes some nodes). Unknown roots are an error.
absl::StatusOr<tf::GraphDef> AncestorsOf(const Graph& graph,
                                         const std::vector<std::string>& roots);

// A node of `graph` that computes what `spec` would: the same op, device,
// attrs and inputs, no control inputs, and a deterministic op its registry
// knows (never a stateful or mutating one); a Const the same dtype, shape
// and encoded value, made by a rewrite (never the model's own: an ONNX
// initializer may also be an input a caller feeds). Never one of
// `excluded`. The one made first (the smallest id) among several; kNoNode
// when there is none.
NodeId EqualNode(const Graph& graph, const NodeSpec& spec,
                 absl::Span<const NodeId> excluded = {});

// graph_def_editor's grafts. Preprocessing: each Placeholder `x` of `pre`
// names an input (Placeholder) of the target and `pre` has `x_preprocessed`;
// what computes `x_preprocessed` is spliced in, the target's consumers of
// `x` read it, and `pre`'s placeholder replaces `x` under its name.
// Postprocessing: each Placeholder `y` of `post` names a single-output node
// of the target and `post` has `y_postprocessed`; what computes it is
// spliced in reading `y`, `y` is renamed `y_raw` and `y_postprocessed` takes
// the name `y`. Everything is checked before anything changes.
absl::Status CheckPreprocessing(const Graph& target, const Graph& pre);
absl::Status CheckPostprocessing(const Graph& target, const Graph& post);
absl::Status AddPreprocessing(Rewriter& rewriter, const Graph& pre);
absl::Status AddPostprocessing(Rewriter& rewriter, const Graph& post);

}  // namespace graft::surgery

#endif  // GRAFT_ENGINE_SURGERY_H_
