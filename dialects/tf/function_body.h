// Library functions (FunctionDefs: If/While branches and bodies,
// PartitionedCall targets, a SavedModel's traced functions) as graphs the
// rules rewrite, and back. In a body graph each input arg is an `_Arg` node
// named as the arg (attrs `T`, `index`), each output a `_Retval` node
// (attrs `T`, `index`) reading what `ret` maps it to; body nodes' inputs
// use graph names (`node:port`) instead of FunctionDef names
// (`node:out_arg:index`), translated through the op's signature (or the
// called function's).
#ifndef GRAFT_DIALECTS_TF_FUNCTION_BODY_H_
#define GRAFT_DIALECTS_TF_FUNCTION_BODY_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "proto/graph.pb.h"

namespace graft {

// The body of `function` as a graph. An error (naming the function and
// the node) when a name does not resolve or an op's outputs cannot be
// counted (an attr left as a placeholder of the function's own attrs).
absl::StatusOr<Graph> FunctionBodyGraph(const tf::FunctionDef& function,
                                        const tf::FunctionDefLibrary& library);

// `function` with its body replaced by `body`'s nodes (a graph made by
// FunctionBodyGraph, then rewritten): signature, attrs and arg attrs kept;
// `ret` and `control_ret` read from the `_Retval` nodes and the kept
// control outputs. An error when a rewrite removed an `_Arg` or `_Retval`
// node or changed its index.
absl::StatusOr<tf::FunctionDef> FunctionFromBody(
    const Graph& body, const tf::FunctionDef& function,
    const tf::FunctionDefLibrary& library);

// The functions `node` calls: its op when `library` (function names) holds
// it, and every function its attrs name (`f`, branches, bodies).
std::vector<std::string> FunctionsCalled(const tf::NodeDef& node,
                                         const std::set<std::string>& library);

// A library's call graph: the functions a node reaches, directly (its op,
// its attrs' functions) and through the bodies of those.
class CallGraph {
 public:
  explicit CallGraph(const tf::FunctionDefLibrary& library);
  // Adds every function `node` reaches to `out`.
  void AddReached(const tf::NodeDef& node, std::set<std::string>* out) const;

 private:
  std::set<std::string> names_;
  std::map<std::string, const tf::FunctionDef*> functions_;
};

// Library functions by name.
using FunctionsByName = std::map<std::string, const tf::FunctionDef*>;

// The function a call runs with its inputs as its args in order:
// (Stateful)PartitionedCall's `f`, or a library function used as an op
// whose args are single tensors. Null for anything else.
const tf::FunctionDef* CallTarget(const tf::NodeDef& node,
                                  const FunctionsByName& library);

// The library's functions, callers before callees; empty when the library
// calls itself.
std::vector<const tf::FunctionDef*> CallOrder(const FunctionsByName& library);

// Each input arg's index, by its name.
std::map<std::string, int> ArgIndex(const tf::FunctionDef& function);

// The `_Retval` node name of output `ret` in a body graph.
std::string RetvalNodeName(const std::string& ret);

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_FUNCTION_BODY_H_
