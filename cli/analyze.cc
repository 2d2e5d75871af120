// graft mem and graft cost: the training-graph analyses and the cost model
// from the command line.
#include <algorithm>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/cost.h"
#include "analysis/memory.h"
#include "analysis/regions.h"
#include "analysis/schedule.h"
#include "analysis/shapes.h"
#include "cli/commands.h"

namespace graft::cli {

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
    out += c;
  }
  return out + "\"";
}

// The shapes of `graph` with the inputs' shapes the command line gives;
// false (said on stderr) when they are bad, or when nodes do not match
// their op and `skip_invalid` is not set (with it, they are listed).
bool InferWithInputShapes(const std::string& model, const Graph& graph,
                          const std::vector<std::string>& input_shapes,
                          int64_t batch, bool skip_invalid,
                          analysis::ShapeMap* shapes) {
  absl::StatusOr<analysis::ShapeOptions> options =
      InputShapes(input_shapes, batch, &graph);
  if (!options.ok()) {
    std::cerr << model << ": error: " << options.status().message() << "\n";
    return false;
  }
  *shapes = analysis::InferShapes(graph, *options);
  absl::Status signatures = shapes->CheckSignatures();
  if (signatures.ok()) return true;
  if (!skip_invalid) {
    std::cerr << model << ": error: " << signatures.message()
              << "\n  (analyses read only nodes that match their op; "
                 "--skip-invalid-nodes leaves these out)\n";
    return false;
  }
  std::vector<std::string> names;
  for (const auto& [id, message] : shapes->mismatched())
    names.push_back(absl::StrCat("`", graph.node(id).name(), "`"));
  std::cerr << model << ": warning: " << names.size()
            << " node(s) do not match their op; their outputs are unknown: "
            << absl::StrJoin(names, ", ") << "\n";
  return true;
}

}  // namespace

