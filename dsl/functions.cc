#include "dsl/functions.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/dialect.h"
#include "engine/driver.h"
#include "engine/status_marks.h"

namespace graft::dsl {
namespace {

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

}  // namespace

absl::Status CheckFunctionSelection(const Graph& graph,
                                    const std::string& functions) {
  if (functions == "all" || functions == "none") return absl::OkStatus();
  const Dialect& dialect = DialectOf(graph);
  std::set<std::string> known;
  for (const NestedBody& body : dialect.NestedBodies(graph)) known.insert(body.label);
  return CheckSelection(known, functions, dialect.bodies_noun());
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
      return WithMarksOf(absl::FailedPreconditionError(absl::StrCat(
                             label, ": ", step.name,
                             " failed: ", run.status().message())),
                         run.status());
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

}  // namespace

absl::Status RunOnFunctions(Graph& graph, const std::vector<StepRules>& steps,
                            const RunOptions& options,
                            report::ApplyReport* report) {
  if (options.functions == "none") return absl::OkStatus();
  BodyRun run;
  run.functions = options.functions;
  run.custom_ops = options.custom_ops;
  run.run = [&](Graph& body, const std::string& what,
                const std::vector<std::string>& keep) -> absl::StatusOr<int> {
    ApplyOptions apply;
    apply.max_rewrites = options.max_rewrites;
    apply.outputs = keep;
    return RunSteps(body, what, steps, apply, report);
  };
  return DialectOf(graph).RewriteBodies(graph, run, report);
}

absl::Status ForEachShownBody(const Graph& graph,
                              const std::function<void(const ShownBody&)>& fn) {
  return DialectOf(graph).ForEachShownBody(graph, fn);
}

}  // namespace graft::dsl
