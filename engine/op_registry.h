// Op signatures: which inputs and outputs an op has and of which dtypes.
//
// The signatures are a snapshot of TensorFlow's op registry
// (dialects/tf/ops/tf_ops.pbtxt), compiled into graft. A node's dtypes are known
// when its op is in the snapshot and the attrs its signature names are set
// on the node or have defaults.
#ifndef GRAFT_ENGINE_OP_REGISTRY_H_
#define GRAFT_ENGINE_OP_REGISTRY_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "proto/graph.pb.h"

namespace graft {

class OpRegistry {
 public:
  // The registry of a graph's dialect (engine/dialect.h). A versioned
  // registry (ONNX's) names `Name` the newest version and `Name@V` the one
  // since opset V (FindAt).
  static const OpRegistry& For(const Graph& graph);

  explicit OpRegistry(tf::OpList ops);

  // The signature of `op`, or nullptr for an op not in the registry.
  const tf::OpDef* Find(absl::string_view op) const;
  // A versioned registry's (ONNX's) signature of `op` at `opset`: the
  // newest version not after it; nullptr when the op is not defined yet.
  const tf::OpDef* FindAt(absl::string_view op, int64_t opset) const;
  // The opset a versioned op's newest version is defined since; 0 for an
  // op not in the registry.
  int64_t NewestSince(absl::string_view op) const;
  // Every version of a versioned op's signature, oldest first; empty for
  // an op without versions.
  std::vector<const tf::OpDef*> Versions(absl::string_view op) const;
  // Whether a signature is one of onnxruntime's contrib ops
  // (`com.microsoft.Name`): rules are checked against them, models are not
  // (onnx.checker does not know them).
  static bool IsRuntimeContrib(const tf::OpDef& def);
  int size() const { return ops_.op_size(); }
  // Every op name, sorted.
  std::vector<std::string> OpNames() const;

  // The dtype of each output port / data input of `node`, or nullopt when
  // the op is unknown or an attr its signature needs is missing. Reference
  // dtypes are returned as such (DT_FLOAT_REF).
  std::optional<std::vector<tf::DataType>> OutputTypes(const Node& node) const;
  std::optional<std::vector<tf::DataType>> InputTypes(const Node& node) const;
  // The same for a node not yet built: op `op` with these attrs.
  std::optional<std::vector<tf::DataType>> InputTypes(
      absl::string_view op,
      const google::protobuf::Map<std::string, tf::AttrValue>& attrs) const;
  // The dtype of one output port; DT_INVALID when unknown.
  tf::DataType OutputType(const Node& node, int port) const;
  // How many data inputs a node of `op` can have: [min, max], max -1 when
  // a list input leaves it open; trailing optional inputs (ONNX's) need not
  // be given.
  static std::pair<int, int> InputCounts(const tf::OpDef& op);
  // Whether two nodes of `op` that read the same inputs with the same attrs
  // compute the same, so that one may stand for the other: the op is known,
  // draws nothing random (is_stateful), writes no input (an ATen op whose
  // summary says "mutates") and holds no subgraph, which attrs leave out
  // (ONNX's If, Loop and Scan keep their bodies apart).
  static bool SameInputsSameOutputs(const tf::OpDef* op);

 private:
  tf::OpList ops_;
  absl::flat_hash_map<std::string, const tf::OpDef*> by_name_;
  // A versioned registry's ops: each version's since-opset and signature.
  absl::flat_hash_map<std::string,
                      std::vector<std::pair<int64_t, const tf::OpDef*>>>
      versions_;
};

// The shape of a tensor when the graph states it: a Const's value, a
// Placeholder's `shape`, or an `_output_shapes` attr; -1 for an unknown
// dimension; nullopt for an unknown rank.
std::optional<std::vector<int64_t>> StaticShape(const Graph& graph,
                                                Endpoint tensor);
// Whether two static shapes can describe the same tensor (same rank, and
// every dimension equal where both are known).
bool ShapesCompatible(const std::vector<int64_t>& a,
                      const std::vector<int64_t>& b);
std::string ShapeText(const std::vector<int64_t>& shape);

// `Name*` matches every op that starts with `Name`; otherwise exact.
bool GlobMatch(absl::string_view pattern, absl::string_view text);
// An op list as rules and hook arguments write it, "MatMul|Conv*": its
// globs, and whether `op` matches one of them (none of an empty list).
std::vector<std::string> SplitGlobs(absl::string_view alternatives);
bool GlobsMatch(absl::Span<const std::string> globs, absl::string_view op);

// Adds the graph IR's own ops (Const, Placeholder) to a dialect's list: the
// ops its weights and graph inputs are read as.
void AddIrOps(tf::OpList* ops);

// The value dtype of a reference dtype (DT_FLOAT_REF -> DT_FLOAT).
tf::DataType BaseType(tf::DataType type);
// Bytes per element of a dtype; 0 for resources, variants and strings, and
// for the 4-bit types (two to a byte: TensorBytes).
int64_t DataTypeSize(tf::DataType dtype);
// Bytes `elements` values of a dtype take as tensor content: 4-bit values
// packed two to a byte (ONNX's int4 and uint4, the low nibble first);
// -1 for dtypes without a fixed width, or on overflow.
int64_t TensorBytes(tf::DataType dtype, int64_t elements);
// "float32", "int64", ... (TensorFlow's Python names).
std::string DataTypeName(tf::DataType type);
// The dtype a name means: TensorFlow's Python names (as DataTypeName gives
// them: "float16", "quint8"), the short aliases "float", "double", "half",
// or the enum name ("DT_HALF").
absl::StatusOr<tf::DataType> ParseDataType(absl::string_view name);

}  // namespace graft

#endif  // GRAFT_ENGINE_OP_REGISTRY_H_
