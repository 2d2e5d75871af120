// graft fmt and graft test: the commands over rule files (folders searched
// for `*.graft`).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "dsl/compiler.h"
#include "dsl/format.h"
#include "dsl/parser.h"
#include "dsl/runner.h"
#include "engine/files.h"
#include "engine/graph_io.h"

namespace graft::cli {

namespace {

void CollectRuleFiles(const std::string& path, std::vector<std::string>* out);

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

int RunFmt(const FmtOptions& options) {
  std::vector<std::string> files;
  for (const std::string& p : options.paths) CollectRuleFiles(p, &files);
  int unformatted = 0;
  for (const std::string& path : files) {
    absl::StatusOr<std::string> text = ReadFileBytes(path);
    if (!text.ok()) {
      std::cerr << text.status().message() << "\n";
      return kExitFailure;
    }
    std::string formatted = dsl::FormatRuleText(*text);
    dsl::Diagnostics d;
    dsl::ParseRuleFile(path, formatted, &d);
    if (d.has_errors()) {
      // Formatting never breaks a file; report the file's own syntax errors.
      dsl::Diagnostics original;
      dsl::ParseRuleFile(path, *text, &original);
      std::cerr << original.Render();
      return kExitFailure;
    }
    if (formatted == *text) continue;
    ++unformatted;
    if (options.check) {
      std::cout << "--- " << path << "\n+++ " << path << " (formatted)\n"
                << LineDiff(*text, formatted);
    } else {
      absl::Status s = WriteFileAtomically(path, formatted);
      if (!s.ok()) {
        std::cerr << s.message() << "\n";
        return kExitFailure;
      }
      std::cerr << "formatted " << path << "\n";
    }
  }
  if (options.check && unformatted > 0) {
    std::cerr << unformatted
              << " file(s) not formatted; run graft fmt on them\n";
    return kExitFailure;
  }
  return kExitOk;
}


namespace {

void CollectRuleFiles(const std::string& path, std::vector<std::string>* out) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    out->push_back(path);  // reported as unreadable when compiled
    return;
  }
  if (!S_ISDIR(info.st_mode)) {
    out->push_back(path);
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

}  // namespace

int RunTests(const TestCommandOptions& options) {
  std::vector<std::string> files;
  for (const std::string& p : options.paths) CollectRuleFiles(p, &files);
  if (files.empty()) {
    std::cerr << "test: error: no rule files found\n";
    return kExitFailure;
  }
  HookRegistry hooks = *CommandHooks();
  int passed = 0, failed = 0;
  for (const std::string& path : files) {
    dsl::Diagnostics diagnostics;
    std::unique_ptr<dsl::RuleSet> set =
        dsl::CompileRuleFiles({path}, {}, hooks, &diagnostics);
    if (set == nullptr) {
      std::cout << "FAIL " << path << ": does not compile\n"
                << diagnostics.Render();
      ++failed;
      continue;
    }
    for (const dsl::RuleTestResult& t : dsl::RunRuleTests(*set, hooks)) {
      if (t.failure.empty()) {
        std::cout << "ok   " << t.name << "\n";
        ++passed;
      } else {
        std::cout << "FAIL " << t.name << ": " << t.failure << "\n";
        ++failed;
      }
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? kExitOk : kExitFailure;
}


}  // namespace graft::cli
