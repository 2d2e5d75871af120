// Shape functions of placeholders, constants, elementwise and control-flow
// ops, and the shape arithmetic of training graphs (Shape, Pack, Slice,
// Reshape, BroadcastGradientArgs, ...).
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "analysis/shape_functions_internal.h"
#include "engine/const_tensor.h"

namespace graft::analysis {
namespace {

// Placeholder, PlaceholderWithDefault
void InferPlaceholder(const ShapeInputs& in, const Node& n,
                      std::vector<TensorInfo>& out) {
  const std::string& op = n.op();
  const tf::AttrValue* s = n.attr("shape");
  out[0] = s ? FromShapeProto(s->shape())
             : (op == "PlaceholderWithDefault" ? in.In(n, 0) : UnknownRank());
}

// Const
void InferConst(const ShapeInputs& /*in*/, const Node& n,
                std::vector<TensorInfo>& out) {
  const tf::AttrValue* v = n.attr("value");
  if (v == nullptr) return;
  Dims dims;
  for (const auto& d : v->tensor().tensor_shape().dim())
    dims.push_back(d.size());
  out[0] = Shaped(dims);
  // (a bool constant too: a folded Equal picking the sizes of an Expand)
  const tf::DataType dtype = BaseType(v->tensor().dtype());
  if ((IsIntType(dtype) || dtype == tf::DT_BOOL) &&
      out[0].num_elements() <= 64) {  // flattened
    absl::StatusOr<ConstTensor> c =
        FromTensorProto(v->tensor(), n.value_content());
    if (c.ok()) {
      Dims values;
      for (double x : c->values) values.push_back(SaturatedInt<int64_t>(x));
      out[0].value = values;
    }
  }
}

// VarHandleOp, VarIsInitializedOp, Size, Rank, L2Loss
void InferScalar(const ShapeInputs& in, const Node& n,
                 std::vector<TensorInfo>& out) {
  const std::string& op = n.op();
  out[0] = Shaped({});
  if (op == "Size" && in.In(n, 0).fully_known())
    out[0].value = Dims{in.In(n, 0).num_elements()};
  if (op == "Rank" && in.In(n, 0).known_rank) {
    out[0].value = Dims{static_cast<int64_t>(in.In(n, 0).dims.size())};
  }
}

// ReadVariableOp
void InferReadVariable(const ShapeInputs& in, const Node& n,
                       std::vector<TensorInfo>& out) {
  Endpoint h = n.num_inputs() > 0 ? n.input(0) : Endpoint{kNoNode, 0};
  const tf::AttrValue* s =
      h.node != kNoNode ? in.graph().node(h.node).attr("shape") : nullptr;
  if (s != nullptr && in.graph().node(h.node).op() == "VarHandleOp")
    out[0] = FromShapeProto(s->shape());
}

// Identity, StopGradient, Snapshot, CheckNumerics, PreventGradient, Relu, ...
void InferSameAsInput(const ShapeInputs& in, const Node& n,
                      std::vector<TensorInfo>& out) {
  const std::string& op = n.op();
  for (size_t p = 0; p < out.size(); ++p)
    out[p] = in.In(n, static_cast<int>(p));
  if (op != "Identity" && op != "Cast" && op != "IdentityN")
    out[0].value.reset();
  if (op == "ReluGrad" || op == "Relu6Grad" || op == "TanhGrad" ||
      op == "SigmoidGrad") {
    if (!out[0].fully_known())
      out[0] = BroadcastShapes(in.In(n, 0), in.In(n, 1));
  }
}

// Enter, RefEnter, Exit, RefExit, NextIteration, RefNextIteration
void InferControlFlowForward(const ShapeInputs& in, const Node& n,
                             std::vector<TensorInfo>& out) {
  out[0] = in.In(n, 0);
}

// Switch, RefSwitch
void InferSwitch(const ShapeInputs& in, const Node& n,
                 std::vector<TensorInfo>& out) {
  for (TensorInfo& t : out) t = in.In(n, 0);
}

// Merge, RefMerge
void InferMerge(const ShapeInputs& in, const Node& n,
                std::vector<TensorInfo>& out) {
  // The first input that is known (a loop's back edge is inferred later).
  for (int i = 0; i < n.num_inputs() && !out[0].known_rank; ++i)
    out[0] = in.In(n, i);
  out[0].value.reset();
  if (out.size() > 1) out[1] = Shaped({});
}

// LoopCond
void InferLoopCond(const ShapeInputs& /*in*/, const Node& /*n*/,
                   std::vector<TensorInfo>& out) {
  out[0] = Shaped({});
}

// Add, AddV2, Sub, Mul, RealDiv, Div, ...
void InferBroadcast(const ShapeInputs& in, const Node& n,
                    std::vector<TensorInfo>& out) {
  const std::string& op = n.op();
  out[0] = BroadcastShapes(in.In(n, 0), in.In(n, 1));
  const auto &a = in.Value(n, 0), &b = in.Value(n, 1);
  if (a && b && (a->size() == b->size() || a->size() == 1 || b->size() == 1)) {
    using Result = std::optional<int64_t>;
    std::function<Result(int64_t, int64_t)> f;
    auto checked = [](bool overflow, int64_t r) {
      return overflow ? Result() : Result(r);
    };
    if (op == "Mul") {
      f = [&](int64_t x, int64_t y) {
        int64_t r = 0;
        bool overflow = __builtin_mul_overflow(x, y, &r);
        return checked(overflow, r);
      };
    }
    if (op == "Add" || op == "AddV2") {
      f = [&](int64_t x, int64_t y) {
        int64_t r = 0;
        bool overflow = __builtin_add_overflow(x, y, &r);
        return checked(overflow, r);
      };
    }
    if (op == "Sub") {
      f = [&](int64_t x, int64_t y) {
        int64_t r = 0;
        bool overflow = __builtin_sub_overflow(x, y, &r);
        return checked(overflow, r);
      };
    }
    if (op == "Maximum")
      f = [](int64_t x, int64_t y) { return Result(std::max(x, y)); };
    if (op == "Minimum")
      f = [](int64_t x, int64_t y) { return Result(std::min(x, y)); };
    // Floored, as TensorFlow's FloorDiv and FloorMod (-7 // 2 == -4).
    if (op == "FloorDiv") {
      f = [](int64_t x, int64_t y) {
        if (y == 0 || (x == INT64_MIN && y == -1)) return Result();
        int64_t q = x / y;
        return Result((x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q);
      };
    }
    if (op == "FloorMod") {
      f = [](int64_t x, int64_t y) {
        if (y == 0 || (x == INT64_MIN && y == -1)) return Result();
        int64_t r = x % y;
        return Result((r != 0 && ((r < 0) != (y < 0))) ? r + y : r);
      };
    }
    if (f) {
      size_t size = std::max(a->size(), b->size());
      Dims v(size);
      for (size_t i = 0; i < size; ++i) {
        std::optional<int64_t> r =
            f((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
        if (!r) return;  // overflows: the value is not known
        v[i] = *r;
      }
      out[0].value = v;
    }
  }
}

// Reshape
void InferReshape(const ShapeInputs& in, const Node& n,
                  std::vector<TensorInfo>& out) {
  const auto& v = in.Value(n, 1);
  if (!v) {
    out[0] = in.In(n, 1).fully_known() && in.In(n, 1).dims.size() == 1
                 ? OfRank(in.In(n, 1).dims[0])
                 : UnknownRank();
    return;
  }
  Dims d = *v;
  int64_t known = 1, missing = -1;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] < 0)
      missing = static_cast<int64_t>(i);
    else
      known = known < 0 ? -1 : MulDims(known, d[i]);
  }
  int64_t total = in.In(n, 0).num_elements();
  if (missing >= 0) d[missing] = total >= 0 && known > 0 ? total / known : -1;
  out[0] = Shaped(d);
  out[0].value = in.Value(n, 0);
}

// Transpose
void InferTranspose(const ShapeInputs& in, const Node& n,
                    std::vector<TensorInfo>& out) {
  const auto& perm = in.Value(n, 1);
  const TensorInfo& x = in.In(n, 0);
  if (!perm || !x.known_rank || perm->size() != x.dims.size()) {
    out[0] = x.known_rank ? OfRank(x.dims.size()) : UnknownRank();
    return;
  }
  Dims d;
  for (int64_t i : *perm)
    d.push_back(i >= 0 && i < static_cast<int64_t>(x.dims.size()) ? x.dims[i]
                                                                  : -1);
  out[0] = Shaped(d);
}

// ConcatV2
void InferConcatV2(const ShapeInputs& in, const Node& n,
                   std::vector<TensorInfo>& out) {
  int count = n.num_inputs() - 1;
  const auto& axis_v = in.Value(n, count);
  const TensorInfo& first = in.In(n, 0);
  if (!first.known_rank) return;
  int64_t rank = static_cast<int64_t>(first.dims.size());
  if (!axis_v || axis_v->size() != 1) {
    out[0] = OfRank(rank);
    return;
  }
  int64_t axis = (*axis_v)[0] < 0 ? (*axis_v)[0] + rank : (*axis_v)[0];
  if (axis < 0 || axis >= rank) {  // TensorFlow refuses such a graph
    out[0] = OfRank(rank);
    return;
  }
  Dims d = first.dims;
  bool values = true;
  Dims joined;
  for (int i = 0; i < count; ++i) {
    const TensorInfo& t = in.In(n, i);
    if (!t.known_rank || static_cast<int64_t>(t.dims.size()) != rank) {
      out[0] = OfRank(rank);
      return;
    }
    if (i > 0) d[axis] = AddDims(d[axis], t.dims[axis]);
    for (int64_t j = 0; j < rank; ++j) {
      if (j != axis && d[j] < 0) d[j] = t.dims[j];
    }
    if (t.value)
      joined.insert(joined.end(), t.value->begin(), t.value->end());
    else
      values = false;
  }
  out[0] = Shaped(d);
  if (values && rank == 1) out[0].value = joined;
}

// Pad, PadV2, MirrorPad
void InferPad(const ShapeInputs& in, const Node& n,
              std::vector<TensorInfo>& out) {
  const auto& p = in.Value(n, 1);
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank) return;
  if (!p || p->size() != 2 * x.dims.size()) {
    out[0] = OfRank(x.dims.size());
    return;
  }
  Dims d = x.dims;
  for (size_t i = 0; i < d.size(); ++i) {
    int64_t grown = 0;
    if (d[i] >= 0 &&
        (__builtin_add_overflow(d[i], (*p)[2 * i], &grown) ||
         __builtin_add_overflow(grown, (*p)[2 * i + 1], &grown) || grown < 0))
      grown = -1;
    if (d[i] >= 0) d[i] = grown;
  }
  out[0] = Shaped(d);
}

// Mean, Sum, Max, Min, Prod, All, ...
void InferReduction(const ShapeInputs& in, const Node& n,
                    std::vector<TensorInfo>& out) {
  const std::string& op = n.op();
  const TensorInfo& x = in.In(n, 0);
  bool keep = AttrBool(n, "keep_dims", false);
  const auto& axes = in.Value(n, 1);
  if (!x.known_rank) return;
  int64_t rank = static_cast<int64_t>(x.dims.size());
  if (!axes) {
    if (keep) out[0] = OfRank(rank);
    return;
  }
  std::set<int64_t> reduce;
  for (int64_t a : *axes) reduce.insert(a < 0 ? a + rank : a);
  Dims d;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduce.count(i)) {
      if (keep) d.push_back(1);
    } else {
      d.push_back(x.dims[i]);
    }
  }
  out[0] = Shaped(d);
  if ((op == "Prod" || op == "Sum") && x.value && rank == 1 &&
      reduce.count(0)) {
    int64_t r = op == "Prod" ? 1 : 0;
    for (int64_t v : *x.value) r = op == "Prod" ? r * v : r + v;
    out[0].value = Dims{r};
  }
}

