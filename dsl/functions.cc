#include "dsl/functions.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/constant_args.h"
#include "engine/driver.h"
#include "engine/function_body.h"
#include "engine/onnx_bodies.h"
#include "engine/saved_model.h"
#include "engine/validate.h"
#include "engine/variable_reads.h"

namespace graft::dsl {
namespace {

std::set<std::string> Names(const std::string& functions) {
  std::set<std::string> out;
  for (absl::string_view name : absl::StrSplit(functions, ',', absl::SkipEmpty()))
    out.insert(std::string(name));
  return out;
}

// Rule counts of one body's run, summed into the total by rule name.
void AddRuleStats(const report::ApplyReport& run, report::ApplyReport* total) {
  total->set_rewrites(total->rewrites() + run.rewrites());
  for (const report::RuleStats& r : run.rules()) {
    report::RuleStats* into = nullptr;
    for (report::RuleStats& t : *total->mutable_rules()) {
      if (t.name() == r.name()) into = &t;
    }
    if (into == nullptr) {
      *total->add_rules() = r;
      continue;
    }
    into->set_applied(into->applied() + r.applied());
    into->set_skipped(into->skipped() + r.skipped());
    into->set_guard_errors(into->guard_errors() + r.guard_errors());
  }
  for (const auto& s : run.skipped()) {
    if (total->skipped_size() < 100) *total->add_skipped() = s;
  }
  for (const auto& e : run.guard_errors()) {
    if (total->guard_errors_size() < 100) *total->add_guard_errors() = e;
  }
}

// Up to ten names, then how many more.
std::string Listed(const std::set<std::string>& names) {
  std::string out;
  int shown = 0;
  for (const std::string& name : names) {
    if (shown == 10) return absl::StrCat(out, " and ", names.size() - 10, " more");
    absl::StrAppend(&out, shown++ > 0 ? ", " : "", name);
  }
  return out;
}

}  // namespace

absl::Status CheckFunctionSelection(const Graph& graph,
                                    const std::string& functions) {
  if (functions == "all" || functions == "none") return absl::OkStatus();
  std::set<std::string> known;
  for (const tf::FunctionDef& f : graph.header().library().function())
    known.insert(f.signature().name());
  for (const OnnxBody& body : OnnxBodies(graph)) known.insert(body.Label());
  for (const std::string& name : Names(functions)) {
    if (known.count(name) == 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "--functions names `", name, "`, which the graph does not hold; ",
          graph.onnx() != nullptr ? "its subgraphs (node/attr)" : "its library functions",
          ": ", known.empty() ? "none" : Listed(known)));
  }
  return absl::OkStatus();
}

namespace {

// Runs `steps` in one body graph, its own fixpoint; the number of
// rewrites, or an error naming `label`.
absl::StatusOr<int> RunSteps(Graph& body, const std::string& label,
                             const std::vector<StepRules>& steps,
                             const ApplyOptions& apply, report::ApplyReport* report) {
  int rewrites = 0;
  for (const StepRules& step : steps) {
    absl::StatusOr<report::ApplyReport> run = ApplyRules(body, step.rules->rules(), apply);
    if (!run.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          label, ": ", step.name, " failed: ", run.status().message()));
    AddRuleStats(*run, report);
    rewrites += run->rewrites();
    if (!run->converged()) {
      report->set_converged(false);
      return absl::FailedPreconditionError(absl::StrCat(
          label, ": ", step.name, " did not converge: ", run->non_convergence()));
    }
  }
  return rewrites;
}

