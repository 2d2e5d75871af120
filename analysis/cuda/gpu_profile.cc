// Times Conv2D shapes with cuDNN and MatMul shapes with cuBLAS (float32,
// TF32 tensor cores allowed, as TensorFlow does by default) and host <->
// device copies (pinned memory, cudaMemcpyAsync), and writes a device
// profile with the measured times and link bandwidth:
//
//   gpu_profile [--base h100_sxm] [--name NAME] [--out profile.yaml]
//   [--iterations 20]
//
// It prints each shape's measured time next to the roofline estimate of the
// base profile and the mean error, then the copy bandwidth each way.
// `graft cost --device profile.yaml` then uses the measured times for those
// shapes, and the swap plan (rules/tf/swap.graft) the measured link.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "analysis/cost.h"
#include "analysis/cuda/profile_shapes.h"

namespace graft::analysis {
namespace {

#define CHECK_CUDA(call)                                               \
  do {                                                                 \
    cudaError_t e = (call);                                            \
    if (e != cudaSuccess) {                                            \
      std::cerr << "gpu_profile: " #call ": " << cudaGetErrorString(e) \
                << "\n";                                               \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)
#define CHECK_CUDNN(call)                                               \
  do {                                                                  \
    cudnnStatus_t e = (call);                                           \
    if (e != CUDNN_STATUS_SUCCESS) {                                    \
      std::cerr << "gpu_profile: " #call ": " << cudnnGetErrorString(e) \
                << "\n";                                                \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)
#define CHECK_CUBLAS(call)                                  \
  do {                                                      \
    cublasStatus_t e = (call);                              \
    if (e != CUBLAS_STATUS_SUCCESS) {                       \
      std::cerr << "gpu_profile: " #call ": cuBLAS status " \
                << static_cast<int>(e) << "\n";             \
      std::exit(1);                                         \
    }                                                       \
  } while (0)

float* DeviceBuffer(size_t floats) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(floats, 1) * sizeof(float)));
  CHECK_CUDA(cudaMemset(p, 0, std::max<size_t>(floats, 1) * sizeof(float)));
  return static_cast<float*>(p);
}

// The median time of `iterations` runs of `run`, after warm-up, in us.
template <typename Run>
double TimeUs(int iterations, Run run) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) run();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    run();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1000.0);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double TimeConv(cudnnHandle_t cudnn, const ConvShape& c, int iterations) {
  int n = c.x[0], h = c.x[1], w = c.x[2], ci = c.x[3];
  int kh = c.w[0], kw = c.w[1], co = c.w[3];
  int pad_h = 0, pad_w = 0;
  if (c.padding == "SAME") {
    int oh = (h + c.stride - 1) / c.stride, ow = (w + c.stride - 1) / c.stride;
    pad_h = std::max(0, ((oh - 1) * static_cast<int>(c.stride) + kh - h) / 2);
    pad_w = std::max(0, ((ow - 1) * static_cast<int>(c.stride) + kw - w) / 2);
  }
  cudnnTensorDescriptor_t x_desc, y_desc;
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t conv;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&x_desc));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&y_desc));
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&w_desc));
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NHWC,
                                         CUDNN_DATA_FLOAT, n, ci, h, w));
  CHECK_CUDNN(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT,
                                         CUDNN_TENSOR_NHWC, co, ci, kh, kw));
  CHECK_CUDNN(cudnnSetConvolution2dDescriptor(
      conv, pad_h, pad_w, c.stride, c.stride, 1, 1, CUDNN_CROSS_CORRELATION,
      CUDNN_DATA_FLOAT));
  CHECK_CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_DEFAULT_MATH));
  int on, oc, oh, ow;
  CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x_desc, w_desc, &on,
                                                    &oc, &oh, &ow));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NHWC,
                                         CUDNN_DATA_FLOAT, on, oc, oh, ow));
  float* x = DeviceBuffer(static_cast<size_t>(n) * h * w * ci);
  float* f = DeviceBuffer(static_cast<size_t>(kh) * kw * ci * co);
  float* y = DeviceBuffer(static_cast<size_t>(on) * oc * oh * ow);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithm(
      cudnn, x_desc, w_desc, conv, y_desc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
      &found, perf));
  cudnnConvolutionFwdAlgo_t algo = perf[0].algo;
  size_t workspace_bytes = 0;
  CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(
      cudnn, x_desc, w_desc, conv, y_desc, algo, &workspace_bytes));
  void* workspace = nullptr;
  if (workspace_bytes > 0) CHECK_CUDA(cudaMalloc(&workspace, workspace_bytes));
  const float one = 1, zero = 0;
  double us = TimeUs(iterations, [&] {
    CHECK_CUDNN(cudnnConvolutionForward(cudnn, &one, x_desc, x, w_desc, f, conv,
                                        algo, workspace, workspace_bytes, &zero,
                                        y_desc, y));
  });
  if (workspace) CHECK_CUDA(cudaFree(workspace));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(f));
  CHECK_CUDA(cudaFree(y));
  cudnnDestroyTensorDescriptor(x_desc);
  cudnnDestroyTensorDescriptor(y_desc);
  cudnnDestroyFilterDescriptor(w_desc);
  cudnnDestroyConvolutionDescriptor(conv);
  return us;
}