int RunMem(const MemOptions& options) {
  absl::StatusOr<Graph> graph = LoadGraph(options.model);
  if (!graph.ok()) {
    std::cerr << "mem: " << graph.status().message() << "\n";
    return kExitFailure;
  }
  analysis::ShapeMap shapes;
  if (!InferWithInputShapes(options.model, *graph, options.input_shapes,
                            options.batch, options.skip_invalid_nodes, &shapes))
    return kExitFailure;
  std::vector<Endpoint> unknown = shapes.Unknown(*graph);
  bool want_regions = !options.loss.empty() || !options.seed.empty();
  absl::StatusOr<analysis::Regions> regions =
      analysis::FindRegions(*graph, shapes, options.loss, options.seed);
  if (!regions.ok() && want_regions) {
    std::cerr << options.model << ": error: " << regions.status().message()
              << "\n";
    return kExitFailure;
  }
  analysis::MemoryOptions memory_options;
  memory_options.outputs = options.outputs;
  memory_options.default_device = options.default_device;
  absl::StatusOr<analysis::MemoryReport> m =
      analysis::SimulateMemory(*graph, shapes, memory_options);
  if (!m.ok()) {
    std::cerr << options.model << ": error: " << m.status().message() << "\n";
    return kExitFailure;
  }
  int forward = 0, backward = 0;
  if (regions.ok()) {
    graph->ForEachNode([&](const Node& n) {
      forward += regions->in_forward(n.id());
      backward += regions->in_backward(n.id());
    });
  }
  if (options.json) {
    std::cout << "{\"nodes\": " << graph->num_nodes()
              << ", \"unknown_shapes\": " << unknown.size()
              << ", \"unknown_sizes\": " << m->unknown_tensors;
    if (regions.ok()) {
      std::cout << ", \"loss\": "
                << JsonString(graph->node(regions->loss).name())
                << ", \"seed\": "
                << JsonString(graph->node(regions->seed).name())
                << ", \"forward_ops\": " << forward
                << ", \"backward_ops\": " << backward
                << ", \"saved_for_backward\": "
                << regions->backward_consumers.size();
    }
    std::cout << ", \"tensors\": {";
    bool first = true;
    graph->ForEachNode([&](const Node& n) {
      for (int p = 0; p < shapes.num_outputs(n.id()); ++p) {
        const analysis::TensorInfo& t = shapes.at({n.id(), p});
        std::cout << (first ? "" : ", ")
                  << JsonString(graph->TensorName({n.id(), p}))
                  << ": {\"shape\": " << JsonString(t.ShapeString())
                  << ", \"bytes\": " << t.bytes() << "}";
        first = false;
      }
    });
    std::cout << "}, \"nodes\": {";
    first = true;
    graph->ForEachNode([&](const Node& n) {
      std::cout << (first ? "" : ", ") << JsonString(n.name())
                << ": {\"step\": " << m->step_of[n.id()]
                << ", \"region\": " << JsonString(Region(regions, n.id()))
                << "}";
      first = false;
    });
    std::cout << "}, \"devices\": [";
    for (size_t i = 0; i < m->devices.size(); ++i) {
      const analysis::DeviceMemory& d = m->devices[i];
      std::vector<std::string> live;
      for (Endpoint t : d.live_at_peak)
        live.push_back(JsonString(graph->TensorName(t)));
      std::cout << (i ? ", " : "") << "{\"device\": " << JsonString(d.device)
                << ", \"peak_bytes\": " << d.peak_bytes << ", \"peak_at\": "
                << JsonString(graph->node(m->schedule[d.peak_step]).name())
                << ", \"persistent_bytes\": " << d.persistent_bytes
                << ", \"live_at_peak\": [" << absl::StrJoin(live, ", ") << "]}";
    }
    std::cout << "]}\n";
    return kExitOk;
  }
  std::cout << options.model << ": " << graph->num_nodes()
            << " nodes, schedule of " << m->schedule.size() << " steps\n";
  std::cout << "shapes: "
            << (unknown.empty() ? "all known"
                                : absl::StrCat(unknown.size(),
                                               " tensor(s) not fully known"));
  if (!unknown.empty()) {
    std::vector<std::string> names;
    for (size_t i = 0; i < unknown.size() && i < 5; ++i) {
      names.push_back(absl::StrCat(graph->TensorName(unknown[i]), " (",
                                   graph->node(unknown[i].node).op(), ")"));
    }
    std::cout << ": " << absl::StrJoin(names, ", ")
              << (unknown.size() > 5 ? ", ..." : "");
  }
  std::cout << "\n";
  if (regions.ok()) {
    std::cout << "regions: loss `" << graph->node(regions->loss).name()
              << "`, seed `" << graph->node(regions->seed).name() << "`; "
              << forward << " forward, " << backward << " backward op(s); "
              << regions->backward_consumers.size()
              << " forward tensor(s) read by the backward pass\n";
  } else {
    std::cout << "regions: none (" << regions.status().message() << ")\n";
  }
  // What the peaks assume: the inputs' shapes, and what they leave out.
  std::vector<std::string> inputs;
  bool unknown_input = false;
  graph->ForEachNode([&](const Node& n) {
    if (n.op() != "Placeholder") return;
    unknown_input = unknown_input || !shapes.at({n.id(), 0}).fully_known();
    if (inputs.size() < 8)
      inputs.push_back(absl::StrCat("`", n.name(), "` ",
                                    shapes.at({n.id(), 0}).ShapeString()));
  });
  if (!inputs.empty()) {
    std::cout << "inputs: " << absl::StrJoin(inputs, ", ");
    if (options.batch > 0) std::cout << " (--batch " << options.batch << ")";
    std::cout << "\n";
  }
  if (m->unknown_tensors > 0) {
    std::cout << "not counted: " << m->unknown_tensors
              << " tensor(s) of unknown size"
              << (unknown_input ? " (the inputs' unknown dimensions: --batch "
                                  "N or --input-shape gives them a size)"
                                : "")
              << "\n";
  }
  for (const analysis::DeviceMemory& d : m->devices) {
    std::cout << "device " << d.device << ": peak " << HumanSize(d.peak_bytes)
              << " (" << d.peak_bytes << " bytes) at step " << d.peak_step
              << " (`" << graph->node(m->schedule[d.peak_step]).name()
              << "`); persistent (constants, variables) "
              << HumanSize(d.persistent_bytes) << "\n";
    std::cout << "  live at the peak (" << d.live_at_peak.size()
              << " tensors), largest first:\n";
    for (size_t i = 0;
         i < d.live_at_peak.size() && static_cast<int>(i) < options.top; ++i) {
      Endpoint t = d.live_at_peak[i];
      const analysis::TensorInfo& info = shapes.at(t);
      std::cout << absl::StrFormat(
          "    %10s  %-14s %s  %s\n", HumanSize(info.bytes()),
          info.ShapeString(), graph->TensorName(t), Region(regions, t.node));
    }
  }
  return kExitOk;
}