// AddN
void InferAddN(const ShapeInputs& in, const Node& n,
               std::vector<TensorInfo>& out) {
  out[0] = in.In(n, 0);
  out[0].value.reset();
  for (int i = 1; i < n.num_inputs() && !out[0].fully_known(); ++i) {
    if (in.In(n, i).fully_known()) out[0] = in.In(n, i);
  }
}

// Shape, ShapeN
void InferShape(const ShapeInputs& in, const Node& n,
                std::vector<TensorInfo>& out) {
  for (size_t p = 0; p < out.size(); ++p) {
    const TensorInfo& x = in.In(n, static_cast<int>(p));
    if (!x.known_rank) {
      out[p] = OfRank(1);
      continue;
    }
    out[p] = Shaped({static_cast<int64_t>(x.dims.size())});
    if (x.fully_known()) out[p].value = x.dims;
  }
}

// Fill, Empty, and the random ops whose first input is the output's shape
// (RandomUniform, StatelessRandomNormalV2, ...)
void InferFill(const ShapeInputs& in, const Node& n,
               std::vector<TensorInfo>& out) {
  out[0] = in.Value(n, 0)
               ? Shaped(*in.Value(n, 0))
               : (in.In(n, 0).fully_known() && in.In(n, 0).dims.size() == 1
                      ? OfRank(in.In(n, 0).dims[0])
                      : UnknownRank());
}

