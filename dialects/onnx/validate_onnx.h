// The ONNX dialect's validation (engine/validate.h calls it for a graph
// with an OnnxOrigin): what onnx.checker.check_model(full_check=True)
// checks of nodes and types, from the compiled-in schemas at the model's
// opset. Internal to validate.
#ifndef GRAFT_DIALECTS_ONNX_VALIDATE_ONNX_H_
#define GRAFT_DIALECTS_ONNX_VALIDATE_ONNX_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/graph.h"
#include "engine/kept_per_graph.h"

namespace graft::validate_onnx {

// Element types of an ONNX graph's values, inferred from the op schemas'
// type constraints (an output constrained like an input has its type; a
// fixed one its own; `to`/`dtype` attrs) where the model does not declare
// them (graph inputs, initializers, value_info, graph outputs), computed
// on demand and kept.
class Types {
 public:
  explicit Types(const Graph& graph);
  // DT_INVALID where unknown.
  tf::DataType Of(Endpoint e);
  // Why node `id`'s inputs do not fit its op's type constraints, or its
  // outputs their declared types.
  const std::vector<std::string>& Problems(NodeId id);
  // Catches up with edits (the graph's edit log's `touched` nodes): their
  // types are inferred again, and their readers' where theirs changed.
  void Forget(const std::vector<NodeId>& touched);

 private:
  void Compute(NodeId id);  // id's producers first, then id
  void Infer(NodeId id);    // id, its producers known
  const Graph& graph_;
  std::map<std::string, tf::DataType> declared_;  // by value name
  absl::flat_hash_map<NodeId, std::vector<tf::DataType>> outputs_;
  absl::flat_hash_map<NodeId, std::vector<std::string>> problems_;
};

// The Types of a graph, kept from one use to the next and caught up with
// the graph's edits (its edit log), held under a lock while this lives:
// an apply checks the nodes of each rewrite and guards ask `dtype` of
// every candidate, and inferring every type afresh for each made a long
// apply quadratic (a 32-layer TorchScript LLaMA: 4400 rewrites of 8300
// nodes). A graph's own types; another graph at its address starts over.
class HeldTypes {
 public:
  explicit HeldTypes(const Graph& graph);
  Types& types();

 private:
  std::shared_ptr<KeptPerGraph<Types>::Entry> entry_;  // (kept while locked)
  std::unique_lock<std::recursive_mutex> lock_;
};

// The element types of node `n`'s outputs (DT_INVALID: unknown) from its
// inputs' (`type_of`), by the rules above; with `declared` (by value name)
// checked against and taken from what the model declares; `problems` gets
// why the inputs do not fit.
std::vector<tf::DataType> OutputTypes(
    const Graph& graph, const graft::Node& n,
    const std::function<tf::DataType(Endpoint)>& type_of,
    const std::map<std::string, tf::DataType>* declared = nullptr,
    std::vector<std::string>* problems = nullptr);

// An ONNX node against its op's schema at the model's opset: the op is
// defined there (another domain's ops: its domain is imported), its input
// count fits and required inputs are not empty, its attrs are ones the op
// has and of their types, required attrs are given, every input resolves
// to an output its producer has and, read from the file, was written
// before it (ONNX wants nodes in topological order); with `types`, its
// inputs' and outputs' element types fit.
void CheckNode(const Graph& graph, const graft::Node& node, bool signature_only,
               Types* types, const std::function<void(std::string)>& report);

}  // namespace graft::validate_onnx

#endif  // GRAFT_DIALECTS_ONNX_VALIDATE_ONNX_H_
