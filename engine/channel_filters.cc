// Per-output-channel filter math (engine/const_tensor.h): the channel
// layouts of each op's filter, ChannelReduce, and ScaleOutputChannels with
// its deferred, piecewise-computed content.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/const_tensor.h"

namespace graft {

namespace {

Eigen::Map<const Eigen::ArrayXd> Array(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::ArrayXd>(v.data(), static_cast<Eigen::Index>(v.size()));
}

// The output channels of a filter and which channel each element is in.
// Element i of a flattened filter belongs to output channel
// (i / inner) % channels.
struct ChannelLayout {
  int64_t channels = 0;
  int64_t inner = 1;
};

absl::StatusOr<ChannelLayout> LayoutOf(const ConstTensor& filter,
                                       absl::string_view op, bool transpose_b) {
  const auto& s = filter.shape;
  if (op == "Conv2D" || op == "Conv3D") {
    if (s.size() < 2) return absl::InvalidArgumentError("filter rank < 2");
    return ChannelLayout{s.back(), 1};
  }
  if (op == "DepthwiseConv2dNative") {
    if (s.size() != 4)
      return absl::InvalidArgumentError("depthwise filter is not HWCM");
    return ChannelLayout{s[2] * s[3], 1};  // channel c * M + m
  }
  if (op == "MatMul" || op == "Gemm") {
    if (s.size() != 2)
      return absl::InvalidArgumentError(absl::StrCat(op, " weights are not 2-D"));
    return transpose_b ? ChannelLayout{s[0], s[1]} : ChannelLayout{s[1], 1};
  }
  if (op == "aten.linear.default") {  // ATen: [out, in]
    if (s.size() != 2) return absl::InvalidArgumentError("linear weights are not 2-D");
    return ChannelLayout{s[0], s[1]};
  }
  const bool aten_conv = op == "aten.conv1d.default" || op == "aten.conv2d.default" ||
                         op == "aten.conv3d.default" || op == "aten.convolution.default";
  // ATen's transposed convolutions (`transposed` set on aten.convolution).
  const bool aten_transposed =
      absl::StartsWith(op, "aten.conv_transpose") ||
      (op == "aten.convolution.default" && transpose_b);
  if (op == "Conv" || op == "ConvTranspose" || aten_conv || aten_transposed) {
    // ONNX and ATen: [M, C/g, k...]; transposed, [C, M/g, k...] (one
    // group: the output channels are axis 1).
    size_t axis = op == "ConvTranspose" || aten_transposed ? 1 : 0;
    if (s.size() < axis + 2) return absl::InvalidArgumentError("filter rank too low");
    int64_t inner = 1;
    for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
    return ChannelLayout{s[axis], inner};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("`", op, "` has no known filter layout"));
}

// The filter's values as a matrix whose rows (inner == 1) are the output
// channels, or (inner > 1) whose column j is of channel j % channels (an
// ONNX ConvTranspose's [C, M, k...] repeats the channels C times).
Eigen::Map<const Eigen::ArrayXXd> AsMatrix(const ConstTensor& t,
                                           const ChannelLayout& l) {
  const int64_t rows = l.inner == 1 ? l.channels : l.inner;
  return Eigen::Map<const Eigen::ArrayXXd>(t.values.data(), rows, t.num_elements() / rows);
}

// A filter scaled per output channel, computed from the source filter's
// bytes only when read: w'[i] = T(double(w[i]) * scale[(i / inner) %
// channels]), the eager path's arithmetic. Written out piece by piece, it
// never exists whole unless something asks for all its bytes.
template <typename T>
class ScaledContent : public TensorContent {
 public:
  ScaledContent(std::shared_ptr<const TensorContent> source,
                ChannelLayout layout, std::vector<double> scale)
      : source_(std::move(source)), layout_(layout), scale_(std::move(scale)) {}

  size_t size() const override { return source_->size(); }

  absl::string_view bytes() const override {
    std::call_once(once_, [this] {
      bytes_.resize(size());
      Compute(0, count(), bytes_.data());
      computed_.store(true, std::memory_order_release);
    });
    return bytes_;
  }

