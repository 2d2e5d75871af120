#include "dsl/runner.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "dsl/functions.h"
#include "engine/driver.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"
#include "engine/validate.h"

namespace graft::dsl {
namespace {

std::string StepName(const PipelineStep& step, size_t index, size_t count) {
  std::vector<std::string> files;
  for (const std::string& f : step.rule_files)
    files.push_back(absl::StrCat("`", f, "`"));
  std::string list = absl::StrJoin(files, ", ");
  if (count == 1) return list;
  return absl::StrCat("step ", index + 1, " of ", count, " (", list, ")");
}

void MergeStats(const report::ApplyReport& step, report::ApplyReport* total) {
  total->set_rewrites(total->rewrites() + step.rewrites());
  total->set_converged(total->converged() && step.converged());
  if (!step.non_convergence().empty())
    total->set_non_convergence(step.non_convergence());
  for (const auto& r : step.rules()) *total->add_rules() = r;
  for (const auto& s : step.skipped()) {
    if (total->skipped_size() < 100) *total->add_skipped() = s;
  }
  for (const auto& e : step.guard_errors()) {
    if (total->guard_errors_size() < 100) *total->add_guard_errors() = e;
  }
}

}  // namespace

bool CompileSteps(const std::vector<PipelineStep>& steps,
                  const std::map<std::string, std::string>& params,
                  bool shared_params, const HookRegistry& hooks,
                  Diagnostics* diagnostics, std::vector<CompiledStep>* out) {
  std::set<std::string> declared;
  for (size_t i = 0; i < steps.size(); ++i) {
    CompileOptions compile;
    compile.params = steps[i].params;
    for (const auto& [k, v] : params) compile.params[k] = v;
    compile.ignore_unknown_params = shared_params;
    std::unique_ptr<RuleSet> set =
        CompileRuleFiles(steps[i].rule_files, compile, hooks, diagnostics);
    if (set == nullptr) return false;
    declared.insert(set->params().begin(), set->params().end());
    // A step's own params must be declared by its rule files.
    for (const auto& [name, value] : steps[i].params) {
      const std::vector<std::string>& known = set->params();
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      auto loc = steps[i].param_locs.find(name);
      diagnostics->Error(
          loc == steps[i].param_locs.end() ? "pipeline" : loc->second.first,
          loc == steps[i].param_locs.end() ? Loc{} : loc->second.second,
          absl::StrCat("param `", name, "` is not declared by the step's rule ",
                       "files (", absl::StrJoin(steps[i].rule_files, ", "),
                       ")"),
          Suggest(name, known));
    }
    out->push_back({StepName(steps[i], i, steps.size()), std::move(set)});
  }
  const std::vector<std::string> known(declared.begin(), declared.end());
  for (const auto& [k, v] : params) {
    if (declared.count(k) == 0) {
      diagnostics->Error("--param", {},
                         absl::StrCat("no rule file declares param `", k, "`"),
                         Suggest(k, known));
    }
  }
  return !diagnostics->has_errors();
}

absl::Status RunPipeline(Graph& graph, absl::Span<const CompiledStep> steps,
                         const RunOptions& options,
                         report::ApplyReport* report) {
  report->set_converged(true);
  report->set_nodes_before(graph.num_nodes());
  absl::Status selection = CheckFunctionSelection(graph, options.functions);
  if (!selection.ok()) return selection;
  // A broken library is the input's fault: said before any rule runs.
  std::vector<ValidationIssue> library = LibraryIssues(graph);
  if (!library.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("the function library: ", library[0].message,
                     library.size() > 1
                         ? absl::StrCat(" (and ", library.size() - 1, " more)")
                         : ""));
  const Dialect& dialect = DialectOf(graph);
  for (const CompiledStep& step : steps) {
    if (step.rules->dialect() != dialect.name())
      return absl::InvalidArgumentError(absl::StrCat(
          "step `", step.name, "`: its rules are for ", step.rules->dialect(),
          " graphs; this is ", dialect.graph_noun(), " (", dialect.rules_folder(),
          "/ holds its libraries)"));
  }
  if (options.opset > 0) {
    if (absl::Status raised = dialect.RaiseOpset(graph, options.opset);
        !raised.ok())
      return raised;
  }
  for (const CompiledStep& step : steps) {
    report::StepReport* s = report->add_steps();
    s->set_name(step.name);
    for (const std::string& f : step.rules->files()) s->add_rule_files(f);
    s->set_outcome("not run");
  }
  ApplyOptions apply;
  apply.outputs = options.outputs;
  apply.max_rewrites = options.max_rewrites;
  for (size_t i = 0; i < steps.size(); ++i) {
    const CompiledStep& step = steps[i];
    report::StepReport* outcome = report->mutable_steps(static_cast<int>(i));
    for (const std::string& f : step.rules->files()) report->add_rule_files(f);
    absl::StatusOr<report::ApplyReport> result =
        ApplyRules(graph, step.rules->rules(), apply);
    std::string later =
        i + 1 < steps.size()
            ? absl::StrCat("; ", steps.size() - i - 1, " later step(s) not run")
            : "";
    auto failed = [&](const absl::Status& status) {
      outcome->set_outcome("failed");
      outcome->set_error(std::string(status.message()));
      report->set_converged(false);
      return Prefixed(absl::StrCat(step.name, " failed", later, ": "), status);
    };
    if (!result.ok()) return failed(result.status());
    MergeStats(*result, report);
    outcome->set_rewrites(result->rewrites());
    if (result->converged()) {
      absl::Status ordered = step.rules->OrderOutput(graph);
      if (!ordered.ok()) return failed(ordered);
    }
    if (!result->converged()) {
      outcome->set_outcome("did not converge");
      outcome->set_error(result->non_convergence());
      return absl::FailedPreconditionError(
          absl::StrCat(step.name, " did not converge", later, ": ",
                       result->non_convergence()));
    }
    outcome->set_outcome("ok");
  }
  std::vector<StepRules> step_rules;
  for (const CompiledStep& step : steps)
    step_rules.push_back({step.name, step.rules.get()});
  absl::Status in_functions =
      RunOnFunctions(graph, step_rules, options, report);
  if (!in_functions.ok()) return in_functions;
  report->set_nodes_after(graph.num_nodes());  // a subgraph's rewrite may drop a weight
  ValidateOptions validate;
  validate.outputs = options.outputs;
  validate.custom_ops = options.custom_ops;
  // Calls to library functions are ops too.
  for (const tf::FunctionDef& f : graph.header().library().function())
    validate.custom_ops.insert(f.signature().name());
  absl::Status valid = CheckValid(graph, validate);
  if (!valid.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the rewritten graph is invalid, nothing written: ", valid.message()));
  }
  return absl::OkStatus();
}

namespace {

// What must hold after a test's rule ran; each problem found.
std::vector<std::string> CheckExpectations(
    const RuleTest& test, const std::string& rule, const Graph& graph,
    const report::ApplyReport& report, const std::set<std::string>& input_ops) {
  std::vector<std::string> problems;
  // With `all_rules`, the other rules' rewrites are the setting: only this
  // rule's count.
  int rewrites = report.rewrites();
  const report::SkippedRewrite* rolled_back = nullptr;
  if (test.all_rules) {
    rewrites = 0;
    for (const report::RuleStats& r : report.rules())
      if (r.name() == rule) rewrites += r.applied();
    for (const report::SkippedRewrite& s : report.skipped())
      if (s.rule() == rule && rolled_back == nullptr) rolled_back = &s;
    if (!test.no_match && rewrites == 0 && rolled_back == nullptr)
      problems.push_back(absl::StrCat("`", rule, "` never applied"));
  } else if (report.skipped_size() > 0) {
    rolled_back = &report.skipped(0);
  }
  if (test.no_match && rewrites > 0) {
    problems.push_back(absl::StrCat("expected no match, got ", rewrites,
                                    " rewrite(s)"));
  }
  // A match whose rewrite was rolled back still matched.
  if (test.no_match && rolled_back != nullptr) {
    const report::SkippedRewrite& s = *rolled_back;
    problems.push_back(absl::StrCat(
        "expected no match, but `", s.rule(), "` matched at `", s.node(),
        "` and its rewrite was rolled back: ", s.reason()));
  }
  for (const auto& [op, want] : test.expect_ops) {
    int got = static_cast<int>(graph.NodesWithOp(op).size());
    if (got != want)
      problems.push_back(
          absl::StrCat(op, ": ", got, " node(s), expected ", want));
  }
  for (const std::string& n : test.expect_nodes) {
    if (!graph.Contains(n))
      problems.push_back(absl::StrCat("no node `", n, "`"));
  }
  auto strip_port0 = [](std::string t) {
    if (t.size() > 2 && t.substr(t.size() - 2) == ":0") t.resize(t.size() - 2);
    return t;
  };
  for (const auto& [tensor, node] : test.expect_edges) {
    const Node* n = graph.FindNode(node);
    if (n == nullptr) {
      problems.push_back(absl::StrCat("no node `", node, "`"));
      continue;
    }
    bool found = false;
    for (const std::string& in : graph.ExportInputs(n->id()))
      found = found || strip_port0(in) == strip_port0(tensor);
    if (!found)
      problems.push_back(
          absl::StrCat("`", tensor, "` does not feed `", node, "`"));
  }
  for (const std::string& n : test.expect_no_nodes) {
    if (graph.Contains(n))
      problems.push_back(absl::StrCat("node `", n, "` is still there"));
  }
  ValidateOptions validate;
  validate.custom_ops = input_ops;
  absl::Status valid = CheckValid(graph, validate);
  if (!valid.ok()) problems.push_back(std::string(valid.message()));
  // A failed expectation says what graft knows of why: rewrites rolled back
  // and guards that failed with an error.
  if (!problems.empty() && !test.no_match) {
    for (const report::SkippedRewrite& s : report.skipped()) {
      problems.push_back(absl::StrCat("`", s.rule(), "` at `", s.node(),
                                      "` was rolled back: ", s.reason()));
    }
    for (const report::SkippedRewrite& s : report.guard_errors()) {
      problems.push_back(absl::StrCat("a guard of `", s.rule(), "` at `",
                                      s.node(), "` failed: ", s.reason()));
    }
  }
  return problems;
}

// Runs one test block; returns an empty string on success, else why not.
std::string RunOneTest(const RuleFile& file, const Rule& rule,
                       const RuleTest& test, const RuleSet& set,
                       const HookRegistry& hooks) {
  std::unique_ptr<RuleSet> with_params;
  if (!test.params.empty()) {
    CompileOptions options;
    for (const RuleTest::ParamValue& p : test.params) {
      // A file a test names (a `ranges` table, a `graph`) is relative to
      // the rule file, as its `input` is.
      std::string value = p.value;
      for (const Param& decl : file.params)
        if (decl.name == p.name && (decl.type == "ranges" || decl.type == "graph") &&
            !value.empty())
          value = PathRelativeTo(file.path, value);
      if (!options.params.emplace(p.name, value).second)
        return absl::StrCat("param `", p.name, "` is given twice");
    }
    Diagnostics diagnostics;
    with_params = CompileRuleFiles({file.path}, options, hooks, &diagnostics);
    if (with_params == nullptr) {
      return absl::StrCat(
          "with its params the file does not compile: ",
          absl::StripTrailingAsciiWhitespace(diagnostics.Render()));
    }
  }
  const ::graft::Rule* compiled =
      (with_params ? *with_params : set).Find(rule.name);
  if (compiled == nullptr) return "the rule did not compile";
  if (test.input.empty()) return "the test names no `input`";
  absl::StatusOr<Graph> graph =
      LoadGraphFile(PathRelativeTo(file.path, test.input));
  // The input's own ops are what its runtime has (custom ones too).
  std::set<std::string> input_ops;
  if (graph.ok()) graph->ForEachNode([&](const Node& n) { input_ops.insert(n.op()); });
  if (!graph.ok()) return std::string(graph.status().message());
  std::vector<const ::graft::Rule*> rules = {compiled};
  if (test.all_rules) rules = (with_params ? *with_params : set).rules();
  ApplyOptions apply;
  apply.max_rewrites = 10000;  // a test graph is small; fail fast
  absl::StatusOr<report::ApplyReport> report = ApplyRules(*graph, rules, apply);
  if (!report.ok()) return std::string(report.status().message());
  if (!report->converged()) return report->non_convergence();
  return absl::StrJoin(
      CheckExpectations(test, rule.name, *graph, *report, input_ops), "; ");
}

}  // namespace

std::vector<RuleTestResult> RunRuleTests(const RuleSet& set,
                                         const HookRegistry& hooks) {
  std::vector<RuleTestResult> out;
  if (set.files_ast().empty()) return out;
  const RuleFile& file = *set.files_ast().front();
  for (const Rule& rule : file.rules) {
    for (const RuleTest& test : rule.tests) {
      out.push_back({absl::StrCat(file.path, ":", test.loc.line, ": ",
                                  rule.name, " / ", test.name),
                     RunOneTest(file, rule, test, set, hooks)});
    }
  }
  return out;
}

std::vector<RuleExplanations> ExplainRules(const RuleSet& set,
                                           const std::string& rule,
                                           const Graph& graph, NodeId node) {
  std::vector<RuleExplanations> out;
  for (const ::graft::Rule* r : set.rules()) {
    if (!rule.empty() && r->name() != rule) continue;
    RuleExplanations& e = out.emplace_back();
    e.rule = r;
    if (node != kNoNode) {
      e.at.emplace_back(node, ExplainAt(set, r->name(), graph, node));
      continue;
    }
    std::vector<std::string> anchors = r->anchor_ops();
    graph.ForEachNode([&](const Node& n) {
      if (!anchors.empty() && !GlobsMatch(anchors, n.op())) return;
      Explanation x = ExplainAt(set, r->name(), graph, n.id());
      if (x.matched) e.at.emplace_back(n.id(), std::move(x));
    });
  }
  return out;
}

}  // namespace graft::dsl
