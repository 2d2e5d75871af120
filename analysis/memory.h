// The liveness of every tensor under the executor-order schedule
// (analysis/schedule.h), and the peak live bytes per device with the
// tensors live at that peak.
//
// A tensor is allocated when its producer runs and freed when its last
// consumer has run (at once when nothing reads it, never when it is a
// fetched output). Identity, ReadVariableOp, Reshape, ExpandDims, Squeeze,
// Snapshot and StopGradient outputs share their input's buffer, as in
// TensorFlow. An elementwise op (and its gradient), BiasAdd, AddN and
// Softmax write their output into an input's buffer when they are the last
// reader of that buffer and it has their output's dtype and bytes, as
// TensorFlow's kernels do (forward_input_or_allocate_output): the input
// is handed over, its bytes freed as the output's are allocated. Not an
// input the caller holds (a fed Placeholder, a fetched output), a
// persistent one, one on another device, one read twice by the op, or an
// alias of another tensor. Const outputs and variables are persistent:
// reported apart, not part of the peak.
#ifndef GRAFT_ANALYSIS_MEMORY_H_
#define GRAFT_ANALYSIS_MEMORY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/kernel_scratch.h"
#include "analysis/schedule.h"
#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

struct TensorLife {
  Endpoint tensor;
  int64_t bytes = 0;  // -1: unknown shape (not counted)
  int alloc = 0;      // schedule step of the producer
  int free = 0;       // step after which it is freed (its last reader)
  bool persistent = false;
  bool aliased =
      false;  // shares an earlier tensor's buffer (not counted again)
  int owner = -1;  // when aliased: the index of that buffer's owner
  // Its last reader writes its output into this tensor's buffer: its bytes
  // are released the step before, as that reader's output takes them.
  bool handed_over = false;
};

// The last step at which `t`'s own bytes count: its last reader's, or the
// step before when that reader takes its buffer over.
inline int HeldUntil(const TensorLife& t) {
  return t.handed_over ? t.free - 1 : t.free;
}

struct DeviceMemory {
  std::string device;
  int64_t peak_bytes = 0;
  int peak_step = 0;                   // the step at which the peak is reached
  std::vector<Endpoint> live_at_peak;  // largest first
  int64_t persistent_bytes = 0;
  // A kernel's scratch in the peak (analysis/kernel_scratch.h), and the
  // node that allocated it (kNoNode: none).
  int64_t scratch_at_peak = 0;
  NodeId scratch_node = kNoNode;
};

struct MemoryReport {
  std::vector<NodeId> schedule;
  std::vector<int> step_of;           // by node id; -1 if not scheduled
  std::vector<TensorLife> tensors;    // every output of every scheduled node
  std::vector<DeviceMemory> devices;  // sorted by device name
  int unknown_tensors = 0;            // outputs whose size is unknown
  int threads = 1;                    // the executor's threads assumed
  // By step: the scratch the op at that step allocates while it runs
  // (analysis/kernel_scratch.h; 0 for most ops), with the report's kernels.
  std::vector<int64_t> scratch_of_step;
};

struct MemoryOptions {
  // Fetched outputs, live until the end. When there are some, only the
  // nodes they need (data and control inputs, transitively) run, as in a
  // TensorFlow session: the others allocate nothing (a gradient no
  // optimizer applies, say). None: every node runs.
  std::vector<std::string> outputs;
  // The device of ops the graph does not place ("": reported as
  // "(unplaced)"). A tensor an op on another device reads through an
  // Identity gets its own buffer there (a copy), never the producer's.
  std::string default_device;
  // The CPU kernels whose scratch each op allocates while it runs, and
  // TensorFlow's threads (0: this machine's cores), which size that scratch
  // and, when several, let an op with scratch run beside the op scheduled
  // after it unless that one waits for it, and siblings the thread pool
  // runs at once run together (ExecutorOrder).
  CpuKernels cpu_kernels = CpuKernels::kOneDnn;
  int threads = 0;
};

// A tensor that shares an earlier one's buffer (a Reshape, an Identity)
// and is read after every earlier tensor sharing it: from the step after
// their last reader to its own it alone holds the buffer's bytes.
struct SharedHold {
  Endpoint tensor;
  int from = 0, to = 0;
  int64_t bytes = 0;
};

// The holds of `memory`'s shared buffers, given each tensor's last read
// (by index in memory.tensors: its last reader's step, or the step a
// planner assumes), so that owners and holds together count each buffer
// from its producer to the last reader of any tensor sharing it.
std::vector<SharedHold> SharedBufferHolds(const MemoryReport& memory,
                                          const std::vector<int>& last_read);

absl::StatusOr<MemoryReport> SimulateMemory(const Graph& graph,
                                            const ShapeMap& shapes,
                                            const MemoryOptions& options = {});

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_MEMORY_H_
