#include "analysis/hooks.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/analysis_cache.h"
#include "analysis/planner_hooks.h"
#include "analysis/schedule.h"
#include "engine/const_tensor.h"
#include "engine/value.h"

namespace graft::analysis {

namespace {

using VT = ValueType;
using Args = absl::Span<const Value>;

// The readers of tensor `t` in `region` ("", "forward" or "backward"), in
// schedule order.
absl::StatusOr<std::vector<NodeId>> ReadersIn(Cache& cache, Analyses& an,
                                              const Graph& graph, Endpoint t,
                                              const std::string& region) {
  if (!region.empty() && region != "forward" && region != "backward") {
    return absl::InvalidArgumentError(absl::StrCat(
        "region `", region, "`: expected \"forward\", \"backward\" or \"\""));
  }
  const Regions* regions = nullptr;
  if (!region.empty()) {
    const absl::StatusOr<Regions>& r = cache.RegionsOf(an);
    if (!r.ok()) return r.status();
    regions = &*r;
  }
  const absl::StatusOr<MemoryReport>& m = cache.MemoryOf(an);
  if (!m.ok()) return m.status();
  std::vector<NodeId> out;
  for (InputSlot s : graph.node(t.node).consumers(t.port)) {
    if (regions != nullptr &&
        (region == "forward" ? !regions->in_forward(s.node)
                             : !regions->in_backward(s.node)))
      continue;
    out.push_back(s.node);
  }
  std::sort(out.begin(), out.end(), [&](NodeId a, NodeId b) {
    return m->step_of[a] < m->step_of[b] ||
           (m->step_of[a] == m->step_of[b] && a < b);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The analyses of a graph with its schedule, and the step of `node` (when
// one is asked about: an error when it is not scheduled).
struct Scheduled {
  std::shared_ptr<Analyses> an;
  const MemoryReport* m = nullptr;
  int step = -1;
};
absl::StatusOr<Scheduled> ScheduleFor(Cache& cache, const Graph& graph,
                                      NodeId node = kNoNode) {
  Scheduled s;
  s.an = cache.For(graph);
  const absl::StatusOr<MemoryReport>& m = cache.MemoryOf(*s.an);
  if (!m.ok()) return m.status();
  s.m = &*m;
  if (node == kNoNode) return s;
  s.step = m->step_of[node];
  if (s.step < 0) return absl::NotFoundError("the node is not in the schedule");
  return s;
}

// The node at schedule step `step` (clamped to the schedule).
Value AtStep(const MemoryReport& m, int64_t step) {
  step =
      std::clamp<int64_t>(step, 0, static_cast<int64_t>(m.schedule.size()) - 1);
  return Value::NodeRef(m.schedule[step]);
}

void RegisterScheduleHooks(HookRegistry& r, std::shared_ptr<Cache> cache) {
  AddBuiltinHook(
      r, "node_at_step", {VT::kInt}, VT::kNode,
      "the node at a step of the executor-order schedule (as `graft mem` "
      "orders it; 0 is the first)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<Scheduled> s = ScheduleFor(*cache, ctx.graph);
        if (!s.ok()) return s.status();
        int64_t n = static_cast<int64_t>(s->m->schedule.size());
        if (a[0].i < 0 || a[0].i >= n) {
          return absl::OutOfRangeError(absl::StrCat(
              "step ", a[0].i, " is outside the schedule (0..", n - 1, ")"));
        }
        return AtStep(*s->m, a[0].i);
      });
  for (bool first : {true, false}) {
    AddBuiltinHook(
        r, first ? "first_reader" : "last_reader", {VT::kTensor, VT::kString},
        VT::kNode,
        first ? "the reader of a tensor that runs first (in a region: "
                "\"forward\", \"backward\"; \"\": any)"
              : "the reader of a tensor that runs last (in a region: "
                "\"forward\", \"backward\"; \"\": any)",
        [cache, first](const HookContext& ctx,
                       Args a) -> absl::StatusOr<Value> {
          std::shared_ptr<Analyses> an = cache->For(ctx.graph);
          std::string region = a.size() > 1 ? a[1].s : "";
          absl::StatusOr<std::vector<NodeId>> readers =
              ReadersIn(*cache, *an, ctx.graph, a[0].tensor, region);
          if (!readers.ok()) return readers.status();
          if (readers->empty()) {
            return absl::NotFoundError(absl::StrCat(
                "`", ctx.graph.TensorName(a[0].tensor), "` has no reader",
                region.empty() ? ""
                               : absl::StrCat(" in the ", region, " region")));
          }
          return Value::NodeRef(first ? readers->front() : readers->back());
        },
        false, /*optional=*/1);
  }
  AddBuiltinHook(
      r, "steps_before", {VT::kNode, VT::kInt}, VT::kNode,
      "the node `k` schedule steps before a node (the first node when there "
      "are fewer)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<Scheduled> s =
            ScheduleFor(*cache, ctx.graph, a[0].tensor.node);
        if (!s.ok()) return s.status();
        return AtStep(*s->m, s->step - std::max<int64_t>(a[1].i, 0));
      });
  AddBuiltinHook(
      r, "time_before", {VT::kNode, VT::kFloat}, VT::kNode,
      "the node at which the ops scheduled before a node add up to `us` "
      "microseconds of estimated time (the first node when they never do)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<Scheduled> s =
            ScheduleFor(*cache, ctx.graph, a[0].tensor.node);
        if (!s.ok()) return s.status();
        double want = a[1].number(), sum = 0;
        for (int k = s->step - 1; k >= 0; --k) {
          sum += cache->model()
                     .Cost(ctx.graph, s->an->shapes, s->m->schedule[k])
                     .time_us;
          if (sum >= want) return AtStep(*s->m, k);
        }
        return AtStep(*s->m, 0);
      });
  AddBuiltinHook(
      r, "gradient_of", {VT::kNode}, VT::kNode,
      "the gradient op of a forward op: the first scheduled backward op under "
      "`gradients/<name>_grad/` (tf.gradients' scope), else the first "
      "backward op that reads one of its outputs",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        const absl::StatusOr<Regions>& regions = cache->RegionsOf(*an);
        if (!regions.ok()) return regions.status();
        const absl::StatusOr<MemoryReport>& m = cache->MemoryOf(*an);
        if (!m.ok()) return m.status();
        const Node& fwd = ctx.graph.node(a[0].tensor.node);
        std::string scope = absl::StrCat("/", fwd.name(), "_grad/");
        NodeId best = kNoNode;
        auto consider = [&](NodeId id) {
          if (m->step_of[id] >= 0 &&
              (best == kNoNode || m->step_of[id] < m->step_of[best]))
            best = id;
        };
        for (NodeId id : m->schedule) {
          const std::string& name = ctx.graph.node(id).name();
          size_t at = name.find(scope);
          if (regions->in_backward(id) && at != std::string::npos &&
              name.rfind("gradients", 0) == 0 &&
              name.find('/') == at)  // gradients[_N]/<name>_grad/...
            consider(id);
        }
        if (best == kNoNode) {
          for (int p = 0; p < fwd.num_used_ports(); ++p) {
            for (InputSlot s : fwd.consumers(p)) {
              if (regions->in_backward(s.node)) consider(s.node);
            }
          }
        }
        if (best == kNoNode) {
          return absl::NotFoundError(
              absl::StrCat("`", fwd.name(), "` has no gradient op"));
        }
        return Value::NodeRef(best);
      });
}

// A constant applied elementwise to the output of a linear op `op` (Conv*,
// DepthwiseConv2dNative, MatMul, Gemm), or to `t`, a view of that output
// that keeps its channels as the last axis (a Squeeze, a Reshape), as one
// value per output channel (ChannelValues), or why it is not one.
absl::StatusOr<ConstTensor> ChannelValuesOf(
    const Graph& graph, const ConstTensor& c, NodeId op_id, Endpoint t,
    const std::function<const TensorInfo&(Endpoint)>& shape_of) {
  const Node& op = graph.node(op_id);
  if (op.num_inputs() < 2)
    return absl::InvalidArgumentError(absl::StrCat("`", op.name(), "` has no filter"));
  absl::StatusOr<ConstTensor> filter = ConstantOf(graph, op.input(1), /*deferred_ok=*/true);
  if (!filter.ok()) return filter.status();
  absl::StatusOr<int64_t> channels = OutputChannelCount(*filter, op.op(), TransposedFilter(op));
  if (!channels.ok()) return channels.status();
  // The output's rank and channel axis.
  const std::string& kind = op.op();
  int rank = 2, axis = 1;
  if (kind == "Conv" || kind == "ConvTranspose") {  // ONNX: NCHW...
    rank = static_cast<int>(filter->shape.size());
  } else if (kind == "MatMul") {  // ONNX's may be batched
    const TensorInfo& info = shape_of(Endpoint{op_id, 0});
    rank = info.known_rank ? static_cast<int>(info.dims.size()) : 2;
    axis = rank - 1;
  } else if (kind != "Gemm") {  // TensorFlow's convolutions
    rank = kind == "Conv3D" ? 5 : 4;
    const tf::AttrValue* format = op.attr("data_format");
    const bool channels_first = format != nullptr && format->s().rfind("NC", 0) == 0;
    axis = channels_first ? 1 : rank - 1;
  }
  if (t != Endpoint{op_id, 0}) {
    const TensorInfo& view = shape_of(t);
    if (axis != rank - 1 || !view.known_rank || view.dims.empty() ||
        view.dims.back() != *channels) {
      return absl::InvalidArgumentError(absl::StrCat(
          "`", graph.TensorName(t), "` does not keep the ", *channels,
          " channels of `", op.name(), "` as its last axis"));
    }
    rank = static_cast<int>(view.dims.size());
    axis = rank - 1;
  }
  return ChannelValues(c, *channels, rank, axis);
}

// What shape inference finds for a tensor of the graph a hook is called on.
// Dimension i of a shape (negative: from the end), or -1.
int64_t DimAt(const TensorInfo& t, int64_t i) {
  const int64_t rank = static_cast<int64_t>(t.dims.size());
  if (!t.known_rank || i < -rank || i >= rank) return -1;
  return t.dims[i < 0 ? i + rank : i];
}

auto ShapeOf(std::shared_ptr<Cache> cache) {
  return [cache](const HookContext& ctx, const Value& tensor) -> const TensorInfo& {
    return cache->For(ctx.graph)->shapes.at(tensor.tensor);
  };
}

// The values of shape arithmetic as shape inference computes them.
void RegisterShapeValueHooks(HookRegistry& r, std::shared_ptr<Cache> cache) {
  auto shape_of = ShapeOf(cache);
  AddBuiltinHook(
      r, "inferred_value", {VT::kTensor}, VT::kList,
      "the values of a small integer tensor (shape arithmetic: Shape, "
      "Gather, Concat, ...) as shape inference computes them, flattened, "
      "when every one is a known number; [] otherwise",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const TensorInfo& t = shape_of(ctx, a[0]);
        std::vector<Value> out;
        if (!t.value.has_value() || t.value->empty()) return Value::List({});
        for (int64_t v : *t.value) {
          if (IsSymbolicDim(v)) return Value::List({});
          out.push_back(Value::Int(v));
        }
        return Value::List(std::move(out));
      });
  AddBuiltinHook(
      r, "view_target", {VT::kTensor, VT::kTensor}, VT::kList,
      "view_target(x, t): the Reshape target t, computed when the graph runs "
      "(Shape, Gather, Concat), as constants that view x the same with "
      "allowzero 0: its known sizes, 0 where it copies x's dimension at the "
      "same place, -1 for one size left to the element count; [] where "
      "shape inference does not show that (or t holds a literal 0)",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const TensorInfo &x = shape_of(ctx, a[0]), &t = shape_of(ctx, a[1]);
        std::vector<Value> out;
        if (!t.value.has_value() || !x.known_rank) return Value::List({});
        const std::vector<int64_t>& v = *t.value;
        bool rest = std::count(v.begin(), v.end(), -1) > 0;
        for (size_t i = 0; i < v.size(); ++i) {
          int64_t d = v[i];
          if (IsSymbolicDim(d)) {
            if (i < x.dims.size() && x.dims[i] == d) {
              d = 0;
            } else if (!rest) {
              d = -1;  // the one size the others and the element count decide
              rest = true;
            } else {
              return Value::List({});
            }
          } else if (d < -1 || d == 0) {  // a literal 0 reads as allowzero says: left alone
            return Value::List({});
          }
          out.push_back(Value::Int(d));
        }
        return Value::List(std::move(out));
      });
}

