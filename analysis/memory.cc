#include "analysis/memory.h"

#include <algorithm>
#include <set>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/surgery.h"

namespace graft::analysis {

namespace {

bool SharesInputBuffer(const std::string& op) {
  static const std::set<std::string> kAliases = {
      "Identity", "ReadVariableOp", "Reshape",     "ExpandDims",
      "Squeeze",  "Snapshot",       "StopGradient"};
  return kAliases.count(op) != 0;
}

// The input whose buffer output `port` of `n` is, or -1: input 0 for the
// ops above; input i for IdentityN's output i (Keras 3's optimizers pass
// every gradient through one, which copies none).
int SharedInput(const Node& n, int port) {
  if (n.op() == "IdentityN") return port < n.num_inputs() ? port : -1;
  return port == 0 && n.num_inputs() > 0 && SharesInputBuffer(n.op()) ? 0 : -1;
}

// The inputs whose buffer TensorFlow's kernel of `n` may write its first
// output into, in the order it tries them: unary elementwise ops, BiasAdd
// and Softmax their first; binary elementwise ops and the activations'
// gradients either; AddN any.
std::vector<int> ForwardableInputs(const Node& n) {
  static const std::set<std::string> kFirst = {
      "Relu",     "Relu6",      "Elu",   "Selu",    "LeakyRelu",
      "Softplus", "Softsign",   "Neg",   "Exp",     "Log",
      "Log1p",    "Sqrt",       "Rsqrt", "Square",  "Tanh",
      "Sigmoid",  "Abs",        "Sign",  "Floor",   "Ceil",
      "Round",    "Reciprocal", "Inv",   "BiasAdd", "BiasAddV1",
      "Softmax",  "LogSoftmax"};
  static const std::set<std::string> kEither = {
      "Add",           "AddV2",        "Sub",          "Mul",
      "RealDiv",       "Div",          "DivNoNan",     "MulNoNan",
      "Maximum",       "Minimum",      "Pow",          "SquaredDifference",
      "ReluGrad",      "Relu6Grad",    "EluGrad",      "SeluGrad",
      "LeakyReluGrad", "SoftplusGrad", "SoftsignGrad", "TanhGrad",
      "SigmoidGrad",   "RsqrtGrad",    "SqrtGrad",     "ReciprocalGrad"};
  if (kFirst.count(n.op())) return {0};
  if (kEither.count(n.op())) return {0, 1};
  std::vector<int> all;
  if (n.op() == "AddN") {
    for (int i = 0; i < n.num_inputs(); ++i) all.push_back(i);
  }
  return all;
}

bool IsPersistent(const std::string& op) {
  return op == "Const" || op == "VarHandleOp" || op == "VariableV2";
}

// The bytes of the variable a VarHandleOp holds (its `shape` and `dtype`),
// or `otherwise` when its shape is unknown.
int64_t VariableBytes(const Node& n, int64_t otherwise) {
  const tf::AttrValue* s = n.attr("shape");
  if (s == nullptr || s->shape().unknown_rank()) return otherwise;
  TensorInfo var;
  var.known_rank = true;
  for (const auto& d : s->shape().dim()) var.dims.push_back(d.size());
  const tf::AttrValue* dt = n.attr("dtype");
  var.dtype = dt ? dt->type() : tf::DT_INVALID;
  return var.bytes();
}

// The nodes `fetched` need, data and control inputs transitively: what a
// TensorFlow session runs for them. Everything when nothing is fetched.
std::vector<bool> RunByFetches(const Graph& graph,
                               const std::vector<NodeId>& fetched) {
  std::vector<bool> runs(graph.id_limit(), fetched.empty());
  surgery::WalkOptions inputs;
  inputs.control = true;
  for (NodeId id : surgery::BackwardWalk(graph, fetched, inputs))
    runs[id] = true;
  return runs;
}

// The step after which `n` is ready: its last input's (data or control).
int ReadyAfter(const Node& n, const std::vector<int>& step_of) {
  int last = -1;
  for (Endpoint e : n.inputs()) {
    if (e.node != kNoNode) last = std::max(last, step_of[e.node]);
  }
  for (NodeId c : n.control_inputs()) last = std::max(last, step_of[c]);
  return last;
}

// What `n` depends on through data or control edges, among the nodes
// scheduled at or after step `since` (a path from one of them to `n` runs
// through such nodes alone: the schedule is topological).
absl::flat_hash_set<NodeId> AncestorsSince(const Graph& graph,
                                           const std::vector<int>& step_of,
                                           const Node& n, int since) {
  absl::flat_hash_set<NodeId> seen;
  std::vector<NodeId> todo = {n.id()};
  auto visit = [&](NodeId id) {
    if (id == kNoNode || step_of[id] < since) return;
    if (seen.insert(id).second) todo.push_back(id);
  };
  while (!todo.empty()) {
    const Node& m = graph.node(todo.back());
    todo.pop_back();
    for (Endpoint e : m.inputs()) visit(e.node);
    for (NodeId c : m.control_inputs()) visit(c);
  }
  return seen;
}

// The ops with scratch that run at once, as the schedule reaches each.
class ScratchAtOnce {
 public:
  explicit ScratchAtOnce(int threads) : threads_(threads) {}

