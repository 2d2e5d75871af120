// Shape functions of convolutions, pooling, matmuls, batch norms and
// losses, with their gradients.
#include <algorithm>
#include <functional>
#include <set>

#include "analysis/shape_functions_internal.h"
#include "engine/const_tensor.h"

namespace graft::analysis {
namespace {

// BiasAddGrad
void InferBiasAddGrad(const ShapeInputs& in, const Node& n,
                      std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (!x.known_rank) {
    out[0] = OfRank(1);
    return;
  }
  bool nchw = AttrString(n, "data_format", "NHWC") == "NCHW";
  out[0] =
      Shaped({x.dims.empty()
                  ? -1
                  : x.dims[nchw && x.dims.size() > 1 ? 1 : x.dims.size() - 1]});
}

// MatMul
void InferMatMul(const ShapeInputs& in, const Node& n,
                 std::vector<TensorInfo>& out) {
  const TensorInfo &a = in.In(n, 0), &b = in.In(n, 1);
  int64_t m = a.known_rank && a.dims.size() == 2
                  ? a.dims[AttrBool(n, "transpose_a", false) ? 1 : 0]
                  : -1;
  int64_t k = b.known_rank && b.dims.size() == 2
                  ? b.dims[AttrBool(n, "transpose_b", false) ? 0 : 1]
                  : -1;
  out[0] = Shaped({m, k});
}

// BatchMatMulV2, BatchMatMul
void InferBatchMatMul(const ShapeInputs& in, const Node& n,
                      std::vector<TensorInfo>& out) {
  const TensorInfo &a = in.In(n, 0), &b = in.In(n, 1);
  if (!a.known_rank || !b.known_rank || a.dims.size() < 2 || b.dims.size() < 2)
    return;
  TensorInfo batch =
      BroadcastShapes(Shaped(Dims(a.dims.begin(), a.dims.end() - 2)),
                      Shaped(Dims(b.dims.begin(), b.dims.end() - 2)));
  if (!batch.known_rank) return;
  Dims d = batch.dims;
  d.push_back(a.dims[a.dims.size() - (AttrBool(n, "adj_x", false) ? 1 : 2)]);
  d.push_back(b.dims[b.dims.size() - (AttrBool(n, "adj_y", false) ? 2 : 1)]);
  out[0] = Shaped(d);
}

// Conv2D, DepthwiseConv2dNative
void InferConv2D(const ShapeInputs& in, const Node& n,
                 std::vector<TensorInfo>& out) {
  const std::string& op = n.op();
  const TensorInfo &x = in.In(n, 0), &w = in.In(n, 1);
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
  y[l.h] = WindowOut(x.dims[l.h], wk ? w.dims[0] : -1, strides[l.h], dil[l.h],
                     pad, pads.size() == 8 ? pads[2 * l.h] : 0,
                     pads.size() == 8 ? pads[2 * l.h + 1] : 0);
  y[l.w] = WindowOut(x.dims[l.w], wk ? w.dims[1] : -1, strides[l.w], dil[l.w],
                     pad, pads.size() == 8 ? pads[2 * l.w] : 0,
                     pads.size() == 8 ? pads[2 * l.w + 1] : 0);
  if (wk) {
    y[l.c] =
        op == "Conv2D" || op == "_FusedConv2D"
            ? w.dims[3]
            : MulDims(w.dims[2], w.dims[3]);
  }
  out[0] = Shaped(y);
}

// Conv2DBackpropInput, DepthwiseConv2dNativeBackpropInput
void InferConvBackpropInput(const ShapeInputs& in, const Node& n,
                            std::vector<TensorInfo>& out) {
  out[0] = in.Value(n, 0) ? Shaped(*in.Value(n, 0)) : OfRank(4);
}

// Conv2DBackpropFilter, DepthwiseConv2dNativeBackpropFilter
void InferConvBackpropFilter(const ShapeInputs& in, const Node& n,
                             std::vector<TensorInfo>& out) {
  out[0] = in.Value(n, 1) ? Shaped(*in.Value(n, 1)) : OfRank(4);
}

// FusedBatchNorm, FusedBatchNormV2, FusedBatchNormV3
void InferFusedBatchNorm(const ShapeInputs& in, const Node& n,
                         std::vector<TensorInfo>& out) {
  out[0] = in.In(n, 0);
  int64_t c = in.In(n, 1).known_rank && in.In(n, 1).dims.size() == 1
                  ? in.In(n, 1).dims[0]
                  : -1;
  for (size_t p = 1; p < out.size() && p <= 4; ++p) out[p] = Shaped({c});
  // reserve_space_3 (V3): TensorFlow leaves it unknown as well.
}

// FusedBatchNormGrad, FusedBatchNormGradV2, FusedBatchNormGradV3
void InferFusedBatchNormGrad(const ShapeInputs& in, const Node& n,
                             std::vector<TensorInfo>& out) {
  out[0] = in.In(n, 1);
  int64_t c = in.In(n, 2).known_rank && in.In(n, 2).dims.size() == 1
                  ? in.In(n, 2).dims[0]
                  : -1;
  for (size_t p = 1; p < out.size(); ++p) out[p] = Shaped({p <= 2 ? c : 0});
}

// MaxPool, AvgPool
void InferPool(const ShapeInputs& in, const Node& n,
               std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
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
}

// AvgPoolGrad
void InferAvgPoolGrad(const ShapeInputs& in, const Node& n,
                      std::vector<TensorInfo>& out) {
  out[0] = in.Value(n, 0) ? Shaped(*in.Value(n, 0)) : OfRank(4);
}

// SoftmaxCrossEntropyWithLogits
void InferSoftmaxCrossEntropy(const ShapeInputs& in, const Node& n,
                              std::vector<TensorInfo>& out) {
  TensorInfo both = BroadcastShapes(in.In(n, 0), in.In(n, 1));
  if (both.known_rank && both.dims.size() == 2) {
    out[0] = Shaped({both.dims[0]});
    out[1] = both;
  }
}

// SparseSoftmaxCrossEntropyWithLogits
void InferSparseSoftmaxCrossEntropy(const ShapeInputs& in, const Node& n,
                                    std::vector<TensorInfo>& out) {
  const TensorInfo& x = in.In(n, 0);
  if (x.known_rank && x.dims.size() == 2) {
    out[0] = Shaped({x.dims[0]});
    out[1] = x;
  }
}

// The ops of this file and their shape functions.
const struct {
  const char* op;
  ShapeFn fn;
} kNnOps[] = {
    {"BiasAddGrad", InferBiasAddGrad},
    {"MatMul", InferMatMul},
    {"_FusedMatMul", InferMatMul},  // Grappler's remapper: MatMul + BiasAdd
    {"BatchMatMulV2", InferBatchMatMul},
    {"BatchMatMul", InferBatchMatMul},
    {"Conv2D", InferConv2D},
    {"_FusedConv2D", InferConv2D},  // Grappler's remapper: Conv2D + BiasAdd
    {"DepthwiseConv2dNative", InferConv2D},
    {"Conv2DBackpropInput", InferConvBackpropInput},
    {"DepthwiseConv2dNativeBackpropInput", InferConvBackpropInput},
    {"Conv2DBackpropFilter", InferConvBackpropFilter},
    {"DepthwiseConv2dNativeBackpropFilter", InferConvBackpropFilter},
    {"FusedBatchNorm", InferFusedBatchNorm},
    {"FusedBatchNormV2", InferFusedBatchNorm},
    {"FusedBatchNormV3", InferFusedBatchNorm},
    {"_FusedBatchNormEx", InferFusedBatchNorm},  // + side input, activation
    {"FusedBatchNormGrad", InferFusedBatchNormGrad},
    {"FusedBatchNormGradV2", InferFusedBatchNormGrad},
    {"FusedBatchNormGradV3", InferFusedBatchNormGrad},
    {"MaxPool", InferPool},
    {"AvgPool", InferPool},
    {"AvgPoolGrad", InferAvgPoolGrad},
    {"SoftmaxCrossEntropyWithLogits", InferSoftmaxCrossEntropy},
    {"SparseSoftmaxCrossEntropyWithLogits", InferSparseSoftmaxCrossEntropy},
};

}  // namespace

void AddNnShapeFunctions(ShapeTable* table) {
  for (const auto& [op, fn] : kNnOps) (*table)[op] = fn;
}

}  // namespace graft::analysis