// The ONNX graph's subgraphs (If/Loop/Scan bodies; nested ones inside
// them) that `options.functions` selects, each rewritten as a graph and
// put back. `prefix` names the enclosing subgraphs in reports.
absl::Status RunOnOnnxBodies(Graph& graph, const std::string& prefix,
                             const std::vector<StepRules>& steps,
                             const RunOptions& options, report::ApplyReport* report) {
  const bool all = options.functions == "all";
  std::set<std::string> named = Names(options.functions);
  ValidateOptions validate;
  validate.custom_ops = options.custom_ops;
  ApplyOptions apply;
  apply.max_rewrites = options.max_rewrites;
  RunOptions nested = options;
  nested.functions = "all";  // inside a chosen body: everything in it
  for (const OnnxBody& body : OnnxBodies(graph)) {
    const std::string label = prefix + body.Label();
    if (!all && named.count(label) == 0) continue;
    absl::StatusOr<Graph> sub = OnnxBodyGraph(graph, body);
    report::FunctionReport* out = report->add_functions();
    out->set_name(label);
    out->set_subgraph(true);
    if (!sub.ok()) {  // said, and left as it is, unless named
      if (!all) return sub.status();
      out->set_skipped(std::string(sub.status().message()));
      continue;
    }
    out->set_nodes_before(sub->num_nodes());
    absl::StatusOr<int> rewrites =
        RunSteps(*sub, absl::StrCat("subgraph `", label, "`"), steps, apply, report);
    if (!rewrites.ok()) return rewrites.status();
    const int inner_before = report->functions_size();
    absl::Status inner = RunOnOnnxBodies(*sub, label + "/", steps, nested, report);
    if (!inner.ok()) return inner;
    bool inner_changed = false;
    for (int i = inner_before; i < report->functions_size(); ++i)
      inner_changed = inner_changed || report->functions(i).rewrites() > 0;
    out->set_rewrites(*rewrites);
    out->set_nodes_after(sub->num_nodes());
    if (*rewrites == 0 && !inner_changed) continue;
    absl::Status valid = CheckValid(*sub, validate);
    if (!valid.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          "the rewritten subgraph `", label, "` is invalid, nothing written: ",
          valid.message()));
    if (absl::Status s = SetOnnxBody(graph, body, *sub); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOnFunctions(Graph& graph, const std::vector<StepRules>& steps,
                            const RunOptions& options,
                            report::ApplyReport* report) {
  if (graph.onnx() != nullptr && options.functions != "none") {
    absl::Status selection = CheckFunctionSelection(graph, options.functions);
    if (!selection.ok()) return selection;
    return RunOnOnnxBodies(graph, "", steps, options, report);
  }
  if (options.functions == "none" || graph.header().library().function_size() == 0)
    return absl::OkStatus();
  absl::Status selection = CheckFunctionSelection(graph, options.functions);
  if (!selection.ok()) return selection;
  bool all = options.functions == "all";
  std::set<std::string> named = Names(options.functions);
  // A SavedModel's save and restore functions: only when named.
  std::set<std::string> checkpoint = CheckpointFunctions(graph);
  tf::FunctionDefLibrary library = graph.header().library();
  // Calls to library functions are ops of the bodies (and of the graph).
  ValidateOptions validate;
  validate.custom_ops = options.custom_ops;
  for (const tf::FunctionDef& f : library.function())
    validate.custom_ops.insert(f.signature().name());
  // In place, a SavedModel's variable reads are the checkpoint's values
  // for the rules.
  VariableReads variables = VariableReads::Of(graph);
  // In a frozen graph, the weights passed into control flow are constants
  // for the rules.
  ConstantArgs constants = ConstantArgs::Of(graph);
  bool changed = false;
  for (int i = 0; i < library.function_size(); ++i) {
    const tf::FunctionDef& function = library.function(i);
    const std::string& name = function.signature().name();
    if (!all && named.count(name) == 0) continue;
    report::FunctionReport* out = report->add_functions();
    out->set_name(name);
    out->set_nodes_before(function.node_def_size());
    if (all && checkpoint.count(name)) {
      out->set_skipped(
          "the SavedModel's checkpoint save/restore (name it in --functions "
          "to rewrite it)");
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    absl::StatusOr<Graph> body = FunctionBodyGraph(function, library);
    if (!body.ok()) {
      if (!all) return body.status();
      out->set_skipped(std::string(body.status().message()));
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    absl::StatusOr<int> exposed = variables.Expose(name, *body);
    if (!exposed.ok()) return exposed.status();
    absl::StatusOr<int> shown = constants.Expose(name, *body);
    if (!shown.ok()) return shown.status();
    ApplyOptions apply;
    apply.max_rewrites = options.max_rewrites;
    for (const auto& [ret, node] : function.control_ret()) apply.outputs.push_back(node);
    absl::StatusOr<int> rewrites =
        RunSteps(*body, absl::StrCat("function `", name, "`"), steps, apply, report);
    if (!rewrites.ok()) return rewrites.status();
    absl::StatusOr<int> restored = VariableReads::Restore(*body);
    if (!restored.ok()) return restored.status();
    absl::StatusOr<int> args_back = ConstantArgs::Restore(*body);
    if (!args_back.ok()) return args_back.status();
    out->set_rewrites(*rewrites);
    out->set_variable_reads_folded(*exposed - *restored);
    out->set_constant_args(*shown);
    out->set_constant_args_folded(*shown - *args_back);
    if (out->rewrites() == 0) {
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    absl::Status valid = CheckValid(*body, validate);
    if (!valid.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          "the rewritten body of function `", name,
          "` is invalid, nothing written: ", valid.message()));
    absl::StatusOr<tf::FunctionDef> rewritten =
        FunctionFromBody(*body, function, library);
    if (!rewritten.ok()) return rewritten.status();
    out->set_nodes_after(rewritten->node_def_size());
    *library.mutable_function(i) = *std::move(rewritten);
    changed = true;
  }
  if (changed) graph.SetLibrary(std::move(library));
  return absl::OkStatus();
}

absl::Status ForEachShownBody(const Graph& graph,
                              const std::function<void(const ShownBody&)>& fn) {
  if (graph.onnx() != nullptr) return absl::OkStatus();
  const tf::FunctionDefLibrary& library = graph.header().library();
  std::set<std::string> checkpoint = CheckpointFunctions(graph);
  VariableReads variables = VariableReads::Of(graph);
  ConstantArgs constants = ConstantArgs::Of(graph);
  for (const tf::FunctionDef& function : library.function()) {
    const std::string& name = function.signature().name();
    if (checkpoint.count(name)) continue;
    absl::StatusOr<Graph> body = FunctionBodyGraph(function, library);
    if (!body.ok()) continue;
    absl::StatusOr<int> reads = variables.Expose(name, *body);
    if (!reads.ok()) return reads.status();
    absl::StatusOr<int> shown = constants.Expose(name, *body);
    if (!shown.ok()) return shown.status();
    fn(ShownBody{name, *std::move(body), *reads, *shown});
  }
  return absl::OkStatus();
}

}  // namespace graft::dsl
