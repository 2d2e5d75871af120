#include "engine/const_tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <type_traits>
#include <thread>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"

namespace graft {
namespace {

// A tensor's values as an Eigen array (no copy).
Eigen::Map<Eigen::ArrayXd> Array(std::vector<double>& v) {
  return Eigen::Map<Eigen::ArrayXd>(v.data(),
                                    static_cast<Eigen::Index>(v.size()));
}
Eigen::Map<const Eigen::ArrayXd> Array(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::ArrayXd>(v.data(),
                                          static_cast<Eigen::Index>(v.size()));
}

template <typename T>
void DecodeContent(absl::string_view bytes, std::vector<double>* out) {
  size_t n = bytes.size() / sizeof(T);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    (*out)[i] = static_cast<double>(v);
  }
}

template <typename T>
std::string EncodeContent(const std::vector<double>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  // Little-endian, as TensorFlow writes tensor_content on every platform it
  // runs on.
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> out(
      reinterpret_cast<T*>(bytes.data()),
      static_cast<Eigen::Index>(values.size()));
  if constexpr (std::is_integral_v<T>) {
    for (size_t i = 0; i < values.size(); ++i)
      out[static_cast<Eigen::Index>(i)] = SaturatedInt<T>(values[i]);
  } else {
    out = Array(values).template cast<T>();
  }
  return bytes;
}

// The dtypes constants are computed in (half and bfloat16 through float).
bool Supported(tf::DataType dtype) {
  switch (dtype) {
    case tf::DT_FLOAT:
    case tf::DT_DOUBLE:
    case tf::DT_INT64:
    case tf::DT_INT32:
    case tf::DT_HALF:
    case tf::DT_BFLOAT16:
    case tf::DT_INT16:
    case tf::DT_UINT16:
    case tf::DT_INT8:
    case tf::DT_QINT8:
    case tf::DT_UINT8:
    case tf::DT_QUINT8:
    case tf::DT_BOOL:
      return true;
    default:
      return false;
  }
}

// The product of the dims, saturating at INT64_MAX (shapes come from files).
int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}

std::atomic<int64_t> max_const_elements{kDefaultMaxConstElements};

absl::Status CheckElementCount(const std::vector<int64_t>& shape) {
  int64_t n = NumElements(shape);
  if (n <= max_const_elements.load(std::memory_order_relaxed))
    return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "constant of shape ", ShapeText(shape), " has ",
      n == std::numeric_limits<int64_t>::max() ? "too many" : absl::StrCat(n),
      " elements; rules compute on constants of at most ",
      max_const_elements.load(), " (--max-const-elements)"));
}

// A TensorProto's dtype and shape, no values yet.
absl::StatusOr<ConstTensor> DtypeAndShape(const tf::TensorProto& proto) {
  ConstTensor t;
  t.dtype = proto.dtype();
  for (const auto& dim : proto.tensor_shape().dim()) {
    if (dim.size() < 0) {
      return absl::InvalidArgumentError("constant has an unknown dimension");
    }
    t.shape.push_back(dim.size());
  }
  absl::Status s = CheckElementCount(t.shape);
  if (!s.ok()) return s;
  return t;
}

}  // namespace

int64_t ConstTensor::num_elements() const {
  return deferred != nullptr ? NumElements(shape)
                             : static_cast<int64_t>(values.size());
}

ConstTensor Materialize(const ConstTensor& tensor) {
  if (tensor.deferred == nullptr) return tensor;
  absl::StatusOr<ConstTensor> t = FromTensorProto(
      TensorProtoWithoutContent(tensor), tensor.deferred->bytes());
  // A deferred tensor's bytes always match its float / double shape.
  return *std::move(t);
}

std::optional<ConstTensor> DeferredTensor(
    const tf::TensorProto& proto,
    std::shared_ptr<const TensorContent> content) {
  if (content == nullptr ||
      (proto.dtype() != tf::DT_FLOAT && proto.dtype() != tf::DT_DOUBLE)) {
    return std::nullopt;
  }
  absl::StatusOr<ConstTensor> t = DtypeAndShape(proto);
  if (!t.ok() ||
      static_cast<size_t>(NumElements(t->shape)) * DataTypeSize(t->dtype) !=
          content->size()) {
    return std::nullopt;
  }
  t->deferred = std::move(content);
  return *std::move(t);
}

