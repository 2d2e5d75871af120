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
#include "engine/op_registry.h"
#include "engine/tensor_content.h"

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
  Blocks(const ConstTensor& w, int bits, int64_t block_size, bool symmetric,
         int axis)
      : w_(w),
        bits_(bits),
        block_size_(block_size),
        symmetric_(symmetric),
        axis_(axis),
        k_(w.shape[0]),
        n_(w.shape[1]),
        lines_(axis == 0 ? n_ : k_),
        blocks_(((axis == 0 ? k_ : n_) + block_size - 1) / block_size),
        blob_(block_size * bits / 8),
        zero_bytes_((blocks_ * bits + 7) / 8),
        top_(static_cast<float>((1 << bits) - 1)),
        per_byte_(8 / bits) {}

  absl::StatusOr<BlockwiseQuantized> Run() {
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
    // A row at a time (blocks along it lie side by side), or a block of
    // rows (a block of each column); the matrix is read once, in order.
    absl::Status block = absl::OkStatus();
    absl::Status read = ForEachFloatPiece(
        w_, axis_ == 0 ? block_size_ * n_ : n_,
        [&](int64_t begin, float* rows, int64_t n) {
          if (!block.ok()) return;
          block = axis_ == 0 ? Columns(begin / (block_size_ * n_), rows, n / n_)
                             : Row(begin / n_, rows);
        });
    if (!read.ok()) return read;
    if (!block.ok()) return block;
    out_.packed.deferred = ViewContent(*packed_, packed_);
    return std::move(out_);
  }

 private:
  void SetBlock(int64_t line, int64_t b, float scale, float zero) {
    out_.scales.values[line * blocks_ + b] = scale;
    out_.zero_points.values[line * zero_bytes_ + b / per_byte_] +=
        zero * static_cast<float>(1 << (bits_ * (b % per_byte_)));
  }

  // Row r's blocks, side by side.
  absl::Status Row(int64_t r, const float* row) {
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
        bytes[i / per_byte_] =
            static_cast<char>(static_cast<uint8_t>(bytes[i / per_byte_]) |
                              (QuantizedValue(v[i], reciprocal, zero, top_)
                               << (bits_ * (i % per_byte_))));
      }
    }
    return absl::OkStatus();
  }

  // Block b of every column, from its `count` rows: each column's range,
  // then its values packed into that column's bytes of the block.
  absl::Status Columns(int64_t b, const float* rows, int64_t count) {
    lo_.assign(n_, 0.0f);
    hi_.assign(n_, 0.0f);
    widest_.assign(n_, 0.0f);
    float probe = 0;
    for (int64_t i = 0; i < count; ++i) {
      const float* row = &rows[i * n_];
      for (int64_t c = 0; c < n_; ++c) {
        lo_[c] = std::min(lo_[c], row[c]);
        hi_[c] = std::max(hi_[c], row[c]);
        probe += row[c] * 0.0f;
      }
      if (probe != 0) return NotFinite();
      if (!symmetric_) continue;
      for (int64_t c = 0; c < n_; ++c) {
        if (std::fabs(row[c]) > std::fabs(widest_[c])) widest_[c] = row[c];
      }
    }
    reciprocal_.resize(n_);
    zero_.resize(n_);
    for (int64_t c = 0; c < n_; ++c) {
      const auto [scale, z] =
          BlockScale(lo_[c], hi_[c], widest_[c], bits_, symmetric_);
      SetBlock(c, b, scale, z);
      zero_[c] = z;
      reciprocal_[c] = scale != 0 ? 1.0f / scale : 0.0f;
    }
    bytes_.assign(static_cast<size_t>(n_ * blob_), 0);
    for (int64_t i = 0; i < count; ++i) {
      const float* row = &rows[i * n_];
      const int shift = bits_ * static_cast<int>(i % per_byte_);
      uint8_t* at = &bytes_[i / per_byte_];
      for (int64_t c = 0; c < n_; ++c) {
        at[c * blob_] |= static_cast<uint8_t>(
            QuantizedValue(row[c], reciprocal_[c], zero_[c], top_) << shift);
      }
    }
    for (int64_t c = 0; c < n_; ++c) {
      std::memcpy(&(*packed_)[static_cast<size_t>((c * blocks_ + b) * blob_)],
                  &bytes_[c * blob_], static_cast<size_t>(blob_));
    }
    return absl::OkStatus();
  }

  const ConstTensor& w_;
  const int bits_;
  const int64_t block_size_;
  const bool symmetric_;
  const int axis_;
  const int64_t k_, n_, lines_, blocks_, blob_, zero_bytes_;
  const float top_;
  const int per_byte_;
  BlockwiseQuantized out_;
  std::shared_ptr<std::string> packed_;
  // Columns()'s per-column state, kept between blocks.
  std::vector<float> lo_, hi_, widest_, reciprocal_, zero_;
  std::vector<uint8_t> bytes_;
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
  return Blocks(w, bits, block_size, symmetric, axis).Run();
}

