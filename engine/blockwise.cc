// Blockwise quantization of a matrix (engine/const_tensor.h), as
// onnxruntime's MatMulNBits and GatherBlockQuantized read it: blocks along
// each column (a weight's K) or each row (a table's width).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/const_tensor.h"

namespace graft {
namespace {

// A block's scale and zero point (see QuantizeBlockwise) from its range
// (widened to hold 0) and its value of the largest magnitude.
std::pair<float, float> BlockScale(float lo, float hi, float widest, int bits, bool symmetric) {
  const float top = static_cast<float>((1 << bits) - 1);
  if (symmetric) {
    const float mid = static_cast<float>(1 << (bits - 1));
    return {widest / -mid, mid};
  }
  const float scale = (hi - lo) / top;
  return {scale, scale != 0 ? std::clamp(std::round(-lo / scale), 0.0f, top) : 0.0f};
}

// round(v * reciprocal + zero) (halves away from zero) clamped to [0, top],
// the sum clamped first (a negative one gives 0 either way): its whole part
// plus one from a half up, exactly as std::round for sums in [0, 256).
inline int QuantizedValue(float v, float reciprocal, float zero, float top) {
  const float y = std::clamp(v * reciprocal + zero, 0.0f, top);
  const int whole = static_cast<int>(y);
  return std::min(whole + (y - static_cast<float>(whole) >= 0.5f ? 1 : 0),
                  static_cast<int>(top));
}

absl::Status NotFinite() {
  return absl::InvalidArgumentError(
      "the matrix holds a value that is not finite (inf or NaN): it stays float");
}

// One quantization: the matrix, read as float32 rows, and what is written.
class Blocks {
 public:
  Blocks(const ConstTensor& w, int bits, int64_t block_size, bool symmetric, int axis)
      : w_(w), bits_(bits), block_size_(block_size), symmetric_(symmetric) {
    // A deferred float tensor is read straight from its bytes (never
    // decoded whole), any other from its values.
    raw_ = w.deferred != nullptr && w.dtype == tf::DT_FLOAT;
    x_ = &w;
    if (w.deferred != nullptr && !raw_) {
      decoded_ = Materialize(w);
      x_ = &decoded_;
    }
    k_ = x_->shape[0];
    n_ = x_->shape[1];
    lines_ = axis == 0 ? n_ : k_;
    length_ = axis == 0 ? k_ : n_;
    blocks_ = (length_ + block_size - 1) / block_size;
    blob_ = block_size * bits / 8;
    zero_bytes_ = (blocks_ * bits + 7) / 8;
    top_ = static_cast<float>((1 << bits) - 1);
    per_byte_ = 8 / bits;
  }

  absl::StatusOr<BlockwiseQuantized> Run(int axis) {
    if (raw_ && w_.deferred->size() != static_cast<size_t>(k_ * n_) * sizeof(float)) {
      return absl::InternalError("a deferred weight's bytes do not match its shape");
    }
    out_.packed.dtype = out_.zero_points.dtype = tf::DT_UINT8;
    out_.scales.dtype = tf::DT_FLOAT;
    out_.packed.shape = {lines_, blocks_, blob_};
    out_.scales.shape = {lines_, blocks_};
    out_.zero_points.shape = {lines_, zero_bytes_};
    out_.scales.values.assign(lines_ * blocks_, 0);
    out_.zero_points.values.assign(lines_ * zero_bytes_, 0);
    // The packed values are bytes from the start (held as doubles they
    // would take eight times the room).
    packed_ = std::make_shared<std::string>(static_cast<size_t>(lines_ * blocks_ * blob_), '\0');
    absl::Status s = axis == 0 ? Columns() : Rows();
    if (!s.ok()) return s;
    out_.packed.deferred = ViewContent(*packed_, packed_);
    return std::move(out_);
  }

 private:
  // Rows [first, first + count) into `rows` as float32.
  void ReadRows(int64_t first, int64_t count, float* rows) const {
    if (raw_) {
      const size_t offset = static_cast<size_t>(first * n_) * sizeof(float);
      const size_t length = static_cast<size_t>(count * n_) * sizeof(float);
      // (a model file's bytes need not be aligned for float)
      std::memcpy(rows, w_.deferred->bytes().data() + offset, length);
      w_.deferred->Release(offset, length);
      return;
    }
    for (int64_t i = 0; i < count * n_; ++i) rows[i] = static_cast<float>(x_->values[first * n_ + i]);
  }

  void SetBlock(int64_t line, int64_t b, float scale, float zero) {
    out_.scales.values[line * blocks_ + b] = scale;
    out_.zero_points.values[line * zero_bytes_ + b / per_byte_] +=
        zero * static_cast<float>(1 << (bits_ * (b % per_byte_)));
  }