tf::TensorProto TensorProtoWithoutContent(const ConstTensor& t) {
  tf::TensorProto proto;
  proto.set_dtype(t.dtype);
  for (int64_t d : t.shape)
    proto.mutable_tensor_shape()->add_dim()->set_size(d);
  return proto;
}

ConstTensor ConstTensor::Scalar(double value, tf::DataType dtype) {
  ConstTensor t;
  t.dtype = dtype;
  t.values = {value};
  return t;
}

std::string ConstTensor::ShapeString() const {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<ConstTensor> FromTensorProto(const tf::TensorProto& proto) {
  return FromTensorProto(proto, proto.tensor_content());
}

absl::StatusOr<ConstTensor> FromTensorProto(const tf::TensorProto& proto,
                                            absl::string_view content) {
  absl::StatusOr<ConstTensor> header = DtypeAndShape(proto);
  if (!header.ok()) return header.status();
  ConstTensor t = *std::move(header);
  int64_t n = NumElements(t.shape);
  size_t width = static_cast<size_t>(DataTypeSize(t.dtype));
  if (!Supported(t.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "constants of dtype ", DataTypeName(t.dtype), " are not supported"));
  }
  if (!content.empty()) {
    absl::string_view c = content;
    if (c.size() != static_cast<size_t>(n) * width) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant holds ", c.size(), " bytes; shape ",
                       t.ShapeString(), " needs ", n * width));
    }
    switch (t.dtype) {
      case tf::DT_FLOAT:
        DecodeContent<float>(c, &t.values);
        break;
      case tf::DT_DOUBLE:
        DecodeContent<double>(c, &t.values);
        break;
      case tf::DT_INT32:
        DecodeContent<int32_t>(c, &t.values);
        break;
      case tf::DT_INT64:
        DecodeContent<int64_t>(c, &t.values);
        break;
      case tf::DT_INT16:
        DecodeContent<int16_t>(c, &t.values);
        break;
      case tf::DT_UINT16:
        DecodeContent<uint16_t>(c, &t.values);
        break;
      case tf::DT_INT8:
      case tf::DT_QINT8:
        DecodeContent<int8_t>(c, &t.values);
        break;
      case tf::DT_UINT8:
      case tf::DT_QUINT8:
        DecodeContent<uint8_t>(c, &t.values);
        break;
      case tf::DT_BOOL:
        DecodeContent<uint8_t>(c, &t.values);
        break;
      case tf::DT_HALF: {
        t.values.resize(n);
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits;
          std::memcpy(&bits, c.data() + 2 * i, 2);
          t.values[i] =
              static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
        }
        break;
      }
      case tf::DT_BFLOAT16: {
        t.values.resize(n);
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits;
          std::memcpy(&bits, c.data() + 2 * i, 2);
          t.values[i] = static_cast<float>(
              Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
        }
        break;
      }
      default:
        break;
    }
    return t;
  }
  std::vector<double> vals;
  switch (t.dtype) {
    case tf::DT_FLOAT:
      vals.assign(proto.float_val().begin(), proto.float_val().end());
      break;
    case tf::DT_DOUBLE:
      vals.assign(proto.double_val().begin(), proto.double_val().end());
      break;
    case tf::DT_INT64:
      vals.assign(proto.int64_val().begin(), proto.int64_val().end());
      break;
    case tf::DT_BOOL:
      vals.assign(proto.bool_val().begin(), proto.bool_val().end());
      break;
    case tf::DT_HALF:
      for (int bits : proto.half_val()) {
        vals.push_back(static_cast<float>(
            Eigen::numext::bit_cast<Eigen::half>(static_cast<uint16_t>(bits))));
      }
      break;
    case tf::DT_BFLOAT16:
      for (int bits : proto.half_val()) {
        vals.push_back(
            static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(
                static_cast<uint16_t>(bits))));
      }
      break;
    default:
      vals.assign(proto.int_val().begin(), proto.int_val().end());
      break;
  }
  if (static_cast<int64_t>(vals.size()) > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant holds ", vals.size(), " values; shape ",
                     t.ShapeString(), " has ", n));
  }
  t.values.resize(n);
  // TensorFlow repeats the last value to fill the shape.
  for (int64_t i = 0; i < n; ++i) {
    t.values[i] =
        vals.empty() ? 0.0 : vals[std::min<size_t>(i, vals.size() - 1)];
  }
  return t;
}