// StatelessRandomGetKeyCounter[Alg], StatelessRandomGetAlg: a Philox key
// and counter (RNG_KEY_SIZE 1, RNG_MAX_COUNTER_SIZE 2) and the algorithm
void InferRngKeyCounter(const ShapeInputs&, const Node& n,
                        std::vector<TensorInfo>& out) {
  if (n.op() == "StatelessRandomGetAlg") {
    out[0] = Shaped({});
    return;
  }
  out[0] = Shaped({1});
  if (out.size() > 1) out[1] = Shaped({2});
  if (out.size() > 2) out[2] = Shaped({});
}

// Pack
void InferPack(const ShapeInputs& in, const Node& n,
               std::vector<TensorInfo>& out) {
  int count = n.num_inputs();
  const TensorInfo& first = in.In(n, 0);
  if (!first.known_rank) return;
  int64_t rank = static_cast<int64_t>(first.dims.size()) + 1;
  int64_t axis = AttrInt(n, "axis", 0);
  if (axis < 0) axis += rank;
  Dims d = first.dims;
  d.insert(d.begin() + std::clamp<int64_t>(axis, 0, rank - 1), count);
  out[0] = Shaped(d);
  if (first.dims.empty()) {
    Dims v;
    for (int i = 0; i < count; ++i) {
      if (!in.Value(n, i) || in.Value(n, i)->size() != 1) return;
      v.push_back((*in.Value(n, i))[0]);
    }
    out[0].value = v;
  }
}

