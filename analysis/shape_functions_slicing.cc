// Shape functions of selection, slicing and index arithmetic: Select,
// SelectV2, StridedSlice, ConcatOffset and InvertPermutation (what the
// gradients of losses, concatenations, broadcasting matmuls and transposes
// are made of). Values of small integer tensors are carried along.
#include <algorithm>

#include "analysis/shape_functions_internal.h"

namespace graft::analysis {
namespace {

// Select(cond, t, e): t's shape (e's where t's is unknown).
void InferSelect(const ShapeInputs& in, const Node& n,
                 std::vector<TensorInfo>& out) {
  const TensorInfo &t = in.In(n, 1), &e = in.In(n, 2);
  out[0] = t.known_rank ? t : e;
  out[0].value.reset();
  if (out[0].known_rank && e.known_rank && e.dims.size() == t.dims.size()) {
    for (size_t i = 0; i < out[0].dims.size(); ++i) {
      if (out[0].dims[i] < 0) out[0].dims[i] = e.dims[i];
    }
  }
}

// SelectV2(cond, t, e): the three broadcast together.
void InferSelectV2(const ShapeInputs& in, const Node& n,
                   std::vector<TensorInfo>& out) {
  out[0] =
      BroadcastShapes(BroadcastShapes(in.In(n, 0), in.In(n, 1)), in.In(n, 2));
}

// InvertPermutation(p): p's shape; the inverse when p is known.
void InferInvertPermutation(const ShapeInputs& in, const Node& n,
                            std::vector<TensorInfo>& out) {
  const TensorInfo& p = in.In(n, 0);
  out[0] = p.known_rank ? OfRank(p.dims.size()) : UnknownRank();
  if (p.known_rank) out[0].dims = p.dims;
  if (!p.value) return;
  const Dims& perm = *p.value;
  Dims inverse(perm.size(), -1);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size()) ||
        inverse[perm[i]] != -1)
      return;  // not a permutation
    inverse[perm[i]] = static_cast<int64_t>(i);
  }
  SetValue(out, 0, std::move(inverse));
}

// ConcatOffset(axis, shape_0, ..., shape_{N-1}): N vectors of the shapes'
// length; offset i is the sum of the earlier shapes along `axis`.
void InferConcatOffset(const ShapeInputs& in, const Node& n,
                       std::vector<TensorInfo>& out) {
  const TensorInfo& first = in.In(n, 1);
  for (TensorInfo& t : out) t = first.known_rank ? first : OfRank(1);
  for (TensorInfo& t : out) t.value.reset();
  const auto& axis_v = in.Value(n, 0);
  if (!axis_v || axis_v->size() != 1) return;
  int64_t running = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& shape = in.Value(n, static_cast<int>(i) + 1);
    if (!shape) return;
    int64_t rank = static_cast<int64_t>(shape->size());
    int64_t axis = (*axis_v)[0] < 0 ? (*axis_v)[0] + rank : (*axis_v)[0];
    if (axis < 0 || axis >= rank) return;
    Dims offset(rank, 0);
    offset[axis] = running;
    running = AddDims(running, (*shape)[axis]);
    if (running < 0) return;
    SetValue(out, static_cast<int>(i), std::move(offset));
  }
}

// One dimension of a strided slice: the size it keeps and, when
// `take` is given, the indices it takes (for values).
int64_t SliceLength(int64_t dim, int64_t begin, int64_t end, int64_t stride,
                    bool begin_all, bool end_all, std::vector<int64_t>* take) {
  if (dim < 0) return -1;
  auto clamp = [&](int64_t v, bool is_begin) {
    if (v < 0) v += dim;
    if (stride > 0) return std::clamp<int64_t>(v, 0, dim);
    return std::clamp<int64_t>(v, -1, dim - 1) + (is_begin ? 0 : 0);
  };
  int64_t b = begin_all ? (stride > 0 ? 0 : dim - 1) : clamp(begin, true);
  int64_t e = end_all ? (stride > 0 ? dim : -1) : clamp(end, false);
  // b and e lie in [-1, dim]: their difference cannot overflow.
  int64_t span = stride > 0 ? e - b : b - e;
  uint64_t step = stride > 0 ? static_cast<uint64_t>(stride)
                             : 0 - static_cast<uint64_t>(stride);
  int64_t count =
      span <= 0 ? 0 : static_cast<int64_t>((static_cast<uint64_t>(span) - 1) /
                                               step +
                                           1);
  if (take != nullptr) {
    for (int64_t k = 0; k < count; ++k)
      take->push_back(b + k * stride);  // a value's length: small
  }
  return count;
}

// StridedSlice(x, begin, end, strides) with its masks (no ellipsis or new
// axes: then only the rank, or nothing, is known).
void InferStridedSlice(const ShapeInputs& in, const Node& n,
                       std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  const auto &begin = in.Value(n, 1), &end = in.Value(n, 2),
             &strides = in.Value(n, 3);
  int64_t begin_mask = AttrInt(n, "begin_mask", 0);
  int64_t end_mask = AttrInt(n, "end_mask", 0);
  int64_t shrink = AttrInt(n, "shrink_axis_mask", 0);
  if (AttrInt(n, "ellipsis_mask", 0) != 0 ||
      AttrInt(n, "new_axis_mask", 0) != 0 || !x.known_rank || !begin || !end ||
      !strides || begin->size() != end->size() ||
      begin->size() != strides->size() || begin->size() > x.dims.size())
    return;
  Dims d;
  std::vector<int64_t> take;  // indices of a rank-1 value
  bool values = x.value.has_value() && x.dims.size() == 1;
  if (x.dims.size() > 64) return;  // masks have 64 bits
  for (size_t i = 0; i < x.dims.size(); ++i) {
    int64_t dim = x.dims[i];
    if (i >= begin->size()) {
      d.push_back(dim);
      continue;
    }
    int64_t s = (*strides)[i];
    if (s == 0) return;  // invalid
    if (shrink & (int64_t{1} << i)) {
      int64_t at = (*begin)[i] < 0 && dim >= 0 && (*begin)[i] >= -dim
                       ? (*begin)[i] + dim
                       : (*begin)[i];
      if (values && i == 0) take.push_back(at);
      continue;
    }
    d.push_back(SliceLength(
        dim, (*begin)[i], (*end)[i], s, begin_mask & (int64_t{1} << i),
        end_mask & (int64_t{1} << i), values && i == 0 ? &take : nullptr));
  }
  out[0] = Shaped(d);
  if (!values) return;
  Dims v;
  for (int64_t at : take) {
    if (at < 0 || at >= static_cast<int64_t>(x.value->size())) return;
    v.push_back((*x.value)[at]);
  }
  out[0].value = std::move(v);
}

}  // namespace

void AddSlicingShapeFunctions(ShapeTable* table) {
  table->insert({
      {"Select", InferSelect},
      {"SelectV2", InferSelectV2},
      {"InvertPermutation", InferInvertPermutation},
      {"ConcatOffset", InferConcatOffset},
      {"StridedSlice", InferStridedSlice},
  });
}

}  // namespace graft::analysis