tf::TensorProto ToTensorProto(const ConstTensor& t) {
  if (t.deferred != nullptr) {
    tf::TensorProto proto = TensorProtoWithoutContent(t);
    proto.set_tensor_content(std::string(t.deferred->bytes()));
    return proto;
  }
  tf::TensorProto proto = TensorProtoWithoutContent(t);
  if (t.dtype == tf::DT_FLOAT ||
      t.dtype == tf::DT_DOUBLE) {  // no rounding to do
    proto.set_tensor_content(t.dtype == tf::DT_FLOAT
                                 ? EncodeContent<float>(t.values)
                                 : EncodeContent<double>(t.values));
    return proto;
  }
  if (t.dtype == tf::DT_INT8 || t.dtype == tf::DT_QINT8) {  // weights: no copy
    std::string bytes(t.values.size(), '\0');
    for (size_t i = 0; i < t.values.size(); ++i) {
      const double r = std::nearbyint(t.values[i]);  // saturated; NaN -128
      bytes[i] = static_cast<char>(static_cast<int8_t>(
          r >= -128 && r <= 127 ? r : (r > 127 ? 127 : -128)));
    }
    proto.set_tensor_content(std::move(bytes));
    return proto;
  }
  std::vector<double> v(t.values.size());
  if (t.dtype == tf::DT_BOOL) {
    std::transform(t.values.begin(), t.values.end(), v.begin(),
                   [](double x) { return x != 0 ? 1.0 : 0.0; });
  } else if (t.dtype != tf::DT_HALF && t.dtype != tf::DT_BFLOAT16) {
    std::transform(t.values.begin(), t.values.end(), v.begin(),
                   [](double x) { return std::nearbyint(x); });
  } else {
    v = t.values;
  }
  switch (t.dtype) {
    case tf::DT_INT32:
      proto.set_tensor_content(EncodeContent<int32_t>(v));
      break;
    case tf::DT_INT64:
      proto.set_tensor_content(EncodeContent<int64_t>(v));
      break;
    case tf::DT_INT16:
      proto.set_tensor_content(EncodeContent<int16_t>(v));
      break;
    case tf::DT_UINT16:
      proto.set_tensor_content(EncodeContent<uint16_t>(v));
      break;
    case tf::DT_UINT8:
    case tf::DT_QUINT8:
    case tf::DT_BOOL:
      proto.set_tensor_content(EncodeContent<uint8_t>(v));
      break;
    case tf::DT_HALF:
    case tf::DT_BFLOAT16: {
      std::string bytes(v.size() * 2, '\0');
      for (size_t i = 0; i < v.size(); ++i) {
        uint16_t bits = t.dtype == tf::DT_HALF
                            ? Eigen::numext::bit_cast<uint16_t>(
                                  Eigen::half(static_cast<float>(v[i])))
                            : Eigen::numext::bit_cast<uint16_t>(
                                  Eigen::bfloat16(static_cast<float>(v[i])));
        std::memcpy(bytes.data() + 2 * i, &bits, 2);
      }
      proto.set_tensor_content(bytes);
      break;
    }
    default:
      break;
  }
  return proto;
}

absl::StatusOr<ConstTensor> Broadcast(const ConstTensor& a,
                                      const ConstTensor& b,
                                      absl::string_view op) {
  if (a.deferred != nullptr || b.deferred != nullptr) {
    return Broadcast(Materialize(a), Materialize(b), op);
  }
  // Align shapes from the right (NumPy rules).
  size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> sa(rank, 1), sb(rank, 1), out(rank, 1);
  std::copy(a.shape.begin(), a.shape.end(),
            sa.begin() + (rank - a.shape.size()));
  std::copy(b.shape.begin(), b.shape.end(),
            sb.begin() + (rank - b.shape.size()));
  for (size_t i = 0; i < rank; ++i) {
    if (sa[i] != sb[i] && sa[i] != 1 && sb[i] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", a.ShapeString(),
                                                     " and ", b.ShapeString(),
                                                     " do not broadcast"));
    }
    out[i] = std::max(sa[i], sb[i]);
  }
  ConstTensor r;
  r.dtype = a.shape.empty() && a.values.size() == 1 && !b.shape.empty()
                ? b.dtype
                : a.dtype;
  r.shape = out;
  absl::Status count = CheckElementCount(out);
  if (!count.ok()) return count;
  int64_t n = NumElements(out);
  r.values.resize(n);
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia = ia * sa[d] + (sa[d] == 1 ? 0 : index[d]);
      ib = ib * sb[d] + (sb[d] == 1 ? 0 : index[d]);
    }
    double x = a.values[ia], y = b.values[ib];
    double v = 0;
    if (op == "+")
      v = x + y;
    else if (op == "-")
      v = x - y;
    else if (op == "*")
      v = x * y;
    else if (op == "/")
      v = x / y;
    else if (op == "min")
      v = std::min(x, y);
    else if (op == "max")
      v = std::max(x, y);
    else
      return absl::InvalidArgumentError(
          absl::StrCat("unknown operator `", op, "`"));
    r.values[flat] = v;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return r;
}

