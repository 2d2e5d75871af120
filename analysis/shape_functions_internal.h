// Helpers of the shape functions (shape_functions_*.cc), and how each file
// adds its ops to the table.
#ifndef GRAFT_ANALYSIS_SHAPE_FUNCTIONS_INTERNAL_H_
#define GRAFT_ANALYSIS_SHAPE_FUNCTIONS_INTERNAL_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "analysis/shape_functions.h"
#include "engine/op_registry.h"

namespace graft::analysis {

using ShapeTable = absl::flat_hash_map<std::string, ShapeFn>;
// Shapes, values and layout-free ops (shape_functions_array.cc).
void AddArrayShapeFunctions(ShapeTable* table);
// Convolutions, pooling, matmuls, batch norms, losses
// (shape_functions_nn.cc).
void AddNnShapeFunctions(ShapeTable* table);
// Select, strided slices, ConcatOffset, InvertPermutation
// (shape_functions_slicing.cc).
void AddSlicingShapeFunctions(ShapeTable* table);
// The ONNX dialect's ops (shape_functions_onnx.cc).
void AddOnnxShapeFunctions(ShapeTable* table);

inline TensorInfo UnknownRank() { return TensorInfo(); }

// A tensor of known rank whose dimensions are all unknown.
inline TensorInfo OfRank(int64_t rank) {
  return Shaped(Dims(std::max<int64_t>(rank, 0), -1));
}

inline bool IsIntType(tf::DataType t) {
  t = BaseType(t);
  return t == tf::DT_INT32 || t == tf::DT_INT64 || t == tf::DT_INT16 ||
         t == tf::DT_INT8 || t == tf::DT_UINT8;
}

// Sums and products of dimensions: -1 (unknown) when either is unknown or
// the result would overflow (a hostile graph's dimensions can be anything).
inline int64_t AddDims(int64_t a, int64_t b) {
  int64_t r = 0;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}
inline int64_t MulDims(int64_t a, int64_t b) {
  int64_t r = 0;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}
// The sum where a symbol is in it: a symbol of its own, the same for the
// same sum (a cache's past keys and values, each joined with one more).
inline int64_t SumDims(int64_t a, int64_t b) {
  if ((a < 0 && !IsSymbolicDim(a)) || (b < 0 && !IsSymbolicDim(b))) return -1;
  if (a >= 0 && b >= 0) return AddDims(a, b);
  return DerivedSymbolicDim("sum", {std::min(a, b), std::max(a, b)});
}
// Of two dimensions known equal (a Concat's other axes), the better known:
// a size, then a symbol.
inline int64_t EqualDims(int64_t a, int64_t b) {
  return a >= 0 || (a != -1 && b < 0) ? a : b;
}

// Right-aligned broadcasting; unknown where it cannot be decided.
TensorInfo BroadcastShapes(const TensorInfo& a, const TensorInfo& b);

// Output size of a window (conv, pool) along one spatial dimension.
int64_t WindowOut(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                  const std::string& pad, int64_t pad_before = 0,
                  int64_t pad_after = 0);

inline std::string AttrString(const Node& n, const char* name,
                              const char* fallback) {
  const tf::AttrValue* v = n.attr(name);
  return v ? v->s() : fallback;
}

inline bool AttrBool(const Node& n, const char* name, bool fallback) {
  const tf::AttrValue* v = n.attr(name);
  return v ? v->b() : fallback;
}

inline int64_t AttrInt(const Node& n, const char* name, int64_t fallback) {
  const tf::AttrValue* v = n.attr(name);
  return v ? v->i() : fallback;
}

inline Dims AttrInts(const Node& n, const char* name) {
  const tf::AttrValue* v = n.attr(name);
  Dims out;
  if (v) out.assign(v->list().i().begin(), v->list().i().end());
  return out;
}

struct Layout {
  int n = 0, h = 1, w = 2, c = 3;
};

inline Layout LayoutOf(const std::string& format) {
  if (format == "NCHW") return {0, 2, 3, 1};
  return {};
}

inline void SetValue(std::vector<TensorInfo>& out, int port, Dims v,
                     bool scalar = false) {
  out[port] = Shaped(scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())});
  out[port].value = std::move(v);
}

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SHAPE_FUNCTIONS_INTERNAL_H_
