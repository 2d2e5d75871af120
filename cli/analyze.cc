// graft mem and graft cost: the analyses (api/analyses.h), printed.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"

namespace graft::cli {

namespace {

api::AnalysisSettings Settings(const std::vector<std::string>& input_shapes,
                               int64_t batch, const std::string& device,
                               bool skip_invalid_nodes) {
  api::AnalysisSettings s;
  s.input_shapes = input_shapes;
  s.batch = batch;
  s.default_device = device;
  s.skip_invalid_nodes = skip_invalid_nodes;
  return s;
}

void WarnInvalid(const std::string& model,
                 const std::vector<std::string>& invalid) {
  if (invalid.empty()) return;
  std::vector<std::string> names;
  for (const std::string& n : invalid) names.push_back(absl::StrCat("`", n, "`"));
  std::cerr << model << ": warning: " << names.size()
            << " node(s) do not match their op; their outputs are unknown: "
            << absl::StrJoin(names, ", ") << "\n";
}

}  // namespace

int RunMem(const MemOptions& options) {
  api::AnalysisSettings settings =
      Settings(options.input_shapes, options.batch, options.default_device,
               options.skip_invalid_nodes);
  settings.loss = options.loss;
  settings.seed = options.seed;
  settings.cpu_kernels = options.cpu_kernels;
  settings.threads = options.threads;
  api::Result<api::MemReport> m =
      api::Mem(ModelArg(options.model, GraphFormat::kAuto, false,
                        options.saved_model),
               settings, options.outputs);
  if (!m.ok()) return Fail(m.error(), "mem", true);
  WarnInvalid(options.model, m->invalid_nodes);
  if (options.json) {
    std::cout << api::MemJson(*m);
    return kExitOk;
  }
  std::cout << options.model << ": " << m->nodes << " nodes, schedule of "
            << m->schedule_steps << " steps\n";
  std::cout << "schedule: " << m->schedule << "\n";
  std::cout << "shapes: "
            << (m->unknown_shapes.empty()
                    ? "all known"
                    : absl::StrCat(m->unknown_shapes.size(),
                                   " tensor(s) not fully known"));
  if (!m->unknown_shapes.empty()) {
    std::vector<std::string> first(
        m->unknown_shapes.begin(),
        m->unknown_shapes.begin() +
            std::min<size_t>(5, m->unknown_shapes.size()));
    std::cout << ": " << absl::StrJoin(first, ", ")
              << (m->unknown_shapes.size() > 5 ? ", ..." : "");
  }
  std::cout << "\n";
  if (m->regions_found) {
    std::cout << "regions: loss `" << m->loss << "`, seed `" << m->seed
              << "`; " << m->forward_ops << " forward, " << m->backward_ops
              << " backward op(s); " << m->saved_for_backward
              << " forward tensor(s) read by the backward pass\n";
  } else {
    std::cout << "regions: none (" << m->regions_note << ")\n";
  }
  // What the peaks assume: the inputs' shapes, and what they leave out.
  std::vector<std::string> inputs;
  for (const auto& [name, shape] : m->inputs) {
    if (inputs.size() < 8) inputs.push_back(absl::StrCat("`", name, "` ", shape));
  }
  if (!inputs.empty()) {
    std::cout << "inputs: " << absl::StrJoin(inputs, ", ");
    if (options.batch > 0) std::cout << " (--batch " << options.batch << ")";
    std::cout << "\n";
  }
  if (m->unknown_sizes > 0) {
    std::cout << "not counted: " << m->unknown_sizes
              << " tensor(s) of unknown size"
              << (m->unknown_input ? " (the inputs' unknown dimensions: --batch "
                                     "N or --input-shape gives them a size)"
                                   : "")
              << "\n";
  }
  for (const api::MemDevice& d : m->devices) {
    std::cout << "device " << d.device << ": peak " << HumanSize(d.peak_bytes)
              << " (" << d.peak_bytes << " bytes) at step " << d.peak_step
              << " (`" << d.peak_at << "`); persistent (constants, variables) "
              << HumanSize(d.persistent_bytes) << "\n";
    if (d.scratch_at_peak > 0) {
      std::cout << "  scratch at the peak: " << HumanSize(d.scratch_at_peak)
                << " (`" << d.scratch_node << "`, while it runs)\n";
    }
    std::cout << "  live at the peak (" << d.live_at_peak.size()
              << " tensors), largest first:\n";
    for (size_t i = 0;
         i < d.live_at_peak.size() && static_cast<int>(i) < options.top; ++i) {
      const api::MemTensor& t = d.live_at_peak[i];
      std::cout << absl::StrFormat("    %10s  %-14s %s  %s\n",
                                   HumanSize(t.bytes), t.shape, t.name,
                                   t.region);
    }
  }
  return kExitOk;
}

int RunCost(const CostOptions& options) {
  api::AnalysisSettings settings =
      Settings(options.input_shapes, options.batch, options.default_device,
               options.skip_invalid_nodes);
  settings.device = options.device;
  api::Result<api::CostReport> c =
      api::Cost(ModelArg(options.model, GraphFormat::kAuto, false,
                         options.saved_model),
                settings);
  if (!c.ok()) return Fail(c.error(), "cost", true);
  WarnInvalid(options.model, c->invalid_nodes);
  if (options.json) {
    std::cout << api::CostJson(*c);
    return kExitOk;
  }
  std::cout << options.model << " on " << c->device << " (roofline"
            << (c->measured_shapes == 0
                    ? ""
                    : absl::StrCat(", ", c->measured_shapes,
                                   " measured shapes"))
            << ")\n";
  std::cout << absl::StrFormat("  %12s %12s %12s  %-8s %-24s %s\n", "time (us)",
                               "GFLOP", "MB", "bound", "op", "node");
  for (size_t i = 0; i < c->ops.size() && static_cast<int>(i) < options.top;
       ++i) {
    const api::CostRow& r = c->ops[i];
    std::cout << absl::StrFormat("  %12.2f %12.4f %12.3f  %-8s %-24s %s%s\n",
                                 r.time_us, r.flops / 1e9, r.bytes / 1e6,
                                 r.bound, r.op, r.node,
                                 r.known ? "" : "  (shape unknown)");
  }
  std::cout << absl::StrFormat(
      "total: %.2f us, %.4f GFLOP, %.3f MB over %d ops", c->time_us,
      c->flops / 1e9, c->bytes / 1e6, c->nodes);
  if (c->unknown_ops > 0)
    std::cout << absl::StrFormat(" (%d with unknown shapes)", c->unknown_ops);
  std::cout << "\n";
  if (c->regions_found) {
    std::cout << absl::StrFormat(
        "  forward %.2f us, backward %.2f us, other %.2f us\n",
        c->time_by_region["forward"], c->time_by_region["backward"],
        c->time_by_region["other"]);
  }
  if (c->copies > 0) {
    std::cout << absl::StrFormat(
        "  %d copies between devices, %.2f us over the host link; the step "
        "with them overlapped: %.2f us (serial %.2f us)\n",
        c->copies, c->copy_us, c->step_overlapped_us, c->step_serial_us);
  }
  return kExitOk;
}

}  // namespace graft::cli
