// Freezing a SavedModel for inference: the chosen signatures' call trees
// inlined into one graph and every variable read replaced by a constant
// from the checkpoint, so that rules which need constant weights (folding)
// see them. The result is still a SavedModel's graph: saved, it is a
// TF1-style MetaGraph (no variables, no object graph) whose signature_defs
// name the same tensors as before, which tf.saved_model.load and the
// session-based (TF Serving) loader both read.
//
//   call C = f(a0, a1, ...)  =>  f's body with _Arg i reading a_i, C:k's
//                                consumers reading ret k's tensor
//   ReadVariableOp(VarHandleOp v)  =>  Const(the checkpoint's value of v)
//   ResourceGather(v, i)           =>  GatherV2(Const(v), i, batch_dims)
#ifndef GRAFT_DIALECTS_TF_FREEZE_H_
#define GRAFT_DIALECTS_TF_FREEZE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/rewriter.h"
#include "dialects/tf/tensor_bundle.h"

namespace graft {

struct FreezeOptions {
  // Signature keys to keep (their inputs, outputs and what computes them);
  // empty: every signature. The init op signature is always kept.
  std::vector<std::string> signatures;
  // Inlining stops with an error past this many nodes (a function called
  // twice that calls another twice ... doubles per level).
  int64_t max_nodes = int64_t{1} << 22;
};

struct FreezeSummary {
  std::vector<std::string> signatures;  // kept, sorted
  int calls_inlined = 0;
  int identities_bypassed = 0;
  int variables = 0;             // frozen into constants
  int64_t variable_bytes = 0;    // their values' bytes (left in the shards)
  int functions_kept = 0;        // If/While bodies and other callees left
};

// The checkpoint key each variable (a VarHandleOp of the graph, by node
// name) is restored from, read from the saver's restore op (its RestoreV2
// and AssignVariableOps, in the top-level graph or the function it calls).
absl::StatusOr<std::map<std::string, std::string>> RestoredVariableKeys(
    const Graph& graph);

// Which checkpoint key each variable handle restores from: a VarHandleOp
// RestoredVariableKeys names, or one sharing such a handle's shared_name.
class CheckpointKeys {
 public:
  static absl::StatusOr<CheckpointKeys> Of(const Graph& graph);
  // The key of the VarHandleOp that `handle` is (through Identity ops),
  // or nullptr when it is none the checkpoint restores.
  const std::string* Find(const Graph& graph, Endpoint handle) const;

 private:
  std::map<std::string, std::string> by_node_;         // VarHandleOp -> key
  std::map<std::string, std::string> by_shared_name_;  // shared_name -> key
};

// A Const node (named `name`) holding the checkpoint's tensor `key`, its
// bytes left in the shard's mapping when large. An error when the bundle
// lacks the key or the tensor is not a whole numeric one of `dtype` (a
// variable's `dtype` attr).
absl::StatusOr<NodeSpec> CheckpointConstant(const TensorBundle& bundle,
                                            const std::string& key,
                                            const tf::AttrValue* dtype,
                                            const std::string& name);

// Freezes `graph`, a SavedModel's (LoadSavedModel). Errors name the
// SavedModel and the node: an unknown signature, a variable the checkpoint
// does not restore, a variable used other than by reading it.
absl::StatusOr<Graph> FreezeSavedModel(Graph graph,
                                       const FreezeOptions& options = {},
                                       FreezeSummary* summary = nullptr);

// How a SavedModel folder is read: its MetaGraph by tag, and either in
// place (functions and variables as they are) or frozen, keeping
// `signatures` (empty: all).
struct SavedModelReading {
  std::string tag = "serve";
  std::vector<std::string> signatures;
  bool freeze = false;
};
absl::StatusOr<Graph> ReadSavedModel(const std::string& dir,
                                     const SavedModelReading& reading,
                                     FreezeSummary* summary = nullptr);

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_FREEZE_H_