// Slice
void InferSlice(const ShapeInputs& in, const Node& n,
                std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  std::optional<Dims> begin = in.Value(n, 1);
  const auto& size = in.Value(n, 2);
  if (!x.known_rank) return;
  if (begin && begin->size() != x.dims.size()) begin.reset();
  if (!size || size->size() != x.dims.size()) {
    out[0] = OfRank(x.dims.size());
    return;
  }
  // A size of -1 takes the rest of the dimension from `begin`; the others
  // need no begin (tf.gradients' Pad gradient slices from a computed one).
  Dims d(x.dims.size());
  for (size_t i = 0; i < d.size(); ++i) {
    d[i] = (*size)[i] >= 0 ? (*size)[i]
           : begin && x.dims[i] >= 0 && (*begin)[i] >= 0 &&
                   (*begin)[i] <= x.dims[i]
               ? x.dims[i] - (*begin)[i]
               : -1;
  }
  out[0] = Shaped(d);
  int64_t known = x.value ? static_cast<int64_t>(x.value->size()) : 0;
  if (begin && x.value && d.size() == 1 && d[0] >= 0 && (*begin)[0] >= 0 &&
      (*begin)[0] <= known && d[0] <= known - (*begin)[0]) {
    out[0].value = Dims(x.value->begin() + (*begin)[0],
                        x.value->begin() + (*begin)[0] + d[0]);
  }
}

// ExpandDims
void InferExpandDims(const ShapeInputs& in, const Node& n,
                     std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  const auto& dim = in.Value(n, 1);
  if (!x.known_rank) return;
  int64_t rank = static_cast<int64_t>(x.dims.size()) + 1;
  if (!dim || dim->size() != 1) {
    out[0] = OfRank(rank);
    return;
  }
  int64_t axis = (*dim)[0] < 0 ? (*dim)[0] + rank : (*dim)[0];
  Dims d = x.dims;
  d.insert(d.begin() + std::clamp<int64_t>(axis, 0, rank - 1), 1);
  out[0] = Shaped(d);
  out[0].value = x.value;
}

// Squeeze
void InferSqueeze(const ShapeInputs& in, const Node& n,
                  std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank) return;
  Dims axes = AttrInts(n, "squeeze_dims");
  int64_t rank = static_cast<int64_t>(x.dims.size());
  Dims d;
  for (int64_t i = 0; i < rank; ++i) {
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end() ||
                  std::find(axes.begin(), axes.end(), i - rank) != axes.end();
    if (axes.empty() ? x.dims[i] == 1 : listed) continue;
    if (axes.empty() && x.dims[i] < 0) return;  // might be 1
    d.push_back(x.dims[i]);
  }
  out[0] = Shaped(d);
}

