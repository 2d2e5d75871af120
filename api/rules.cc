// Rules as library calls: compiling rule files, pipelines and GTT
// transforms; the rule files' own tests; the canonical format; explain.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/graft.h"
#include "api/internal.h"
#include "builtins/builtins.h"
#include "dsl/compiler.h"
#include "dsl/format.h"
#include "dsl/functions.h"
#include "dsl/parser.h"
#include "dsl/pipeline.h"
#include "dsl/transforms.h"
#include "engine/files.h"
#include "engine/suggest.h"

namespace graft::api {

absl::StatusOr<HookRegistry> Hooks(
    const analysis::AnalysisHookOptions& options) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  absl::Status s = analysis::RegisterAnalysisHooks(hooks, options);
  if (!s.ok()) return s;
  return hooks;
}

Rules::Rules(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Rules::~Rules() = default;

int Rules::num_rules() const {
  int n = 0;
  for (const dsl::CompiledStep& s : impl_->steps) n += s.rules->size();
  return n;
}

std::vector<std::string> Rules::files() const {
  std::vector<std::string> out;
  for (const dsl::CompiledStep& s : impl_->steps) {
    for (const std::string& f : s.rules->files()) {
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    }
  }
  return out;
}

const std::vector<std::string>& Rules::notes() const { return impl_->notes; }
std::string Rules::warnings() const { return impl_->warnings; }
int Rules::num_warnings() const { return impl_->num_warnings; }

namespace {

Error CompileError(const dsl::Diagnostics& diagnostics) {
  Error e;
  e.message = diagnostics.Render();
  if (!e.message.empty() && e.message.back() == '\n') e.message.pop_back();
  e.diagnostics = diagnostics.errors();
  // A `--param` at fault is the caller's mistake.
  for (const dsl::Diagnostic& d : diagnostics.errors())
    e.usage = e.usage || d.path == "--param";
  return e;
}

// The pipeline steps of a GTT --transforms string over rules/tf/gtt.
Result<std::vector<dsl::PipelineStep>> StepsFromTransforms(
    const RulesSpec& spec, const std::vector<std::string>& outputs,
    std::vector<std::string>* notes) {
  absl::StatusOr<std::vector<dsl::TransformCall>> calls =
      dsl::ParseTransforms(spec.transforms);
  if (!calls.ok()) return Error::Usage(std::string(calls.status().message()));
  dsl::TransformOptions options;
  options.rules_dir = dsl::FindTransformRules(spec.program, "tf/gtt");
  options.inputs = spec.gtt_inputs;
  options.outputs = absl::StrJoin(outputs, ",");
  absl::StatusOr<std::vector<dsl::PipelineStep>> steps =
      dsl::TransformSteps(*calls, options, notes);
  if (!steps.ok())
    return Error::Usage(absl::StrCat("error: ", steps.status().message()));
  return *std::move(steps);
}

// The pipeline steps of onnxoptimizer's pass names over rules/onnx/onnxoptimizer.
Result<std::vector<dsl::PipelineStep>> StepsFromPasses(const RulesSpec& spec,
                                                       std::vector<std::string>* notes) {
  absl::StatusOr<std::vector<dsl::TransformCall>> calls =
      dsl::ParsePassList(spec.onnxoptimizer_passes);
  if (!calls.ok()) return Error::Usage(absl::StrCat("error: ", calls.status().message()));
  dsl::TransformOptions options;
  options.rules_dir = dsl::FindTransformRules(spec.program, "onnx/onnxoptimizer");
  options.flag = "--onnxoptimizer-passes";
  options.kind = "pass";
  absl::StatusOr<std::vector<dsl::PipelineStep>> steps =
      dsl::TransformSteps(*calls, options, notes);
  if (!steps.ok())
    return Error::Usage(absl::StrCat("error: ", steps.status().message()));
  return *std::move(steps);
}

void CollectRuleFiles(const std::string& path, std::vector<std::string>* out) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    out->push_back(path);  // unreadable ones are reported when read
    return;
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> entries;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") entries.push_back(name);
  }
  closedir(dir);
  std::sort(entries.begin(), entries.end());
  for (const std::string& name : entries) {
    std::string child = path + "/" + name;
    struct stat c;
    if (stat(child.c_str(), &c) != 0) continue;
    if (S_ISDIR(c.st_mode)) {
      CollectRuleFiles(child, out);
    } else if (name.size() > 6 && name.substr(name.size() - 6) == ".graft") {
      out->push_back(child);
    }
  }
}

