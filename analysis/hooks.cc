#include "analysis/hooks.h"

#include <memory>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/cost.h"
#include "analysis/memory.h"
#include "analysis/regions.h"
#include "analysis/shapes.h"

namespace graft::analysis {

namespace {

using VT = ValueType;
using Args = absl::Span<const Value>;

// The analyses of one graph version, each computed when a hook first needs
// it (a rule that only asks for `bytes` never schedules the graph).
struct Analyses {
  const Graph* graph = nullptr;
  uint64_t version = 0;
  ShapeMap shapes;
  std::mutex mu;  // guards the lazily computed parts below
  std::optional<absl::StatusOr<Regions>> regions;
  std::optional<absl::StatusOr<MemoryReport>> memory;
  absl::flat_hash_map<Endpoint, size_t>
      life_of;  // tensor -> memory->tensors index
};

// The analyses of the graph versions hooks were last asked about. Safe to
// share between threads (rule sets that use these hooks are): each caller
// holds the analyses it reads.
class Cache {
 public:
  Cache(AnalysisHookOptions options, DeviceProfile profile)
      : options_(std::move(options)), model_(std::move(profile)) {}

  std::shared_ptr<Analyses> For(const Graph& graph) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<Analyses>& a : recent_) {
      if (a->graph == &graph && a->version == graph.version()) return a;
    }
    auto a = std::make_shared<Analyses>();
    a->graph = &graph;
    a->version = graph.version();
    a->shapes = InferShapes(graph);
    if (recent_.size() >= kRecent) recent_.erase(recent_.begin());
    recent_.push_back(a);
    return a;
  }

  const absl::StatusOr<Regions>& RegionsOf(Analyses& a) {
    std::lock_guard<std::mutex> lock(a.mu);
    if (!a.regions)
      a.regions = FindRegions(*a.graph, a.shapes, options_.loss, options_.seed);
    return *a.regions;
  }

  const absl::StatusOr<MemoryReport>& MemoryOf(Analyses& a) {
    std::lock_guard<std::mutex> lock(a.mu);
    if (!a.memory) {
      MemoryOptions m;
      m.outputs = options_.outputs;
      a.memory = SimulateMemory(*a.graph, a.shapes, m);
      if (a.memory->ok()) {
        for (size_t i = 0; i < (*a.memory)->tensors.size(); ++i) {
          a.life_of[(*a.memory)->tensors[i].tensor] = i;
        }
      }
    }
    return *a.memory;
  }

  const RooflineModel& model() const { return model_; }

 private:
  static constexpr size_t kRecent = 4;  // graphs worked on at once
  AnalysisHookOptions options_;
  RooflineModel model_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Analyses>> recent_;
};

}  // namespace

absl::Status RegisterAnalysisHooks(HookRegistry& r,
                                   const AnalysisHookOptions& options) {
  absl::StatusOr<DeviceProfile> profile = LoadDeviceProfile(options.device);
  if (!profile.ok()) return profile.status();
  auto cache = std::make_shared<Cache>(options, *std::move(profile));
  AddBuiltinHook(
      r, "bytes", {VT::kTensor}, VT::kInt,
      "the tensor's size in bytes, or -1 when unknown",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Int(
            cache->For(ctx.graph)->shapes.at(a[0].tensor).bytes());
      });
  AddBuiltinHook(
      r, "topo_order", {VT::kNode}, VT::kInt,
      "the node's step in the executor-order schedule",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        const absl::StatusOr<MemoryReport>& m = cache->MemoryOf(*an);
        if (!m.ok()) return m.status();
        return Value::Int(m->step_of[a[0].tensor.node]);
      });
  AddBuiltinHook(
      r, "lifetime", {VT::kTensor}, VT::kInt,
      "schedule steps from the tensor's producer to its last reader",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        const absl::StatusOr<MemoryReport>& m = cache->MemoryOf(*an);
        if (!m.ok()) return m.status();
        auto it = an->life_of.find(a[0].tensor);
        if (it == an->life_of.end()) return Value::Int(-1);
        const TensorLife& life = m->tensors[it->second];
        return Value::Int(life.free - life.alloc);
      });
  for (const char* name : {"in_forward", "in_backward"}) {
    bool forward = std::string(name) == "in_forward";
    AddBuiltinHook(
        r, name, {VT::kNode}, VT::kBool,
        forward ? "the loss depends on the node"
                : "the node is downstream of the gradient seed",
        [cache, forward](const HookContext& ctx,
                         Args a) -> absl::StatusOr<Value> {
          std::shared_ptr<Analyses> an = cache->For(ctx.graph);
          const absl::StatusOr<Regions>& r = cache->RegionsOf(*an);
          if (!r.ok()) return r.status();
          NodeId id = a[0].tensor.node;
          return Value::Bool(forward ? r->in_forward(id) : r->in_backward(id));
        });
  }
  AddBuiltinHook(
      r, "cost.flops", {VT::kNode}, VT::kFloat,
      "the node's floating-point operations",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        return Value::Float(
            cache->model().Cost(ctx.graph, an->shapes, a[0].tensor.node).flops);
      });
  AddBuiltinHook(
      r, "cost.time_us", {VT::kNode}, VT::kFloat,
      "the node's estimated time on the device profile, in microseconds",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        return Value::Float(cache->model()
                                .Cost(ctx.graph, an->shapes, a[0].tensor.node)
                                .time_us);
      });
  AddBuiltinHook(
      r, "peak_bytes", {VT::kString}, VT::kInt,
      "the peak live bytes on a device (\"\" for the only or first device)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        const absl::StatusOr<MemoryReport>& m = cache->MemoryOf(*an);
        if (!m.ok()) return m.status();
        for (const DeviceMemory& d : m->devices) {
          if (a[0].s.empty() || d.device == a[0].s)
            return Value::Int(d.peak_bytes);
        }
        return absl::NotFoundError(
            absl::StrCat("no tensors on device `", a[0].s, "`"));
      });
  return absl::OkStatus();
}

}  // namespace graft::analysis