double TimeMatMul(cublasHandle_t cublas, const MatMulShape& s, int iterations) {
  float* a = DeviceBuffer(static_cast<size_t>(s.m) * s.k);
  float* b = DeviceBuffer(static_cast<size_t>(s.k) * s.n);
  float* c = DeviceBuffer(static_cast<size_t>(s.m) * s.n);
  const float one = 1, zero = 0;
  // Row-major C = A B is column-major C^T = B^T A^T.
  double us = TimeUs(iterations, [&] {
    CHECK_CUBLAS(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k,
                             &one, b, s.n, a, s.k, &zero, c, s.n));
  });
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  return us;
}

// Host <-> device copies of `bytes` from pinned host memory with
// cudaMemcpyAsync on a stream of their own (as a swap's copies run beside
// the compute stream), median of `iterations` each way.
CopyMeasurement TimeCopies(int64_t bytes, int iterations) {
  void* host = nullptr;
  void* device = nullptr;
  CHECK_CUDA(cudaMallocHost(&host, bytes));
  CHECK_CUDA(cudaMalloc(&device, bytes));
  std::memset(host, 1, bytes);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  auto time = [&](void* to, const void* from, cudaMemcpyKind kind) {
    std::vector<double> times;
    for (int i = 0; i < iterations + 2; ++i) {
      CHECK_CUDA(cudaEventRecord(start, stream));
      CHECK_CUDA(cudaMemcpyAsync(to, from, bytes, kind, stream));
      CHECK_CUDA(cudaEventRecord(stop, stream));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (i >= 2) times.push_back(ms * 1000.0);  // two warm-ups
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  CopyMeasurement m;
  m.bytes = bytes;
  m.host_to_device_us = time(device, host, cudaMemcpyHostToDevice);
  m.device_to_host_us = time(host, device, cudaMemcpyDeviceToHost);
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFreeHost(host));
  return m;
}

int Main(int argc, char** argv) {
  std::string base_name = "h100_sxm", name, out_path;
  int iterations = 20;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "gpu_profile: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--base")
      base_name = value();
    else if (arg == "--name")
      name = value();
    else if (arg == "--out")
      out_path = value();
    else if (arg == "--iterations")
      iterations = std::max(1, std::atoi(value().c_str()));
    else {
      std::cerr << "usage: gpu_profile [--base PROFILE] [--name NAME] [--out "
                   "FILE] [--iterations N]\n";
      return 2;
    }
  }
  absl::StatusOr<DeviceProfile> base = LoadDeviceProfile(base_name);
  if (!base.ok()) {
    std::cerr << "gpu_profile: " << base.status().message() << "\n";
    return 1;
  }
  if (name.empty()) name = base->name + "_measured";
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::cerr << "gpu_profile: no CUDA device\n";
    return 1;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::cerr << "gpu_profile: " << prop.name << ", base profile " << base->name
            << "\n";
  cudnnHandle_t cudnn;
  cublasHandle_t cublas;
  CHECK_CUDNN(cudnnCreate(&cudnn));
  CHECK_CUBLAS(cublasCreate(&cublas));
  CHECK_CUBLAS(cublasSetMathMode(cublas, CUBLAS_TF32_TENSOR_OP_MATH));
  std::vector<Measurement> measured;
  for (const ConvShape& c : DefaultConvShapes()) {
    measured.push_back(
        {Key(c), TimeConv(cudnn, c, iterations), RooflineTimeUs(*base, c)});
  }
  for (const MatMulShape& m : DefaultMatMulShapes()) {
    measured.push_back(
        {Key(m), TimeMatMul(cublas, m, iterations), RooflineTimeUs(*base, m)});
  }
  cudnnDestroy(cudnn);
  cublasDestroy(cublas);
  std::vector<CopyMeasurement> copies;
  for (int64_t bytes : DefaultCopySizes())
    copies.push_back(TimeCopies(bytes, iterations));
  std::cout << ErrorTable(measured) << "\n" << CopyTable(copies);
  std::cout << absl::StrFormat(
      "host link: %.1f GB/s each way (the profile says %.1f)\n\n",
      LinkBandwidthGbps(copies), base->host_bandwidth_gbps);
  std::string yaml = ProfileYaml(name, *base, measured, copies);
  if (out_path.empty()) {
    std::cout << yaml;
  } else {
    std::ofstream(out_path) << yaml;
    std::cerr << "gpu_profile: wrote " << out_path << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace graft::analysis

int main(int argc, char** argv) { return graft::analysis::Main(argc, argv); }