// A pipeline named without a path or extension (`onnx-transformers`) is a
// shipped one: rules/pipelines/NAME.yaml.
std::string PipelinePath(const std::string& pipeline, const std::string& program) {
  struct stat info;
  if (pipeline.find('/') != std::string::npos || absl::EndsWith(pipeline, ".yaml") ||
      absl::EndsWith(pipeline, ".yml") || stat(pipeline.c_str(), &info) == 0)
    return pipeline;
  return absl::StrCat(dsl::FindTransformRules(program, "pipelines"), "/", pipeline, ".yaml");
}

// Drops the rules `patterns` name from every step (`only`: those they do
// not name); says which, or names the pattern that matches no rule.
Result<std::string> SkipRules(const std::vector<std::string>& patterns,
                              std::vector<dsl::CompiledStep>& steps,
                              bool only) {
  std::vector<bool> matched(patterns.size(), false);
  std::vector<std::string> dropped;
  auto add = [](std::vector<std::string>& names, const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  };
  for (dsl::CompiledStep& step : steps) {
    for (const std::string& name : step.rules->Drop(patterns, &matched, only))
      add(dropped, name);
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (matched[i]) continue;
    // every rule there was: those left and those dropped
    std::vector<std::string> known = dropped;
    for (const dsl::CompiledStep& step : steps) {
      for (const ::graft::Rule* r : step.rules->rules()) add(known, r->name());
    }
    const std::string closest = Closest(patterns[i], known);
    return Error::Usage(absl::StrCat(
        "error: ", only ? "only" : "skip", " rules: `", patterns[i],
        "` names no rule of these ", known.size(), " rules",
        closest.empty() ? ""
                        : absl::StrCat(" (did you mean `", closest, "`?)")));
  }
  if (only) {
    std::vector<std::string> kept;
    for (const dsl::CompiledStep& step : steps) {
      for (const ::graft::Rule* r : step.rules->rules()) add(kept, r->name());
    }
    return absl::StrCat("kept ", kept.size(),
                        " rule(s): ", absl::StrJoin(kept, ", "), " (left out ",
                        dropped.size(), ")");
  }
  return absl::StrCat("left out ", dropped.size(),
                      " rule(s): ", absl::StrJoin(dropped, ", "));
}

}  // namespace

