// Values that rule guards, rewrites and native hooks compute with.
#ifndef GRAFT_ENGINE_VALUE_H_
#define GRAFT_ENGINE_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/const_tensor.h"
#include "engine/graph.h"
#include "engine/tensor_ranges.h"

namespace graft {

class OpRegistry;  // engine/op_registry.h

class NameRegex;

enum class ValueType {
  kNone,
  kBool,
  kInt,
  kFloat,  // accepts ints
  kString,
  kTensor,  // a graph tensor (node:port); a node means its output 0
  kNode,
  kConst,  // a constant tensor value; accepts numbers and Const tensors
  kList,
  kRanges,  // a table of calibrated tensor ranges (a `ranges` param)
  kGraph,   // another graph, loaded from a file (a `graph` param)
  kRegex,   // a hook parameter: a string compiled as a regex (Value::regex)
  kOpList,  // a hook parameter: a string of op globs, `MatMul|Conv*`
  kCopies,  // what a set `clone` made: original node -> its copy
  kAny,
};

const char* ValueTypeName(ValueType type);
// The name with its article, for messages: "an int", "a list", "nothing".
std::string AValueType(ValueType type);
// A type's name as written ("int", "list") with its article.
std::string WithArticle(const std::string& noun);

struct Value {
  ValueType type = ValueType::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  Endpoint tensor;  // kTensor; kNode uses tensor.node
  std::shared_ptr<const ConstTensor> constant;
  std::vector<Value> list;
  std::shared_ptr<const TensorRanges> ranges;
  std::shared_ptr<const Graph> graph;  // kGraph (null: none given); s: its path
  // A string passed where a hook takes a regex: compiled when the rules
  // compiled (or, for a computed string, when it was computed).
  std::shared_ptr<const NameRegex> regex;
  // kCopies: original node -> copy (a copy of `n:k` is read as `copy:k`).
  std::shared_ptr<const absl::flat_hash_map<NodeId, NodeId>> copies;
  // The attr a shape, list or other value was read from, as it was: set on
  // a node it is written back exactly (an unknown-rank shape stays unknown,
  // a func attr stays whole), where the value alone would lose it.
  std::shared_ptr<const tf::AttrValue> attr;

  static Value Bool(bool v) {
    Value x;
    x.type = ValueType::kBool;
    x.b = v;
    return x;
  }
  static Value Int(int64_t v) {
    Value x;
    x.type = ValueType::kInt;
    x.i = v;
    return x;
  }
  static Value Float(double v) {
    Value x;
    x.type = ValueType::kFloat;
    x.f = v;
    return x;
  }
  static Value String(std::string v) {
    Value x;
    x.type = ValueType::kString;
    x.s = std::move(v);
    return x;
  }
  static Value Tensor(Endpoint e) {
    Value x;
    x.type = ValueType::kTensor;
    x.tensor = e;
    return x;
  }
  static Value NodeRef(NodeId id) {
    Value x;
    x.type = ValueType::kNode;
    x.tensor = {id, 0};
    return x;
  }
  static Value Constant(ConstTensor t) {
    Value x;
    x.type = ValueType::kConst;
    x.constant = std::make_shared<const ConstTensor>(std::move(t));
    return x;
  }
  static Value Ranges(std::shared_ptr<const TensorRanges> table) {
    Value x;
    x.type = ValueType::kRanges;
    x.ranges = std::move(table);
    return x;
  }
  static Value GraphRef(std::shared_ptr<const Graph> g, std::string path) {
    Value x;
    x.type = ValueType::kGraph;
    x.graph = std::move(g);
    x.s = std::move(path);
    return x;
  }
  static Value Copies(absl::flat_hash_map<NodeId, NodeId> mapping) {
    Value x;
    x.type = ValueType::kCopies;
    x.copies = std::make_shared<const absl::flat_hash_map<NodeId, NodeId>>(
        std::move(mapping));
    return x;
  }
  static Value List(std::vector<Value> items) {
    Value x;
    x.type = ValueType::kList;
    x.list = std::move(items);
    return x;
  }

  bool is_number() const {
    return type == ValueType::kInt || type == ValueType::kFloat;
  }
  double number() const {
    return type == ValueType::kInt ? static_cast<double>(i) : f;
  }
};

// The nodes of a node (or tensor) value, or of each item of a list.
std::vector<NodeId> NodesOf(const Value& v);
// Lists of node and tensor values.
Value NodeList(const std::vector<NodeId>& ids);
Value TensorList(const std::vector<Endpoint>& ts);

// Whether a value of type `have` may be passed where `want` is expected.
bool Accepts(ValueType want, ValueType have);

// The value of attr `name` of `node` of `graph` (or the default its op's
// definition gives: an ONNX op's at the model's opset), as a Value.
absl::StatusOr<Value> AttrValueOf(const Graph& graph, const Node& node,
                                  const std::string& name);
// A value as a constant: numbers become scalars, Const tensors their value.
// With `deferred_ok`, a large float or double constant whose bytes are kept
// apart stays undecoded (ConstTensor::deferred), for the hooks that handle
// such a tensor; otherwise the values are always decoded.
absl::StatusOr<ConstTensor> ToConstant(const Graph& graph, const Value& v,
                                       bool deferred_ok = false);
// The constant a tensor holds: a Const's, or that of a Const read through
// Identity ops and non-truncating Casts (in the Cast's dtype, rounded as
// the Cast rounds); `deferred_ok` as for ToConstant.
absl::StatusOr<ConstTensor> ConstantOf(const Graph& graph, Endpoint tensor,
                                       bool deferred_ok = false);
// Whether an op's filter is in its transposed layout: a matmul's [out, in]
// (TensorFlow's MatMul `transpose_b`, ONNX's Gemm `transB`), a transposed
// aten.convolution's [in, out, k...].
bool TransposedFilter(const Node& op);
// The compiled regex of a string value: the one compiled with the rules, or
// compiled now (a bad regex is an error).
absl::StatusOr<std::shared_ptr<const NameRegex>> RegexOf(const Value& v);

}  // namespace graft

#endif  // GRAFT_ENGINE_VALUE_H_