  void Emit(const std::function<void(absl::string_view)>& sink) const override {
    if (computed()) {
      sink(bytes());
      return;
    }
    // Whole units of the layout (a row of channels, or inner x channels)
    // of about 1 MiB each.
    int64_t unit = layout_.inner == 1 ? layout_.channels
                                      : layout_.inner * layout_.channels;
    int64_t per_piece = std::max<int64_t>(1, (int64_t{1} << 18) / unit) * unit;
    int64_t pieces = (count() + per_piece - 1) / per_piece;
    // (not zero-filled: every byte is computed before it is read)
    std::unique_ptr<char[]> storage[2];
    absl::string_view buffers[2];
    auto compute = [&](int64_t k) {
      int64_t begin = k * per_piece, n = std::min(per_piece, count() - begin);
      if (storage[k % 2] == nullptr)
        storage[k % 2].reset(new char[static_cast<size_t>(std::min(per_piece, count())) * sizeof(T)]);
      Compute(begin, n, storage[k % 2].get());
      buffers[k % 2] = absl::string_view(storage[k % 2].get(), static_cast<size_t>(n) * sizeof(T));
      // the source's piece is read: a mapped file's pages go back
      source_->Release(static_cast<size_t>(begin) * sizeof(T), static_cast<size_t>(n) * sizeof(T));
    };
    if (pieces < 2 || std::thread::hardware_concurrency() < 2) {
      for (int64_t k = 0; k < pieces; ++k) {
        compute(k);
        sink(buffers[k % 2]);
      }
      return;
    }
    // Two buffers: a second thread computes the next piece while this one
    // passes the last to the sink (the file write).
    std::mutex mutex;
    std::condition_variable changed;
    int64_t computed = 0, consumed = 0;
    std::thread worker([&] {
      for (int64_t k = 0; k < pieces; ++k) {
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return k - consumed < 2; });
        }
        compute(k);
        {
          std::lock_guard<std::mutex> lock(mutex);
          computed = k + 1;
        }
        changed.notify_all();
      }
    });
    for (int64_t k = 0; k < pieces; ++k) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return computed > k; });
      }
      sink(buffers[k % 2]);
      {
        std::lock_guard<std::mutex> lock(mutex);
        consumed = k + 1;
      }
      changed.notify_all();
    }
    worker.join();
  }

 private:
  int64_t count() const { return static_cast<int64_t>(size() / sizeof(T)); }
  bool computed() const { return computed_.load(std::memory_order_acquire); }

  // Elements [begin, begin + n) into `out`; begin and n are whole units.
  void Compute(int64_t begin, int64_t n, char* out) const {
    using Matrix = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>;
    const char* raw =
        source_->bytes().data() + begin * static_cast<int64_t>(sizeof(T));
    T* to = reinterpret_cast<T*>(out);
    int64_t channels = layout_.channels, inner = layout_.inner;
    if (n == 0 || channels == 0) return;
    // A model file's bytes need not be aligned for T (a protobuf's raw
    // data lies anywhere): read such a piece through an aligned copy.
    std::vector<T> aligned;
    const T* in = reinterpret_cast<const T*>(raw);
    if (reinterpret_cast<uintptr_t>(raw) % alignof(T) != 0) {
      aligned.resize(static_cast<size_t>(n));
      std::memcpy(aligned.data(), raw, static_cast<size_t>(n) * sizeof(T));
      in = aligned.data();
    }
    if (inner == 1) {
      Eigen::Map<const Matrix, Eigen::Unaligned> w(in, channels, n / channels);
      Eigen::Map<Matrix, Eigen::Unaligned> r(to, channels, n / channels);
      r = (w.template cast<double>().colwise() * Array(scale_))
              .template cast<T>();
      return;
    }
    for (int64_t u = 0; u < n; u += inner * channels) {
      Eigen::Map<const Matrix, Eigen::Unaligned> w(in + u, inner, channels);
      Eigen::Map<Matrix, Eigen::Unaligned> r(to + u, inner, channels);
      r = (w.template cast<double>().rowwise() * Array(scale_).transpose())
              .template cast<T>();
    }
  }

  std::shared_ptr<const TensorContent> source_;
  ChannelLayout layout_;
  std::vector<double> scale_;
  mutable std::once_flag once_;
  mutable std::string bytes_;
  mutable std::atomic<bool> computed_{false};
};

}  // namespace