// Tile
void InferTile(const ShapeInputs& in, const Node& n,
               std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  const auto& m = in.Value(n, 1);
  if (!x.known_rank) return;
  if (!m || m->size() != x.dims.size()) {
    out[0] = OfRank(x.dims.size());
    return;
  }
  Dims d = x.dims;
  for (size_t i = 0; i < d.size(); ++i) d[i] = MulDims(d[i], (*m)[i]);
  out[0] = Shaped(d);
}

// BroadcastGradientArgs
void InferBroadcastGradientArgs(const ShapeInputs& in, const Node& n,
                                std::vector<TensorInfo>& out) {
  const auto &s0 = in.Value(n, 0), &s1 = in.Value(n, 1);
  if (!s0 || !s1) {
    out[0] = OfRank(1);
    out[1] = OfRank(1);
    return;
  }
  // The axes each input was broadcast along, as TensorFlow computes them.
  size_t rank = std::max(s0->size(), s1->size());
  Dims r0, r1;
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - s0->size() ? 1 : (*s0)[i - (rank - s0->size())];
    int64_t b = i < rank - s1->size() ? 1 : (*s1)[i - (rank - s1->size())];
    if (a == 1 && b != 1) r0.push_back(static_cast<int64_t>(i));
    if (b == 1 && a != 1) r1.push_back(static_cast<int64_t>(i));
    if (a == 1 && b == 1) {
      r0.push_back(static_cast<int64_t>(i));
      r1.push_back(static_cast<int64_t>(i));
    }
  }
  SetValue(out, 0, r0);
  SetValue(out, 1, r1);
}

// ArgMax, ArgMin
void InferArgMinMax(const ShapeInputs& in, const Node& n,
                    std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  const auto& dim = in.Value(n, 1);
  if (!x.known_rank) return;
  if (!dim || dim->size() != 1) {
    out[0] = OfRank(x.dims.size() - 1);
    return;
  }
  int64_t axis = (*dim)[0] < 0 ? (*dim)[0] + static_cast<int64_t>(x.dims.size())
                               : (*dim)[0];
  Dims d = x.dims;
  if (axis >= 0 && axis < static_cast<int64_t>(d.size()))
    d.erase(d.begin() + axis);
  out[0] = Shaped(d);
}