BlockwiseQuantized AsDequantizeLinearInput(const BlockwiseQuantized& q,
                                           int64_t k, int64_t n, int bits,
                                           int64_t block_size, bool symmetric,
                                           int axis) {
  const int64_t lines = axis == 0 ? n : k;
  const int64_t length = axis == 0 ? k : n;  // the blocked axis
  const int64_t blocks = q.scales.shape[1];
  const int64_t blob = block_size * bits / 8;
  const int per_byte = 8 / bits;
  const int mask = (1 << bits) - 1;
  const int offset = symmetric ? 1 << (bits - 1) : 0;
  BlockwiseQuantized out;
  out.packed.dtype = bits == 4 ? (symmetric ? tf::DT_INT4 : tf::DT_UINT4)
                               : (symmetric ? tf::DT_INT8 : tf::DT_UINT8);
  out.packed.shape = {k, n};
  auto bytes = std::make_shared<std::string>(
      static_cast<size_t>(TensorBytes(out.packed.dtype, k * n)), '\0');
  const auto* from =
      reinterpret_cast<const uint8_t*>(q.packed.deferred->bytes().data());
  auto* to = reinterpret_cast<uint8_t*>(bytes->data());
  // A block of every line at a time: each block's values are contiguous in
  // MatMulNBits' layout, and land `step` apart in the matrix's row-major
  // order (down a column: a row apart), so that both sides stay in cache.
  const int64_t step = axis == 0 ? n : 1;
  auto value = [&](const uint8_t* blob_bytes, int64_t j) {
    return ((blob_bytes[j >> 1] >> ((j & 1) << 2)) - offset) & mask;
  };
  const bool by_pairs = bits == 4 && axis == 0 && n % 2 == 0;
  if (by_pairs) {
    // Two columns share each byte of a row: written whole, a pair at a time.
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * block_size;
      const int64_t count = std::min(block_size, length - first);
      for (int64_t line = 0; line < lines; line += 2) {
        const uint8_t* low = from + (line * blocks + b) * blob;
        const uint8_t* high = low + blocks * blob;
        uint8_t* row = to + (first * n + line) / 2;
        for (int64_t j = 0; j < count; ++j, row += n / 2)
          *row = static_cast<uint8_t>(value(low, j) | (value(high, j) << 4));
      }
    }
  }
  for (int64_t b = 0; b < blocks && !by_pairs; ++b) {
    const int64_t first = b * block_size;
    const int64_t count = std::min(block_size, length - first);
    for (int64_t line = 0; line < lines; ++line) {
      const uint8_t* blob_bytes = from + (line * blocks + b) * blob;
      int64_t e = axis == 0 ? first * n + line : line * n + first;
      if (bits == 8) {
        for (int64_t j = 0; j < count; ++j, e += step)
          to[e] = static_cast<uint8_t>(blob_bytes[j] - offset);
        continue;
      }
      for (int64_t j = 0; j < count; ++j, e += step)
        to[e >> 1] = static_cast<uint8_t>(
            to[e >> 1] | (value(blob_bytes, j) << ((e & 1) << 2)));
    }
  }
  out.packed.deferred = ViewContent(*bytes, bytes);
  // Scales (and zero points) per block: [blocks, N] for blocks down the
  // columns, [K, blocks] along the rows.
  out.scales.dtype = tf::DT_FLOAT;
  out.scales.shape = axis == 0 ? std::vector<int64_t>{blocks, n}
                               : std::vector<int64_t>{k, blocks};
  out.scales.values.resize(static_cast<size_t>(lines * blocks));
  const int64_t zero_bytes = q.zero_points.shape[1];
  std::string zeros(
      static_cast<size_t>(
          TensorBytes(bits == 4 ? tf::DT_UINT4 : tf::DT_UINT8, lines * blocks)),
      '\0');
  for (int64_t line = 0; line < lines; ++line) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t to = axis == 0 ? b * n + line : line * blocks + b;
      out.scales.values[static_cast<size_t>(to)] =
          q.scales.values[static_cast<size_t>(line * blocks + b)];
      const auto z = static_cast<int>(
          q.zero_points
              .values[static_cast<size_t>(line * zero_bytes + b / per_byte)]);
      const int shift = bits * static_cast<int>(b % per_byte);
      zeros[static_cast<size_t>(to / per_byte)] = static_cast<char>(
          static_cast<uint8_t>(zeros[static_cast<size_t>(to / per_byte)]) |
          (((z >> shift) & mask) << (bits * static_cast<int>(to % per_byte))));
    }
  }
  if (!symmetric) {
    out.zero_points.dtype = bits == 4 ? tf::DT_UINT4 : tf::DT_UINT8;
    out.zero_points.shape = out.scales.shape;
    auto held = std::make_shared<std::string>(std::move(zeros));
    out.zero_points.deferred = ViewContent(*held, held);
  }
  return out;
}

}  // namespace graft
