#include "cli/commands.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/hooks.h"
#include "analysis/shapes.h"
#include "builtins/builtins.h"
#include "draw/diff_drawing.h"
#include "dsl/compiler.h"
#include "dsl/format.h"
#include "dsl/parser.h"
#include "dsl/pipeline.h"
#include "dsl/runner.h"
#include "dsl/transforms.h"
#include "engine/const_tensor.h"
#include "engine/driver.h"
#include "engine/graph_diff.h"
#include "engine/graph_stats.h"
#include "engine/hooks.h"
#include "engine/op_registry.h"
#include "engine/validate.h"
#include "google/protobuf/util/json_util.h"

namespace graft::cli {
std::string HumanSize(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (1 << 20)) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  if (bytes < (1 << 30)) return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.2f GiB", bytes / 1073741824.0);
}

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

absl::StatusOr<HookRegistry> CommandHooks(
    const analysis::AnalysisHookOptions& options) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  absl::Status s = analysis::RegisterAnalysisHooks(hooks, options);
  if (!s.ok()) return s;
  return hooks;
}

namespace {

std::string FormatName(GraphFormat format) {
  return format == GraphFormat::kText ? "pbtxt" : "pb";
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

void PrintCounts(
    const char* title,
    const google::protobuf::RepeatedPtrField<report::Count>& counts,
    const char* empty_name) {
  std::cout << title << " (" << counts.size() << "):\n";
  size_t width = 0;
  for (const report::Count& c : counts) {
    width = std::max(
        width, (c.name().empty() ? std::string(empty_name) : c.name()).size());
  }
  for (const report::Count& c : counts) {
    std::string name = c.name().empty() ? empty_name : c.name();
    std::cout << "  " << name << std::string(width - name.size() + 2, ' ')
              << c.count() << "\n";
  }
}

bool SamePath(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::string VersionString() {
  return absl::StrCat("graft 0.1.0 (TensorFlow op signatures: ",
                      OpRegistry::Tensorflow().size(), " ops)");
}

int RunStats(const StatsOptions& options) {
  GraphFormat format = ResolveGraphFormat(options.model, options.format);
  absl::StatusOr<Graph> graph =
      LoadGraph(options.model, format, options.allow_empty);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  struct stat info;
  int64_t size = stat(options.model.c_str(), &info) == 0 ? info.st_size : 0;
  report::GraphStats stats = ComputeGraphStats(*graph);
  stats.set_path(options.model);
  stats.set_format(FormatName(format));
  stats.set_size_bytes(size);
  if (options.json) {
    std::cout << ToJson(stats);
    return kExitOk;
  }
  std::cout << stats.path() << " (" << stats.format() << ", "
            << HumanSize(stats.size_bytes()) << ")\n"
            << "nodes: " << stats.num_nodes() << "\n"
            << "edges: " << stats.num_data_edges() << " data, "
            << stats.num_control_edges() << " control\n";
  if (stats.num_functions() > 0) {
    std::cout << "functions: " << stats.num_functions() << "\n";
  }
  auto join = [](const google::protobuf::RepeatedPtrField<std::string>& names) {
    std::string out;
    for (const std::string& n : names)
      absl::StrAppend(&out, out.empty() ? "" : ", ", n);
    return out.empty() ? std::string("(none)") : out;
  };
  std::cout << "inputs: " << join(stats.inputs()) << "\n"
            << "outputs: " << join(stats.outputs()) << "\n";
  PrintCounts("ops", stats.ops(), "");
  PrintCounts("devices", stats.devices(), "(unplaced)");
  PrintCounts("tensor dtypes", stats.dtypes(), "");
  return kExitOk;
}

int RunConvert(const ConvertOptions& options) {
  if (!options.in_place && SamePath(options.input, options.output)) {
    std::cerr << options.output
              << ": error: refusing to overwrite the input; pass --in-place "
                 "to replace it\n";
    return kExitUsage;
  }
  absl::StatusOr<Graph> graph =
      LoadGraph(options.input, options.input_format, options.allow_empty);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  GraphFormat out_format =
      ResolveGraphFormat(options.output, options.output_format);
  absl::Status saved = SaveGraph(*graph, options.output, out_format);
  if (!saved.ok()) {
    std::cerr << saved.message() << "\n";
    return kExitFailure;
  }
  std::cerr << "wrote " << options.output << " (" << FormatName(out_format)
            << ", " << graph->num_nodes() << " nodes)\n";
  return kExitOk;
}

int CompileErrorExit(const dsl::Diagnostics& diagnostics) {
  for (const dsl::Diagnostic& d : diagnostics.errors()) {
    if (d.path == "--param") return kExitUsage;  // a command-line mistake
  }
  return kExitFailure;
}

bool CustomOps(const std::vector<std::string>& names, const std::string& file,
               std::set<std::string>* ops) {
  ops->insert(names.begin(), names.end());
  if (file.empty()) return true;
  absl::Status read = ReadCustomOps(file, ops);
  if (!read.ok()) std::cerr << read.message() << "\n";
  return read.ok();
}

int RunValidate(const ValidateCommandOptions& options) {
  ValidateOptions validate;
  if (!CustomOps(options.custom_ops, options.custom_ops_file,
                 &validate.custom_ops))
    return kExitFailure;
  absl::StatusOr<Graph> graph =
      LoadGraph(options.model, options.format, options.allow_empty);
  report::Validation result;
  result.set_path(options.model);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  validate.outputs = options.outputs;
  std::vector<ValidationIssue> issues = Validate(*graph, validate);
  // TensorFlow's importer also runs its shape functions: shapes that
  // conflict where both sides are known.
  if (issues.empty()) {
    analysis::ShapeMap shapes = analysis::InferShapes(*graph);
    for (auto& [id, message] : analysis::ShapeConflicts(*graph, shapes))
      issues.push_back({id, std::move(message)});
  }
  result.set_valid(issues.empty());
  for (const ValidationIssue& issue : issues) {
    result.add_problems(issue.message);
    std::cerr << options.model << ": error: " << issue.message << "\n";
  }
  if (options.json) {
    std::cout << ToJson(result);
  } else if (issues.empty()) {
    std::cout << options.model << ": valid (" << graph->num_nodes()
              << " nodes)\n";
  } else {
    std::cerr << options.model << ": " << issues.size() << " problem(s)\n";
  }
  return issues.empty() ? kExitOk : kExitFailure;
}

namespace {

bool ParseParams(const std::vector<std::string>& items,
                 std::map<std::string, std::string>* out) {
  for (const std::string& item : items) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "--param: error: expected name=value, got `" << item
                << "`\n";
      return false;
    }
    (*out)[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return true;
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

// What each rule did, on stderr.
void PrintApplySummary(const report::ApplyReport& total) {
  std::cerr << "graft apply: " << total.rewrites() << " rewrite(s); nodes "
            << total.nodes_before() << " -> " << total.nodes_after() << "; "
            << absl::StrFormat("%.1f ms load, %.1f ms apply, %.1f ms save",
                               total.load_ms(), total.apply_ms(),
                               total.save_ms())
            << "\n";
  for (const auto& r : total.rules()) {
    if (r.applied() == 0 && r.skipped() == 0 && r.guard_errors() == 0) continue;
    std::cerr << "  " << r.name() << ": " << r.applied() << " applied";
    if (r.skipped() > 0) std::cerr << ", " << r.skipped() << " skipped";
    if (r.guard_errors() > 0)
      std::cerr << ", " << r.guard_errors() << " guard error(s)";
    std::cerr << "\n";
  }
  // One line per rule: its first guard error (the count is above).
  std::set<std::string> said;
  for (const auto& e : total.guard_errors()) {
    if (!said.insert(e.rule()).second) continue;
    std::cerr << "  guard error in " << e.rule() << " at `" << e.node()
              << "`: " << e.reason() << "\n";
  }
  for (const auto& s : total.skipped()) {
    std::cerr << "  skipped " << s.rule() << " at `" << s.node()
              << "`: " << s.reason() << "\n";
  }
  if (total.has_step_time()) {
    const report::StepTimes& t = total.step_time();
    std::cerr << "  copies between devices: " << t.copies() << ", "
              << absl::StrFormat(
                     "%.2f us over the host link; step %.2f -> "
                     "%.2f us on %s, copies overlapped (graft "
                     "cost)",
                     t.copy_us(), t.before_us(), t.after_us(), t.device())
              << "\n";
  }
  if (total.has_recomputation()) {
    const report::Recomputation& r = total.recomputation();
    std::cerr << "  recomputed: " << r.ops() << " op(s), "
              << absl::StrFormat("%.4f GFLOP", r.flops() / 1e9) << " on "
              << r.device() << "; peak " << HumanSize(r.peak_bytes_before())
              << " -> " << HumanSize(r.peak_bytes_after()) << " (graft mem)\n";
  }
}

// Compiles rule files with `--param` values for a command. On failure
// prints the diagnostics, sets `exit_code` and returns nullptr.
std::unique_ptr<dsl::RuleSet> CompileForCommand(
    const std::vector<std::string>& files,
    const std::vector<std::string>& params, const HookRegistry& hooks,
    dsl::Diagnostics* diagnostics, int* exit_code) {
  dsl::CompileOptions compile;
  if (!ParseParams(params, &compile.params)) {
    *exit_code = kExitUsage;
    return nullptr;
  }
  std::unique_ptr<dsl::RuleSet> set =
      dsl::CompileRuleFiles(files, compile, hooks, diagnostics);
  if (set == nullptr) {
    std::cerr << diagnostics->Render() << diagnostics->errors().size()
              << " error(s)\n";
    *exit_code = CompileErrorExit(*diagnostics);
  }
  return set;
}

}  // namespace

int RunCheck(const CheckOptions& options) {
  HookRegistry hooks = *CommandHooks();
  dsl::Diagnostics diagnostics;
  int exit_code = kExitOk;
  std::unique_ptr<dsl::RuleSet> rules = CompileForCommand(
      options.rule_files, options.params, hooks, &diagnostics, &exit_code);
  if (rules == nullptr) return exit_code;
  std::cerr << diagnostics.Render();  // lint warnings, if any
  std::cout << "ok: " << rules->size() << " rule(s) in "
            << rules->files().size() << " file(s)";
  if (!diagnostics.warnings().empty())
    std::cout << ", " << diagnostics.warnings().size() << " warning(s)";
  std::cout << "\n";
  return kExitOk;
}

bool ParseCliParams(const std::vector<std::string>& items,
                    std::map<std::string, std::string>* out) {
  return ParseParams(items, out);
}

namespace {

// The pipeline steps of a GTT --transforms string over rules/gtt; notes on
// params graft does not need go to stderr (unless `quiet`). False (said)
// on a bad string, an unknown transform or param.
bool StepsFromTransforms(const char* command, const std::string& transforms,
                         const std::string& inputs,
                         const std::vector<std::string>& outputs,
                         const std::string& program, bool quiet,
                         std::vector<dsl::PipelineStep>* steps) {
  absl::StatusOr<std::vector<dsl::TransformCall>> calls =
      dsl::ParseTransforms(transforms);
  if (!calls.ok()) {
    std::cerr << command << ": " << calls.status().message() << "\n";
    return false;
  }
  dsl::TransformOptions options;
  options.rules_dir = dsl::FindTransformRules(program);
  options.inputs = inputs;
  options.outputs = absl::StrJoin(outputs, ",");
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<dsl::PipelineStep>> s =
      dsl::TransformSteps(*calls, options, &notes);
  if (!s.ok()) {
    std::cerr << command << ": error: " << s.status().message() << "\n";
    return false;
  }
  if (!quiet) {
    for (const std::string& note : notes)
      std::cerr << command << ": note: " << note << "\n";
  }
  *steps = *std::move(s);
  return true;
}

}  // namespace

int RunPipelineFromTransforms(const PipelineCommandOptions& options) {
  std::vector<dsl::PipelineStep> steps;
  if (!StepsFromTransforms(
          "pipeline", options.transforms, options.inputs,
          absl::StrSplit(options.outputs, ',', absl::SkipEmpty()),
          options.program, false, &steps))
    return kExitUsage;
  size_t slash = options.output.rfind('/');
  std::string dir =
      slash == std::string::npos ? "." : options.output.substr(0, slash);
  absl::Status written = WriteFileAtomically(
      options.output, dsl::PipelineYaml(steps, dir, options.transforms));
  if (!written.ok()) {
    std::cerr << written.message() << "\n";
    return kExitFailure;
  }
  std::cerr << "pipeline: wrote " << options.output << " (" << steps.size()
            << " step(s))\n";
  return kExitOk;
}

int RunApply(const ApplyCommandOptions& options) {
  int given = !options.rule_files.empty() + !options.pipeline.empty() +
              !options.transforms.empty();
  if (given != 1) {
    std::cerr << (given == 0
                      ? "apply: error: no rules: give rule files (-r FILE), "
                        "a pipeline (--pipeline FILE) or GTT transforms "
                        "(--transforms STRING)\n"
                      : "apply: error: give one of rule files (-r), a "
                        "pipeline (--pipeline) or --transforms, not several\n");
    return kExitUsage;
  }
  if (!options.gtt_inputs.empty() && options.transforms.empty()) {
    std::cerr << "apply: error: --inputs goes with --transforms (GTT's "
                 "--inputs)\n";
    return kExitUsage;
  }
  bool batch = IsBatch(options);
  if (!batch && !options.in_place && SamePath(options.input, options.output)) {
    std::cerr << options.output
              << ": error: refusing to overwrite the input; pass --in-place to "
                 "replace it\n";
    return kExitUsage;
  }
  std::map<std::string, std::string> cli_params;
  if (!ParseParams(options.params, &cli_params)) return kExitUsage;
  std::set<std::string> custom_ops;
  if (!CustomOps(options.custom_ops, options.custom_ops_file, &custom_ops))
    return kExitFailure;
  if (options.max_const_elements > 0)
    SetMaxConstElements(options.max_const_elements);
  // Every path written is checked before anything is: a failure writes
  // nothing.
  for (const std::string& path : {options.output, options.report}) {
    if (path.empty() || (batch && path == options.output)) continue;
    absl::Status writable = CheckWritable(path);
    if (!writable.ok()) {
      std::cerr << writable.message() << "\n";
      return kExitFailure;
    }
  }

  // Compile everything before touching the graph.
  std::vector<dsl::PipelineStep> steps;
  if (!options.pipeline.empty()) {
    absl::StatusOr<dsl::Pipeline> pipeline =
        dsl::LoadPipeline(options.pipeline);
    if (!pipeline.ok()) {
      std::cerr << pipeline.status().message() << "\n";
      return kExitFailure;
    }
    steps = pipeline->steps;
  } else if (!options.transforms.empty()) {
    if (!StepsFromTransforms("apply", options.transforms, options.gtt_inputs,
                             options.outputs, options.program, options.quiet,
                             &steps))
      return kExitUsage;
  } else {
    dsl::PipelineStep step;
    step.rule_files = options.rule_files;
    steps.push_back(std::move(step));
  }
  analysis::AnalysisHookOptions analysis_options;
  analysis_options.device = options.device;
  analysis_options.loss = options.loss;
  analysis_options.seed = options.seed;
  analysis_options.outputs = options.outputs;
  analysis_options.default_device = options.default_device;
  absl::StatusOr<analysis::ShapeOptions> shape_options =
      InputShapes(options.input_shapes, options.batch, nullptr);
  if (!shape_options.ok()) {
    std::cerr << "apply: error: " << shape_options.status().message() << "\n";
    return kExitUsage;
  }
  analysis_options.shapes = *std::move(shape_options);
  absl::StatusOr<HookRegistry> hooks = CommandHooks(analysis_options);
  if (!hooks.ok()) {
    std::cerr << "apply: error: " << hooks.status().message() << "\n";
    return kExitFailure;
  }
  dsl::Diagnostics diagnostics;
  std::vector<dsl::CompiledStep> compiled;
  if (!dsl::CompileSteps(
          steps, cli_params,
          !options.pipeline.empty() || !options.transforms.empty(), *hooks,
          &diagnostics, &compiled)) {
    std::cerr << diagnostics.Render();
    return CompileErrorExit(diagnostics);
  }
  if (batch) return RunBatchApply(options, compiled, custom_ops);

  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Graph> graph =
      LoadGraph(options.input, options.input_format, options.allow_empty);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  for (const std::string& name : {options.loss, options.seed}) {
    if (!name.empty() && !graph->Contains(name)) {
      std::cerr << options.input << ": error: no node `" << name
                << "` (given by "
                << (name == options.loss ? "--loss" : "--seed")
                << ")\nnothing written\n";
      return kExitFailure;
    }
  }
  if (absl::Status s =
          analysis::CheckInputShapes(*graph, analysis_options.shapes);
      !s.ok()) {
    std::cerr << options.input << ": error: " << s.message()
              << "\nnothing written\n";
    return kExitFailure;
  }
  report::ApplyReport total;
  total.set_input(options.input);
  total.set_output(options.output);
  total.set_load_ms(MsSince(start));
  start = std::chrono::steady_clock::now();
  dsl::RunOptions run;
  run.outputs = options.outputs;
  run.custom_ops = custom_ops;
  run.max_rewrites = options.max_rewrites;
  absl::Status ran = dsl::RunPipeline(*graph, compiled, run, &total);
  total.set_apply_ms(MsSince(start));
  if (!ran.ok()) {
    std::cerr << options.input << ": error: " << ran.message() << "\n";
    if (total.steps_size() > 1) {
      for (const report::StepReport& s : total.steps())
        std::cerr << "  " << s.name() << ": " << s.outcome() << "\n";
    }
    std::cerr << "nothing written\n";
    return kExitFailure;
  }
  // The input as it was (the file is untouched until the output is saved):
  // for --diff, and for what copies (recomputation) changed.
  bool copies = false;
  graph->ForEachNode([&](const Node& n) { copies = copies || n.is_copy(); });
  bool transfers = CopiesBetweenDevices(*graph, options.default_device);
  absl::StatusOr<Graph> original =
      options.diff || copies || transfers
          ? LoadGraph(options.input, options.input_format, options.allow_empty)
          : absl::StatusOr<Graph>(Graph());
  if (copies && original.ok()) {
    analysis::MemoryOptions memory;
    memory.outputs = options.outputs;
    memory.default_device = options.default_device;
    AddRecomputation(*original, *graph, analysis_options.shapes, memory,
                     options.device, total.mutable_recomputation());
  }
  if (transfers && original.ok() &&
      !AddStepTimes(*original, *graph, analysis_options.shapes,
                    options.default_device, options.device,
                    total.mutable_step_time())) {
    total.clear_step_time();
  }
  start = std::chrono::steady_clock::now();
  absl::Status saved = SaveGraph(*graph, options.output, options.output_format);
  if (!saved.ok()) {
    std::cerr << saved.message() << "\n";
    return kExitFailure;
  }
  total.set_save_ms(MsSince(start));
  if (!options.report.empty()) {
    absl::Status s = WriteFileAtomically(options.report, ToJson(total));
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return kExitFailure;
    }
  }
  if (!options.quiet) PrintApplySummary(total);
  if (options.diff && original.ok())
    std::cout << FormatDiffText(DiffGraphs(*original, *graph));
  return kExitOk;
}

int RunExplain(const ExplainOptions& options) {
  HookRegistry hooks = *CommandHooks();
  dsl::Diagnostics diagnostics;
  int exit_code = kExitOk;
  std::unique_ptr<dsl::RuleSet> set = CompileForCommand(
      options.rule_files, options.params, hooks, &diagnostics, &exit_code);
  if (set == nullptr) return exit_code;
  absl::StatusOr<Graph> graph = LoadGraph(options.model);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  NodeId only = kNoNode;
  if (!options.node.empty()) {
    only = graph->FindId(options.node);
    if (only == kNoNode) {
      std::cerr << options.model << ": error: no node `" << options.node
                << "`\n";
      return kExitFailure;
    }
  }
  std::vector<dsl::RuleExplanations> all =
      dsl::ExplainRules(*set, options.rule, *graph, only);
  for (const dsl::RuleExplanations& r : all) {
    const std::string& name = r.rule->name();
    for (const auto& [id, e] : r.at) {
      std::cout << name << " at `" << graph->node(id).name() << "`: ";
      if (!e.matched) {
        std::cout << "no match: " << e.reason << "\n";
        continue;
      }
      std::cout << "matches";
      for (const auto& [binding, value] : e.bindings)
        std::cout << "\n    " << binding << " = " << value;
      std::cout << "\n";
    }
    if (only == kNoNode)
      std::cout << name << ": " << r.at.size() << " match(es)\n";
  }
  bool found_rule = !all.empty();
  if (!found_rule) {
    std::cerr << "explain: error: no rule `" << options.rule
              << "` in the rule files\n";
    return kExitFailure;
  }
  return kExitOk;
}

int RunDiff(const DiffOptions& options) {
  absl::StatusOr<Graph> before = LoadGraph(options.before);
  if (!before.ok()) {
    std::cerr << before.status().message() << "\n";
    return kExitFailure;
  }
  absl::StatusOr<Graph> after = LoadGraph(options.after);
  if (!after.ok()) {
    std::cerr << after.status().message() << "\n";
    return kExitFailure;
  }
  graft::DiffOptions diff_options;
  diff_options.full = options.full;
  GraphDiff diff = DiffGraphs(*before, *after, diff_options);
  if (options.format == "dot") {
    std::cout << FormatDiffDot(*before, *after, diff);
  } else if (options.format == "html") {
    draw::DrawingOptions drawing;
    drawing.context = options.context;
    drawing.full = options.full;
    absl::StatusOr<std::string> page =
        draw::DiffPage(*before, *after, diff, drawing);
    if (!page.ok()) {
      std::cerr << "diff: error: " << page.status().message() << "\n";
      return kExitFailure;
    }
    std::cout << *page;
  } else {
    std::cout << FormatDiffText(diff);
  }
  return options.exit_code && !diff.empty() ? kExitFailure : kExitOk;
}

}  // namespace graft::cli
