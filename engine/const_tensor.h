// Constant tensor math for rewrites: values of matched Const nodes, computed
// in float64 (with Eigen, inside the implementation) and cast back to the
// tensor's dtype.
#ifndef GRAFT_ENGINE_CONST_TENSOR_H_
#define GRAFT_ENGINE_CONST_TENSOR_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tensor_content.h"
#include "proto/graph.pb.h"

namespace graft {

// Rules compute on constants of at most this many elements (each held as a
// double while computed); a larger one is an error, not an allocation that
// fails. The CLI's --max-const-elements changes it for the process.
inline constexpr int64_t kDefaultMaxConstElements = int64_t{1} << 26;
void SetMaxConstElements(int64_t n);
int64_t MaxConstElements();

struct ConstTensor {
  tf::DataType dtype = tf::DT_FLOAT;
  std::vector<int64_t> shape;  // empty: a scalar
  std::vector<double> values;  // row-major
  // Set for a large float or double tensor whose values are not decoded:
  // its encoded bytes, computed only when asked (`values` is then empty;
  // Materialize() decodes). Only ScaleOutputChannels, QuantizeBlockwise
  // (which also makes its packed uint8 values so) and the Const that takes
  // their results see such a tensor; everything else gets values.
  std::shared_ptr<const TensorContent> deferred;

  int64_t num_elements() const;
  static ConstTensor Scalar(double value, tf::DataType dtype = tf::DT_FLOAT);
  std::string ShapeString() const;  // "[3, 3, 16]"
};

// The tensor with its values decoded (a copy when it is not deferred).
ConstTensor Materialize(const ConstTensor& tensor);

// A value of an integer constant (held as a double) back as T, saturated:
// INT64_MAX, a Slice's "to the end", is 2^63 as a double, past int64's
// range, where a plain cast would wrap.
template <typename T>
T SaturatedInt(double v) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v >= hi) return std::numeric_limits<T>::max();
  if (v <= lo) return std::numeric_limits<T>::min();
  return v == v ? static_cast<T>(v) : T{0};  // NaN: 0
}
// A Const's value left undecoded when its bytes are kept apart
// (`content`, see Node::value_content_apart()) and it is a float or
// double; nullopt otherwise.
std::optional<ConstTensor> DeferredTensor(
    const tf::TensorProto& proto, std::shared_ptr<const TensorContent> content);

// Reads a TensorProto (float, double, half, bfloat16, int8/16/32/64,
// uint8/16, bool), from tensor_content or the typed value fields, expanding
// a single repeated value to the full shape as TensorFlow does.
absl::StatusOr<ConstTensor> FromTensorProto(const tf::TensorProto& proto);
// The same with the content bytes given apart (Node::value_content()).
absl::StatusOr<ConstTensor> FromTensorProto(const tf::TensorProto& proto,
                                            absl::string_view content);
// Writes a TensorProto in `tensor.dtype` (values rounded for integers).
tf::TensorProto ToTensorProto(const ConstTensor& tensor);
// The tensor's dtype and shape as a TensorProto, without values: for a
// deferred tensor, whose Const node takes `tensor.deferred` as its content
// (NodeSpec::value_content).
tf::TensorProto TensorProtoWithoutContent(const ConstTensor& tensor);

// A tensor's values as float32, in order, `piece` at a time (the last piece
// may be shorter): fn(begin, values, n) for values [begin, begin + n), which
// fn may change. A large float32 tensor is read from its bytes through an
// aligned buffer (a model file's bytes need not be aligned), the pages of
// a mapped file given back as read, never decoded whole; any other from
// its values. An error when a deferred tensor's bytes do not match its
// shape.
absl::Status ForEachFloatPiece(
    const ConstTensor& a, int64_t piece,
    const std::function<void(int64_t, float*, int64_t)>& fn);

// Elementwise a (op) b with NumPy broadcasting; op is one of + - * /
// "min" "max". The result takes a's dtype (b's if a is a scalar literal).
absl::StatusOr<ConstTensor> Broadcast(const ConstTensor& a,
                                      const ConstTensor& b,
                                      absl::string_view op);
// Elementwise: "rsqrt", "sqrt", "neg", "abs", "round" (computed in place:
// move a tensor in to save a copy).
absl::StatusOr<ConstTensor> Unary(ConstTensor a, absl::string_view op);
// Reductions to a scalar: "min", "max".
ConstTensor Reduce(const ConstTensor& a, absl::string_view op);
// The tensor in another dtype, each value rounded as that dtype holds it
// (float32 -> float16 rounds to the nearest half, float -> int rounds).
absl::StatusOr<ConstTensor> CastTo(ConstTensor a, tf::DataType dtype);

