// graft mem and graft cost as library calls: the training-graph analyses
// (shapes, regions, schedule, peak memory) and the roofline cost model.
#ifndef GRAFT_API_ANALYSES_H_
#define GRAFT_API_ANALYSES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/result.h"

namespace graft::api {

struct Model;

// What the analyses assume of a graph.
struct AnalysisSettings {
  std::string device = "h100_sxm";  // a shipped profile or a YAML file
  std::string loss, seed;           // training graphs; found when empty
  std::vector<std::string> input_shapes;  // name=1,224,224,3 (? unknown)
  int64_t batch = 0;                      // > 0: a dynamic batch dimension
  std::string default_device;             // of unplaced ops ("": none)
  // Nodes that do not match their op: refused (false) or left unknown and
  // listed in `invalid_nodes` (true).
  bool skip_invalid_nodes = false;
  // graft mem: the CPU kernels whose scratch counts ("onednn": none worth
  // counting; "eigen": TensorFlow's without oneDNN) and their intra-op
  // threads (0: this machine's).
  std::string cpu_kernels = "onednn";
  int threads = 0;
};

struct MemTensor {
  std::string name, shape, region;  // region: forward, backward, other
  int64_t bytes = 0;
};
struct MemDevice {
  std::string device, peak_at;  // peak_at: the node run at the peak
  int64_t peak_bytes = 0, peak_step = 0, persistent_bytes = 0;
  std::vector<MemTensor> live_at_peak;  // largest first
  int64_t scratch_at_peak = 0;  // a kernel's scratch in the peak
  std::string scratch_node;     // the node that allocated it ("": none)
};
struct MemNode {
  std::string name, region;
  int64_t step = 0;
};
struct MemReport {
  int64_t nodes = 0, schedule_steps = 0, unknown_sizes = 0;
  // The schedule the estimate assumes, in words.
  std::string schedule;
  std::vector<std::string> unknown_shapes;  // "t:0 (Op)", in node order
  bool regions_found = false;
  std::string regions_note;  // why none were found
  std::string loss, seed;
  int64_t forward_ops = 0, backward_ops = 0, saved_for_backward = 0;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, shape
  bool unknown_input = false;  // an input's shape is not fully known
  std::vector<std::string> invalid_nodes;  // skipped, with skip_invalid_nodes
  std::vector<MemTensor> tensors;
  std::vector<MemNode> node_steps;
  std::vector<MemDevice> devices;
};
// `outputs`: fetched tensors, live to the end.
Result<MemReport> Mem(const Model& model, const AnalysisSettings& settings,
                      const std::vector<std::string>& outputs = {});
std::string MemJson(const MemReport& report);

struct CostRow {
  std::string node, op, bound;
  double flops = 0, bytes = 0, time_us = 0;
  bool known = true;
};
struct CostReport {
  std::string device;
  int measured_shapes = 0;  // of the profile
  double flops = 0, bytes = 0, time_us = 0;
  int64_t nodes = 0, unknown_ops = 0;
  std::vector<CostRow> ops;  // most expensive first
  bool regions_found = false;
  std::map<std::string, double> time_by_region;  // forward, backward, other
  int64_t copies = 0;
  double copy_us = 0, step_overlapped_us = 0, step_serial_us = 0;
  std::vector<std::string> invalid_nodes;
};
Result<CostReport> Cost(const Model& model, const AnalysisSettings& settings);
std::string CostJson(const CostReport& report);

// The forward/backward partition of a joint training graph (analysis/
// partition.h): what the forward saves for the backward under a budget of
// saved bytes, the rest recomputed in the backward.
struct PartitionSettings {
  std::vector<std::string> backward_inputs;  // the tangents
  std::vector<std::string> backward_ops;     // placed in the backward
  std::vector<std::string> pinned;           // never recomputed
  std::vector<std::string> free;             // recomputed at no cost
  std::vector<std::string> functional;       // unknown ops, pure
  std::vector<std::string> swappable;        // may wait in host memory
  double budget_fraction = 1.0;              // of saving all it reads
  int64_t budget_bytes = -1;                 // >= 0: absolute
};
struct PartitionReport {
  std::vector<std::string> saved;       // "node:port"
  std::vector<std::string> recomputed;  // node names
  std::vector<std::string> swapped;     // "node:port", of `saved`
  int64_t saved_bytes = 0, default_bytes = 0, least_bytes = 0;
  int64_t swapped_bytes = 0;
  int64_t budget_bytes = 0;
  bool budget_met = true;
  double recomputed_flops = 0;
  int cuts = 0;
};
Result<PartitionReport> Partition(const Model& model,
                                  const PartitionSettings& settings);
std::string PartitionJson(const PartitionReport& report);

}  // namespace graft::api

#endif  // GRAFT_API_ANALYSES_H_
