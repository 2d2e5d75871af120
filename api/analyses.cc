#include "api/analyses.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/cost.h"
#include "analysis/memory.h"
#include "analysis/partition.h"
#include "analysis/regions.h"
#include "analysis/schedule.h"
#include "analysis/shapes.h"
#include "api/graft.h"
#include "api/internal.h"

namespace graft::api {

namespace {

std::string Region(const absl::StatusOr<analysis::Regions>& r, NodeId id) {
  if (!r.ok()) return "";
  return r->in_forward(id)    ? "forward"
         : r->in_backward(id) ? "backward"
                              : "other";
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The shapes of `graph` with the inputs' shapes the settings give. An
// error when they are bad, or when nodes do not match their op and
// skip_invalid_nodes is not set (with it, they go to `invalid`).
Result<analysis::ShapeMap> InferWithInputShapes(
    const std::string& model, const Graph& graph,
    const AnalysisSettings& settings, std::vector<std::string>* invalid) {
  absl::StatusOr<analysis::ShapeOptions> options =
      InputShapes(settings.input_shapes, settings.batch, &graph);
  if (!options.ok())
    return Error::Input(
        absl::StrCat(model, ": error: ", options.status().message()));
  analysis::ShapeMap shapes = analysis::InferShapes(graph, *options);
  absl::Status signatures = shapes.CheckSignatures();
  if (signatures.ok()) return shapes;
  if (!settings.skip_invalid_nodes) {
    return Error::Input(absl::StrCat(
        model, ": error: ", signatures.message(),
        "\n  (analyses read only nodes that match their op; "
        "--skip-invalid-nodes leaves these out)"));
  }
  for (const auto& [id, message] : shapes.mismatched())
    invalid->push_back(graph.node(id).name());
  return shapes;
}

}  // namespace

Result<MemReport> Mem(const Model& model, const AnalysisSettings& settings,
                      const std::vector<std::string>& outputs) {
  Result<Graph> graph = Load(model, /*freeze_by_default=*/true);
  if (!graph.ok()) return graph.error();
  MemReport out;
  Result<analysis::ShapeMap> shapes =
      InferWithInputShapes(model.path, *graph, settings, &out.invalid_nodes);
  if (!shapes.ok()) return shapes.error();
  std::vector<Endpoint> unknown = shapes->Unknown(*graph);
  bool want_regions = !settings.loss.empty() || !settings.seed.empty();
  absl::StatusOr<analysis::Regions> regions =
      analysis::FindRegions(*graph, *shapes, settings.loss, settings.seed);
  if (!regions.ok() && want_regions)
    return Error::Input(
        absl::StrCat(model.path, ": error: ", regions.status().message()));
  absl::StatusOr<analysis::CpuKernels> kernels =
      analysis::ParseCpuKernels(settings.cpu_kernels);
  if (!kernels.ok())
    return Error::Usage(absl::StrCat("error: ", kernels.status().message()));
  analysis::MemoryOptions memory_options;
  memory_options.outputs = outputs;
  memory_options.default_device = settings.default_device;
  memory_options.cpu_kernels = *kernels;
  memory_options.threads = settings.threads;
  absl::StatusOr<analysis::MemoryReport> m =
      analysis::SimulateMemory(*graph, *shapes, memory_options);
  if (!m.ok())
    return Error::Input(
        absl::StrCat(model.path, ": error: ", m.status().message()));
  out.nodes = graph->num_nodes();
  out.schedule_steps = static_cast<int64_t>(m->schedule.size());
  out.schedule =
      absl::StrCat(
          m->threads > 1
              ? absl::StrCat("TensorFlow's executor order, ", m->threads,
                             " threads (inexpensive ops when ready, the "
                             "others from a stack, siblings the thread pool "
                             "runs at once together")
              : "one op at a time, in TensorFlow's executor order "
                "(inexpensive ops when ready, the others from a stack",
          ": analysis/schedule.h), with the scratch of ",
          analysis::CpuKernelsName(*kernels), " CPU kernels",
          *kernels == analysis::CpuKernels::kEigen
              ? " (ops with scratch made ready together run at once, one per "
                "thread)"
              : "",
          "; with Grappler on, TensorFlow runs the graph graft.tf.grappler "
          "gives (tests/interop/tf_memory.py --report measures both)");
  out.unknown_sizes = m->unknown_tensors;
  for (Endpoint t : unknown) {
    out.unknown_shapes.push_back(absl::StrCat(graph->TensorName(t), " (",
                                              graph->node(t.node).op(), ")"));
  }
  out.regions_found = regions.ok();
  if (regions.ok()) {
    out.loss = graph->node(regions->loss).name();
    out.seed = graph->node(regions->seed).name();
    out.saved_for_backward =
        static_cast<int64_t>(regions->backward_consumers.size());
    graph->ForEachNode([&](const Node& n) {
      out.forward_ops += regions->in_forward(n.id());
      out.backward_ops += regions->in_backward(n.id());
    });
  } else {
    out.regions_note = std::string(regions.status().message());
  }
  graph->ForEachNode([&](const Node& n) {
    if (n.op() == "Placeholder") {
      const analysis::TensorInfo& t = shapes->at({n.id(), 0});
      out.unknown_input = out.unknown_input || !t.fully_known();
      out.inputs.emplace_back(n.name(), t.ShapeString());
    }
    for (int p = 0; p < shapes->num_outputs(n.id()); ++p) {
      const analysis::TensorInfo& t = shapes->at({n.id(), p});
      out.tensors.push_back({graph->TensorName({n.id(), p}), t.ShapeString(),
                             Region(regions, n.id()), t.bytes()});
    }
    out.node_steps.push_back(
        {n.name(), Region(regions, n.id()), m->step_of[n.id()]});
  });
  for (const analysis::DeviceMemory& d : m->devices) {
    MemDevice device;
    device.device = d.device;
    device.peak_at = graph->node(m->schedule[d.peak_step]).name();
    device.peak_bytes = d.peak_bytes;
    device.peak_step = d.peak_step;
    device.persistent_bytes = d.persistent_bytes;
    device.scratch_at_peak = d.scratch_at_peak;
    if (d.scratch_node != kNoNode)
      device.scratch_node = graph->node(d.scratch_node).name();
    for (Endpoint t : d.live_at_peak) {
      const analysis::TensorInfo& info = shapes->at(t);
      device.live_at_peak.push_back({graph->TensorName(t), info.ShapeString(),
                                     Region(regions, t.node), info.bytes()});
    }
    out.devices.push_back(std::move(device));
  }
  return out;
}

std::string MemJson(const MemReport& r) {
  // (the count as num_nodes: "nodes" is each node's step and region below)
  std::string out = absl::StrCat("{\"num_nodes\": ", r.nodes,
                                 ", \"schedule\": ", JsonString(r.schedule),
                                 ", \"unknown_shapes\": ",
                                 r.unknown_shapes.size(),
                                 ", \"unknown_sizes\": ", r.unknown_sizes);
  if (r.regions_found) {
    absl::StrAppend(&out, ", \"loss\": ", JsonString(r.loss),
                    ", \"seed\": ", JsonString(r.seed),
                    ", \"forward_ops\": ", r.forward_ops,
                    ", \"backward_ops\": ", r.backward_ops,
                    ", \"saved_for_backward\": ", r.saved_for_backward);
  }
  std::vector<std::string> parts;
  for (const MemTensor& t : r.tensors) {
    parts.push_back(absl::StrCat(JsonString(t.name), ": {\"shape\": ",
                                 JsonString(t.shape), ", \"bytes\": ", t.bytes,
                                 "}"));
  }
  absl::StrAppend(&out, ", \"tensors\": {", absl::StrJoin(parts, ", "), "}");
  parts.clear();
  for (const MemNode& n : r.node_steps) {
    parts.push_back(absl::StrCat(JsonString(n.name), ": {\"step\": ", n.step,
                                 ", \"region\": ", JsonString(n.region), "}"));
  }
  absl::StrAppend(&out, ", \"nodes\": {", absl::StrJoin(parts, ", "), "}");
  parts.clear();
  for (const MemDevice& d : r.devices) {
    std::vector<std::string> live;
    for (const MemTensor& t : d.live_at_peak) live.push_back(JsonString(t.name));
    parts.push_back(absl::StrCat(
        "{\"device\": ", JsonString(d.device), ", \"peak_bytes\": ",
        d.peak_bytes, ", \"peak_at\": ", JsonString(d.peak_at),
        ", \"persistent_bytes\": ", d.persistent_bytes,
        ", \"scratch_at_peak\": ", d.scratch_at_peak, ", \"scratch_node\": ",
        JsonString(d.scratch_node), ", \"live_at_peak\": [",
        absl::StrJoin(live, ", "), "]}"));
  }
  absl::StrAppend(&out, ", \"devices\": [", absl::StrJoin(parts, ", "),
                  "]}\n");
  return out;
}

Result<CostReport> Cost(const Model& model, const AnalysisSettings& settings) {
  absl::StatusOr<analysis::DeviceProfile> profile =
      analysis::LoadDeviceProfile(settings.device);
  if (!profile.ok()) return Error::From(profile.status());
  Result<Graph> graph = Load(model, /*freeze_by_default=*/true);
  if (!graph.ok()) return graph.error();
  CostReport out;
  Result<analysis::ShapeMap> shapes =
      InferWithInputShapes(model.path, *graph, settings, &out.invalid_nodes);
  if (!shapes.ok()) return shapes.error();
  analysis::RooflineModel roofline(*profile);
  absl::StatusOr<analysis::Regions> regions =
      analysis::FindRegions(*graph, *shapes);
  out.device = profile->name;
  out.measured_shapes = static_cast<int>(profile->measured_us.size());
  out.nodes = graph->num_nodes();
  out.regions_found = regions.ok();
  graph->ForEachNode([&](const Node& n) {
    analysis::NodeCost c = roofline.Cost(*graph, *shapes, n.id());
    out.flops += c.flops;
    out.bytes += c.bytes_read + c.bytes_written;
    out.time_us += c.time_us;
    out.unknown_ops += c.known ? 0 : 1;
    if (regions.ok()) out.time_by_region[Region(regions, n.id())] += c.time_us;
    out.ops.push_back({n.name(), n.op(), c.bound, c.flops,
                       c.bytes_read + c.bytes_written, c.time_us, c.known});
  });
  std::stable_sort(out.ops.begin(), out.ops.end(),
                   [](const CostRow& a, const CostRow& b) {
                     return a.time_us > b.time_us;
                   });
  // The step in schedule order, copies between devices overlapped.
  absl::StatusOr<std::vector<NodeId>> order = analysis::ExecutorOrder(*graph);
  if (order.ok()) {
    analysis::StepTime step = analysis::EstimateStepTime(
        *graph, *shapes, roofline, *order, settings.default_device);
    out.copies = step.copies;
    out.copy_us = step.copy_us;
    out.step_overlapped_us = step.overlapped_us;
    out.step_serial_us = step.serial_us;
  }
  return out;
}

namespace {

// A count (FLOPs, bytes) in full: an integral value as an integer, not
// rounded to six digits as a double prints.
std::string JsonCount(double v) {
  if (std::isfinite(v) && std::abs(v) < 9007199254740992.0 && v == std::floor(v))
    return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.17g", v);
}

}  // namespace

std::string CostJson(const CostReport& r) {
  std::vector<std::string> ops;
  for (const CostRow& row : r.ops) {
    ops.push_back(absl::StrCat(
        "{\"node\": ", JsonString(row.node), ", \"op\": ", JsonString(row.op),
        ", \"flops\": ", JsonCount(row.flops), ", \"bytes\": ", JsonCount(row.bytes),
        ", \"time_us\": ", row.time_us, ", \"bound\": ", JsonString(row.bound),
        "}"));
  }
  return absl::StrCat(
      "{\"device\": ", JsonString(r.device), ", \"flops\": ", JsonCount(r.flops),
      ", \"bytes\": ", JsonCount(r.bytes), ", \"time_us\": ", r.time_us,
      ", \"unknown_ops\": ", r.unknown_ops, ", \"copies\": ", r.copies,
      ", \"copy_us\": ", r.copy_us,
      ", \"step_overlapped_us\": ", r.step_overlapped_us, ", \"ops\": [",
      absl::StrJoin(ops, ", "), "]}\n");
}

namespace {

int64_t PeakOf(const Graph& graph, const analysis::ShapeOptions& shapes,
               const analysis::MemoryOptions& options) {
  absl::StatusOr<analysis::MemoryReport> m = analysis::SimulateMemory(
      graph, analysis::InferShapes(graph, shapes), options);
  if (!m.ok()) return -1;
  int64_t peak = 0;
  for (const analysis::DeviceMemory& d : m->devices)
    peak = std::max(peak, d.peak_bytes);
  return peak;
}

}  // namespace

absl::StatusOr<analysis::ShapeOptions> InputShapes(
    const std::vector<std::string>& input_shapes, int64_t batch,
    const Graph* graph) {
  analysis::ShapeOptions options;
  options.batch = batch;
  for (const std::string& text : input_shapes) {
    absl::Status s = analysis::ParseInputShape(text, &options);
    if (!s.ok()) return s;
  }
  if (graph != nullptr) {
    absl::Status s = analysis::CheckInputShapes(*graph, options);
    if (!s.ok()) return s;
  }
  return options;
}

bool AddRecomputation(const Graph& before, const Graph& after,
                      const analysis::ShapeOptions& shapes,
                      const analysis::MemoryOptions& memory,
                      const std::string& device, report::Recomputation* out) {
  std::vector<NodeId> copies;
  after.ForEachNode([&](const Node& n) {
    if (Recomputes(after, n)) copies.push_back(n.id());
  });
  if (copies.empty()) return false;
  absl::StatusOr<analysis::DeviceProfile> profile =
      analysis::LoadDeviceProfile(device);
  if (profile.ok()) {
    analysis::RooflineModel model(*profile);
    analysis::ShapeMap map = analysis::InferShapes(after, shapes);
    double flops = 0;
    for (NodeId id : copies) flops += model.Cost(after, map, id).flops;
    out->set_flops(flops);
    out->set_device(profile->name);
  }
  out->set_ops(static_cast<int64_t>(copies.size()));
  out->set_peak_bytes_before(PeakOf(before, shapes, memory));
  out->set_peak_bytes_after(PeakOf(after, shapes, memory));
  return true;
}

bool AddStepTimes(const Graph& before, const Graph& after,
                  const analysis::ShapeOptions& shapes,
                  const std::string& default_device, const std::string& device,
                  report::StepTimes* out) {
  absl::StatusOr<analysis::DeviceProfile> profile =
      analysis::LoadDeviceProfile(device);
  if (!profile.ok()) return false;
  analysis::RooflineModel model(*profile);
  auto estimate = [&](const Graph& g) -> std::optional<analysis::StepTime> {
    absl::StatusOr<std::vector<NodeId>> order = analysis::ExecutorOrder(g);
    if (!order.ok()) return std::nullopt;
    return analysis::EstimateStepTime(g, analysis::InferShapes(g, shapes),
                                      model, *order, default_device);
  };
  std::optional<analysis::StepTime> b = estimate(before), a = estimate(after);
  if (!b || !a || a->copies == 0) return false;
  out->set_device(profile->name);
  out->set_copies(a->copies);
  out->set_copy_us(a->copy_us);
  out->set_before_us(b->overlapped_us);
  out->set_after_us(a->overlapped_us);
  return true;
}

bool CopiesBetweenDevices(const Graph& graph,
                          const std::string& default_device) {
  bool any = false;
  graph.ForEachNode([&](const Node& n) {
    if (any || n.op() != "Identity" || n.num_inputs() != 1 ||
        !n.input(0).valid())
      return;
    const std::string& in = graph.node(n.input(0).node).device();
    const std::string& here = n.device();
    any = (in.empty() ? default_device : in) !=
          (here.empty() ? default_device : here);
  });
  return any;
}

Result<PartitionReport> Partition(const Model& model,
                                  const PartitionSettings& settings) {
  Result<Graph> graph = Load(model, /*freeze_by_default=*/false);
  if (!graph.ok()) return graph.error();
  analysis::ShapeMap shapes = analysis::InferShapes(*graph);
  analysis::PartitionOptions options;
  options.backward_inputs = settings.backward_inputs;
  options.backward_ops = settings.backward_ops;
  options.pinned = settings.pinned;
  options.free = settings.free;
  options.functional = settings.functional;
  options.swappable = settings.swappable;
  options.budget_fraction = settings.budget_fraction;
  options.budget_bytes = settings.budget_bytes;
  absl::StatusOr<analysis::PartitionPlan> plan =
      analysis::PlanPartition(*graph, shapes, options);
  if (!plan.ok()) {
    return Error::Input(
        absl::StrCat(model.path, ": error: ", plan.status().message()));
  }
  PartitionReport out;
  for (Endpoint t : plan->saved)
    out.saved.push_back(absl::StrCat(graph->node(t.node).name(), ":", t.port));
  for (Endpoint t : plan->swapped)
    out.swapped.push_back(absl::StrCat(graph->node(t.node).name(), ":", t.port));
  for (NodeId id : plan->recomputed)
    out.recomputed.push_back(graph->node(id).name());
  out.saved_bytes = plan->saved_bytes;
  out.swapped_bytes = plan->swapped_bytes;
  out.default_bytes = plan->default_bytes;
  out.least_bytes = plan->least_bytes;
  out.budget_bytes = plan->budget_bytes;
  out.budget_met = plan->budget_met;
  out.recomputed_flops = plan->recomputed_flops;
  out.cuts = plan->cuts;
  return out;
}

std::string PartitionJson(const PartitionReport& r) {
  auto strings = [](const std::vector<std::string>& v) {
    std::vector<std::string> quoted;
    for (const std::string& s : v) quoted.push_back(JsonString(s));
    return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
  };
  return absl::StrCat(
      "{\"saved\": ", strings(r.saved), ", \"recomputed\": ",
      strings(r.recomputed), ", \"swapped\": ", strings(r.swapped),
      ", \"saved_bytes\": ", r.saved_bytes, ", \"swapped_bytes\": ", r.swapped_bytes,
      ", \"default_bytes\": ", r.default_bytes, ", \"least_bytes\": ",
      r.least_bytes, ", \"budget_bytes\": ", r.budget_bytes,
      ", \"budget_met\": ", r.budget_met ? "true" : "false",
      ", \"recomputed_flops\": ", JsonCount(r.recomputed_flops),
      ", \"cuts\": ", r.cuts, "}");
}

}  // namespace graft::api
