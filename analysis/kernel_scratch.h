// The scratch memory a kernel allocates while it runs and frees when it
// returns, beyond its outputs: what a peak adds on top of live tensors.
// TensorFlow's CPU kernels differ with oneDNN: its kernels allocate no
// scratch worth counting; without it, Eigen's convolution gradients
// (Conv2DBackpropFilter, Conv2DBackpropInput) lay their input's patches out
// in an im2col buffer sized to a 30 MiB working set.
#ifndef GRAFT_ANALYSIS_KERNEL_SCRATCH_H_
#define GRAFT_ANALYSIS_KERNEL_SCRATCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

enum class CpuKernels {
  kOneDnn,  // TF_ENABLE_ONEDNN_OPTS=1 (TensorFlow's default on Intel CPUs)
  kEigen,   // TF_ENABLE_ONEDNN_OPTS=0 (its default elsewhere)
};

// "onednn" or "eigen"; an error naming both otherwise.
absl::StatusOr<CpuKernels> ParseCpuKernels(const std::string& name);
const char* CpuKernelsName(CpuKernels kernels);

// Bytes of scratch node `n` allocates while it runs with `kernels` and
// `threads` intra-op threads (0 when it needs none, or its shapes are not
// known).
int64_t KernelScratchBytes(const Node& n, const ShapeMap& shapes,
                           CpuKernels kernels, int threads);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_KERNEL_SCRATCH_H_