  // Blocks along each row, a row at a time: its blocks lie side by side.
  absl::Status Rows() {
    std::vector<float> row(static_cast<size_t>(n_));
    for (int64_t r = 0; r < k_; ++r) {
      ReadRows(r, 1, row.data());
      for (int64_t b = 0; b < blocks_; ++b) {
        const float* v = &row[b * block_size_];
        const int64_t count = std::min(n_ - b * block_size_, block_size_);
        // v * 0 is NaN for a value that is not finite: the sum is 0 only
        // when every value is finite
        float lo = 0, hi = 0, widest = 0, probe = 0;
        for (int64_t i = 0; i < count; ++i) {
          lo = std::min(lo, v[i]);
          hi = std::max(hi, v[i]);
          if (std::fabs(v[i]) > std::fabs(widest)) widest = v[i];
          probe += v[i] * 0.0f;
        }
        if (probe != 0) return NotFinite();
        const auto [scale, zero] = BlockScale(lo, hi, widest, bits_, symmetric_);
        SetBlock(r, b, scale, zero);
        const float reciprocal = scale != 0 ? 1.0f / scale : 0.0f;
        char* bytes = &(*packed_)[static_cast<size_t>((r * blocks_ + b) * blob_)];
        for (int64_t i = 0; i < count; ++i) {
          bytes[i / per_byte_] = static_cast<char>(
              static_cast<uint8_t>(bytes[i / per_byte_]) |
              (QuantizedValue(v[i], reciprocal, zero, top_) << (bits_ * (i % per_byte_))));
        }
      }
    }
    return absl::OkStatus();
  }

  // Blocks along each column: a block of rows at a time, read once, each
  // column's range and then its values packed into that column's bytes.
  absl::Status Columns() {
    std::vector<float> rows(static_cast<size_t>(block_size_ * n_));
    std::vector<float> lo(n_), hi(n_), widest(n_), reciprocal(n_), zero(n_);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_ * blob_));
    for (int64_t b = 0; b < blocks_; ++b) {
      const int64_t first = b * block_size_, count = std::min(k_ - first, block_size_);
      ReadRows(first, count, rows.data());
      std::fill(lo.begin(), lo.end(), 0.0f);
      std::fill(hi.begin(), hi.end(), 0.0f);
      std::fill(widest.begin(), widest.end(), 0.0f);
      float probe = 0;
      for (int64_t i = 0; i < count; ++i) {
        const float* row = &rows[i * n_];
        for (int64_t c = 0; c < n_; ++c) {
          lo[c] = std::min(lo[c], row[c]);
          hi[c] = std::max(hi[c], row[c]);
          probe += row[c] * 0.0f;
        }
        if (probe != 0) return NotFinite();
        if (!symmetric_) continue;
        for (int64_t c = 0; c < n_; ++c) {
          if (std::fabs(row[c]) > std::fabs(widest[c])) widest[c] = row[c];
        }
      }
      for (int64_t c = 0; c < n_; ++c) {
        const auto [scale, z] = BlockScale(lo[c], hi[c], widest[c], bits_, symmetric_);
        SetBlock(c, b, scale, z);
        zero[c] = z;
        reciprocal[c] = scale != 0 ? 1.0f / scale : 0.0f;
      }
      std::fill(bytes.begin(), bytes.end(), 0);
      for (int64_t i = 0; i < count; ++i) {
        const float* row = &rows[i * n_];
        const int shift = bits_ * static_cast<int>(i % per_byte_);
        uint8_t* at = &bytes[i / per_byte_];
        for (int64_t c = 0; c < n_; ++c) {
          at[c * blob_] |=
              static_cast<uint8_t>(QuantizedValue(row[c], reciprocal[c], zero[c], top_) << shift);
        }
      }
      for (int64_t c = 0; c < n_; ++c) {
        std::memcpy(&(*packed_)[static_cast<size_t>((c * blocks_ + b) * blob_)],
                    &bytes[c * blob_], static_cast<size_t>(blob_));
      }
    }
    return absl::OkStatus();
  }

  const ConstTensor& w_;
  const int bits_;
  const int64_t block_size_;
  const bool symmetric_;
  bool raw_ = false;
  ConstTensor decoded_;
  const ConstTensor* x_ = nullptr;
  int64_t k_ = 0, n_ = 0, lines_ = 0, length_ = 0, blocks_ = 0, blob_ = 0, zero_bytes_ = 0;
  float top_ = 0;
  int per_byte_ = 2;
  BlockwiseQuantized out_;
  std::shared_ptr<std::string> packed_;
};

}  // namespace

absl::StatusOr<BlockwiseQuantized> QuantizeBlockwise(const ConstTensor& w, int bits,
                                                     int64_t block_size, bool symmetric,
                                                     int axis) {
  if (bits != 4 && bits != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("blockwise quantization takes 4 or 8 bits, not ", bits));
  }
  if (block_size < 16 || (block_size & (block_size - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a block size is a power of two, 16 or more, not ", block_size));
  }
  if (w.shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("blockwise quantization takes a [K, N] matrix, not ", w.ShapeString()));
  }
  if (axis != 0 && axis != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("blocks run along axis 0 or 1 of a matrix, not ", axis));
  }
  return Blocks(w, bits, block_size, symmetric, axis).Run(axis);
}

}  // namespace graft