absl::Status ForEachFloatPiece(
    const ConstTensor& a, int64_t piece,
    const std::function<void(int64_t, float*, int64_t)>& fn) {
  if (piece <= 0)
    return absl::InvalidArgumentError("a piece holds at least one value");
  if (a.deferred != nullptr && a.dtype != tf::DT_FLOAT) {
    return ForEachFloatPiece(Materialize(a), piece, fn);
  }
  const int64_t count = a.num_elements();
  std::vector<float> values(
      static_cast<size_t>(std::max<int64_t>(0, std::min(count, piece))));
  if (a.deferred == nullptr) {
    for (int64_t begin = 0; begin < count; begin += piece) {
      const int64_t n = std::min(piece, count - begin);
      for (int64_t i = 0; i < n; ++i)
        values[i] = static_cast<float>(a.values[begin + i]);
      fn(begin, values.data(), n);
    }
    return absl::OkStatus();
  }
  const absl::string_view bytes = a.deferred->bytes();
  if (bytes.size() != static_cast<size_t>(count) * sizeof(float)) {
    return absl::InternalError(
        "a deferred tensor's bytes do not match its shape");
  }
  for (int64_t begin = 0; begin < count; begin += piece) {
    const int64_t n = std::min(piece, count - begin);
    const size_t offset = static_cast<size_t>(begin) * sizeof(float);
    const size_t length = static_cast<size_t>(n) * sizeof(float);
    std::memcpy(values.data(), bytes.data() + offset, length);
    a.deferred->Release(offset, length);
    fn(begin, values.data(), n);
  }
  return absl::OkStatus();
}

namespace {

// Values a large weight is read in, per piece (256 KiB of float32).
constexpr int64_t kFloatPiece = int64_t{1} << 16;

// A tensor of `dtype` and a's shape whose bytes are `bytes` (deferred, as
// a large weight's are: never held as doubles).
ConstTensor DeferredOf(const ConstTensor& a, tf::DataType dtype,
                       std::shared_ptr<std::string> bytes) {
  ConstTensor r;
  r.dtype = dtype;
  r.shape = a.shape;
  r.deferred = ViewContent(*bytes, bytes);
  return r;
}

}  // namespace

absl::StatusOr<ConstTensor> Unary(ConstTensor a, absl::string_view op) {
  if (a.deferred != nullptr && a.dtype == tf::DT_FLOAT && op == "round") {
    // A large weight (a filter scaled for quantization) rounded from its
    // bytes: the same floats as rounding its decoded values.
    auto bytes = std::make_shared<std::string>(a.deferred->size(), '\0');
    absl::Status read = ForEachFloatPiece(
        a, kFloatPiece, [&](int64_t begin, float* v, int64_t n) {
          for (int64_t i = 0; i < n; ++i) v[i] = std::round(v[i]);
          std::memcpy(bytes->data() + begin * sizeof(float), v,
                      static_cast<size_t>(n) * sizeof(float));
        });
    if (!read.ok()) return read;
    return DeferredOf(a, tf::DT_FLOAT, std::move(bytes));
  }
  ConstTensor r = a.deferred != nullptr ? Materialize(a) : std::move(a);
  if (op == "rsqrt")
    Array(r.values) = Array(r.values).rsqrt();
  else if (op == "sqrt")
    Array(r.values) = Array(r.values).sqrt();
  else if (op == "neg")
    Array(r.values) = -Array(r.values);
  else if (op == "abs")
    Array(r.values) = Array(r.values).abs();
  else if (op == "round")  // halves away from zero
    for (double& v : r.values) v = std::round(v);
  else
    return absl::InvalidArgumentError(
        absl::StrCat("unknown function `", op, "`"));
  return r;
}

