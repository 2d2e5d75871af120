#include "analysis/shapes.h"

#include <algorithm>
#include <functional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/schedule.h"
#include "engine/const_tensor.h"
#include "engine/op_registry.h"

namespace graft::analysis {

using Dims = std::vector<int64_t>;

bool TensorInfo::fully_known() const {
  return known_rank && std::all_of(dims.begin(), dims.end(),
                                   [](int64_t d) { return d >= 0; });
}

int64_t TensorInfo::num_elements() const {
  if (!fully_known()) return -1;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t TensorInfo::bytes() const {
  int64_t n = num_elements();
  int64_t size = DataTypeSize(BaseType(dtype));
  if (n < 0 ||
      (size == 0 && dtype != tf::DT_RESOURCE && dtype != tf::DT_VARIANT))
    return -1;
  return n * size;
}

std::string TensorInfo::ShapeString() const {
  if (!known_rank) return "<unknown>";
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

const TensorInfo& ShapeMap::at(Endpoint t) const {
  if (t.node < 0 || t.node >= static_cast<NodeId>(outputs_.size()) ||
      t.port < 0 || t.port >= static_cast<int>(outputs_[t.node].size())) {
    return unknown_;
  }
  return outputs_[t.node][t.port];
}

int ShapeMap::num_outputs(NodeId id) const {
  return id < static_cast<NodeId>(outputs_.size())
             ? static_cast<int>(outputs_[id].size())
             : 0;
}

std::vector<Endpoint> ShapeMap::Unknown(const Graph& graph) const {
  std::vector<Endpoint> out;
  graph.ForEachNode([&](const Node& n) {
    for (int p = 0; p < num_outputs(n.id()); ++p) {
      if (!outputs_[n.id()][p].fully_known()) out.push_back({n.id(), p});
    }
  });
  return out;
}

namespace {

TensorInfo Shaped(Dims dims) {
  TensorInfo t;
  t.known_rank = true;
  t.dims = std::move(dims);
  return t;
}

TensorInfo UnknownRank() { return TensorInfo(); }

// A tensor of known rank whose dimensions are all unknown.
TensorInfo OfRank(int64_t rank) {
  return Shaped(Dims(std::max<int64_t>(rank, 0), -1));
}

bool IsIntType(tf::DataType t) {
  t = BaseType(t);
  return t == tf::DT_INT32 || t == tf::DT_INT64 || t == tf::DT_INT16 ||
         t == tf::DT_INT8 || t == tf::DT_UINT8;
}

// Right-aligned broadcasting; unknown where it cannot be decided.
TensorInfo BroadcastShapes(const TensorInfo& a, const TensorInfo& b) {
  if (!a.known_rank || !b.known_rank) return UnknownRank();
  size_t rank = std::max(a.dims.size(), b.dims.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x =
        i < rank - a.dims.size() ? 1 : a.dims[i - (rank - a.dims.size())];
    int64_t y =
        i < rank - b.dims.size() ? 1 : b.dims[i - (rank - b.dims.size())];
    if (x == y)
      out[i] = x;
    else if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (x < 0)
      out[i] = y > 1 ? y : -1;
    else if (y < 0)
      out[i] = x > 1 ? x : -1;
    else
      return UnknownRank();  // incompatible: not a valid graph
  }
  return Shaped(out);
}

std::string AttrString(const Node& n, const char* name, const char* fallback) {
  const tf::AttrValue* v = n.attr(name);
  return v ? v->s() : fallback;
}

bool AttrBool(const Node& n, const char* name, bool fallback) {
  const tf::AttrValue* v = n.attr(name);
  return v ? v->b() : fallback;
}

int64_t AttrInt(const Node& n, const char* name, int64_t fallback) {
  const tf::AttrValue* v = n.attr(name);
  return v ? v->i() : fallback;
}

Dims AttrInts(const Node& n, const char* name) {
  const tf::AttrValue* v = n.attr(name);
  Dims out;
  if (v) out.assign(v->list().i().begin(), v->list().i().end());
  return out;
}

TensorInfo FromShapeProto(const tf::TensorShapeProto& s) {
  if (s.unknown_rank()) return UnknownRank();
  Dims dims;
  for (const auto& d : s.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return Shaped(dims);
}

// Output size of a window (conv, pool) along one spatial dimension.
int64_t WindowOut(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                  const std::string& pad, int64_t pad_before = 0,
                  int64_t pad_after = 0) {
  if (in < 0 || k < 0 || stride <= 0) return -1;
  int64_t eff = (k - 1) * dilation + 1;
  if (pad == "SAME") return (in + stride - 1) / stride;
  if (pad == "VALID") return in < eff ? 0 : (in - eff) / stride + 1;
  if (pad == "EXPLICIT")
    return (in + pad_before + pad_after - eff) / stride + 1;
  return -1;
}

struct Layout {
  int n = 0, h = 1, w = 2, c = 3;
};

Layout LayoutOf(const std::string& format) {
  if (format == "NCHW") return {0, 2, 3, 1};
  return {};
}

class Inferrer {
 public:
  Inferrer(const Graph& graph, std::vector<std::vector<TensorInfo>>* out)
      : graph_(graph), out_(*out) {}

  void Run(const std::vector<NodeId>& order) {
    for (NodeId id : order) InferNode(graph_.node(id));
  }

  void OnlyAttrs() {
    graph_.ForEachNode(
        [&](const Node& n) { InferNode(n, /*attrs_only=*/true); });
  }

 private:
  const TensorInfo& In(const Node& n, int i) const {
    static const TensorInfo kUnknown;
    if (i >= n.num_inputs()) return kUnknown;
    Endpoint e = n.input(i);
    if (e.node == kNoNode || e.node >= static_cast<NodeId>(out_.size()) ||
        e.port >= static_cast<int>(out_[e.node].size())) {
      return kUnknown;
    }
    return out_[e.node][e.port];
  }

  const std::optional<Dims>& Value(const Node& n, int i) const {
    return In(n, i).value;
  }

  void InferNode(const Node& n, bool attrs_only = false) {
    std::optional<std::vector<tf::DataType>> types =
        OpRegistry::Tensorflow().OutputTypes(n);
    int count = types ? static_cast<int>(types->size()) : n.num_used_ports();
    std::vector<TensorInfo>& out = out_[n.id()];
    out.assign(count, TensorInfo());
    if (!attrs_only) Infer(n, out);
    for (int p = 0; p < count; ++p) {
      if (types) out[p].dtype = (*types)[p];
    }
    // `_output_shapes`: what the exporter knew; kept where inference knows
    // less.
    if (const tf::AttrValue* shapes = n.attr("_output_shapes")) {
      for (int p = 0; p < count && p < shapes->list().shape_size(); ++p) {
        TensorInfo given = FromShapeProto(shapes->list().shape(p));
        if (!given.known_rank) continue;
        if (!out[p].known_rank || out[p].dims.size() != given.dims.size()) {
          given.dtype = out[p].dtype;
          given.value = out[p].value;
          out[p] = given;
          continue;
        }
        for (size_t i = 0; i < given.dims.size(); ++i) {
          if (out[p].dims[i] < 0) out[p].dims[i] = given.dims[i];
        }
      }
    }
    // The value of a fully known int tensor of rank <= 1 from Shape math.
    for (TensorInfo& t : out) {
      if (t.value && t.fully_known() &&
          t.num_elements() != static_cast<int64_t>(t.value->size())) {
        t.value.reset();
      }
    }
  }

  void SetValue(std::vector<TensorInfo>& out, int port, Dims v,
                bool scalar = false) {
    out[port] = Shaped(scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())});
    out[port].value = std::move(v);
  }

  void Infer(const Node& n, std::vector<TensorInfo>& out) {
    if (out.empty()) return;
    const std::string& op = n.op();
    static const std::set<std::string> kSameAsInput0 = {
        "Identity",
        "StopGradient",
        "Snapshot",
        "CheckNumerics",
        "PreventGradient",
        "Relu",
        "Relu6",
        "Elu",
        "Selu",
        "Neg",
        "Exp",
        "Log",
        "Log1p",
        "Sqrt",
        "Rsqrt",
        "Square",
        "Tanh",
        "Sigmoid",
        "Abs",
        "Sign",
        "Floor",
        "Ceil",
        "Round",
        "Reciprocal",
        "Inv",
        "ZerosLike",
        "OnesLike",
        "Softmax",
        "LogSoftmax",
        "Cast",
        "LeakyRelu",
        "Softplus",
        "Softsign",
        "ReluGrad",
        "Relu6Grad",
        "EluGrad",
        "SeluGrad",
        "TanhGrad",
        "SigmoidGrad",
        "RsqrtGrad",
        "SqrtGrad",
        "SoftplusGrad",
        "LeakyReluGrad",
        "BiasAdd",
        "BiasAddV1",
        "MaxPoolGrad",
        "LRN",
        "IdentityN",
        "FakeQuantWithMinMaxVars",
        "FakeQuantWithMinMaxVarsPerChannel",
        "FakeQuantWithMinMaxArgs"};
    static const std::set<std::string> kBroadcast = {
        "Add",        "AddV2",
        "Sub",        "Mul",
        "RealDiv",    "Div",
        "DivNoNan",   "FloorDiv",
        "FloorMod",   "TruncateDiv",
        "Maximum",    "Minimum",
        "Pow",        "SquaredDifference",
        "Equal",      "NotEqual",
        "Less",       "LessEqual",
        "Greater",    "GreaterEqual",
        "LogicalAnd", "LogicalOr",
        "MulNoNan"};
    static const std::set<std::string> kReductions = {
        "Mean", "Sum", "Max", "Min", "Prod", "All", "Any", "EuclideanNorm"};
    if (op == "Placeholder" || op == "PlaceholderWithDefault") {
      const tf::AttrValue* s = n.attr("shape");
      out[0] = s ? FromShapeProto(s->shape())
                 : (op == "PlaceholderWithDefault" ? In(n, 0) : UnknownRank());
    } else if (op == "Const") {
      const tf::AttrValue* v = n.attr("value");
      if (v == nullptr) return;
      Dims dims;
      for (const auto& d : v->tensor().tensor_shape().dim())
        dims.push_back(d.size());
      out[0] = Shaped(dims);
      if (IsIntType(v->tensor().dtype()) &&
          out[0].num_elements() <= 64) {  // flattened
        absl::StatusOr<ConstTensor> c =
            FromTensorProto(v->tensor(), n.value_content());
        if (c.ok()) {
          Dims values;
          for (double x : c->values) values.push_back(static_cast<int64_t>(x));
          out[0].value = values;
        }
      }
    } else if (op == "VarHandleOp" || op == "VarIsInitializedOp" ||
               op == "Size" || op == "Rank" || op == "L2Loss") {
      out[0] = Shaped({});
      if (op == "Size" && In(n, 0).fully_known())
        out[0].value = Dims{In(n, 0).num_elements()};
      if (op == "Rank" && In(n, 0).known_rank) {
        out[0].value = Dims{static_cast<int64_t>(In(n, 0).dims.size())};
      }
    } else if (op == "ReadVariableOp") {
      Endpoint h = n.num_inputs() > 0 ? n.input(0) : Endpoint{kNoNode, 0};
      const tf::AttrValue* s =
          h.node != kNoNode ? graph_.node(h.node).attr("shape") : nullptr;
      if (s != nullptr && graph_.node(h.node).op() == "VarHandleOp")
        out[0] = FromShapeProto(s->shape());
    } else if (kSameAsInput0.count(op)) {
      for (size_t p = 0; p < out.size(); ++p)
        out[p] = In(n, static_cast<int>(p));
      if (op != "Identity" && op != "Cast" && op != "IdentityN")
        out[0].value.reset();
      if (op == "ReluGrad" || op == "Relu6Grad" || op == "TanhGrad" ||
          op == "SigmoidGrad") {
        if (!out[0].fully_known()) out[0] = BroadcastShapes(In(n, 0), In(n, 1));
      }
    } else if (op == "Enter" || op == "RefEnter" || op == "Exit" ||
               op == "RefExit" || op == "NextIteration" ||
               op == "RefNextIteration") {
      out[0] = In(n, 0);
    } else if (op == "Switch" || op == "RefSwitch") {
      for (TensorInfo& t : out) t = In(n, 0);
    } else if (op == "Merge" || op == "RefMerge") {
      // The first input that is known (a loop's back edge is inferred later).
      for (int i = 0; i < n.num_inputs() && !out[0].known_rank; ++i)
        out[0] = In(n, i);
      out[0].value.reset();
      if (out.size() > 1) out[1] = Shaped({});
    } else if (op == "LoopCond") {
      out[0] = Shaped({});
    } else if (kBroadcast.count(op)) {
      out[0] = BroadcastShapes(In(n, 0), In(n, 1));
      const auto &a = Value(n, 0), &b = Value(n, 1);
      if (a && b &&
          (a->size() == b->size() || a->size() == 1 || b->size() == 1)) {
        std::function<int64_t(int64_t, int64_t)> f;
        if (op == "Mul") f = [](int64_t x, int64_t y) { return x * y; };
        if (op == "Add" || op == "AddV2")
          f = [](int64_t x, int64_t y) { return x + y; };
        if (op == "Sub") f = [](int64_t x, int64_t y) { return x - y; };
        if (op == "Maximum")
          f = [](int64_t x, int64_t y) { return std::max(x, y); };
        if (op == "Minimum")
          f = [](int64_t x, int64_t y) { return std::min(x, y); };
        if (op == "FloorDiv")
          f = [](int64_t x, int64_t y) { return y == 0 ? 0 : x / y; };
        if (f) {
          size_t size = std::max(a->size(), b->size());
          Dims v(size);
          for (size_t i = 0; i < size; ++i) {
            v[i] =
                f((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
          }
          out[0].value = v;
        }
      }
    } else if (op == "BiasAddGrad") {
      const TensorInfo& x = In(n, 0);
      if (!x.known_rank) {
        out[0] = OfRank(1);
        return;
      }
      bool nchw = AttrString(n, "data_format", "NHWC") == "NCHW";
      out[0] = Shaped(
          {x.dims.empty()
               ? -1
               : x.dims[nchw && x.dims.size() > 1 ? 1 : x.dims.size() - 1]});
    } else if (op == "MatMul") {
      const TensorInfo &a = In(n, 0), &b = In(n, 1);
      int64_t m = a.known_rank && a.dims.size() == 2
                      ? a.dims[AttrBool(n, "transpose_a", false) ? 1 : 0]
                      : -1;
      int64_t k = b.known_rank && b.dims.size() == 2
                      ? b.dims[AttrBool(n, "transpose_b", false) ? 0 : 1]
                      : -1;
      out[0] = Shaped({m, k});
    } else if (op == "BatchMatMulV2" || op == "BatchMatMul") {
      const TensorInfo &a = In(n, 0), &b = In(n, 1);
      if (!a.known_rank || !b.known_rank || a.dims.size() < 2 ||
          b.dims.size() < 2)
        return;
      TensorInfo batch =
          BroadcastShapes(Shaped(Dims(a.dims.begin(), a.dims.end() - 2)),
                          Shaped(Dims(b.dims.begin(), b.dims.end() - 2)));
      if (!batch.known_rank) return;
      Dims d = batch.dims;
      d.push_back(
          a.dims[a.dims.size() - (AttrBool(n, "adj_x", false) ? 1 : 2)]);
      d.push_back(
          b.dims[b.dims.size() - (AttrBool(n, "adj_y", false) ? 2 : 1)]);
      out[0] = Shaped(d);
    } else if (op == "Conv2D" || op == "DepthwiseConv2dNative") {
      const TensorInfo &x = In(n, 0), &w = In(n, 1);
      Layout l = LayoutOf(AttrString(n, "data_format", "NHWC"));
      if (!x.known_rank || x.dims.size() != 4) {
        out[0] = OfRank(4);
        return;
      }
      Dims strides = AttrInts(n, "strides"), dil = AttrInts(n, "dilations");
      if (strides.size() != 4) strides = {1, 1, 1, 1};
      if (dil.size() != 4) dil = {1, 1, 1, 1};
      Dims pads = AttrInts(n, "explicit_paddings");
      std::string pad = AttrString(n, "padding", "SAME");
      bool wk = w.known_rank && w.dims.size() == 4;
      Dims y(4, -1);
      y[l.n] = x.dims[l.n];
      y[l.h] = WindowOut(x.dims[l.h], wk ? w.dims[0] : -1, strides[l.h],
                         dil[l.h], pad, pads.size() == 8 ? pads[2 * l.h] : 0,
                         pads.size() == 8 ? pads[2 * l.h + 1] : 0);
      y[l.w] = WindowOut(x.dims[l.w], wk ? w.dims[1] : -1, strides[l.w],
                         dil[l.w], pad, pads.size() == 8 ? pads[2 * l.w] : 0,
                         pads.size() == 8 ? pads[2 * l.w + 1] : 0);
      if (wk) {
        y[l.c] = op == "Conv2D"
                     ? w.dims[3]
                     : (w.dims[2] >= 0 && w.dims[3] >= 0 ? w.dims[2] * w.dims[3]
                                                         : -1);
      }
      out[0] = Shaped(y);
    } else if (op == "Conv2DBackpropInput" ||
               op == "DepthwiseConv2dNativeBackpropInput") {
      out[0] = Value(n, 0) ? Shaped(*Value(n, 0)) : OfRank(4);
    } else if (op == "Conv2DBackpropFilter" ||
               op == "DepthwiseConv2dNativeBackpropFilter") {
      out[0] = Value(n, 1) ? Shaped(*Value(n, 1)) : OfRank(4);
    } else if (op == "FusedBatchNorm" || op == "FusedBatchNormV2" ||
               op == "FusedBatchNormV3") {
      out[0] = In(n, 0);
      int64_t c = In(n, 1).known_rank && In(n, 1).dims.size() == 1
                      ? In(n, 1).dims[0]
                      : -1;
      for (size_t p = 1; p < out.size() && p <= 4; ++p) out[p] = Shaped({c});
      // reserve_space_3 (V3): TensorFlow leaves it unknown as well.
    } else if (op == "FusedBatchNormGrad" || op == "FusedBatchNormGradV2" ||
               op == "FusedBatchNormGradV3") {
      out[0] = In(n, 1);
      int64_t c = In(n, 2).known_rank && In(n, 2).dims.size() == 1
                      ? In(n, 2).dims[0]
                      : -1;
      for (size_t p = 1; p < out.size(); ++p) out[p] = Shaped({p <= 2 ? c : 0});
    } else if (op == "MaxPool" || op == "AvgPool") {
      const TensorInfo& x = In(n, 0);
      if (!x.known_rank || x.dims.size() != 4) {
        out[0] = OfRank(4);
        return;
      }
      Layout l = LayoutOf(AttrString(n, "data_format", "NHWC"));
      Dims k = AttrInts(n, "ksize"), s = AttrInts(n, "strides");
      if (k.size() != 4 || s.size() != 4) {
        out[0] = OfRank(4);
        return;
      }
      std::string pad = AttrString(n, "padding", "VALID");
      Dims y = x.dims;
      y[l.h] = WindowOut(x.dims[l.h], k[l.h], s[l.h], 1, pad);
      y[l.w] = WindowOut(x.dims[l.w], k[l.w], s[l.w], 1, pad);
      out[0] = Shaped(y);
    } else if (op == "AvgPoolGrad") {
      out[0] = Value(n, 0) ? Shaped(*Value(n, 0)) : OfRank(4);
    } else if (op == "Reshape") {
      const auto& v = Value(n, 1);
      if (!v) {
        out[0] = In(n, 1).fully_known() && In(n, 1).dims.size() == 1
                     ? OfRank(In(n, 1).dims[0])
                     : UnknownRank();
        return;
      }
      Dims d = *v;
      int64_t known = 1, missing = -1;
      for (size_t i = 0; i < d.size(); ++i) {
        if (d[i] < 0)
          missing = static_cast<int64_t>(i);
        else
          known *= d[i];
      }
      int64_t total = In(n, 0).num_elements();
      if (missing >= 0)
        d[missing] = total >= 0 && known > 0 ? total / known : -1;
      out[0] = Shaped(d);
      out[0].value = Value(n, 0);
    } else if (op == "Transpose") {
      const auto& perm = Value(n, 1);
      const TensorInfo& x = In(n, 0);
      if (!perm || !x.known_rank || perm->size() != x.dims.size()) {
        out[0] = x.known_rank ? OfRank(x.dims.size()) : UnknownRank();
        return;
      }
      Dims d;
      for (int64_t i : *perm)
        d.push_back(
            i >= 0 && i < static_cast<int64_t>(x.dims.size()) ? x.dims[i] : -1);
      out[0] = Shaped(d);
    } else if (op == "ConcatV2") {
      int count = n.num_inputs() - 1;
      const auto& axis_v = Value(n, count);
      const TensorInfo& first = In(n, 0);
      if (!first.known_rank) return;
      int64_t rank = static_cast<int64_t>(first.dims.size());
      if (!axis_v || axis_v->size() != 1) {
        out[0] = OfRank(rank);
        return;
      }
      int64_t axis = (*axis_v)[0] < 0 ? (*axis_v)[0] + rank : (*axis_v)[0];
      Dims d = first.dims;
      bool values = true;
      Dims joined;
      for (int i = 0; i < count; ++i) {
        const TensorInfo& t = In(n, i);
        if (!t.known_rank || static_cast<int64_t>(t.dims.size()) != rank) {
          out[0] = OfRank(rank);
          return;
        }
        if (i > 0)
          d[axis] =
              d[axis] >= 0 && t.dims[axis] >= 0 ? d[axis] + t.dims[axis] : -1;
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
    } else if (op == "Pad" || op == "PadV2" || op == "MirrorPad") {
      const auto& p = Value(n, 1);
      const TensorInfo& x = In(n, 0);
      if (!x.known_rank) return;
      if (!p || p->size() != 2 * x.dims.size()) {
        out[0] = OfRank(x.dims.size());
        return;
      }
      Dims d = x.dims;
      for (size_t i = 0; i < d.size(); ++i) {
        if (d[i] >= 0) d[i] += (*p)[2 * i] + (*p)[2 * i + 1];
      }
      out[0] = Shaped(d);
    } else if (kReductions.count(op)) {
      const TensorInfo& x = In(n, 0);
      bool keep = AttrBool(n, "keep_dims", false);
      const auto& axes = Value(n, 1);
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
    } else if (op == "SoftmaxCrossEntropyWithLogits") {
      TensorInfo both = BroadcastShapes(In(n, 0), In(n, 1));
      if (both.known_rank && both.dims.size() == 2) {
        out[0] = Shaped({both.dims[0]});
        out[1] = both;
      }
    } else if (op == "SparseSoftmaxCrossEntropyWithLogits") {
      const TensorInfo& x = In(n, 0);
      if (x.known_rank && x.dims.size() == 2) {
        out[0] = Shaped({x.dims[0]});
        out[1] = x;
      }
    } else if (op == "AddN") {
      out[0] = In(n, 0);
      out[0].value.reset();
      for (int i = 1; i < n.num_inputs() && !out[0].fully_known(); ++i) {
        if (In(n, i).fully_known()) out[0] = In(n, i);
      }
    } else if (op == "Shape" || op == "ShapeN") {
      for (size_t p = 0; p < out.size(); ++p) {
        const TensorInfo& x = In(n, static_cast<int>(p));
        if (!x.known_rank) {
          out[p] = OfRank(1);
          continue;
        }
        out[p] = Shaped({static_cast<int64_t>(x.dims.size())});
        if (x.fully_known()) out[p].value = x.dims;
      }
    } else if (op == "Fill") {
      out[0] = Value(n, 0) ? Shaped(*Value(n, 0))
                           : (In(n, 0).fully_known() ? OfRank(In(n, 0).dims[0])
                                                     : UnknownRank());
    } else if (op == "Pack") {
      int count = n.num_inputs();
      const TensorInfo& first = In(n, 0);
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
          if (!Value(n, i) || Value(n, i)->size() != 1) return;
          v.push_back((*Value(n, i))[0]);
        }
        out[0].value = v;
      }
    } else if (op == "Slice") {
      const TensorInfo& x = In(n, 0);
      const auto &begin = Value(n, 1), &size = Value(n, 2);
      if (!x.known_rank) return;
      if (!begin || !size || size->size() != x.dims.size()) {
        out[0] = OfRank(x.dims.size());
        return;
      }
      Dims d(x.dims.size());
      for (size_t i = 0; i < d.size(); ++i) {
        d[i] = (*size)[i] >= 0
                   ? (*size)[i]
                   : (x.dims[i] >= 0 ? x.dims[i] - (*begin)[i] : -1);
      }
      out[0] = Shaped(d);
      if (x.value && d.size() == 1 && d[0] >= 0 &&
          (*begin)[0] + d[0] <= static_cast<int64_t>(x.value->size())) {
        out[0].value = Dims(x.value->begin() + (*begin)[0],
                            x.value->begin() + (*begin)[0] + d[0]);
      }
    } else if (op == "ExpandDims") {
      const TensorInfo& x = In(n, 0);
      const auto& dim = Value(n, 1);
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
    } else if (op == "Squeeze") {
      const TensorInfo& x = In(n, 0);
      if (!x.known_rank) return;
      Dims axes = AttrInts(n, "squeeze_dims");
      int64_t rank = static_cast<int64_t>(x.dims.size());
      Dims d;
      for (int64_t i = 0; i < rank; ++i) {
        bool listed =
            std::find(axes.begin(), axes.end(), i) != axes.end() ||
            std::find(axes.begin(), axes.end(), i - rank) != axes.end();
        if (axes.empty() ? x.dims[i] == 1 : listed) continue;
        if (axes.empty() && x.dims[i] < 0) return;  // might be 1
        d.push_back(x.dims[i]);
      }
      out[0] = Shaped(d);
    } else if (op == "Tile") {
      const TensorInfo& x = In(n, 0);
      const auto& m = Value(n, 1);
      if (!x.known_rank) return;
      if (!m || m->size() != x.dims.size()) {
        out[0] = OfRank(x.dims.size());
        return;
      }
      Dims d = x.dims;
      for (size_t i = 0; i < d.size(); ++i)
        d[i] = d[i] >= 0 ? d[i] * (*m)[i] : -1;
      out[0] = Shaped(d);
    } else if (op == "BroadcastGradientArgs") {
      const auto &s0 = Value(n, 0), &s1 = Value(n, 1);
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
    } else if (op == "ArgMax" || op == "ArgMin") {
      const TensorInfo& x = In(n, 0);
      const auto& dim = Value(n, 1);
      if (!x.known_rank) return;
      if (!dim || dim->size() != 1) {
        out[0] = OfRank(x.dims.size() - 1);
        return;
      }
      int64_t axis = (*dim)[0] < 0
                         ? (*dim)[0] + static_cast<int64_t>(x.dims.size())
                         : (*dim)[0];
      Dims d = x.dims;
      if (axis >= 0 && axis < static_cast<int64_t>(d.size()))
        d.erase(d.begin() + axis);
      out[0] = Shaped(d);
    }
  }

  const Graph& graph_;
  std::vector<std::vector<TensorInfo>>& out_;
};

}  // namespace

ShapeMap InferShapes(const Graph& graph) {
  ShapeMap map;
  map.outputs_.resize(graph.id_limit());
  Inferrer inferrer(graph, &map.outputs_);
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(graph);
  if (order.ok()) {
    inferrer.Run(*order);
  } else {
    inferrer.OnlyAttrs();
  }
  return map;
}

}  // namespace graft::analysis