// What shape inference knows of a tensor.
void RegisterShapeHooks(HookRegistry& r, std::shared_ptr<Cache> cache) {
  auto shape_of = ShapeOf(cache);
  AddBuiltinHook(
      r, "bytes", {VT::kTensor}, VT::kInt,
      "the tensor's size in bytes, or -1 when unknown",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Int(shape_of(ctx, a[0]).bytes());
      });
  AddBuiltinHook(
      r, "inferred_rank", {VT::kTensor}, VT::kInt,
      "the tensor's rank as shape inference finds it (through the graph "
      "from its inputs, not only stated shapes), or -1 when unknown",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const TensorInfo& t = shape_of(ctx, a[0]);
        return Value::Int(t.known_rank ? static_cast<int64_t>(t.dims.size()) : -1);
      });
  AddBuiltinHook(
      r, "reduces_last_axis", {VT::kNode}, VT::kBool,
      "a Reduce* node reduces exactly the last axis of its input and keeps "
      "it (keepdims 1): axes [-1], or [rank - 1] by inferred rank, from its "
      "`axes` attr or (opset 18 on) its constant axes input; so does a "
      "GlobalAveragePool over an input of rank 3 (tf2onnx's mean over the "
      "last axis)",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& node = ctx.graph.node(a[0].tensor.node);
        if (node.num_inputs() < 1) return Value::Bool(false);
        if (node.op() == "GlobalAveragePool") {
          const TensorInfo& in = shape_of(ctx, Value::Tensor(node.input(0)));
          return Value::Bool(in.known_rank && in.dims.size() == 3);
        }
        const tf::AttrValue* keep = node.attr("keepdims");
        if (keep != nullptr && keep->i() != 1) return Value::Bool(false);
        std::vector<int64_t> axes;
        if (const tf::AttrValue* attr = node.attr("axes"); attr != nullptr) {
          axes.assign(attr->list().i().begin(), attr->list().i().end());
        } else if (node.num_inputs() >= 2) {
          absl::StatusOr<ConstTensor> c = ConstantOf(ctx.graph, node.input(1));
          if (!c.ok()) return Value::Bool(false);
          for (double v : Materialize(*c).values) axes.push_back(static_cast<int64_t>(v));
        }
        if (axes.size() != 1) return Value::Bool(false);
        const TensorInfo& in = shape_of(ctx, Value::Tensor(node.input(0)));
        return Value::Bool(axes[0] == -1 ||
                           (in.known_rank && axes[0] == static_cast<int64_t>(in.dims.size()) - 1));
      });
  AddBuiltinHook(
      r, "inferred_shape", {VT::kTensor}, VT::kList,
      "the tensor's dimensions as shape inference finds them (-1 where "
      "unknown; [] when the rank is unknown: inferred_rank says)",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::vector<Value> dims;
        for (int64_t d : shape_of(ctx, a[0]).dims) dims.push_back(Value::Int(d < 0 ? -1 : d));
        return Value::List(std::move(dims));
      });
  AddBuiltinHook(
      r, "known_shape", {VT::kTensor}, VT::kBool,
      "shape inference knows the tensor's rank and every dimension",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(shape_of(ctx, a[0]).fully_known());
      });
  AddBuiltinHook(
      r, "same_shape", {VT::kTensor, VT::kTensor}, VT::kBool,
      "shape inference shows both tensors' shapes equal: every dimension "
      "known and the same, or the same symbol (an ONNX input's `batch`)",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const TensorInfo &x = shape_of(ctx, a[0]), &y = shape_of(ctx, a[1]);
        bool decided = x.known_rank && y.known_rank &&
                       std::none_of(x.dims.begin(), x.dims.end(),
                                    [](int64_t d) { return d == -1; });
        return Value::Bool(decided && x.dims == y.dims);
      });
  for (const char* name : {"per_channel", "channel_values"}) {
    const bool test = std::string(name) == "per_channel";
    AddBuiltinHook(
        r, name, {VT::kConst, VT::kNode, VT::kTensor},
        test ? VT::kBool : VT::kConst,
        test ? "per_channel(c, op, t): constant c applied elementwise to t, "
               "the output of linear op `op` (or a view of it keeping its "
               "channels last), varies only along the output channels and "
               "leaves t's shape as it is"
             : "channel_values(c, op, t): that constant as one value per "
               "output channel of `op` (an error where per_channel is false)",
        [shape_of, test](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          absl::StatusOr<ConstTensor> c = ToConstant(ctx.graph, a[0]);
          if (!c.ok()) return test ? absl::StatusOr<Value>(Value::Bool(false)) : c.status();
          absl::StatusOr<ConstTensor> v = ChannelValuesOf(
              ctx.graph, *c, a[1].tensor.node, a[2].tensor,
              [&](Endpoint e) -> const TensorInfo& { return shape_of(ctx, Value::Tensor(e)); });
          if (test) return Value::Bool(v.ok());
          if (!v.ok()) return v.status();
          return Value::Constant(*std::move(v));
        });
  }
  AddBuiltinHook(
      r, "same_dim", {VT::kTensor, VT::kInt, VT::kTensor, VT::kInt}, VT::kBool,
      "dimension i of a and dimension j of b are equal as shape inference "
      "shows: known and the same, or the same symbol (negative: from the end)",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const int64_t x = DimAt(shape_of(ctx, a[0]), a[1].i),
                      y = DimAt(shape_of(ctx, a[2]), a[3].i);
        return Value::Bool(x != -1 && x == y);
      });
  AddBuiltinHook(
      r, "meets_dim", {VT::kTensor, VT::kInt, VT::kTensor, VT::kInt}, VT::kBool,
      "dimension i of a equals dimension j of b wherever the graph runs, for "
      "a and b that a broadcasting op reads together: the same (same_dim), "
      "or a's a prefix of a longer length sliced to b's (a buffer of "
      "positions or a causal mask cut to the sequence, min(n, b's): a "
      "broadcast meets b's only where they are equal)",
      [shape_of](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const int64_t x = DimAt(shape_of(ctx, a[0]), a[1].i),
                      y = DimAt(shape_of(ctx, a[2]), a[3].i);
        return Value::Bool(x != -1 && (x == y || IsPrefixSlicedTo(x, y)));
      });
}

}  // namespace