Result<std::shared_ptr<const Rules>> CompileRules(const RulesSpec& spec) {
  int given = !spec.rule_files.empty() + !spec.rule_text.empty() +
              !spec.pipeline.empty() + !spec.transforms.empty() +
              !spec.onnxoptimizer_passes.empty();
  if (given != 1) {
    return Error::Usage(
        given == 0 ? "error: no rules: give rule files (-r FILE), a pipeline "
                     "(--pipeline FILE), GTT transforms (--transforms "
                     "STRING) or onnxoptimizer passes (--onnxoptimizer-passes "
                     "LIST)"
                   : "error: give one of rule files (-r), a pipeline "
                     "(--pipeline), --transforms or --onnxoptimizer-passes, "
                     "not several");
  }
  if (!spec.gtt_inputs.empty() && spec.transforms.empty())
    return Error::Usage("error: --inputs goes with --transforms (GTT's "
                        "--inputs)");
  auto impl = std::make_unique<Rules::Impl>();
  analysis::AnalysisHookOptions& a = impl->analysis;
  a.device = spec.analysis.device;
  a.loss = spec.analysis.loss;
  a.seed = spec.analysis.seed;
  a.default_device = spec.analysis.default_device;
  a.outputs = spec.outputs;
  absl::StatusOr<analysis::CpuKernels> kernels =
      analysis::ParseCpuKernels(spec.analysis.cpu_kernels);
  if (!kernels.ok())
    return Error::Usage(absl::StrCat("error: ", kernels.status().message()));
  a.cpu_kernels = *kernels;
  absl::StatusOr<analysis::ShapeOptions> shapes =
      InputShapes(spec.analysis.input_shapes, spec.analysis.batch, nullptr);
  if (!shapes.ok())
    return Error::Usage(absl::StrCat("error: ", shapes.status().message()));
  a.shapes = *std::move(shapes);
  std::vector<dsl::PipelineStep> steps;
  if (!spec.pipeline.empty()) {
    const std::string path = PipelinePath(spec.pipeline, spec.program);
    absl::StatusOr<dsl::Pipeline> pipeline = dsl::LoadPipeline(path);
    if (!pipeline.ok()) return Error::From(pipeline.status());
    steps = pipeline->steps;
    impl->sources.push_back(path);
  } else if (!spec.transforms.empty()) {
    Result<std::vector<dsl::PipelineStep>> s =
        StepsFromTransforms(spec, a.outputs, &impl->notes);
    if (!s.ok()) return s.error();
    steps = *std::move(s);
  } else if (!spec.onnxoptimizer_passes.empty()) {
    Result<std::vector<dsl::PipelineStep>> s = StepsFromPasses(spec, &impl->notes);
    if (!s.ok()) return s.error();
    steps = *std::move(s);
  } else if (!spec.rule_files.empty()) {
    dsl::PipelineStep step;
    step.rule_files = spec.rule_files;
    steps.push_back(std::move(step));
  }
  // A folder among the rule files stands for the .graft files under it.
  for (dsl::PipelineStep& step : steps) {
    std::vector<std::string> files;
    for (const std::string& f : step.rule_files) {
      const size_t before = files.size();
      CollectRuleFiles(f, &files);
      if (files.size() == before) files.push_back(f);  // a folder without rules: said when read
    }
    step.rule_files = std::move(files);
  }
  absl::StatusOr<HookRegistry> hooks = Hooks(a);
  if (!hooks.ok())
    return Error::Input(absl::StrCat("error: ", hooks.status().message()));
  impl->hooks = std::make_unique<HookRegistry>(*std::move(hooks));
  dsl::Diagnostics diagnostics;
  if (!spec.rule_text.empty()) {
    dsl::CompileOptions compile;
    compile.params = spec.params;
    dsl::CompiledStep step;
    step.name = absl::StrCat("step 1 (", spec.rule_text_name, ")");
    step.rules = dsl::CompileRuleText(spec.rule_text_name, spec.rule_text,
                                      compile, *impl->hooks, &diagnostics);
    if (step.rules == nullptr) return CompileError(diagnostics);
    impl->steps.push_back(std::move(step));
  } else if (!dsl::CompileSteps(
                 steps, spec.params,
                 !spec.pipeline.empty() || !spec.transforms.empty(),
                 *impl->hooks, &diagnostics, &impl->steps)) {
    return CompileError(diagnostics);
  }
  for (bool only : {true, false}) {
    const std::vector<std::string>& patterns =
        only ? spec.only_rules : spec.skip_rules;
    if (patterns.empty()) continue;
    Result<std::string> selected = SkipRules(patterns, impl->steps, only);
    if (!selected.ok()) return selected.error();
    impl->notes.push_back(*selected);
  }
  impl->warnings = diagnostics.Render();
  impl->num_warnings = static_cast<int>(diagnostics.warnings().size());
  for (const dsl::CompiledStep& s : impl->steps) {
    for (const std::string& f : s.rules->files()) impl->sources.push_back(f);
  }
  return std::shared_ptr<const Rules>(
      std::make_shared<Rules>(std::move(impl)));
}

Result<PipelineYaml> PipelineFromTransforms(const RulesSpec& spec,
                                            const std::string& yaml_dir) {
  PipelineYaml out;
  Result<std::vector<dsl::PipelineStep>> steps =
      StepsFromTransforms(spec, spec.outputs, &out.notes);
  if (!steps.ok()) return steps.error();
  out.steps = static_cast<int>(steps->size());
  out.yaml = dsl::PipelineYaml(*steps, yaml_dir, spec.transforms);
  return out;
}