  // `n`'s scratch and the largest of up to threads - 1 others running
  // beside it: ops with scratch made ready by the same step run at once,
  // one per thread (a convolution's two gradients); so does the nearest
  // one before it that it does not depend on, among the 2 x threads
  // before it, still running on another thread when it starts (a layer's
  // filter gradient beside the next layer's, the input gradient between
  // them done).
  std::vector<std::pair<int64_t, NodeId>> Add(const Graph& graph,
                                              const std::vector<int>& step_of,
                                              const Node& n, int64_t bytes) {
    const size_t threads = static_cast<size_t>(threads_);
    std::vector<std::pair<int64_t, NodeId>>& beside =
        ready_together_[ReadyAfter(n, step_of)];
    std::vector<std::pair<int64_t, NodeId>> others = beside;
    const size_t window = std::min(recent_.size(), 2 * threads);
    absl::flat_hash_set<NodeId> ancestors;
    if (window > 0 && threads > 1) {
      ancestors = AncestorsSince(
          graph, step_of, n,
          std::max(0, step_of[recent_[recent_.size() - window].second]));
    }
    size_t found = 0;
    for (size_t i = recent_.size(), looked = 0;
         i-- > 0 && looked < window && found + 1 < threads; ++looked) {
      if (ancestors.contains(recent_[i].second)) continue;
      ++found;
      if (std::find(others.begin(), others.end(), recent_[i]) == others.end())
        others.push_back(recent_[i]);
    }
    std::sort(others.rbegin(), others.rend());
    std::vector<std::pair<int64_t, NodeId>> at_once = {{bytes, n.id()}};
    for (size_t i = 0; i < others.size() && i + 1 < threads; ++i)
      at_once.push_back(others[i]);
    beside.push_back({bytes, n.id()});
    recent_.push_back({bytes, n.id()});
    return at_once;
  }

