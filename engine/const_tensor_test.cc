#include "engine/const_tensor.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

ConstTensor Make(std::vector<int64_t> shape, std::vector<double> values,
                 tf::DataType dtype = tf::DT_FLOAT) {
  ConstTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.values = values;
  return t;
}

std::vector<double> Values(const ConstTensor& t) { return t.values; }

TEST(ConstTensorTest, ProtoRoundTripForEachDtype) {
  for (tf::DataType dtype :
       {tf::DT_FLOAT, tf::DT_DOUBLE, tf::DT_INT32, tf::DT_INT64, tf::DT_HALF,
        tf::DT_BFLOAT16, tf::DT_INT8, tf::DT_UINT8}) {
    ConstTensor t = Make({2, 2}, {1, -2, 3, 0.5}, dtype);
    if (dtype == tf::DT_UINT8) t.values[1] = 2;
    absl::StatusOr<ConstTensor> back = FromTensorProto(ToTensorProto(t));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape, t.shape);
    EXPECT_EQ(back->dtype, dtype);
    bool integer = dtype == tf::DT_INT32 || dtype == tf::DT_INT64 ||
                   dtype == tf::DT_INT8 || dtype == tf::DT_UINT8;
    EXPECT_EQ(back->values[3], integer ? 0.0 : 0.5) << dtype;  // rounded
    EXPECT_EQ(back->values[0], 1.0);
  }
}

