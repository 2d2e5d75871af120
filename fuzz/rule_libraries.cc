#include "fuzz/rule_libraries.h"

#include <cstdlib>

#include "analysis/hooks.h"
#include "builtins/builtins.h"
#include "engine/driver.h"
#include "engine/validate.h"

namespace graft::fuzz {

const std::vector<std::unique_ptr<dsl::RuleSet>>& RuleLibraries(
    const std::vector<const char*>& files) {
  static const auto* sets = [&files] {
    // The hooks outlive the sets that call them.
    auto* hooks = new HookRegistry;
    RegisterBuiltinHooks(*hooks);
    if (!analysis::RegisterAnalysisHooks(*hooks).ok()) std::abort();
    auto* out = new std::vector<std::unique_ptr<dsl::RuleSet>>;
    for (const char* file : files) {
      dsl::Diagnostics d;
      auto set = dsl::CompileRuleFiles({file}, {}, *hooks, &d);
      if (set == nullptr) std::abort();
      out->push_back(std::move(set));
    }
    return out;
  }();
  return *sets;
}

bool ApplyToFixpoint(Graph& graph, const dsl::RuleSet& set) {
  const bool valid = CheckValid(graph).ok();
  ApplyOptions options;
  options.max_rewrites = 200;
  absl::StatusOr<report::ApplyReport> report =
      ApplyRules(graph, set.rules(), options);
  if (!report.ok() || !report->converged()) return false;
  if (valid && !CheckValid(graph).ok()) std::abort();
  absl::StatusOr<report::ApplyReport> again =
      ApplyRules(graph, set.rules(), options);
  if (again.ok() && again->rewrites() != 0) std::abort();  // not a fixpoint
  return true;
}

}  // namespace graft::fuzz
