// Fuzz target: rule-file text, parsed, checked and compiled with every hook
// graft registers; what compiles is formatted, and the formatted text must
// compile too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "analysis/hooks.h"
#include "builtins/builtins.h"
#include "dsl/compiler.h"
#include "dsl/format.h"

namespace {

const graft::HookRegistry& Hooks() {
  static const graft::HookRegistry* hooks = [] {
    auto* h = new graft::HookRegistry;
    graft::RegisterBuiltinHooks(*h);
    (void)graft::analysis::RegisterAnalysisHooks(*h);
    return h;
  }();
  return *hooks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  graft::dsl::Diagnostics diagnostics;
  // Imports are refused: a fuzzed path must not read the file system.
  if (text.find("import") != std::string::npos) return 0;
  std::unique_ptr<graft::dsl::RuleSet> set = graft::dsl::CompileRuleText(
      "fuzz.graft", text, {}, Hooks(), &diagnostics);
  (void)diagnostics.Render();
  if (set == nullptr) return 0;
  graft::dsl::Diagnostics again;
  if (graft::dsl::CompileRuleText("fuzz.graft",
                                  graft::dsl::FormatRuleText(text), {}, Hooks(),
                                  &again) == nullptr) {
    std::abort();  // formatting broke a file that compiled
  }
  return 0;
}