absl::Status RegisterAnalysisHooks(HookRegistry& r,
                                   const AnalysisHookOptions& options) {
  absl::StatusOr<DeviceProfile> profile = LoadDeviceProfile(options.device);
  if (!profile.ok()) return profile.status();
  auto cache = std::make_shared<Cache>(options, *std::move(profile));
  RegisterShapeHooks(r, cache);
  RegisterShapeValueHooks(r, cache);
  AddBuiltinHook(
      r, "execution_order", {}, VT::kList,
      "every node in the order TensorFlow's executor runs them (the "
      "schedule graft mem prints): each after what it reads and waits for, "
      "TF1 loops cut at their back edges",
      [](const HookContext& ctx, Args) -> absl::StatusOr<Value> {
        absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(ctx.graph);
        if (!order.ok()) return order.status();
        return NodeList(*order);
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
  AddBuiltinHook(
      r, "backward_readers", {VT::kAny}, VT::kList,
      "the backward ops that read a tensor (or any tensor of a list), at any "
      "input position (each once, in id order)",
      [cache](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        std::shared_ptr<Analyses> an = cache->For(ctx.graph);
        const absl::StatusOr<Regions>& regions = cache->RegionsOf(*an);
        if (!regions.ok()) return regions.status();
        std::vector<Endpoint> tensors;
        if (a[0].type == VT::kList) {
          for (const Value& v : a[0].list) tensors.push_back(v.tensor);
        } else {
          tensors.push_back(a[0].tensor);
        }
        std::vector<NodeId> seen;
        for (Endpoint t : tensors) {
          for (InputSlot s : ctx.graph.node(t.node).consumers(t.port)) {
            if (regions->in_backward(s.node)) seen.push_back(s.node);
          }
        }
        std::sort(seen.begin(), seen.end());
        seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
        std::vector<Value> out;
        for (NodeId id : seen) out.push_back(Value::NodeRef(id));
        return Value::List(std::move(out));
      });
  RegisterScheduleHooks(r, cache);
  RegisterPlannerHooks(r, cache);
  return absl::OkStatus();
}

}  // namespace graft::analysis
