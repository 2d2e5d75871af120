// The cost model: FLOPs, bytes read and written, and time per node. The
// roofline implementation takes the larger of compute time (FLOPs / peak
// FLOP/s for the dtype) and memory time (bytes / bandwidth), plus a launch
// overhead, from a device profile; a profile may also carry measured times
// (from the CUDA profiler, analysis/cuda) that replace the estimate for the
// shapes it measured.
#ifndef GRAFT_ANALYSIS_COST_H_
#define GRAFT_ANALYSIS_COST_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

struct DeviceProfile {
  std::string name;
  std::string kind;  // gpu, cpu
  // TFLOP/s by dtype name (float32, float16, bfloat16, float64).
  std::map<std::string, double> peak_tflops;    // matrix units: Conv2D, MatMul
  std::map<std::string, double> vector_tflops;  // everything else
  double memory_bandwidth_gbps = 0;             // GB/s (1e9 bytes)
  double memory_gib = 0;
  double host_bandwidth_gbps = 0;
  double launch_overhead_us = 0;
  // Measured times by MeasurementKey.
  std::map<std::string, double> measured_us;
};

// The YAML text of a profile; errors name `origin` and the line.
absl::StatusOr<DeviceProfile> ParseDeviceProfile(const std::string& text,
                                                 const std::string& origin);
// A shipped profile by name (devices/NAME.yaml, compiled in), else a file.
absl::StatusOr<DeviceProfile> LoadDeviceProfile(
    const std::string& name_or_path);
// The shipped profiles' names, sorted.
std::vector<std::string> DeviceProfileNames();
// The shipped profiles' files, by base name (generated from devices/).
const std::map<std::string, std::string>& EmbeddedProfiles();

struct NodeCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double time_us = 0;
  bool known = true;  // false when a shape it needs is unknown
  std::string bound;  // compute, memory, measured, none (no kernel)
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual NodeCost Cost(const Graph& graph, const ShapeMap& shapes,
                        NodeId node) const = 0;
};

class RooflineModel : public CostModel {
 public:
  explicit RooflineModel(DeviceProfile profile)
      : profile_(std::move(profile)) {}
  NodeCost Cost(const Graph& graph, const ShapeMap& shapes,
                NodeId node) const override;
  const DeviceProfile& profile() const { return profile_; }

 private:
  DeviceProfile profile_;
};

// A training step's estimated time on `model`'s device with the ops run in
// `schedule` order: ops on the device one after another; a copy between
// devices (an Identity whose input is on another device, as a swap makes)
// on a transfer stream of its own (bytes over the host link), overlapping
// the ops, which wait for it only when they read it.
struct StepTime {
  double serial_us = 0;      // every op and copy one after another
  double overlapped_us = 0;  // copies on their own stream
  int copies = 0;
  double copy_us = 0;
};
StepTime EstimateStepTime(const Graph& graph, const ShapeMap& shapes,
                          const RooflineModel& model,
                          const std::vector<NodeId>& schedule,
                          const std::string& default_device);

// Floating-point operations of a node (a multiply-add is 2); -1 when a
// shape it needs is unknown. Conv2D, DepthwiseConv2dNative and their
// backprops, MatMul and BatchMatMul are exact; element-wise ops count one
// per output element, reductions one per input element, pooling one per
// window element, batch norm 8 and softmax 5 per element.
double Flops(const ShapeMap& shapes, const Node& node);

// Whether an op runs on a device's matrix units (convolutions, matrix
// products, fused attention): what a recomputation's FLOPs are counted of.
bool UsesMatrixUnits(const std::string& op);

// "Conv2D x=[8,32,32,3] w=[3,3,3,16] strides=[1,1,1,1] SAME NHWC",
// "MatMul a=[32,64] b=[64,10] ta=0 tb=0"; empty for other ops or unknown
// shapes. The CUDA profiler writes its measurements under these keys.
std::string MeasurementKey(const ShapeMap& shapes, const Node& node);
std::string ConvKey(const std::vector<int64_t>& x,
                    const std::vector<int64_t>& w,
                    const std::vector<int64_t>& strides,
                    const std::string& padding, const std::string& format);
std::string MatMulKey(const std::vector<int64_t>& a,
                      const std::vector<int64_t>& b, bool ta, bool tb);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_COST_H_