// The ops of this file and their shape functions.
const struct {
  const char* op;
  ShapeFn fn;
} kArrayOps[] = {
    {"Placeholder", InferPlaceholder},
    {"PlaceholderWithDefault", InferPlaceholder},
    {"Const", InferConst},
    {"VarHandleOp", InferScalar},
    {"VarIsInitializedOp", InferScalar},
    {"Size", InferScalar},
    {"Rank", InferScalar},
    {"L2Loss", InferScalar},
    {"ReadVariableOp", InferReadVariable},
    {"Identity", InferSameAsInput},
    {"StopGradient", InferSameAsInput},
    {"Snapshot", InferSameAsInput},
    {"CheckNumerics", InferSameAsInput},
    {"PreventGradient", InferSameAsInput},
    {"Relu", InferSameAsInput},
    {"Relu6", InferSameAsInput},
    {"Elu", InferSameAsInput},
    {"Selu", InferSameAsInput},
    {"Neg", InferSameAsInput},
    {"Exp", InferSameAsInput},
    {"Log", InferSameAsInput},
    {"Log1p", InferSameAsInput},
    {"Sqrt", InferSameAsInput},
    {"Rsqrt", InferSameAsInput},
    {"Square", InferSameAsInput},
    {"Tanh", InferSameAsInput},
    {"Sigmoid", InferSameAsInput},
    {"Abs", InferSameAsInput},
    {"Sign", InferSameAsInput},
    {"Floor", InferSameAsInput},
    {"Ceil", InferSameAsInput},
    {"Round", InferSameAsInput},
    {"Reciprocal", InferSameAsInput},
    {"Inv", InferSameAsInput},
    {"ZerosLike", InferSameAsInput},
    {"OnesLike", InferSameAsInput},
    {"Softmax", InferSameAsInput},
    {"LogSoftmax", InferSameAsInput},
    {"Cast", InferSameAsInput},
    {"LeakyRelu", InferSameAsInput},
    {"Softplus", InferSameAsInput},
    {"Softsign", InferSameAsInput},
    {"ReluGrad", InferSameAsInput},
    {"Relu6Grad", InferSameAsInput},
    {"EluGrad", InferSameAsInput},
    {"SeluGrad", InferSameAsInput},
    {"TanhGrad", InferSameAsInput},
    {"SigmoidGrad", InferSameAsInput},
    {"RsqrtGrad", InferSameAsInput},
    {"SqrtGrad", InferSameAsInput},
    {"SoftplusGrad", InferSameAsInput},
    {"LeakyReluGrad", InferSameAsInput},
    {"BiasAdd", InferSameAsInput},
    {"BiasAddV1", InferSameAsInput},
    {"MaxPoolGrad", InferSameAsInput},
    {"LRN", InferSameAsInput},
    {"IdentityN", InferSameAsInput},
    {"FakeQuantWithMinMaxVars", InferSameAsInput},
    {"FakeQuantWithMinMaxVarsPerChannel", InferSameAsInput},
    {"FakeQuantWithMinMaxArgs", InferSameAsInput},
    {"Enter", InferControlFlowForward},
    {"RefEnter", InferControlFlowForward},
    {"Exit", InferControlFlowForward},
    {"RefExit", InferControlFlowForward},
    {"NextIteration", InferControlFlowForward},
    {"RefNextIteration", InferControlFlowForward},
    {"Switch", InferSwitch},
    {"RefSwitch", InferSwitch},
    {"Merge", InferMerge},
    {"RefMerge", InferMerge},
    {"LoopCond", InferLoopCond},
    {"Add", InferBroadcast},
    {"AddV2", InferBroadcast},
    {"Sub", InferBroadcast},
    {"Mul", InferBroadcast},
    {"RealDiv", InferBroadcast},
    {"Div", InferBroadcast},
    {"DivNoNan", InferBroadcast},
    {"FloorDiv", InferBroadcast},
    {"FloorMod", InferBroadcast},
    {"TruncateDiv", InferBroadcast},
    {"Maximum", InferBroadcast},
    {"Minimum", InferBroadcast},
    {"Pow", InferBroadcast},
    {"SquaredDifference", InferBroadcast},
    {"Equal", InferBroadcast},
    {"NotEqual", InferBroadcast},
    {"Less", InferBroadcast},
    {"LessEqual", InferBroadcast},
    {"Greater", InferBroadcast},
    {"GreaterEqual", InferBroadcast},
    {"LogicalAnd", InferBroadcast},
    {"LogicalOr", InferBroadcast},
    {"MulNoNan", InferBroadcast},
    {"Reshape", InferReshape},
    {"Transpose", InferTranspose},
    {"ConcatV2", InferConcatV2},
    {"Pad", InferPad},
    {"PadV2", InferPad},
    {"MirrorPad", InferPad},
    {"Mean", InferReduction},
    {"Sum", InferReduction},
    {"Max", InferReduction},
    {"Min", InferReduction},
    {"Prod", InferReduction},
    {"All", InferReduction},
    {"Any", InferReduction},
    {"EuclideanNorm", InferReduction},
    {"AddN", InferAddN},
    {"Shape", InferShape},
    {"ShapeN", InferShape},
    {"Fill", InferFill},
    {"Empty", InferFill},
    {"RandomUniform", InferFill},
    {"RandomUniformInt", InferFill},
    {"RandomStandardNormal", InferFill},
    {"TruncatedNormal", InferFill},
    {"StatelessRandomUniform", InferFill},
    {"StatelessRandomNormal", InferFill},
    {"StatelessTruncatedNormal", InferFill},
    {"StatelessRandomUniformInt", InferFill},
    {"StatelessRandomUniformFullInt", InferFill},
    {"StatelessRandomUniformV2", InferFill},
    {"StatelessRandomNormalV2", InferFill},
    {"StatelessTruncatedNormalV2", InferFill},
    {"StatelessRandomUniformIntV2", InferFill},
    {"StatelessRandomUniformFullIntV2", InferFill},
    {"StatelessRandomGetKeyCounter", InferRngKeyCounter},
    {"StatelessRandomGetKeyCounterAlg", InferRngKeyCounter},
    {"StatelessRandomGetAlg", InferRngKeyCounter},
    {"Pack", InferPack},
    {"Slice", InferSlice},
    {"ExpandDims", InferExpandDims},
    {"Squeeze", InferSqueeze},
    {"Tile", InferTile},
    {"BroadcastGradientArgs", InferBroadcastGradientArgs},
    {"ArgMax", InferArgMinMax},
    {"ArgMin", InferArgMinMax},
};

}  // namespace

void AddArrayShapeFunctions(ShapeTable* table) {
  for (const auto& [op, fn] : kArrayOps) (*table)[op] = fn;
}

}  // namespace graft::analysis
