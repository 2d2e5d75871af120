// The validator: checks that a graph is well formed. Run after rewrites and
// by `graft validate`.
//
// It checks that every input resolves (node and output port), no cycles,
// unique names, control inputs after data inputs, the named outputs still
// exist, and, where the op signatures tell, input counts and dtypes agree.
#ifndef GRAFT_ENGINE_VALIDATE_H_
#define GRAFT_ENGINE_VALIDATE_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph.h"

namespace graft {

struct ValidateOptions {
  // Nodes that must be present (graph outputs, fetches).
  std::vector<std::string> outputs;
  bool check_dtypes = true;
  // Ops outside TensorFlow's registry that the graph may use (custom ops
  // its runtime registers). Validate reports any other op TensorFlow does
  // not have, with the closest name it has (internal `_` ops, which the
  // snapshot leaves out, excepted); ValidateNodes does not look at op
  // names.
  std::set<std::string> custom_ops;
};

// Adds the op names of `path` (one a line; `#` starts a comment) to `ops`.
absl::Status ReadCustomOps(const std::string& path, std::set<std::string>* ops);

struct ValidationIssue {
  NodeId node = kNoNode;  // the node at fault, if one
  std::string message;
};

// Every problem found, in node order (cycles and missing outputs last).
std::vector<ValidationIssue> Validate(const Graph& graph,
                                      const ValidateOptions& options = {});

// The problems of the given nodes alone (what a rewrite touched): inputs,
// dtypes, input counts, Const values; not cycles or outputs. Dead ids and
// duplicates are skipped.
std::vector<ValidationIssue> ValidateNodes(const Graph& graph,
                                           std::vector<NodeId> ids,
                                           const ValidateOptions& options = {});

// How `node` disagrees with its op's signature: an attr its op requires is
// missing or of the wrong kind or below its minimum, a Const's value does
// not fit its shape, its data input count is not what its attrs make the
// op take, or an input reads an output port its producer lacks. Per-op
// analyses (shapes, cost, memory) read only nodes with none of these.
std::vector<ValidationIssue> SignatureIssues(const Graph& graph,
                                             const Node& node);

// The function library's problems alone: a call to a function the library
// does not hold, a function that calls itself (directly or through others).
std::vector<ValidationIssue> LibraryIssues(const Graph& graph);

// OK, or an error listing the first problems found.
absl::Status CheckValid(const Graph& graph,
                        const ValidateOptions& options = {});

// The checks every dialect shares, for its NodeChecker (engine/dialect.h):
// a Const's value is a tensor its runtime accepts (dtype, dims, bytes);
// attrs the op signature declares have their types, allowed values and
// minimums. `report` is given each problem.
void CheckConstValue(const Node& node, const std::function<void(std::string)>& report);
void CheckAttrs(const tf::OpDef& def, const Node& node,
                const std::function<void(std::string)>& report);

}  // namespace graft

#endif  // GRAFT_ENGINE_VALIDATE_H_
