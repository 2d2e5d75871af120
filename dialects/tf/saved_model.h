// SavedModels (a folder: saved_model.pb, variables/, assets/,
// fingerprint.pb) as graft reads and writes them in place: the MetaGraph
// chosen by tag becomes the Graph (its top-level nodes, and its function
// library where TensorFlow 2 keeps the compute); writing puts the
// rewritten graph back into that MetaGraph and copies everything else
// as it was (variable shards byte for byte), as a new folder built beside
// the destination and renamed into place. fingerprint.pb is dropped (it
// fingerprints the old graph; TensorFlow loads a SavedModel without one).
#ifndef GRAFT_DIALECTS_TF_SAVED_MODEL_H_
#define GRAFT_DIALECTS_TF_SAVED_MODEL_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dialect.h"
#include "engine/graph.h"
#include "dialects/tf/tensor_bundle.h"
#include "proto/saved_model.pb.h"

namespace graft {

struct SavedModelOrigin : DialectOrigin {
  absl::string_view dialect() const override { return "tensorflow"; }
  std::string dir;
  tf::SavedModel proto;  // every MetaGraph, as read
  int meta_graph = 0;    // the one the graph is
  std::optional<TensorBundle> variables;  // when variables/ holds a bundle
  // A frozen graph's (dialects/tf/freeze.h): `proto` holds its one MetaGraph;
  // written without variables/.
  bool frozen = false;
};

// The graph's SavedModel, or nullptr when it was not read from one.
const SavedModelOrigin* SavedModelOf(const Graph& graph);

// Whether the graph restores variables from a checkpoint (its MetaGraph
// has a saver): written elsewhere than as a SavedModel folder, it would
// lose them.
bool RestoresVariables(const SavedModelOrigin& origin);

// Whether `path` is a folder holding a saved_model.pb.
bool IsSavedModelDir(const std::string& path);

// Reads a SavedModel folder's MetaGraph with `tag` (default "serve"; the
// only MetaGraph when there is one) and checks its variables' bundle. The
// graph remembers where it came from (Graph::saved_model()).
absl::StatusOr<Graph> LoadSavedModel(const std::string& dir,
                                     const std::string& tag = "serve");

// The library functions only the checkpoint's save and restore ops call
// (the saver's `__inference__traced_save` / `_restore` and what they call):
// rewriting them would change what the SavedModel saves and restores.
std::set<std::string> CheckpointFunctions(const Graph& graph);

// The MetaGraph with `tag` of saved_model.pb's bytes as a graph (its
// variables not read); `source` names the file in errors.
absl::StatusOr<Graph> ParseSavedModel(const std::string& bytes,
                                      const std::string& source,
                                      const std::string& tag = "serve");

// Writes `graph` (read from a SavedModel) as a SavedModel folder at `dir`:
// in place, everything else copied as it was; frozen, saved_model.pb and
// the input's assets/ only.
absl::Status SaveSavedModel(const Graph& graph, const std::string& dir);

// One signature over a graph's tensors: (name in the signature, tensor).
struct SignatureTensors {
  std::string key = "serving_default";
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
};

// Writes `graph`, a graph without variables (frozen), as a new SavedModel
// folder at `dir` with one MetaGraph (tag serve) and `signature` (dtypes
// from the op registry, shapes from the inputs' placeholders and
// `_output_shapes` where known). An error names a tensor the graph lacks.
absl::Status SaveFrozenSavedModel(const Graph& graph, const std::string& dir,
                                  const SignatureTensors& signature);

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_SAVED_MODEL_H_