 private:
  int threads_;
  // Ops with scratch by the step after which they were ready.
  absl::flat_hash_map<int, std::vector<std::pair<int64_t, NodeId>>>
      ready_together_;
  // Ops with scratch, in schedule order.
  std::vector<std::pair<int64_t, NodeId>> recent_;
};

// A buffer: each tensor owns one, or shares its input's (aliases).
struct Buffer {
  Endpoint owner;
  int64_t bytes = 0;
  int alloc = 0, free = 0;
  bool persistent = false;
  bool scratch = false;  // a kernel's, while it runs
  std::string device;
};

// The input whose buffer `n` (at `step`, on `device`) writes its output
// `out` into, or none: the first of its forwardable inputs that owns its
// buffer, which `n` alone still reads and reads once, of `out`'s dtype and
// bytes, on `device`, neither persistent nor held by the caller (fed or
// fetched).
Endpoint HandedOverInput(const Graph& graph, const ShapeMap& shapes,
                         const std::vector<Buffer>& buffers,
                         const absl::flat_hash_map<Endpoint, int>& buffer_of,
                         const absl::flat_hash_set<NodeId>& fetched,
                         const Node& n, Endpoint out, int step,
                         const std::string& device) {
  const TensorInfo& made = shapes.at(out);
  for (int i : ForwardableInputs(n)) {
    if (i >= n.num_inputs()) break;
    Endpoint in = n.input(i);
    auto it = buffer_of.find(in);
    if (!in.valid() || it == buffer_of.end()) continue;
    const Buffer& b = buffers[it->second];
    const TensorInfo& given = shapes.at(in);
    const std::string& producer = graph.node(in.node).op();
    if (b.owner != in || b.persistent || b.free != step || b.device != device ||
        b.bytes <= 0 || b.bytes != made.bytes() || given.dtype != made.dtype ||
        fetched.contains(in.node) || producer == "Placeholder" ||
        std::count(n.inputs().begin(), n.inputs().end(), in) != 1) {
      continue;
    }
    return in;
  }
  return Endpoint{};
}

// Each device's live bytes swept over the schedule's `steps`: its peak,
// where, what is live there, and its persistent bytes.
std::vector<DeviceMemory> SweepDevices(const std::vector<Buffer>& buffers,
                                       size_t steps) {
  std::vector<DeviceMemory> out;
  std::map<std::string, std::vector<int64_t>> diff;
  std::map<std::string, int64_t> persistent;
  for (const Buffer& b : buffers) {
    if (b.bytes <= 0) continue;
    if (b.persistent) {
      persistent[b.device] += b.bytes;
      continue;
    }
    std::vector<int64_t>& d = diff[b.device];
    d.resize(steps + 1, 0);
    d[b.alloc] += b.bytes;
    d[b.free + 1] -= b.bytes;
  }
  std::set<std::string> devices;
  for (const auto& [dev, d] : diff) devices.insert(dev);
  for (const auto& [dev, bytes] : persistent) devices.insert(dev);
  for (const std::string& dev : devices) {
    DeviceMemory m;
    m.device = dev;
    m.persistent_bytes = persistent.count(dev) ? persistent[dev] : 0;
    if (diff.count(dev)) {
      int64_t live = 0;
      const std::vector<int64_t>& d = diff[dev];
      for (size_t s = 0; s + 1 < d.size(); ++s) {
        live += d[s];
        if (live > m.peak_bytes) {
          m.peak_bytes = live;
          m.peak_step = static_cast<int>(s);
        }
      }
      std::vector<const Buffer*> at_peak;
      for (const Buffer& b : buffers) {
        if (b.device != dev || b.persistent || b.bytes <= 0 ||
            b.alloc > m.peak_step || m.peak_step > b.free) {
          continue;
        }
        if (b.scratch) {
          m.scratch_at_peak += b.bytes;
          m.scratch_node = b.owner.node;
        } else {
          at_peak.push_back(&b);
        }
      }
      std::stable_sort(
          at_peak.begin(), at_peak.end(),
          [](const Buffer* a, const Buffer* b) { return a->bytes > b->bytes; });
      for (const Buffer* b : at_peak) m.live_at_peak.push_back(b->owner);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

std::vector<SharedHold> SharedBufferHolds(const MemoryReport& memory,
                                          const std::vector<int>& last_read) {
  std::vector<SharedHold> holds;
  // By owner: the last step its buffer is counted so far.
  std::vector<int> counted_until = last_read;
  for (size_t i = 0; i < memory.tensors.size(); ++i) {
    const TensorLife& t = memory.tensors[i];
    if (!t.aliased || t.owner < 0) continue;
    const TensorLife& own = memory.tensors[t.owner];
    int& until = counted_until[t.owner];
    if (!own.persistent && own.bytes > 0 && last_read[i] > until) {
      holds.push_back({t.tensor, until + 1, last_read[i], own.bytes});
      until = last_read[i];
    }
  }
  return holds;
}

absl::StatusOr<MemoryReport> SimulateMemory(const Graph& graph,
                                            const ShapeMap& shapes,
                                            const MemoryOptions& options) {
  const int threads =
      options.threads > 0
          ? options.threads
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(graph, threads);
  if (!order.ok()) return order.status();
  MemoryReport report;
  report.threads = threads;
  report.schedule = *order;
  report.step_of.assign(graph.id_limit(), -1);
  report.scratch_of_step.assign(order->size(), 0);
  for (size_t i = 0; i < order->size(); ++i)
    report.step_of[(*order)[i]] = static_cast<int>(i);
  absl::flat_hash_set<NodeId> fetched;
  for (const std::string& name : options.outputs) {
    if (NodeId id = graph.FindId(name); id != kNoNode) fetched.insert(id);
  }
  const int end = static_cast<int>(order->size()) - 1;
  const std::vector<bool> runs =
      RunByFetches(graph, std::vector<NodeId>(fetched.begin(), fetched.end()));

  std::vector<Buffer> buffers;
  absl::flat_hash_map<Endpoint, int> buffer_of;
  absl::flat_hash_map<Endpoint, int> life_of;  // index in report.tensors
  ScratchAtOnce scratch_at_once{threads};
  auto device_of = [&](const Node& n) {
    if (!n.device().empty()) return n.device();
    return options.default_device.empty() ? std::string("(unplaced)")
                                          : options.default_device;
  };
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    int step = report.step_of[id];
    for (int p = 0; p < shapes.num_outputs(id); ++p) {
      Endpoint t{id, p};
      TensorLife life;
      life.tensor = t;
      // A node the fetches do not need never runs: it allocates nothing
      // and keeps nothing alive.
      life.bytes = runs[id] ? shapes.at(t).bytes() : 0;
      life.alloc = step;
      int last = step;
      for (InputSlot s : n.consumers(p)) {
        if (runs[s.node]) last = std::max(last, report.step_of[s.node]);
      }
      if (fetched.contains(id)) last = end;
      life.free = last;
      life.persistent = IsPersistent(n.op());
      int buffer = -1;
      if (const int shared = SharedInput(n, p); runs[id] && shared >= 0) {
        auto it = buffer_of.find(n.input(shared));
        // Shared on one device; across devices, a copy.
        if (it != buffer_of.end() && buffers[it->second].device == device_of(n))
          buffer = it->second;
      }
      if (runs[id] && p == 0 && buffer < 0) {
        // TensorFlow's kernel writes into an input it is the last reader
        // of: that input's bytes are released as the output's are taken.
        Endpoint handed = HandedOverInput(graph, shapes, buffers, buffer_of,
                                          fetched, n, t, step, device_of(n));
        if (handed.valid()) {
          buffers[buffer_of[handed]].free = step - 1;
          report.tensors[life_of[handed]].handed_over = true;
        }
      }
      if (buffer >= 0) {
        life.aliased = true;
        life.owner = life_of[buffers[buffer].owner];
        buffers[buffer].free = std::max(buffers[buffer].free, last);
        life.persistent = buffers[buffer].persistent;
      } else {
        buffer = static_cast<int>(buffers.size());
        Buffer b;
        b.owner = t;
        b.bytes = life.bytes;
        b.alloc = step;
        b.free = last;
        b.persistent = life.persistent;
        b.device = device_of(n);
        if (n.op() == "VarHandleOp") b.bytes = VariableBytes(n, b.bytes);
        buffers.push_back(b);
      }
      buffer_of[t] = buffer;
      life_of[t] = static_cast<int>(report.tensors.size());
      if (life.bytes < 0 && !life.aliased) ++report.unknown_tensors;
      report.tensors.push_back(life);
    }
    int64_t scratch =
        runs[id] ? KernelScratchBytes(n, shapes, options.cpu_kernels, threads)
                 : 0;
    if (scratch > 0) {
      report.scratch_of_step[step] = scratch;
      std::vector<std::pair<int64_t, NodeId>> at_once =
          scratch_at_once.Add(graph, report.step_of, n, scratch);
      for (const auto& [bytes, owner] : at_once) {
        Buffer b;
        b.owner = {owner, 0};
        b.bytes = bytes;
        b.alloc = b.free = step;
        b.scratch = true;
        b.device = device_of(n);
        buffers.push_back(b);
      }
    }
  }

  report.devices = SweepDevices(buffers, order->size());
  return report;
}

}  // namespace graft::analysis
