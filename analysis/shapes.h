// Shape and dtype inference for the ops of TF-exported inference and
// training graphs. Shapes come from each op's semantics, from small integer
// values computed along the way (Shape, Pack, Slice, BroadcastGradientArgs,
// ...), or from `_output_shapes` attrs when present. What cannot be known
// stays unknown: a dimension is -1, a shape of unknown rank has no dims.
#ifndef GRAFT_ANALYSIS_SHAPES_H_
#define GRAFT_ANALYSIS_SHAPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph.h"
#include "proto/graph.pb.h"

namespace graft::analysis {

// The largest value a symbolic dimension takes: far below any negative
// number shape arithmetic computes, so that a symbol in a small integer
// value (a Shape's output) is never read as a number.
inline constexpr int64_t kSymbolicDimMax = -(int64_t{1} << 40);
// The dimension that stands for a named symbol (an ONNX `dim_param`): the
// same for the same name, <= kSymbolicDimMax.
int64_t SymbolicDim(const std::string& name);
// A declared dimension's name as a dimension: a sum of sizes and names
// (torch's exporter writes `s36 + 1` for a cache's past and one more) is
// the symbol inference derives for that sum; any other name is
// SymbolicDim(name).
int64_t NamedDim(const std::string& name);
// A symbolic dimension that a function of other dimensions gives (a
// broadcast of two symbols, a slice of a symbolic length): the same for the
// same function and arguments, so that tensors derived alike are seen equal.
int64_t DerivedSymbolicDim(const std::string& function, const std::vector<int64_t>& args);
// What a derived symbol stands for (the function and arguments it was
// made of in this process), or none for a named or unknown dimension.
struct DerivedDim {
  std::string function;
  std::vector<int64_t> args;
};
std::optional<DerivedDim> DerivedSymbolicDimDefinition(int64_t d);
// Whether `d` is a prefix of a positive length sliced to `length` (a buffer
// of positions or a causal mask cut to the sequence: min(n, length)): read
// with `length` by a broadcasting op, it is `length` wherever the graph runs.
bool IsPrefixSlicedTo(int64_t d, int64_t length);
// Whether `d` is a symbolic dimension: in (kSymbolicDimMax - 2^40,
// kSymbolicDimMax], clear of -1 and of INT64_MIN (a Slice's "from the start").
inline bool IsSymbolicDim(int64_t d) {
  return d <= kSymbolicDimMax && d > kSymbolicDimMax - (int64_t{1} << 40);
}

struct TensorInfo {
  tf::DataType dtype = tf::DT_INVALID;
  bool known_rank = false;
  // -1: unknown dimension; kSymbolicDimMax and below: a symbolic dimension
  // (SymbolicDim), unknown but equal to every dimension of the same symbol
  // (an ONNX input's `batch`). Every `< 0` test reads both as unknown.
  std::vector<int64_t> dims;
  // The value of a small integer tensor (flattened), when known (shape
  // arithmetic).
  std::optional<std::vector<int64_t>> value;

  bool fully_known() const;
  // Elements, or -1 when the shape is not fully known.
  int64_t num_elements() const;
  // Bytes of the tensor, or -1 when the shape or dtype size is unknown.
  int64_t bytes() const;
  // "[32, 64]", "[?, 64]", "<unknown>".
  std::string ShapeString() const;
};

// Shapes given for a graph's inputs: what the graph leaves unknown (a
// dynamic batch dimension, say).
struct ShapeOptions {
  // Placeholder name -> its shape (-1: unknown dimension); replaces the
  // graph's.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // > 0: an unknown first dimension of every other Placeholder.
  int64_t batch = 0;
};

// Adds `name=1,224,224,3` (`?` or -1 for an unknown dimension; `name=` for a
// scalar) to `options`; an error says what is wrong with the text.
absl::Status ParseInputShape(const std::string& text, ShapeOptions* options);
// Every input named in `options` is a Placeholder of `graph`.
absl::Status CheckInputShapes(const Graph& graph, const ShapeOptions& options);
// When two or more of the graph's inputs have named symbolic dimensions
// and no two inputs share a name (tf2onnx names every unknown dimension
// apart: `unk__1`), a hint naming the --input-shape that would say they
// share sizes; "" otherwise, and when `options` gives any input's shape.
std::string SharedSizesHint(const Graph& graph, const ShapeOptions& options);

class ShapeMap {
 public:
  // The tensor's info; an unknown tensor when the node or port is unknown.
  const TensorInfo& at(Endpoint tensor) const;
  int num_outputs(NodeId id) const;
  // Tensors (output ports the op has) whose shape is not fully known.
  std::vector<Endpoint> Unknown(const Graph& graph) const;
  // The nodes that disagree with their op's signature (an attr, their data
  // input count, a port read; engine/validate.h SignatureIssues), with the
  // validator's message: no shape function read them, and their outputs
  // stay unknown.
  const std::map<NodeId, std::string>& mismatched() const {
    return mismatched_;
  }
  // OK when every node matches its op; otherwise an error with the
  // validator's messages for the first of them (what `graft mem`, `graft
  // cost` and the planners refuse).
  absl::Status CheckSignatures() const;

 private:
  friend ShapeMap InferShapes(const Graph& graph, const ShapeOptions& options);
  friend size_t UpdateShapes(const Graph& graph, const ShapeOptions& options,
                             const std::vector<NodeId>& touched, ShapeMap* map);
  std::vector<std::vector<TensorInfo>> outputs_;  // by node id, then port
  std::map<NodeId, std::string> mismatched_;
  TensorInfo unknown_;
};

// Infers every output of every live node, in topological order (a cyclic
// graph gets only `_output_shapes` and dtypes).
ShapeMap InferShapes(const Graph& graph, const ShapeOptions& options = {});

// Brings `map` (inferred on an earlier version of `graph`) up to date after
// edits that touched `touched`: those nodes are inferred again, and their
// consumers as far as an output changes. What InferShapes would give, in
// time proportional to the change, however much lies downstream of it.
// Returns how many times a node was inferred again.
size_t UpdateShapes(const Graph& graph, const ShapeOptions& options,
                    const std::vector<NodeId>& touched, ShapeMap* map);

// Shapes TensorFlow's importer refuses, where both sides are known: a
// MatMul or BatchMatMul whose inner dimensions differ (transposes applied),
// a BiasAdd whose bias is not as long as the channel dimension, a Conv2D
// whose filter's input channels are not the input's, a ConcatV2 whose
// inputs differ off the concatenated axis, a FusedBatchNorm whose input is
// not 4-D (5-D with a 3-D data format). One message per node,
// in node order, as the validator words them.
std::vector<std::pair<NodeId, std::string>> ShapeConflicts(
    const Graph& graph, const ShapeMap& shapes);

// A Placeholder the step is fed: not a traced step's variable, which comes
// in as a resource placeholder (like a VarHandleOp).
bool IsFedInput(const Node& n, const ShapeMap& shapes);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SHAPES_H_