ConstTensor Reduce(const ConstTensor& a, absl::string_view op) {
  if (a.deferred != nullptr) return Reduce(Materialize(a), op);
  double v = a.values.size() == 0 ? 0.0
             : op == "min"        ? Array(a.values).minCoeff()
                                  : Array(a.values).maxCoeff();
  return ConstTensor::Scalar(v, a.dtype);
}

absl::StatusOr<ConstTensor> CastTo(ConstTensor a, tf::DataType dtype) {
  if (!Supported(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot compute constants of dtype ", DataTypeName(dtype)));
  }
  double lo = 0, hi = 0;
  switch (dtype) {
    case tf::DT_INT8:
    case tf::DT_QINT8:
      lo = -128, hi = 127;
      break;
    case tf::DT_UINT8:
    case tf::DT_QUINT8:
      lo = 0, hi = 255;
      break;
    case tf::DT_INT16:
      lo = -32768, hi = 32767;
      break;
    case tf::DT_UINT16:
      lo = 0, hi = 65535;
      break;
    case tf::DT_INT32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case tf::DT_INT64:
      lo = -9.2233720368547758e18, hi = 9.2233720368547748e18;
      break;
    default:
      break;
  }
  if (hi > lo && a.deferred != nullptr && a.dtype == tf::DT_FLOAT &&
      (dtype == tf::DT_INT8 || dtype == tf::DT_UINT8 ||
       dtype == tf::DT_INT32)) {
    // A large weight straight from its float bytes to the integer's: the
    // same values, checked alike, never held as doubles.
    const size_t width = dtype == tf::DT_INT32 ? 4 : 1;
    auto bytes = std::make_shared<std::string>(
        a.deferred->size() / sizeof(float) * width, '\0');
    absl::Status fits = absl::OkStatus();
    absl::Status read = ForEachFloatPiece(
        a, kFloatPiece, [&](int64_t begin, float* v, int64_t n) {
          for (int64_t i = 0; i < n && fits.ok(); ++i) {
            const double x = std::nearbyint(static_cast<double>(v[i]));
            if (!(x >= lo && x <= hi)) {
              fits = absl::InvalidArgumentError(absl::StrCat(
                  "value ", v[i], " does not fit ", DataTypeName(dtype)));
              return;
            }
            char* at =
                bytes->data() + (begin + i) * static_cast<int64_t>(width);
            if (dtype == tf::DT_INT32) {
              const int32_t q = static_cast<int32_t>(x);
              std::memcpy(at, &q,
                          sizeof(q));  // little-endian, as tensor_content
            } else {
              *at = static_cast<char>(
                  dtype == tf::DT_INT8
                      ? static_cast<uint8_t>(static_cast<int8_t>(x))
                      : static_cast<uint8_t>(x));
            }
          }
        });
    if (!read.ok()) return read;
    if (!fits.ok()) return fits;
    return DeferredOf(a, dtype, std::move(bytes));
  }
  ConstTensor r = a.deferred != nullptr ? Materialize(a) : std::move(a);
  r.dtype = dtype;
  if (hi > lo) {  // an integer dtype: its values are the rounded ones
    for (double& v : r.values) {
      double x = std::nearbyint(v);
      if (!(x >= lo && x <= hi)) {
        return absl::InvalidArgumentError(
            absl::StrCat("value ", v, " does not fit ", DataTypeName(dtype)));
      }
      v = x;
    }
    return r;
  }
  // Encoding rounds the values as the dtype holds them; decoding reads them
  // back, so later math sees what TensorFlow's Cast would give.
  return FromTensorProto(ToTensorProto(r));
}

absl::StatusOr<ConstTensor> Concat(const std::vector<ConstTensor>& parts, int64_t axis) {
  if (parts.empty()) return absl::InvalidArgumentError("concat: no constants");
  const size_t rank = parts[0].shape.size();
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    return absl::InvalidArgumentError(
        absl::StrCat("concat: axis out of range for ", parts[0].ShapeString()));
  ConstTensor out;
  out.dtype = parts[0].dtype;
  out.shape = parts[0].shape;
  out.shape[axis] = 0;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= parts[0].shape[d];
  for (const ConstTensor& p : parts) {
    bool same = p.shape.size() == rank;
    for (size_t d = 0; same && d < rank; ++d)
      same = static_cast<int64_t>(d) == axis || p.shape[d] == parts[0].shape[d];
    if (!same)
      return absl::InvalidArgumentError(absl::StrCat("concat: ", p.ShapeString(), " and ",
                                                     parts[0].ShapeString(), " differ"));
    out.shape[axis] += p.shape[axis];
  }
  std::vector<ConstTensor> decoded;
  for (const ConstTensor& p : parts) decoded.push_back(Materialize(p));
  out.values.reserve(out.num_elements());
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor& v : decoded) {
      const int64_t block = v.num_elements() / std::max<int64_t>(outer, 1);
      out.values.insert(out.values.end(), v.values.begin() + o * block,
                        v.values.begin() + (o + 1) * block);
    }
  }
  return out;
}