// A float tensor in eight bits as GTT's quantize_weights makes it: quint8
// values over [min, max] (the tensor's range widened to hold 0), to be
// read back by Dequantize in MIN_FIRST mode.
struct QuantizedTensor {
  ConstTensor values;  // quint8
  float min = 0, max = 0;
};
QuantizedTensor QuantizeUint8(const ConstTensor& a);
// A [K, N] float matrix in `bits` (4 or 8) per value, quantized in blocks of
// `block_size` (a power of two, 16 or more) along axis 0, per column (as
// onnxruntime's MatMulNBits reads a weight), or along axis 1, per row (as
// its GatherBlockQuantized reads an embedding table), as its
// MatMulNBitsQuantizer writes them: q = clamp(round(w / s + z), 0,
// 2^bits - 1), w ~ (q - z) * s. Symmetric: s = v / -2^(bits-1), v the
// block's value of the largest magnitude, z = 2^(bits-1) (the ops' default,
// so `zero_points` need not be given); else s = (max - min) / (2^bits - 1)
// over the block's range widened to hold 0, z = round(-min / s). A last
// block short of `block_size` is padded with q = 0 (the ops read only the
// matrix's own values). Each line (column, or row) is `blocks` blocks of
// `block_size * bits / 8` bytes, two 4-bit values a byte (the first in the
// low nibble); zero points are packed alike.
struct BlockwiseQuantized {
  ConstTensor packed;  // uint8 [lines, blocks, block_size * bits / 8], deferred
  ConstTensor scales;  // float32 [lines, blocks]
  ConstTensor zero_points;  // uint8 [lines, ceil(blocks * bits / 8)]
};
absl::StatusOr<BlockwiseQuantized> QuantizeBlockwise(const ConstTensor& w,
                                                     int bits,
                                                     int64_t block_size,
                                                     bool symmetric,
                                                     int axis = 0);
// The same quantization as DequantizeLinear's blocked input (ONNX opset
// 21): q in the matrix's own shape and layout, of dtype uint4 / uint8 (int4
// / int8 when symmetric: q - 2^(bits-1), no zero points), 4-bit values two
// a byte, row-major; scales and zero points (of q's unsigned dtype, packed
// alike) one per block, in the matrix's layout with its blocked axis cut to
// `blocks`. `k`, `n`: the matrix's shape.
BlockwiseQuantized AsDequantizeLinearInput(const BlockwiseQuantized& q,
                                           int64_t k, int64_t n, int bits,
                                           int64_t block_size, bool symmetric,
                                           int axis);
absl::StatusOr<ConstTensor> Reshape(const ConstTensor& a,
                                    std::vector<int64_t> shape);
// The tensor's axes permuted (numpy.transpose, ONNX's Transpose): axis i of
// the result is axis perm[i] of `a`; an empty perm reverses them.
absl::StatusOr<ConstTensor> Transpose(const ConstTensor& a,
                                      std::vector<int64_t> perm);
// Constants joined along an axis (numpy.concatenate, ONNX's Concat): the
// same rank and dimensions but the axis', the first's dtype.
absl::StatusOr<ConstTensor> Concat(const std::vector<ConstTensor>& parts, int64_t axis);
// An HWIO filter with `rate_h - 1` / `rate_w - 1` zero rows / columns
// between its taps: [(h-1)·rh+1, (w-1)·rw+1, i, o], the filter a dilated
// convolution applies (flatten_atrous_conv).
absl::StatusOr<ConstTensor> DilateFilter(const ConstTensor& filter,
                                         int64_t rate_h, int64_t rate_w);

// Scales the output channels of a filter by `scale` (one value per output
// channel): Conv2D filters are HWIO (axis 3), DepthwiseConv2dNative filters
// HWCM (output channel c * M + m), MatMul weights [in, out] (or [out, in]
// with transpose_b). The filter is scaled in place (move one in to save a
// copy); a deferred filter gives a deferred result, scaled (in float64,
// rounded once to the dtype, the eager path's bytes) as its bytes are read;
// its values, if something reads them, are those of the rounded bytes.
absl::StatusOr<ConstTensor> ScaleOutputChannels(ConstTensor filter,
                                                const ConstTensor& scale,
                                                absl::string_view op,
                                                bool transpose_b);

// The number of output channels of a filter in those layouts (also ONNX's
// Conv [M, C/g, k...], ConvTranspose [C, M, k...] and Gemm); only the
// filter's shape is read.
absl::StatusOr<int64_t> OutputChannelCount(const ConstTensor& filter,
                                           absl::string_view op,
                                           bool transpose_b);

// A constant `c` applied elementwise (Mul, Add) to a tensor of rank `rank`
// whose axis `axis` holds `channels` channels, as one value per channel: a
// [channels] vector (a value of c that broadcasts is repeated). An error
// when c varies along another axis, has more dimensions than the tensor
// (numpy broadcasting would change its shape), or a channel dimension that
// is neither 1 nor `channels`.
absl::StatusOr<ConstTensor> ChannelValues(const ConstTensor& c,
                                          int64_t channels, int rank, int axis);

// Per output channel minimum (or maximum) of a filter, in the same layouts
// as ScaleOutputChannels: a 1-D tensor with one value per output channel.
absl::StatusOr<ConstTensor> ChannelReduce(const ConstTensor& filter,
                                          absl::string_view op,
                                          bool transpose_b, bool minimum);

}  // namespace graft

#endif  // GRAFT_ENGINE_CONST_TENSOR_H_
