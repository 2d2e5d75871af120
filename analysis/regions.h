// The forward and backward regions of a training graph, found by
// reachability: forward ops are those the loss depends on; backward ops are
// those reachable from the gradient seed (the Fill / OnesLike that starts
// tf.gradients), not those under a `gradients/` scope.
#ifndef GRAFT_ANALYSIS_REGIONS_H_
#define GRAFT_ANALYSIS_REGIONS_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

struct Regions {
  NodeId loss = kNoNode;
  NodeId seed = kNoNode;
  std::vector<bool> forward;     // by node id
  std::vector<bool> backward;    // by node id
  std::vector<bool> downstream;  // of the seed (data and control), by id
  // For each forward tensor that backward ops read: those ops, in id order
  // (FindRegions fills it; UpdateRegions empties it).
  absl::flat_hash_map<Endpoint, std::vector<NodeId>> backward_consumers;

  bool in_forward(NodeId id) const {
    return id < static_cast<NodeId>(forward.size()) && forward[id];
  }
  bool in_backward(NodeId id) const {
    return id < static_cast<NodeId>(backward.size()) && backward[id];
  }
};

// `loss` and `seed` are node names; empty: found from the graph. The seed
// is the Fill of ones that tf.gradients makes (its shape from Shape(loss)
// or a constant; not a variable's initial value, which only assignments
// read), else OnesLike(loss); the loss is Shape's input, or else
// the one float tensor of the seed's shape that nothing reads, depends on a
// Placeholder and is not downstream of the seed. Fails, saying what to
// pass, when they cannot be found.
absl::StatusOr<Regions> FindRegions(const Graph& graph, const ShapeMap& shapes,
                                    const std::string& loss = "",
                                    const std::string& seed = "");

// Brings `regions` (found on an earlier version of `graph`) up to date after
// edits that touched `touched`, in time proportional to the change: a node
// is forward when it is the loss or a data consumer is forward, downstream
// when it is the seed or an input (data or control) is downstream.
// False (nothing changed) when the loss or the seed was touched: find the
// regions again.
bool UpdateRegions(const Graph& graph, const std::vector<NodeId>& touched,
                   Regions* regions);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_REGIONS_H_