namespace {

// A line diff (longest common subsequence): `-` old, `+` new lines.
std::string LineDiff(const std::string& a, const std::string& b) {
  std::vector<std::string> x = absl::StrSplit(a, '\n'),
                           y = absl::StrSplit(b, '\n');
  std::vector<std::vector<int>> lcs(x.size() + 1,
                                    std::vector<int>(y.size() + 1, 0));
  for (size_t i = x.size(); i-- > 0;) {
    for (size_t j = y.size(); j-- > 0;) {
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1
                               : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out;
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (i < x.size() && j < y.size() && x[i] == y[j]) {
      ++i;
      ++j;
    } else if (i < x.size() &&
               (j == y.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      absl::StrAppend(&out, "-", x[i++], "\n");
    } else {
      absl::StrAppend(&out, "+", y[j++], "\n");
    }
  }
  return out;
}

}  // namespace

Result<std::vector<RuleTest>> TestRules(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) CollectRuleFiles(p, &files);
  if (files.empty()) return Error::Input("error: no rule files found");
  HookRegistry hooks = *Hooks();
  std::vector<RuleTest> out;
  for (const std::string& path : files) {
    dsl::Diagnostics diagnostics;
    std::unique_ptr<dsl::RuleSet> set =
        dsl::CompileRuleFiles({path}, {}, hooks, &diagnostics);
    if (set == nullptr) {
      std::string rendered = diagnostics.Render();
      if (!rendered.empty() && rendered.back() == '\n') rendered.pop_back();
      out.push_back({path, "does not compile\n" + rendered});
      continue;
    }
    for (const dsl::RuleTestResult& t : dsl::RunRuleTests(*set, hooks))
      out.push_back({t.name, t.failure});
  }
  return out;
}

Result<std::vector<Formatted>> FormatRules(
    const std::vector<std::string>& paths, bool write) {
  std::vector<std::string> files;
  for (const std::string& p : paths) CollectRuleFiles(p, &files);
  std::vector<Formatted> out;
  for (const std::string& path : files) {
    absl::StatusOr<std::string> text = ReadFileBytes(path);
    if (!text.ok()) return Error::From(text.status());
    Formatted f{path, dsl::FormatRuleText(*text), ""};
    dsl::Diagnostics d;
    dsl::ParseRuleFile(path, f.text, &d);
    if (d.has_errors()) {
      // Formatting never breaks a file; report the file's own syntax errors.
      dsl::Diagnostics original;
      dsl::ParseRuleFile(path, *text, &original);
      return CompileError(original);
    }
    if (f.text != *text) f.diff = LineDiff(*text, f.text);
    out.push_back(std::move(f));
  }
  if (write) {
    for (const Formatted& f : out) {
      if (f.diff.empty()) continue;
      absl::Status s = WriteFileAtomically(f.path, f.text);
      if (!s.ok()) return Error::From(s);
    }
  }
  return out;
}

Result<std::vector<ExplainedRule>> Explain(const Model& model,
                                           const Rules& rules,
                                           const std::string& rule,
                                           const std::string& node,
                                           std::vector<ExplainedFunction>* functions) {
  Result<Graph> graph = Load(model, /*freeze_by_default=*/true);
  if (!graph.ok()) return graph.error();
  std::vector<ExplainedRule> out;
  std::map<std::string, size_t> index;  // rule -> its entry in `out`
  auto explain = [&](const dsl::RuleSet& set, const Graph& g, NodeId only,
                     const std::string& function) {
    for (const dsl::RuleExplanations& r : dsl::ExplainRules(set, rule, g, only)) {
      auto [it, added] = index.emplace(r.rule->name(), out.size());
      if (added) out.emplace_back().rule = r.rule->name();
      for (const auto& [id, e] : r.at)
        out[it->second].at.push_back({g.node(id).name(), function, e.matched, e.reason, e.bindings});
    }
  };
  bool found = node.empty();
  const std::vector<dsl::CompiledStep>& steps = rules.impl().steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    const dsl::CompiledStep& step = steps[i];
    if (i > 0) {
      // A pipeline's step sees what the steps before it made.
      report::ApplyReport ran;
      absl::Status s = dsl::RunPipeline(*graph, absl::MakeConstSpan(&steps[i - 1], 1),
                                        dsl::RunOptions(), &ran);
      if (!s.ok()) return Error::From(s);
    }
    // The node as this step sees it (a rewrite before may have replaced it).
    const NodeId only = node.empty() ? kNoNode : graph->FindId(node);
    if (node.empty() || only != kNoNode) explain(*step.rules, *graph, only, "");
    found = found || only != kNoNode;
    if (!node.empty() && only != kNoNode) continue;
    // The bodies of the graph's library functions, as the rules see them.
    bool placed = false;  // the named node: in the first body holding one
    absl::Status bodies = dsl::ForEachShownBody(*graph, [&](const ShownBody& b) {
      const NodeId in_body = node.empty() ? kNoNode : b.body.FindId(node);
      if (!node.empty() && (in_body == kNoNode || placed)) return;
      placed = found = true;
      explain(*step.rules, b.body, in_body, b.function);
      if (functions != nullptr && i == 0)
        functions->push_back({b.function, b.constant_args, b.variable_reads});
    });
    if (!bodies.ok()) return Error::From(bodies);
  }
  if (!found)
    return Error::Input(absl::StrCat(model.path, ": error: no node `", node,
                                     "` in the graph or its functions"));
  if (out.empty())
    return Error::Input(
        absl::StrCat("error: no rule `", rule, "` in the rule files"));
  return out;
}

}  // namespace graft::api