int RunCost(const CostOptions& options) {
  absl::StatusOr<analysis::DeviceProfile> profile =
      analysis::LoadDeviceProfile(options.device);
  if (!profile.ok()) {
    std::cerr << "cost: " << profile.status().message() << "\n";
    return kExitFailure;
  }
  absl::StatusOr<Graph> graph = LoadGraph(options.model);
  if (!graph.ok()) {
    std::cerr << "cost: " << graph.status().message() << "\n";
    return kExitFailure;
  }
  analysis::ShapeMap shapes;
  if (!InferWithInputShapes(options.model, *graph, options.input_shapes,
                            options.batch, options.skip_invalid_nodes, &shapes))
    return kExitFailure;
  analysis::RooflineModel model(*profile);
  absl::StatusOr<analysis::Regions> regions =
      analysis::FindRegions(*graph, shapes);
  struct Row {
    NodeId id;
    analysis::NodeCost cost;
  };
  std::vector<Row> rows;
  double flops = 0, bytes = 0, time = 0;
  int unknown = 0;
  std::map<std::string, double> by_region;
  graph->ForEachNode([&](const Node& n) {
    analysis::NodeCost c = model.Cost(*graph, shapes, n.id());
    flops += c.flops;
    bytes += c.bytes_read + c.bytes_written;
    time += c.time_us;
    unknown += c.known ? 0 : 1;
    if (regions.ok()) by_region[Region(regions, n.id())] += c.time_us;
    rows.push_back({n.id(), c});
  });
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.cost.time_us > b.cost.time_us;
  });
  // The step in schedule order, copies between devices overlapped.
  absl::StatusOr<std::vector<NodeId>> order = analysis::ExecutorOrder(*graph);
  analysis::StepTime step;
  if (order.ok()) {
    step = analysis::EstimateStepTime(*graph, shapes, model, *order,
                                      options.default_device);
  }
  if (options.json) {
    std::cout << "{\"device\": " << JsonString(profile->name)
              << ", \"flops\": " << flops << ", \"bytes\": " << bytes
              << ", \"time_us\": " << time << ", \"unknown_ops\": " << unknown
              << ", \"copies\": " << step.copies
              << ", \"copy_us\": " << step.copy_us
              << ", \"step_overlapped_us\": " << step.overlapped_us
              << ", \"ops\": [";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::cout << (i ? ", " : "")
                << "{\"node\": " << JsonString(graph->node(r.id).name())
                << ", \"op\": " << JsonString(graph->node(r.id).op())
                << ", \"flops\": " << r.cost.flops
                << ", \"bytes\": " << r.cost.bytes_read + r.cost.bytes_written
                << ", \"time_us\": " << r.cost.time_us
                << ", \"bound\": " << JsonString(r.cost.bound) << "}";
    }
    std::cout << "]}\n";
    return kExitOk;
  }
  std::cout << options.model << " on " << profile->name << " (roofline"
            << (profile->measured_us.empty()
                    ? ""
                    : absl::StrCat(", ", profile->measured_us.size(),
                                   " measured shapes"))
            << ")\n";
  std::cout << absl::StrFormat("  %12s %12s %12s  %-8s %-24s %s\n", "time (us)",
                               "GFLOP", "MB", "bound", "op", "node");
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < options.top;
       ++i) {
    const Row& r = rows[i];
    std::cout << absl::StrFormat(
        "  %12.2f %12.4f %12.3f  %-8s %-24s %s%s\n", r.cost.time_us,
        r.cost.flops / 1e9, (r.cost.bytes_read + r.cost.bytes_written) / 1e6,
        r.cost.bound, graph->node(r.id).op(), graph->node(r.id).name(),
        r.cost.known ? "" : "  (shape unknown)");
  }
  std::cout << absl::StrFormat(
      "total: %.2f us, %.4f GFLOP, %.3f MB over %d ops", time, flops / 1e9,
      bytes / 1e6, graph->num_nodes());
  if (unknown > 0)
    std::cout << absl::StrFormat(" (%d with unknown shapes)", unknown);
  std::cout << "\n";
  if (regions.ok()) {
    std::cout << absl::StrFormat(
        "  forward %.2f us, backward %.2f us, other %.2f us\n",
        by_region["forward"], by_region["backward"], by_region["other"]);
  }
  if (step.copies > 0) {
    std::cout << absl::StrFormat(
        "  %d copies between devices, %.2f us over the host link; the step "
        "with them overlapped: %.2f us (serial %.2f us)\n",
        step.copies, step.copy_us, step.overlapped_us, step.serial_us);
  }
  return kExitOk;
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

bool AddRecomputation(const Graph& before, const Graph& after,
                      const analysis::ShapeOptions& shapes,
                      const analysis::MemoryOptions& memory,
                      const std::string& device, report::Recomputation* out) {
  std::vector<NodeId> copies;
  after.ForEachNode([&](const Node& n) {
    if (n.is_copy()) copies.push_back(n.id());
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

// Whether `graph` copies a tensor between devices (an Identity whose input
// is on another device).
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

}  // namespace graft::cli
