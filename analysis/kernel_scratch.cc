#include "analysis/kernel_scratch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace graft::analysis {
namespace {

// Eigen's convolution gradients size their im2col buffer to this working
// set (an L3 cache, in TensorFlow's conv_grad kernels).
constexpr int64_t kWorkingSetBytes = int64_t{30} << 20;
// Below this many elements per thread, Conv2DBackpropInput runs one
// matmul per image in parallel instead of one parallel matmul per image.
constexpr int64_t kPerThreadBytes = int64_t{256} << 10;

bool Nhwc(const TensorInfo& t) { return t.fully_known() && t.dims.size() == 4; }

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// a * b, or -1 where it overflows (no kernel allocates that much).
int64_t Times(int64_t a, int64_t b) {
  int64_t out = 0;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out) ? -1 : out;
}

int64_t Plus(int64_t a, int64_t b) {
  int64_t out = 0;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &out) ? -1 : out;
}

// The im2col buffer of Conv2DBackpropFilter or Conv2DBackpropInput:
// `images` x (output pixels x filter_h * filter_w * in_depth) elements,
// where `images` fills the working set (1 for the input gradient when each
// thread has enough work in one image).
int64_t Im2colBytes(const Node& n, const TensorInfo& filter,
                    const TensorInfo& out_backprop, int64_t elem_bytes,
                    int threads) {
  const int64_t batch = out_backprop.dims[0];
  const int64_t pixels = Times(out_backprop.dims[1], out_backprop.dims[2]);
  const int64_t patch = Times(Times(filter.dims[0], filter.dims[1]), filter.dims[2]);
  const int64_t out_depth = filter.dims[3];
  const int64_t work_unit = Plus(Plus(Times(pixels, patch), Times(pixels, out_depth)),
                                 Times(patch, out_depth));
  if (work_unit <= 0 || elem_bytes <= 0) return 0;
  int64_t images = CeilDiv(kWorkingSetBytes / elem_bytes, work_unit);
  if (n.op() == "Conv2DBackpropInput" &&
      (batch == 1 ||
       work_unit / std::max(threads, 1) >= kPerThreadBytes / elem_bytes)) {
    images = 1;
  }
  return std::max<int64_t>(0, Times(Times(Times(images, pixels), patch), elem_bytes));
}

}  // namespace

absl::StatusOr<CpuKernels> ParseCpuKernels(const std::string& name) {
  if (name == "onednn") return CpuKernels::kOneDnn;
  if (name == "eigen") return CpuKernels::kEigen;
  return absl::InvalidArgumentError(absl::StrCat(
      "cpu kernels: expected onednn or eigen, got \"", name, "\""));
}

const char* CpuKernelsName(CpuKernels kernels) {
  return kernels == CpuKernels::kEigen ? "eigen" : "onednn";
}

int64_t KernelScratchBytes(const Node& n, const ShapeMap& shapes,
                           CpuKernels kernels, int threads) {
  if (kernels != CpuKernels::kEigen || n.num_inputs() < 3 ||
      (n.op() != "Conv2DBackpropFilter" && n.op() != "Conv2DBackpropInput")) {
    return 0;
  }
  const tf::AttrValue* format = n.attr("data_format");
  if (format != nullptr && format->s() != "NHWC") return 0;  // not on CPU
  const TensorInfo& out = shapes.at({n.id(), 0});
  const TensorInfo& filter =
      n.op() == "Conv2DBackpropFilter" ? out : shapes.at(n.input(1));
  const TensorInfo& out_backprop = shapes.at(n.input(2));
  if (!Nhwc(out) || !Nhwc(filter) || !Nhwc(out_backprop)) return 0;
  const int64_t elems = out.num_elements();
  if (elems <= 0) return 0;
  return Im2colBytes(n, filter, out_backprop, out.bytes() / elems, threads);
}

}  // namespace graft::analysis
