// Frozen TensorFlow graphs keep their weights in top-level Consts and pass
// them into control flow as arguments (an If's branch inputs, a While's
// loop-invariant inputs, a PartitionedCall's): inside the body, a conv's
// filter is an `_Arg`. The rules see such an argument as the constant it
// always is, as ONNX bodies see outer initializers and SavedModel
// functions their checkpoint's values:
//
//   _Arg i of f, every call of f passing the same constant  =>  Const
//   after the rules: a constant still read  =>  the _Arg again
//
// An argument holds a constant when every call of its function passes one
// with the same value: a Const (or an Identity of one) of the calling
// graph, or an argument of the calling function that holds one. A While's
// input counts only when the body returns its argument unchanged (through
// Identity ops): the loop never changes it. Functions no node calls, and
// functions named in any other way (an op's attr that is not a call), hold
// none.
#ifndef GRAFT_DIALECTS_TF_CONSTANT_ARGS_H_
#define GRAFT_DIALECTS_TF_CONSTANT_ARGS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/tensor_content.h"
#include "proto/graph.pb.h"

namespace graft {

class ConstantArgs {
 public:
  // Of `graph`'s library functions (a TensorFlow graph; none for ONNX).
  static ConstantArgs Of(const Graph& graph);

  // What arg `index` of `function` holds.
  struct Held {
    enum Kind { kUnset, kConstant, kConflict } kind = kUnset;
    std::string source;  // the Const's name ("function/node" in a body)
    tf::DataType dtype = tf::DT_INVALID;
    tf::AttrValue value;  // the Const's `value` (content apart below)
    std::shared_ptr<const TensorContent> content;
  };
  // The constant arg `index` of `function` holds, or nullptr.
  const Held* ConstantOf(const std::string& function, int index) const;

  // In `body` (library function `function` as a graph), each arg holding
  // a constant is read as a Const of its value, marked; returns how many.
  absl::StatusOr<int> Expose(const std::string& function, Graph& body) const;

  // Undoes Expose where the rules left a marked constant read: its readers
  // read the arg again. Returns how many args something still computes
  // with (the others' values were folded into what the rules made).
  static absl::StatusOr<int> Restore(Graph& body);

 private:
  std::map<std::string, std::vector<Held>> args_;
};

// Undoes a substitution that showed the rules a constant in place of a
// node of op `op` (an `_Arg`, a ReadVariableOp): each Const carrying attr
// `mark` (that node's name) that something still reads is replaced by the
// node again; constants nothing reads go. A constant whose node a rule
// removed stays, unmarked. Returns how many were still read; with
// `computed_with`, also how many something still computes with (read by
// more than an Identity that nothing reads: a read a function keeps only as
// a control output).
absl::StatusOr<int> RestoreMarkedConstants(Graph& body, const std::string& mark,
                                           const std::string& op,
                                           const std::string& provenance,
                                           int* computed_with = nullptr);

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_CONSTANT_ARGS_H_