TEST(ConstTensorTest, TypedValueFieldsExpandLikeTensorflow) {
  tf::TensorProto p;
  p.set_dtype(tf::DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  p.add_float_val(7);
  absl::StatusOr<ConstTensor> t = FromTensorProto(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(Values(*t), (std::vector<double>{7, 7, 7}));
  p.add_float_val(1);
  p.add_float_val(2);
  p.add_float_val(3);
  EXPECT_FALSE(FromTensorProto(p).ok());
}

TEST(ConstTensorTest, BroadcastsLikeNumpy) {
  ConstTensor m = Make({2, 3}, {1, 2, 3, 4, 5, 6});
  ConstTensor row = Make({3}, {10, 20, 30});
  absl::StatusOr<ConstTensor> sum = Broadcast(m, row, "+");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values(*sum), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  absl::StatusOr<ConstTensor> scaled =
      Broadcast(ConstTensor::Scalar(2), m, "*");
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(scaled->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(scaled->values[5], 12);
  absl::StatusOr<ConstTensor> bad = Broadcast(m, Make({2}, {1, 2}), "+");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "shapes [2, 3] and [2] do not broadcast");
}

TEST(ConstTensorTest, UnaryReduceReshape) {
  ConstTensor v = Make({2}, {4, 0.25});
  EXPECT_EQ(Values(*Unary(v, "rsqrt")), (std::vector<double>{0.5, 2}));
  EXPECT_EQ(Values(*Unary(v, "sqrt")), (std::vector<double>{2, 0.5}));
  EXPECT_EQ(Reduce(v, "min").values[0], 0.25);
  EXPECT_EQ(Reduce(v, "max").values[0], 4);
  absl::StatusOr<ConstTensor> r =
      Reshape(Make({2, 3}, {1, 2, 3, 4, 5, 6}), {3, -1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shape, (std::vector<int64_t>{3, 2}));
  EXPECT_FALSE(Reshape(v, {3}).ok());
  absl::StatusOr<ConstTensor> t =
      Transpose(Make({2, 3}, {1, 2, 3, 4, 5, 6}), {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values(*t), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  t = Transpose(Make({1, 2, 3}, {1, 2, 3, 4, 5, 6}), {2, 0, 1});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(Values(*t), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_FALSE(Transpose(v, {0, 0}).ok());
  EXPECT_FALSE(Transpose(v, {1}).ok());
}

// A constant applied elementwise is one value per channel only when it
// varies along the channel axis alone and leaves the tensor's shape.
TEST(ConstTensorTest, ChannelValuesOfBroadcastConstants) {
  auto values = [](const ConstTensor& c, int rank, int axis) {
    absl::StatusOr<ConstTensor> v = ChannelValues(c, 3, rank, axis);
    return v.ok() ? v->values : std::vector<double>{-1};
  };
  const std::vector<double> want = {1, 2, 3};
  EXPECT_EQ(values(Make({3}, {1, 2, 3}), 4, 3), want);              // NHWC
  EXPECT_EQ(values(Make({1, 1, 1, 3}, {1, 2, 3}), 4, 3), want);
  EXPECT_EQ(values(Make({3, 1, 1}, {1, 2, 3}), 4, 1), want);        // NCHW
  EXPECT_EQ(values(Make({}, {5}), 4, 3), (std::vector<double>{5, 5, 5}));
  EXPECT_EQ(values(Make({1}, {5}), 2, 1), (std::vector<double>{5, 5, 5}));
  EXPECT_EQ(values(Make({3}, {1, 2, 3}), 4, 1), std::vector<double>{-1});
  EXPECT_EQ(values(Make({2, 1, 1, 3}, {1, 2, 3, 4, 5, 6}), 4, 3),
            std::vector<double>{-1});  // varies along the batch
  EXPECT_EQ(values(Make({1, 1, 3}, {1, 2, 3}), 2, 1),
            std::vector<double>{-1});  // would make the tensor rank 3
  EXPECT_EQ(values(Make({2}, {1, 2}), 4, 3), std::vector<double>{-1});
  ConstTensor depthwise = Make({3, 3, 2, 2}, std::vector<double>(36, 1.0));
  EXPECT_EQ(*OutputChannelCount(depthwise, "DepthwiseConv2dNative", false), 4);
}

TEST(ConstTensorTest, ScalesOutputChannelsByLayout) {
  // Conv2D HWIO [1,1,2,2]: output channel is the last axis.
  ConstTensor conv = Make({1, 1, 2, 2}, {1, 1, 1, 1});
  ConstTensor s = Make({2}, {2, 3});
  EXPECT_EQ(Values(*ScaleOutputChannels(conv, s, "Conv2D", false)),
            (std::vector<double>{2, 3, 2, 3}));
  // Depthwise HWCM [1,1,2,2]: output channel c*M+m, 4 of them.
  ConstTensor dw = Make({1, 1, 2, 2}, {1, 1, 1, 1});
  ConstTensor s4 = Make({4}, {1, 2, 3, 4});
  EXPECT_EQ(
      Values(*ScaleOutputChannels(dw, s4, "DepthwiseConv2dNative", false)),
      (std::vector<double>{1, 2, 3, 4}));
  // MatMul [in=2, out=2], and transposed [out, in].
  ConstTensor mm = Make({2, 2}, {1, 1, 1, 1});
  EXPECT_EQ(Values(*ScaleOutputChannels(mm, s, "MatMul", false)),
            (std::vector<double>{2, 3, 2, 3}));
  EXPECT_EQ(Values(*ScaleOutputChannels(mm, s, "MatMul", true)),
            (std::vector<double>{2, 2, 3, 3}));
  EXPECT_FALSE(ScaleOutputChannels(conv, s4, "Conv2D", false).ok());
  EXPECT_FALSE(ScaleOutputChannels(conv, s, "Relu", false).ok());
  // ONNX ConvTranspose [C=2, M=2, 1, 2]: output channel is axis 1, its
  // values repeated for each input channel.
  ConstTensor ct = Make({2, 2, 1, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(Values(*ScaleOutputChannels(ct, s, "ConvTranspose", false)),
            (std::vector<double>{2, 2, 3, 3, 2, 2, 3, 3}));
  // ONNX Conv [M=2, C=1, 1, 2]: axis 0.
  ConstTensor oc = Make({2, 1, 1, 2}, {1, 1, 1, 1});
  EXPECT_EQ(Values(*ScaleOutputChannels(oc, s, "Conv", false)),
            (std::vector<double>{2, 2, 3, 3}));
}

// A filter whose bytes are kept apart is scaled when its bytes are read,
// piece by piece when written: the same bytes as the eager path, for each
// layout and both float widths.
template <typename T>
std::string Encode(const std::vector<double>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    T v = static_cast<T>(values[i]);
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  return bytes;
}

TEST(ConstTensorTest, DeferredScalingEqualsEagerScaling) {
  struct Case {
    const char* op;
    std::vector<int64_t> shape;
    bool transpose_b;
    int64_t channels;
  };
  // Large enough for several pieces when written (2^18 elements each).
  std::vector<Case> cases = {
      {"Conv2D", {3, 3, 64, 512}, false, 512},
      {"DepthwiseConv2dNative", {3, 3, 32, 2}, false, 64},
      {"MatMul", {600, 1000}, false, 1000},
      {"MatMul", {1000, 600}, true, 1000},
      {"ConvTranspose", {64, 32, 3, 3}, false, 32}};
  for (tf::DataType dtype : {tf::DT_FLOAT, tf::DT_DOUBLE}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.op) + (c.transpose_b ? " transposed" : "") +
                   (dtype == tf::DT_FLOAT ? " float" : " double"));
      int64_t n = 1;
      for (int64_t d : c.shape) n *= d;
      std::vector<double> w(n), s(c.channels);
      for (int64_t i = 0; i < n; ++i) w[i] = std::sin(0.37 * i) * 3.1;
      for (int64_t i = 0; i < c.channels; ++i) s[i] = 0.5 + 0.01 * i;
      std::string bytes =
          dtype == tf::DT_FLOAT ? Encode<float>(w) : Encode<double>(w);
      tf::TensorProto proto;
      proto.set_dtype(dtype);
      for (int64_t d : c.shape)
        proto.mutable_tensor_shape()->add_dim()->set_size(d);
      proto.set_tensor_content(bytes);
      ConstTensor scale = Make({c.channels}, s);
      absl::StatusOr<ConstTensor> eager = ScaleOutputChannels(
          *FromTensorProto(proto), scale, c.op, c.transpose_b);
      ASSERT_TRUE(eager.ok()) << eager.status();
      std::string expected = ToTensorProto(*eager).tensor_content();

      std::optional<ConstTensor> filter =
          DeferredTensor(proto, ViewContent(bytes, nullptr));
      ASSERT_TRUE(filter.has_value());
      EXPECT_EQ(filter->num_elements(), n);
      absl::StatusOr<ConstTensor> deferred =
          ScaleOutputChannels(*filter, scale, c.op, c.transpose_b);
      ASSERT_TRUE(deferred.ok()) << deferred.status();
      ASSERT_NE(deferred->deferred, nullptr);
      EXPECT_TRUE(deferred->values.size() == 0);
      // Written before anything reads it: computed in pieces.
      std::string written;
      int pieces = 0;
      deferred->deferred->Emit([&](absl::string_view piece) {
        written.append(piece.data(), piece.size());
        ++pieces;
      });
      EXPECT_TRUE(written == expected);
      if (n > (1 << 18) && !c.transpose_b) {
        EXPECT_GT(pieces, 1);
      }
      // Read whole, then written from what was kept.
      EXPECT_TRUE(deferred->deferred->bytes() == expected);
      written.clear();
      deferred->deferred->Emit([&](absl::string_view piece) {
        written.append(piece.data(), piece.size());
      });
      EXPECT_TRUE(written == expected);
      // Everything else sees the values of those bytes (rounded to the
      // dtype, as a Const holds them).
      tf::TensorProto rounded = proto;
      rounded.set_tensor_content(expected);
      EXPECT_EQ(Materialize(*deferred).values,
                FromTensorProto(rounded)->values);
      EXPECT_TRUE(ToTensorProto(*deferred).tensor_content() == expected);
      absl::StatusOr<ConstTensor> doubled =
          Broadcast(*deferred, ConstTensor::Scalar(2.0), "*");
      ASSERT_TRUE(doubled.ok());
      EXPECT_DOUBLE_EQ(doubled->values[5],
                       2 * Materialize(*deferred).values[5]);
    }
  }
  // Not float or double, or bytes that do not fit the shape: decoded.
  tf::TensorProto ints;
  ints.set_dtype(tf::DT_INT32);
  ints.mutable_tensor_shape()->add_dim()->set_size(2);
  EXPECT_FALSE(
      DeferredTensor(ints, ViewContent(std::string(8, '\0'), nullptr)));
  tf::TensorProto floats;
  floats.set_dtype(tf::DT_FLOAT);
  floats.mutable_tensor_shape()->add_dim()->set_size(3);
  EXPECT_FALSE(
      DeferredTensor(floats, ViewContent(std::string(8, '\0'), nullptr)));
}

TEST(ConstTensorTest, ReducesPerOutputChannel) {
  // Conv2D HWIO [1, 2, 1, 2]: channel is the last axis.
  ConstTensor conv = Make({1, 2, 1, 2}, {1, -5, 3, 7});
  EXPECT_EQ(Values(*ChannelReduce(conv, "Conv2D", false, true)),
            (std::vector<double>{1, -5}));
  EXPECT_EQ(Values(*ChannelReduce(conv, "Conv2D", false, false)),
            (std::vector<double>{3, 7}));
  // MatMul [out, in] with transpose_b: channel is the first axis.
  ConstTensor mm = Make({2, 2}, {1, 2, -3, 4});
  EXPECT_EQ(Values(*ChannelReduce(mm, "MatMul", true, true)),
            (std::vector<double>{1, -3}));
  EXPECT_FALSE(ChannelReduce(mm, "Relu", false, true).ok());
  // ONNX ConvTranspose [C=2, M=2, 1, 1]: channel m's values are w[c, m].
  ConstTensor ct = Make({2, 2, 1, 1}, {1, -2, 5, 4});
  EXPECT_EQ(Values(*ChannelReduce(ct, "ConvTranspose", false, true)),
            (std::vector<double>{1, -2}));
  EXPECT_EQ(Values(*ChannelReduce(ct, "ConvTranspose", false, false)),
            (std::vector<double>{5, 4}));
}

// Blockwise quantization as MatMulNBits reads it: per column, blocks of
// rows, two 4-bit values a byte (the first in the low nibble), zero points
// packed alike, a short last block padded with q = 0.
TEST(ConstTensorTest, QuantizesInBlocksAsMatMulNBits) {
  // [K = 20, N = 1]: a block of 16 rows, then 4 rows padded to 16.
  std::vector<double> column(20);
  for (int r = 0; r < 20; ++r) column[r] = r < 16 ? r - 5 : 2 * (r - 16);
  ConstTensor w = Make({20, 1}, column);
  absl::StatusOr<BlockwiseQuantized> q = QuantizeBlockwise(w, 4, 16, false);
  ASSERT_TRUE(q.ok()) << q.status();
  q->packed = Materialize(q->packed);
  EXPECT_EQ(q->packed.shape, (std::vector<int64_t>{1, 2, 8}));
  EXPECT_EQ(q->scales.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(q->zero_points.shape, (std::vector<int64_t>{1, 1}));
  // Block 0 spans [-5, 10]: s = 1, z = 5, so q = w + 5 (0..15).
  EXPECT_FLOAT_EQ(q->scales.values[0], 1.0f);
  EXPECT_EQ(q->packed.values[0], 0 + 16 * 1);    // rows 0, 1: q 0 and 1
  EXPECT_EQ(q->packed.values[7], 14 + 16 * 15);  // rows 14, 15
  // Block 1 spans [0, 6] (widened to hold 0): s = 6 / 15, z = 0; rows
  // 16..19 are 0, 2, 4, 6 -> q 0, 5, 10, 15, then padding.
  EXPECT_FLOAT_EQ(q->scales.values[1], 6.0f / 15);
  EXPECT_EQ(q->packed.values[8], 0 + 16 * 5);
  EXPECT_EQ(q->packed.values[9], 10 + 16 * 15);
  EXPECT_EQ(q->packed.values[10], 0);
  EXPECT_EQ(q->zero_points.values[0], 5 + 16 * 0);

  // Symmetric, 8 bits: s = v / -128 for v the value of largest magnitude
  // (10 in block 0), z = 128; v itself is q = 0.
  q = QuantizeBlockwise(w, 8, 16, true);
  ASSERT_TRUE(q.ok()) << q.status();
  q->packed = Materialize(q->packed);
  EXPECT_EQ(q->packed.shape, (std::vector<int64_t>{1, 2, 16}));
  EXPECT_FLOAT_EQ(q->scales.values[0], 10.0f / -128);
  EXPECT_EQ(q->packed.values[15], 0);        // 10
  EXPECT_EQ(q->packed.values[5], 128);       // 0
  EXPECT_EQ(q->packed.values[0], 128 + 64);  // -5
  EXPECT_EQ(q->zero_points.values[0], 128);

  // Read from a deferred weight's bytes: the same bytes.
  tf::TensorProto proto = ToTensorProto(w);
  std::optional<ConstTensor> deferred =
      DeferredTensor(proto, ViewContent(proto.tensor_content(), nullptr));
  ASSERT_TRUE(deferred.has_value());
  absl::StatusOr<BlockwiseQuantized> from_bytes =
      QuantizeBlockwise(*deferred, 8, 16, true);
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  EXPECT_EQ(Materialize(from_bytes->packed).values, q->packed.values);
  EXPECT_EQ(from_bytes->scales.values, q->scales.values);

  // Along axis 1, per row: the same blocks as along axis 0 of the
  // transposed matrix.
  absl::StatusOr<ConstTensor> row = Transpose(w, {});
  ASSERT_TRUE(row.ok());
  for (bool symmetric : {false, true}) {
    absl::StatusOr<BlockwiseQuantized> by_row =
        QuantizeBlockwise(*row, 4, 16, symmetric, 1);
    absl::StatusOr<BlockwiseQuantized> by_column =
        QuantizeBlockwise(w, 4, 16, symmetric, 0);
    ASSERT_TRUE(by_row.ok() && by_column.ok());
    EXPECT_EQ(by_row->packed.shape, by_column->packed.shape);
    EXPECT_EQ(Materialize(by_row->packed).values,
              Materialize(by_column->packed).values);
    EXPECT_EQ(by_row->scales.values, by_column->scales.values);
    EXPECT_EQ(by_row->zero_points.values, by_column->zero_points.values);
  }
  for (double bad : {std::nan(""), double{INFINITY}, -double{INFINITY}}) {
    for (int axis : {0, 1}) {
      ConstTensor holed = axis == 0 ? w : *row;
      holed.values[17] = bad;
      EXPECT_EQ(QuantizeBlockwise(holed, 4, 16, false, axis).status().message(),
                "the matrix holds a value that is not finite (inf or NaN): it "
                "stays float");
    }
  }
  EXPECT_EQ(QuantizeBlockwise(w, 4, 16, true, 2).status().message(),
            "blocks run along axis 0 or 1 of a matrix, not 2");

  EXPECT_EQ(QuantizeBlockwise(w, 5, 16, true).status().message(),
            "blockwise quantization takes 4 or 8 bits, not 5");
  EXPECT_EQ(QuantizeBlockwise(w, 4, 24, true).status().message(),
            "a block size is a power of two, 16 or more, not 24");
  EXPECT_EQ(
      QuantizeBlockwise(Make({20}, column), 4, 16, true).status().message(),
      "blockwise quantization takes a [K, N] matrix, not [20]");
}

// DequantizeLinear's blocked input holds the same quantization: each value
// dequantized from it, (q - z) * s in w's own layout, equals the value
// dequantized from MatMulNBits' layout, on both axes, 4 and 8 bits, an odd
// count of 4-bit values (the last byte half used) and a short last block.
TEST(ConstTensorTest, BlockwiseAsDequantizeLinearInput) {
  // an odd and an even count of columns (two of a row's 4-bit values a byte)
  for (const int64_t n : {3, 4}) {
    const int64_t k = 21;
    std::vector<double> values(k * n);
    for (int64_t i = 0; i < k * n; ++i)
      values[i] = std::sin(0.7 * i) * (1 + i % 5);
    const ConstTensor w = Make({k, n}, values);
    for (int axis : {0, 1}) {
      for (int bits : {4, 8}) {
        for (bool symmetric : {false, true}) {
          SCOPED_TRACE(absl::StrCat(n, " columns, axis ", axis, ", ", bits,
                                    " bits, symmetric ", symmetric));
          absl::StatusOr<BlockwiseQuantized> q =
              QuantizeBlockwise(w, bits, 16, symmetric, axis);
          ASSERT_TRUE(q.ok()) << q.status();
          const BlockwiseQuantized dq =
              AsDequantizeLinearInput(*q, k, n, bits, 16, symmetric, axis);
          const std::string bytes(dq.packed.deferred->bytes());
          EXPECT_EQ(dq.packed.shape, (std::vector<int64_t>{k, n}));
          EXPECT_EQ(static_cast<int64_t>(bytes.size()),
                    bits == 4 ? (k * n + 1) / 2 : k * n);
          EXPECT_EQ(dq.packed.dtype,
                    bits == 4 ? (symmetric ? tf::DT_INT4 : tf::DT_UINT4)
                              : (symmetric ? tf::DT_INT8 : tf::DT_UINT8));
          const int64_t blocks = axis == 0 ? 2 : 1;
          EXPECT_EQ(dq.scales.shape, axis == 0
                                         ? (std::vector<int64_t>{blocks, n})
                                         : (std::vector<int64_t>{k, blocks}));
          EXPECT_EQ(dq.zero_points.deferred == nullptr, symmetric);
          const std::string zeros =
              symmetric ? std::string()
                        : std::string(dq.zero_points.deferred->bytes());
          // Element e of a packed row-major tensor of `bits` values, signed
          // when symmetric.
          auto element = [&](const std::string& b, int64_t e, bool is_signed) {
            const int per_byte = 8 / bits;
            int v = (static_cast<uint8_t>(b[e / per_byte]) >>
                     (bits * (e % per_byte))) &
                    ((1 << bits) - 1);
            return is_signed && v >= (1 << (bits - 1)) ? v - (1 << bits) : v;
          };
          const ConstTensor packed = Materialize(q->packed);
          const int64_t blob = 16 * bits / 8;
          for (int64_t r = 0; r < k; ++r) {
            for (int64_t c = 0; c < n; ++c) {
              const int64_t line = axis == 0 ? c : r, i = axis == 0 ? r : c;
              const int64_t b = i / 16;
              const int per_byte = 8 / bits;
              const int64_t byte =
                  (line * q->scales.shape[1] + b) * blob + (i % 16) / per_byte;
              const int native_q = (static_cast<int>(packed.values[byte]) >>
                                    (bits * ((i % 16) % per_byte))) &
                                   ((1 << bits) - 1);
              const int zb = static_cast<int>(
                  q->zero_points
                      .values[line * q->zero_points.shape[1] + b / per_byte]);
              const int native_z = symmetric ? 1 << (bits - 1)
                                             : (zb >> (bits * (b % per_byte))) &
                                                   ((1 << bits) - 1);
              const double native =
                  (native_q - native_z) *
                  q->scales.values[line * q->scales.shape[1] + b];
              const int64_t at = axis == 0 ? b * n + c : r * blocks + b;
              const int z = symmetric ? 0 : element(zeros, at, false);
              const double standard =
                  (element(bytes, r * n + c, symmetric) - z) *
                  dq.scales.values[at];
              ASSERT_EQ(standard, native) << "at " << r << ", " << c;
            }
          }
        }
      }
    }
  }
}

// A large float filter's bytes reduce per channel as its decoded values
// do, in every layout, an unaligned copy of the bytes too.
TEST(ConstTensorTest, ReducesDeferredBytesPerOutputChannel) {
  struct Case {
    std::vector<int64_t> shape;
    const char* op;
    bool transpose_b;
  };
  for (const Case& c :
       {Case{{70000, 3}, "MatMul", false}, Case{{3, 70000}, "Gemm", true},
        Case{{5, 2, 7000, 2}, "Conv", false},
        Case{{2, 5, 7000, 2}, "ConvTranspose", false}}) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      values[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) *
                                     (i % 11));
    }
    ConstTensor eager = Make(c.shape, values);
    tf::TensorProto proto = ToTensorProto(eager);
    std::string bytes = " " + proto.tensor_content();  // unaligned from 1
    std::optional<ConstTensor> deferred = DeferredTensor(
        proto, ViewContent(absl::string_view(bytes).substr(1), nullptr));
    ASSERT_TRUE(deferred.has_value());
    for (bool minimum : {true, false}) {
      absl::StatusOr<ConstTensor> want =
          ChannelReduce(eager, c.op, c.transpose_b, minimum);
      absl::StatusOr<ConstTensor> got =
          ChannelReduce(*deferred, c.op, c.transpose_b, minimum);
      ASSERT_TRUE(want.ok() && got.ok()) << c.op;
      EXPECT_EQ(got->values, want->values) << c.op;
      EXPECT_EQ(got->shape, want->shape) << c.op;
    }
  }
}

// A large float weight rounded and cast to an integer type from its bytes
// gives the bytes its decoded values give, and the same refusal of a value
// the type cannot hold.
TEST(ConstTensorTest, RoundsAndCastsDeferredBytesAsDecodedValues) {
  std::vector<double> values(70001);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] =
        static_cast<float>(std::sin(0.1 * static_cast<double>(i)) * 127.4);
  }
  values[5] = 2.5f;  // halves: away from zero when rounded
  values[6] = -2.5f;
  ConstTensor eager = Make({70001}, values);
  tf::TensorProto proto = ToTensorProto(eager);
  std::string bytes = " " + proto.tensor_content();  // unaligned from 1
  std::optional<ConstTensor> deferred = DeferredTensor(
      proto, ViewContent(absl::string_view(bytes).substr(1), nullptr));
  ASSERT_TRUE(deferred.has_value());
  absl::StatusOr<ConstTensor> rounded = Unary(*deferred, "round");
  ASSERT_TRUE(rounded.ok());
  ASSERT_NE(rounded->deferred, nullptr);
  absl::StatusOr<ConstTensor> want_rounded = Unary(eager, "round");
  EXPECT_EQ(Materialize(*rounded).values, want_rounded->values);
  for (tf::DataType dtype : {tf::DT_INT8, tf::DT_INT32}) {
    absl::StatusOr<ConstTensor> got = CastTo(*rounded, dtype);
    absl::StatusOr<ConstTensor> want = CastTo(*want_rounded, dtype);
    ASSERT_TRUE(got.ok() && want.ok()) << got.status();
    ASSERT_NE(got->deferred, nullptr);
    EXPECT_EQ(ToTensorProto(*got).tensor_content(),
              ToTensorProto(*want).tensor_content());
  }
  absl::StatusOr<ConstTensor> unsigned_bytes = CastTo(*rounded, tf::DT_UINT8);
  EXPECT_EQ(unsigned_bytes.status().message(),
            CastTo(*want_rounded, tf::DT_UINT8).status().message());
  EXPECT_FALSE(unsigned_bytes.ok());
}

// A dilated filter has rate - 1 zero taps between its taps, per spatial
// axis; channels (the last two axes) move with their tap.
TEST(ConstTensorTest, DilatesAFilter) {
  ConstTensor w = Make({2, 2, 1, 1}, {1, 2, 3, 4});
  absl::StatusOr<ConstTensor> d = DilateFilter(w, 2, 2);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->shape, (std::vector<int64_t>{3, 3, 1, 1}));
  EXPECT_EQ(Values(*d), (std::vector<double>{1, 0, 2, 0, 0, 0, 3, 0, 4}));
  d = DilateFilter(w, 1, 3);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->shape, (std::vector<int64_t>{2, 4, 1, 1}));
  EXPECT_EQ(Values(*d), (std::vector<double>{1, 0, 0, 2, 3, 0, 0, 4}));
  ConstTensor two_channels = Make({1, 2, 1, 2}, {1, 2, 3, 4});
  d = DilateFilter(two_channels, 1, 2);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(Values(*d), (std::vector<double>{1, 2, 0, 0, 3, 4}));
  EXPECT_FALSE(DilateFilter(Make({4}, {1, 2, 3, 4}), 2, 2).ok());
  EXPECT_FALSE(DilateFilter(w, 0, 2).ok());
}

}  // namespace
}  // namespace graft
