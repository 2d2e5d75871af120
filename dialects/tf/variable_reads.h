// A SavedModel rewritten in place: inside its library functions, a
// variable's reads are shown to the rules as the checkpoint's value (as
// freezing does for a whole inlined graph), so rules that need constant
// weights (folding) apply where the variables stay variables.
//
//   ReadVariableOp(arg holding variable v)  =>  Const(v's checkpoint value)
//   after the rules: a constant still read  =>  that read again
//
// What a rewrite computed from the values (a folded filter) stays in the
// function body as a constant; the variables, their checkpoint and every
// read no rewrite consumed are as they were.
//
// A function's resource arg holds v when every call of the function in the
// graph passes v's handle there: a VarHandleOp of the top-level graph the
// checkpoint restores, or an arg of the calling function that holds v.
// Functions no node calls (a Keras layer's own call functions, which the
// loader binds from the object graph) and If/While bodies hold none. Only
// args a function reads and does nothing else with are shown as values.
#ifndef GRAFT_DIALECTS_TF_VARIABLE_READS_H_
#define GRAFT_DIALECTS_TF_VARIABLE_READS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "dialects/tf/saved_model.h"

namespace graft {

class VariableReads {
 public:
  // Of `graph`, a SavedModel read in place; other graphs have none, and
  // without a checkpoint (variables/) Expose shows nothing.
  static VariableReads Of(const Graph& graph);

  // The checkpoint key input arg `index` of `function` holds, or "".
  std::string KeyOf(const std::string& function, int index) const;

  // In `body` (library function `function` as a graph), each read of an
  // arg holding a variable becomes a Const of its value, marked; returns
  // how many.
  absl::StatusOr<int> Expose(const std::string& function, Graph& body) const;

  // Undoes Expose where the rules left a marked constant read: its readers
  // read the variable again. Returns how many constants went back.
  static absl::StatusOr<int> Restore(Graph& body);

 private:
  std::shared_ptr<const SavedModelOrigin> origin_;
  // Per function, the key each input arg holds ("" none).
  std::map<std::string, std::vector<std::string>> arg_keys_;
};

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_VARIABLE_READS_H_
