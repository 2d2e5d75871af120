// The `graft` subcommands: each turns its flags into a library call
// (api/graft.h) and prints what comes back.
#include "cli/commands.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/const_tensor.h"
#include "engine/files.h"
#include "dialects/tf/saved_model.h"
#include "engine/validate.h"

namespace graft::cli {

int Fail(const api::Error& error, const std::string& command, bool always) {
  bool prefix = !command.empty() &&
                (always || error.message.rfind("error: ", 0) == 0);
  std::cerr << (prefix ? command + ": " : "") << error.message << "\n";
  for (const std::string& note : error.notes) std::cerr << "  " << note << "\n";
  return error.usage ? kExitUsage : kExitFailure;
}

api::Model ModelArg(const std::string& path, GraphFormat format,
                    bool allow_empty, const api::SavedModelRead& saved_model) {
  api::Model model = api::Model::File(path, format);
  model.allow_empty = allow_empty;
  model.saved_model = saved_model;
  return model;
}

bool ParseCliParams(const std::vector<std::string>& items,
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

bool CustomOps(const std::vector<std::string>& names, const std::string& file,
               std::set<std::string>* ops) {
  ops->insert(names.begin(), names.end());
  if (file.empty()) return true;
  absl::Status read = ReadCustomOps(file, ops);
  if (!read.ok()) std::cerr << read.message() << "\n";
  return read.ok();
}

std::string VersionString() { return api::Version(); }

namespace {

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

}  // namespace

int RunStats(const StatsOptions& options) {
  api::Result<report::GraphStats> stats =
      api::Stats(ModelArg(options.model, options.format, options.allow_empty,
                          options.saved_model));
  if (!stats.ok()) return Fail(stats.error());
  if (options.json) {
    std::cout << api::ToJson(*stats);
    return kExitOk;
  }
  std::cout << stats->path() << " (" << stats->format() << ", "
            << HumanSize(stats->size_bytes()) << ")\n"
            << "nodes: " << stats->num_nodes() << "\n"
            << "edges: " << stats->num_data_edges() << " data, "
            << stats->num_control_edges() << " control\n";
  if (stats->num_functions() > 0) PrintCounts("functions (body nodes)", stats->functions(), "");
  auto join = [](const google::protobuf::RepeatedPtrField<std::string>& names) {
    std::string out;
    for (const std::string& n : names)
      absl::StrAppend(&out, out.empty() ? "" : ", ", n);
    return out.empty() ? std::string("(none)") : out;
  };
  std::cout << "inputs: " << join(stats->inputs()) << "\n"
            << "outputs: " << join(stats->outputs()) << "\n";
  PrintCounts("ops", stats->ops(), "");
  PrintCounts("devices", stats->devices(), "(unplaced)");
  PrintCounts("tensor dtypes", stats->dtypes(), "");
  return kExitOk;
}

int RunConvert(const ConvertOptions& options) {
  api::Output out{options.output, options.output_format};
  api::Result<api::Converted> converted = api::Convert(
      ModelArg(options.input, options.input_format, options.allow_empty,
               options.saved_model),
      out,
      options.in_place);
  if (!converted.ok()) return Fail(converted.error());
  std::cerr << "wrote " << options.output << " (" << converted->format << ", "
            << converted->nodes << " nodes)\n";
  return kExitOk;
}

int RunValidate(const ValidateCommandOptions& options) {
  api::ValidateOptions validate;
  if (!CustomOps(options.custom_ops, options.custom_ops_file,
                 &validate.custom_ops))
    return kExitFailure;
  validate.outputs = options.outputs;
  api::Result<report::Validation> result = api::Validate(
      ModelArg(options.model, options.format, options.allow_empty,
               options.saved_model),
      validate);
  if (!result.ok()) return Fail(result.error());
  for (const std::string& problem : result->problems())
    std::cerr << options.model << ": error: " << problem << "\n";
  if (options.json) {
    std::cout << api::ToJson(*result);
  } else if (result->valid()) {
    std::cout << options.model << ": valid (" << result->nodes()
              << " nodes)\n";
  } else {
    std::cerr << options.model << ": " << result->problems_size()
              << " problem(s)\n";
  }
  return result->valid() ? kExitOk : kExitFailure;
}

namespace {

api::Result<std::shared_ptr<const api::Rules>> CompileForCommand(
    api::RulesSpec spec, const std::vector<std::string>& params) {
  if (!ParseCliParams(params, &spec.params)) {
    return api::Error::Usage("");  // said
  }
  return api::CompileRules(spec);
}

// Rule files with `--param` values compiled for check and explain; on
// failure prints the diagnostics and their count, sets `exit_code` and
// returns nullptr.
std::shared_ptr<const api::Rules> CompileRuleFiles(
    const std::vector<std::string>& files,
    const std::vector<std::string>& params, int* exit_code,
    const std::string& pipeline = "", const std::string& program = "",
    const std::vector<std::string>& input_shapes = {}, int64_t batch = 0) {
  api::RulesSpec spec;
  spec.rule_files = files;
  spec.pipeline = pipeline;
  spec.program = program;
  spec.analysis.input_shapes = input_shapes;
  spec.analysis.batch = batch;
  api::Result<std::shared_ptr<const api::Rules>> rules =
      CompileForCommand(spec, params);
  if (rules.ok()) return *rules;
  *exit_code = rules.error().usage ? kExitUsage : kExitFailure;
  if (!rules.error().message.empty()) {
    std::cerr << rules.error().message << "\n";
    if (!rules.error().diagnostics.empty())
      std::cerr << rules.error().diagnostics.size() << " error(s)\n";
  }
  return nullptr;
}

}  // namespace

int RunCheck(const CheckOptions& options) {
  int exit_code = kExitOk;
  std::shared_ptr<const api::Rules> rules =
      CompileRuleFiles(options.rule_files, options.params, &exit_code);
  if (rules == nullptr) return exit_code;
  std::cerr << rules->warnings();  // lint warnings, if any
  std::cout << "ok: " << rules->num_rules() << " rule(s) in "
            << rules->files().size() << " file(s)";
  int lints = rules->num_warnings();
  if (lints > 0) std::cout << ", " << lints << " warning(s)";
  std::cout << "\n";
  return kExitOk;
}

int RunPipelineFromTransforms(const PipelineCommandOptions& options) {
  api::RulesSpec spec;
  spec.transforms = options.transforms;
  spec.gtt_inputs = options.inputs;
  spec.program = options.program;
  spec.outputs = absl::StrSplit(options.outputs, ',', absl::SkipEmpty());
  size_t slash = options.output.rfind('/');
  std::string dir =
      slash == std::string::npos ? "." : options.output.substr(0, slash);
  api::Result<api::PipelineYaml> yaml = api::PipelineFromTransforms(spec, dir);
  if (!yaml.ok()) return Fail(yaml.error(), "pipeline", true);
  for (const std::string& note : yaml->notes)
    std::cerr << "pipeline: note: " << note << "\n";
  absl::Status written = WriteFileAtomically(options.output, yaml->yaml);
  if (!written.ok()) {
    std::cerr << written.message() << "\n";
    return kExitFailure;
  }
  std::cerr << "pipeline: wrote " << options.output << " (" << yaml->steps
            << " step(s))\n";
  return kExitOk;
}

namespace {

// What each rule did, on stderr.
void PrintApplySummary(const report::ApplyReport& total) {
  std::cerr << "graft apply: " << total.rewrites() << " rewrite(s); nodes "
            << total.nodes_before() << " -> " << total.nodes_after() << "; "
            << absl::StrFormat("%.1f ms load, %.1f ms apply, %.1f ms save",
                               total.load_ms(), total.apply_ms(),
                               total.save_ms())
            << "\n";
  if (total.has_freeze()) {
    const report::FreezeReport& f = total.freeze();
    std::cerr << "  froze signature(s) " << absl::StrJoin(f.signatures(), ", ")
              << ": " << f.calls_inlined() << " call(s) inlined, "
              << f.variables() << " variable(s) as constants ("
              << HumanSize(f.variable_bytes()) << ")"
              << absl::StrFormat(", %.1f ms", f.ms());
    if (f.functions_kept() > 0)
      std::cerr << "; " << f.functions_kept() << " function(s) still called";
    std::cerr << "\n";
  }
  for (const std::string& note : total.notes()) std::cerr << "  note: " << note << "\n";
  for (const auto& r : total.rules()) {
    if (r.applied() == 0 && r.skipped() == 0 && r.guard_errors() == 0) continue;
    std::cerr << "  " << r.name() << ": " << r.applied() << " applied";
    if (r.skipped() > 0) std::cerr << ", " << r.skipped() << " skipped";
    if (r.guard_errors() > 0)
      std::cerr << ", " << r.guard_errors() << " guard error(s)";
    std::cerr << "\n";
  }
  // Bodies skipped for one reason (a batch norm's `tf.cond` bodies in a
  // training step: dozens) are said once, with the first few names.
  std::map<std::string, std::vector<std::string>> skipped;
  std::vector<std::string> reasons;  // as first met
  const char* noun = "function";
  for (const auto& f : total.functions()) {
    if (f.skipped().empty()) continue;
    if (f.subgraph()) noun = "subgraph";
    std::vector<std::string>& names = skipped[f.skipped()];
    if (names.empty()) reasons.push_back(f.skipped());
    names.push_back(f.name());
  }
  for (const std::string& reason : reasons) {
    const std::vector<std::string>& names = skipped[reason];
    constexpr size_t kNamed = 3;
    if (names.size() == 1) {
      std::cerr << "  " << noun << " " << names[0];
    } else {
      std::cerr << "  " << names.size() << " " << noun << "s ("
                << absl::StrJoin(names.begin(),
                                 names.begin() + std::min(names.size(), kNamed), ", ");
      if (names.size() > kNamed) std::cerr << " and " << names.size() - kNamed << " more";
      std::cerr << ")";
    }
    std::cerr << ": not rewritten: " << reason << "\n";
  }
  for (const auto& f : total.functions()) {
    if (!f.skipped().empty()) continue;
    const char* kind = f.subgraph() ? "  subgraph " : "  function ";
    if (f.rewrites() > 0) {
      std::cerr << kind << f.name() << ": " << f.rewrites()
                << " rewrite(s); nodes " << f.nodes_before() << " -> "
                << f.nodes_after();
      if (f.variable_reads_folded() > 0)
        std::cerr << "; " << f.variable_reads_folded()
                  << " variable read(s) folded into constants";
      if (f.constant_args() > 0)
        std::cerr << "; " << f.constant_args() << " argument(s) seen as constants, "
                  << f.constant_args_folded() << " folded";
      std::cerr << "\n";
    } else if (f.constant_args() > 0) {
      std::cerr << kind << f.name() << ": no rewrite; " << f.constant_args()
                << " argument(s) seen as constants\n";
    }
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
              << " -> " << HumanSize(r.peak_bytes_after())
              << " (graft mem, one op at a time)\n";
    if (r.peak_bytes_after() >
        r.peak_bytes_before() - r.peak_bytes_before() / 100) {
      std::cerr << "  note: the recomputation lowers graft mem's peak by "
                   "less than 1%: what makes the peak is not what the "
                   "forward keeps for the backward under this plan (`graft "
                   "mem` names what is live there; the memory and budget "
                   "strategies recompute more)\n";
    }
  }
}

}  // namespace

namespace {

api::RulesSpec RulesSpecOf(const ApplyCommandOptions& options) {
  api::RulesSpec spec;
  spec.rule_files = options.rule_files;
  spec.pipeline = options.pipeline;
  spec.transforms = options.transforms;
  spec.onnxoptimizer_passes = options.onnxoptimizer_passes;
  spec.gtt_inputs = options.gtt_inputs;
  spec.program = options.program;
  spec.skip_rules = options.skip_rules;
  spec.only_rules = options.only_rules;
  spec.outputs = options.outputs;
  spec.analysis.device = options.device;
  spec.analysis.loss = options.loss;
  spec.analysis.seed = options.seed;
  spec.analysis.input_shapes = options.input_shapes;
  spec.analysis.batch = options.batch;
  spec.analysis.default_device = options.default_device;
  spec.analysis.cpu_kernels = options.cpu_kernels;
  return spec;
}

}  // namespace

int RunApply(const ApplyCommandOptions& options) {
  // `-r rules/*.graft m.onnx`: the shell's glob gave -r one file and made
  // the rest inputs.
  for (const std::string& input : options.inputs) {
    if (absl::EndsWith(input, ".graft")) {
      std::cerr << "apply: error: `" << input
                << "` is a rule file, not a model: give each rule file its "
                   "own -r (-r a.graft -r b.graft), or their folder (-r "
                   "rules/onnx/transformers)\n";
      return kExitUsage;
    }
  }
  bool batch = IsBatch(options);
  api::Model model =
      ModelArg(options.input, options.input_format, options.allow_empty,
               options.saved_model);
  api::Output out{options.output, options.output_format};
  if (!batch) {
    if (api::Error e = api::RefuseOverwrite(model, out, options.in_place);
        !e.message.empty())
      return Fail(e);
  }
  api::ApplyOptions apply;
  apply.outputs = options.outputs;
  apply.max_rewrites = options.max_rewrites;
  apply.opset = options.opset;
  apply.functions = options.functions;
  apply.diff = options.diff;
  if (!CustomOps(options.custom_ops, options.custom_ops_file,
                 &apply.custom_ops))
    return kExitFailure;
  if (options.max_const_elements > 0)
    SetMaxConstElements(options.max_const_elements);
  // Every path written is checked before anything is: a failure writes
  // nothing.
  for (const std::string& path : {options.output, options.report}) {
    if (path.empty() || (batch && path == options.output)) continue;
    if (path == options.output && IsSavedModelDir(path)) continue;
    absl::Status writable = CheckWritable(path);
    if (!writable.ok()) {
      std::cerr << writable.message() << "\n";
      return kExitFailure;
    }
  }
  // Compile everything before touching the graph.
  api::Result<std::shared_ptr<const api::Rules>> rules =
      CompileForCommand(RulesSpecOf(options), options.params);
  if (!rules.ok()) {
    if (rules.error().message.empty()) return kExitUsage;  // said
    bool located = !rules.error().diagnostics.empty() ||
                   !options.pipeline.empty();
    return Fail(rules.error(), located ? "" : "apply", true);
  }
  if (!options.quiet) {
    for (const std::string& note : (*rules)->notes())
      std::cerr << "apply: note: " << note << "\n";
  }
  if (batch) return RunBatchApply(options, **rules, apply);

  api::Result<api::Applied> applied = api::Apply(model, **rules, apply, out);
  if (!applied.ok()) {
    Fail(applied.error());
    std::cerr << "nothing written\n";
    return kExitFailure;
  }
  if (!options.report.empty()) {
    absl::Status s =
        WriteFileAtomically(options.report, api::ToJson(applied->report));
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return kExitFailure;
    }
  }
  if (!options.quiet) PrintApplySummary(applied->report);
  if (options.diff) std::cout << applied->diff_text;
  return kExitOk;
}

int RunExplain(const ExplainOptions& options) {
  int exit_code = kExitOk;
  std::shared_ptr<const api::Rules> rules =
      CompileRuleFiles(options.rule_files, options.params, &exit_code,
                       options.pipeline, options.program, options.input_shapes,
                       options.batch);
  if (rules == nullptr) return exit_code;
  std::vector<api::ExplainedFunction> functions;
  api::Result<std::vector<api::ExplainedRule>> explained = api::Explain(
      ModelArg(options.model, GraphFormat::kAuto, false, options.saved_model),
      *rules, options.rule, options.node, &functions);
  if (!explained.ok()) return Fail(explained.error(), "explain");
  if (options.node.empty()) {
    for (const api::ExplainedFunction& f : functions) {
      if (f.constant_args == 0 && f.variable_reads == 0) continue;
      std::cout << "function " << f.name << ": " << f.constant_args
                << " argument(s) seen as constants, " << f.variable_reads
                << " variable read(s) as their values\n";
    }
  }
  for (const api::ExplainedRule& r : *explained) {
    for (const api::Explanation& e : r.at) {
      std::cout << r.rule << " at `" << e.node << "`";
      if (!e.function.empty()) std::cout << " in function " << e.function;
      std::cout << ": ";
      if (!e.matched) {
        std::cout << "no match: " << e.reason << "\n";
        continue;
      }
      std::cout << "matches";
      for (const auto& [binding, value] : e.bindings)
        std::cout << "\n    " << binding << " = " << value;
      std::cout << "\n";
    }
    if (options.node.empty())
      std::cout << r.rule << ": " << r.at.size() << " match(es)\n";
  }
  return kExitOk;
}

int RunDiff(const DiffOptions& options) {
  api::DiffOptions diff;
  diff.format = options.format;
  diff.full = options.full;
  diff.context = options.context;
  api::Result<api::Diffed> result =
      api::Diff(ModelArg(options.before, GraphFormat::kAuto, false,
                         options.saved_model),
                ModelArg(options.after, GraphFormat::kAuto, false,
                         options.saved_model),
                diff);
  if (!result.ok()) return Fail(result.error(), "diff");
  std::cout << result->text;
  return options.exit_code && result->differs ? kExitFailure : kExitOk;
}

}  // namespace graft::cli
