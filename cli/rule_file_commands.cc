// graft fmt and graft test: the commands over rule files (folders searched
// for `*.graft`), printed from the library calls.
#include <iostream>

#include "cli/commands.h"

namespace graft::cli {

int RunFmt(const FmtOptions& options) {
  api::Result<std::vector<api::Formatted>> files =
      api::FormatRules(options.paths, !options.check);
  if (!files.ok()) return Fail(files.error());
  int unformatted = 0;
  for (const api::Formatted& f : *files) {
    if (f.diff.empty()) continue;
    ++unformatted;
    if (options.check) {
      std::cout << "--- " << f.path << "\n+++ " << f.path << " (formatted)\n"
                << f.diff;
    } else {
      std::cerr << "formatted " << f.path << "\n";
    }
  }
  if (options.check && unformatted > 0) {
    std::cerr << unformatted
              << " file(s) not formatted; run graft fmt on them\n";
    return kExitFailure;
  }
  return kExitOk;
}

int RunTests(const TestCommandOptions& options) {
  api::Result<std::vector<api::RuleTest>> tests = api::TestRules(options.paths);
  if (!tests.ok()) return Fail(tests.error(), "test");
  int passed = 0, failed = 0;
  for (const api::RuleTest& t : *tests) {
    if (t.failure.empty()) {
      std::cout << "ok   " << t.name << "\n";
      ++passed;
    } else {
      std::cout << "FAIL " << t.name << ": " << t.failure << "\n";
      ++failed;
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace graft::cli
