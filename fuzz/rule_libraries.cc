#include "fuzz/rule_libraries.h"

#include <cstdlib>

#include "analysis/hooks.h"
#include "builtins/builtins.h"

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

}  // namespace graft::fuzz