absl::StatusOr<ConstTensor> Transpose(const ConstTensor& a,
                                      std::vector<int64_t> perm) {
  if (a.deferred != nullptr) return Transpose(Materialize(a), std::move(perm));
  const int64_t rank = static_cast<int64_t>(a.shape.size());
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < rank; ++i) {
    if (static_cast<int64_t>(sorted.size()) != rank || sorted[i] != i) {
      return absl::InvalidArgumentError(absl::StrCat(
          "transpose: [", absl::StrJoin(perm, ", "),
          "] is not a permutation of the axes of ", a.ShapeString()));
    }
  }
  ConstTensor out;
  out.dtype = a.dtype;
  for (int64_t p : perm) out.shape.push_back(a.shape[p]);
  std::vector<int64_t> stride(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    stride[i] = stride[i + 1] * a.shape[i + 1];
  const int64_t count = a.num_elements();
  out.values.resize(count);
  std::vector<int64_t> index(rank, 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t from = 0;
    for (int64_t i = 0; i < rank; ++i) from += index[i] * stride[perm[i]];
    out.values[k] = a.values[from];
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < out.shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

absl::StatusOr<ConstTensor> Reshape(const ConstTensor& a,
                                    std::vector<int64_t> shape) {
  if (a.deferred != nullptr) return Reshape(Materialize(a), std::move(shape));
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0)
        return absl::InvalidArgumentError("reshape: two -1 dimensions");
      unknown = static_cast<int>(i);
    } else {
      known *= shape[i];
    }
  }
  if (unknown >= 0 && known > 0) shape[unknown] = a.num_elements() / known;
  ConstTensor r = a;
  r.shape = shape;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot reshape ", a.ShapeString(), " to ", r.ShapeString()));
    }
  }
  if (NumElements(shape) != a.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", a.ShapeString(), " (", a.num_elements(),
                     " values) to ", r.ShapeString()));
  }
  return r;
}

void SetMaxConstElements(int64_t n) { max_const_elements.store(n); }
int64_t MaxConstElements() { return max_const_elements.load(); }

// TensorFlow's FloatToQuantized for quint8 over [lo, hi] (MIN_FIRST, as
// Dequantize reads it back): q = round(v * s) - round(lo * s), s = 255 / (hi
// - lo), clamped to 0..255.
QuantizedTensor QuantizeUint8(const ConstTensor& a) {
  ConstTensor x = Materialize(a);
  double lo = 0, hi = 0;  // the range holds 0
  for (double v : x.values) {
    lo = std::min(lo, static_cast<double>(static_cast<float>(v)));
    hi = std::max(hi, static_cast<double>(static_cast<float>(v)));
  }
  if (lo == hi) {  // degenerate: as GTT widens it
    if (std::fabs(lo) < 1e-6)
      hi = lo + 1;
    else if (lo > 0)
      hi = 2 * lo;
    else
      hi = lo / 2;
  }
  QuantizedTensor out;
  out.min = static_cast<float>(lo);
  out.max = static_cast<float>(hi);
  out.values = x;
  out.values.dtype = tf::DT_QUINT8;
  const float scale = 255.0f / (out.max - out.min);
  const float offset = std::round(out.min * scale);
  for (double& v : out.values.values) {
    float q = std::round(static_cast<float>(v) * scale) - offset;
    v = std::min(255.0f, std::max(0.0f, q));
  }
  return out;
}

}  // namespace graft