absl::StatusOr<ConstTensor> ChannelReduce(const ConstTensor& filter,
                                          absl::string_view op,
                                          bool transpose_b, bool minimum) {
  if (filter.deferred != nullptr && filter.dtype != tf::DT_FLOAT) {
    return ChannelReduce(Materialize(filter), op, transpose_b, minimum);
  }
  absl::StatusOr<ChannelLayout> layout = LayoutOf(filter, op, transpose_b);
  if (!layout.ok()) return layout.status();
  ConstTensor r;
  r.dtype = filter.dtype;
  r.shape = {layout->channels};
  if (layout->channels == 0 || filter.num_elements() == 0) {
    r.values.assign(layout->channels, 0.0);
    return r;
  }
  if (filter.deferred != nullptr) {
    // A large float32 filter, read from its bytes a piece at a time (never
    // decoded whole): value i is in channel (i / inner) % channels.
    const int64_t channels = layout->channels, inner = layout->inner;
    r.values.assign(channels, minimum
                                  ? std::numeric_limits<double>::infinity()
                                  : -std::numeric_limits<double>::infinity());
    int64_t channel = 0, in_run = 0;
    absl::Status read = ForEachFloatPiece(
        filter, int64_t{1} << 16, [&](int64_t, float* piece, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            double& m = r.values[channel];
            const double v = piece[i];
            m = minimum ? std::min(m, v) : std::max(m, v);
            if (++in_run == inner) {
              in_run = 0;
              if (++channel == channels) channel = 0;
            }
          }
        });
    if (!read.ok()) return read;
    return r;
  }
  // Value i is in channel (i / inner) % channels: runs of `inner` values
  // of one channel, read in order (contiguous, whatever the layout).
  const int64_t channels = layout->channels, inner = layout->inner;
  const double* v = filter.values.data();
  const int64_t runs = filter.num_elements() / inner;
  r.values.assign(channels, minimum ? std::numeric_limits<double>::infinity()
                                    : -std::numeric_limits<double>::infinity());
  double* out = r.values.data();
  auto fold = [minimum](double a, double b) { return minimum ? std::min(a, b) : std::max(a, b); };
  if (inner == 1) {  // channels the fastest axis: one row of them at a time
    for (int64_t row = 0; row < runs / channels; ++row) {
      const double* x = v + row * channels;
      for (int64_t c = 0; c < channels; ++c) out[c] = fold(out[c], x[c]);
    }
  } else {
    for (int64_t run = 0; run < runs; ++run) {
      const double* x = v + run * inner;
      double m = out[run % channels];
      for (int64_t k = 0; k < inner; ++k) m = fold(m, x[k]);
      out[run % channels] = m;
    }
  }
  return r;
}

absl::StatusOr<int64_t> OutputChannelCount(const ConstTensor& filter,
                                           absl::string_view op,
                                           bool transpose_b) {
  absl::StatusOr<ChannelLayout> layout = LayoutOf(filter, op, transpose_b);
  if (!layout.ok()) return layout.status();
  return layout->channels;
}

absl::StatusOr<ConstTensor> ChannelValues(const ConstTensor& c,
                                          int64_t channels, int rank, int axis) {
  const int c_rank = static_cast<int>(c.shape.size());
  if (c_rank > rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a constant of shape ", c.ShapeString(), " broadcasts a rank-", rank,
        " tensor to rank ", c_rank));
  }
  // c's dimension k (right-aligned with the tensor's) is the tensor's
  // dimension k + rank - c_rank.
  int64_t along = 1;
  for (int k = 0; k < c_rank; ++k) {
    const int64_t d = c.shape[k];
    if (k + rank - c_rank == axis) {
      if (d != 1 && d != channels) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a constant of shape ", c.ShapeString(), " has ", d,
            " values along an axis of ", channels, " channels"));
      }
      along = d;
    } else if (d != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a constant of shape ", c.ShapeString(),
          " varies along an axis other than the channels'"));
    }
  }
  ConstTensor m = Materialize(c);
  ConstTensor r;
  r.dtype = c.dtype;
  r.shape = {channels};
  r.values.resize(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i)
    r.values[i] = m.values[along == 1 ? 0 : i];
  return r;
}

absl::StatusOr<ConstTensor> ScaleOutputChannels(ConstTensor filter,
                                                const ConstTensor& scale,
                                                absl::string_view op,
                                                bool transpose_b) {
  if (scale.deferred != nullptr) {
    return ScaleOutputChannels(std::move(filter), Materialize(scale), op,
                               transpose_b);
  }
  absl::StatusOr<ChannelLayout> layout = LayoutOf(filter, op, transpose_b);
  if (!layout.ok()) return layout.status();
  int64_t channels = layout->channels;
  if (scale.num_elements() != channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scale has ", scale.num_elements(), " values; ", op, " filter ",
        filter.ShapeString(), " has ", channels, " output channels"));
  }
  if (filter.deferred != nullptr && channels > 0 && filter.num_elements() > 0) {
    ConstTensor r;
    r.dtype = filter.dtype;
    r.shape = filter.shape;
    if (filter.dtype == tf::DT_FLOAT) {
      r.deferred = std::make_shared<ScaledContent<float>>(
          std::move(filter.deferred), *layout, scale.values);
    } else {
      r.deferred = std::make_shared<ScaledContent<double>>(
          std::move(filter.deferred), *layout, scale.values);
    }
    return r;
  }
  if (filter.deferred != nullptr) filter = Materialize(filter);
  if (channels == 0 || filter.num_elements() == 0) return filter;
  auto in = AsMatrix(filter, *layout);
  Eigen::Map<Eigen::ArrayXXd> w(filter.values.data(), in.rows(), in.cols());
  // w'[..., c] = w[..., c] * scale[c]
  if (layout->inner == 1) {
    w.colwise() *= Array(scale.values);
  } else {
    const Eigen::Index repeats = in.cols() / channels;
    Eigen::ArrayXd tiled = Array(scale.values).replicate(repeats, 1);
    w.rowwise() *= tiled.transpose();
  }
  return filter;
}

}  // namespace graft
