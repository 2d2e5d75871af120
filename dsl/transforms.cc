#include "dsl/transforms.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dsl/diagnostics.h"
#include "dsl/parser.h"
#include "engine/files.h"

namespace graft::dsl {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\';
}

// A cursor over the string that knows its line and column.
class Cursor {
 public:
  explicit Cursor(absl::string_view text) : text_(text) {}
  bool done() const { return at_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[at_]; }
  void next() {
    if (text_[at_++] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
  }
  void SkipSpace() {
    while (!done() && IsSpace(peek())) next();
  }
  std::string Name() {
    std::string out;
    while (!done() && IsNameChar(peek())) {
      out += peek();
      next();
    }
    return out;
  }
  int col() const { return col_; }
  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("--transforms:", line_, ":", col_, ": error: ", message));
  }

 private:
  absl::string_view text_;
  size_t at_ = 0;
  int line_ = 1, col_ = 1;
};

// `k=v, k="v w", ...)` after a transform's `(`.
absl::Status ParseParams(Cursor& c, TransformCall* call) {
  c.SkipSpace();
  if (c.peek() == ')') {
    c.next();
    return absl::OkStatus();
  }
  while (true) {
    c.SkipSpace();
    std::string key = c.Name();
    if (key.empty())
      return c.Error(
          absl::StrCat("expected a param name in `", call->name, "(...)`"));
    c.SkipSpace();
    if (c.peek() != '=')
      return c.Error(absl::StrCat("expected `=` after `", key, "`"));
    c.next();
    c.SkipSpace();
    std::string value;
    if (c.peek() == '"') {
      c.next();
      while (!c.done() && c.peek() != '"') {
        value += c.peek();
        c.next();
      }
      if (c.done()) return c.Error("a quoted value is not closed");
      c.next();
    } else {
      while (!c.done() && c.peek() != ',' && c.peek() != ')') {
        value += c.peek();
        c.next();
      }
      while (!value.empty() && IsSpace(value.back())) value.pop_back();
    }
    call->params.push_back({key, value});
    c.SkipSpace();
    if (c.peek() == ',') {
      c.next();
      continue;
    }
    if (c.peek() == ')') {
      c.next();
      return absl::OkStatus();
    }
    return c.Error(
        absl::StrCat("expected `,` or `)` in `", call->name, "(...)`"));
  }
}

// GTT params graft accepts for a transform but does not need, and why.
const std::map<std::string, std::map<std::string, std::string>>& Ignored() {
  static const auto* table =
      new std::map<std::string, std::map<std::string, std::string>>{
          {"fold_constants",
           {{"ignore_errors", "graft never fails on what it cannot fold"},
            {"clear_output_shapes", "graft writes no `_output_shapes`"}}},
          {"strip_unused_nodes",
           {{"type", "graft keeps the graph's Placeholders and their dtypes"},
            {"shape", "graft keeps the graph's Placeholders and their shapes"},
            {"name", "graft keeps the graph's Placeholders"}}},
      };
  return *table;
}

// The params a rule file declares, or why they cannot be read.
absl::StatusOr<std::vector<std::string>> DeclaredParams(
    const std::string& path) {
  absl::StatusOr<std::string> source =
      ReadFileBytes(path, kMaxTextFileBytes, "a rule file");
  if (!source.ok()) return source.status();
  Diagnostics diagnostics;
  RuleFile file = ParseRuleFile(path, *source, &diagnostics);
  std::vector<std::string> out;
  for (const Param& p : file.params) out.push_back(p.name);
  return out;
}

bool IsDir(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string YamlQuoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<std::vector<TransformCall>> ParseTransforms(
    absl::string_view text) {
  std::vector<TransformCall> out;
  Cursor c(text);
  while (true) {
    c.SkipSpace();
    if (c.done()) break;
    TransformCall call;
    call.column = c.col();
    call.name = c.Name();
    if (call.name.empty()) {
      return c.Error(absl::StrCat("expected a transform name, found `",
                                  std::string(1, c.peek()), "`"));
    }
    if (c.peek() == '(') {
      c.next();
      absl::Status s = ParseParams(c, &call);
      if (!s.ok()) return s;
    }
    out.push_back(std::move(call));
  }
  if (out.empty()) return c.Error("no transforms");
  return out;
}

std::vector<std::string> KnownTransforms(const std::string& rules_dir) {
  std::vector<std::string> out;
  DIR* dir = opendir(rules_dir.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() > 6 && name.substr(name.size() - 6) == ".graft")
      out.push_back(name.substr(0, name.size() - 6));
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<PipelineStep>> TransformSteps(
    const std::vector<TransformCall>& calls, const TransformOptions& options,
    std::vector<std::string>* notes) {
  std::vector<std::string> known = KnownTransforms(options.rules_dir);
  std::vector<PipelineStep> steps;
  for (const TransformCall& call : calls) {
    if (std::find(known.begin(), known.end(), call.name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          options.flag, ": unknown ", options.kind, " `", call.name, "` (column ",
          call.column, "); known: ", absl::StrJoin(known, ", ")));
    }
    PipelineStep step;
    step.rule_files.push_back(
        absl::StrCat(options.rules_dir, "/", call.name, ".graft"));
    absl::StatusOr<std::vector<std::string>> declared =
        DeclaredParams(step.rule_files[0]);
    if (!declared.ok()) return declared.status();
    auto declares = [&](const std::string& p) {
      return std::find(declared->begin(), declared->end(), p) !=
             declared->end();
    };
    const auto ignored = Ignored().find(call.name);
    for (const auto& [key, value] : call.params) {
      if (declares(key)) {
        std::string& v = step.params[key];
        v = v.empty() ? value : absl::StrCat(v, "|", value);  // a list
      } else if (ignored != Ignored().end() && ignored->second.count(key)) {
        notes->push_back(
            absl::StrCat(call.name, ": `", key,
                         "` changes nothing: ", ignored->second.at(key)));
      } else {
        std::vector<std::string> all = *declared;
        if (ignored != Ignored().end()) {
          for (const auto& [k, why] : ignored->second) all.push_back(k);
        }
        std::sort(all.begin(), all.end());
        return absl::InvalidArgumentError(
            absl::StrCat("--transforms: transform `", call.name,
                         "` has no param `", key, "`; its params: ",
                         all.empty() ? "(none)" : absl::StrJoin(all, ", ")));
      }
    }
    for (const auto& [param, value] :
         {std::pair<std::string, std::string>{"inputs", options.inputs},
          {"outputs", options.outputs}}) {
      if (declares(param) && !value.empty() && !step.params.count(param))
        step.params[param] = value;
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

std::string PipelineYaml(const std::vector<PipelineStep>& steps,
                         const std::string& yaml_dir,
                         const std::string& transforms) {
  std::string flat =
      absl::StrJoin(absl::StrSplit(transforms, absl::ByAnyChar(" \t\n\r\\"),
                                   absl::SkipEmpty()),
                    " ");
  std::string out =
      absl::StrCat("# From the Graph Transform Tool's --transforms:\n#   ",
                   flat, "\nsteps:\n");
  for (const PipelineStep& step : steps) {
    // Lexically: a rule file reached through a link stays where it is seen.
    std::string path =
        std::filesystem::absolute(step.rule_files[0])
            .lexically_normal()
            .lexically_relative(
                std::filesystem::absolute(yaml_dir.empty() ? "." : yaml_dir)
                    .lexically_normal())
            .string();
    absl::StrAppend(&out, "  - rules: ", path, "\n");
    if (step.params.empty()) continue;
    std::vector<std::string> items;
    for (const auto& [k, v] : step.params)
      items.push_back(absl::StrCat(k, ": ", YamlQuoted(v)));
    absl::StrAppend(&out, "    params: {", absl::StrJoin(items, ", "), "}\n");
  }
  return out;
}

absl::StatusOr<std::vector<TransformCall>> ParsePassList(absl::string_view text) {
  std::vector<TransformCall> out;
  int column = 1;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    std::string name(absl::StripAsciiWhitespace(piece));
    const int at = column + static_cast<int>(piece.find_first_not_of(" \t"));
    column += static_cast<int>(piece.size()) + 1;
    if (name.empty()) continue;
    if (!std::all_of(name.begin(), name.end(), IsNameChar))
      return absl::InvalidArgumentError(absl::StrCat(
          "--onnxoptimizer-passes:1:", at, ": error: `", name,
          "` is not a pass name (names separated by commas)"));
    out.push_back({name, {}, at});
  }
  if (out.empty())
    return absl::InvalidArgumentError("--onnxoptimizer-passes: no pass named");
  return out;
}

std::string FindTransformRules(const std::string& program, const std::string& library) {
  const std::string own = "rules/" + library;
  if (IsDir(own)) return own;
  // Above the program as it was called (a runfiles tree), then above the
  // file it links to (a build's output under the source tree's execroot).
  std::vector<std::filesystem::path> starts = {
      std::filesystem::absolute(program).lexically_normal()};
  char resolved[PATH_MAX];
  if (realpath(program.c_str(), resolved) != nullptr)
    starts.push_back(resolved);
  for (const std::filesystem::path& start : starts) {
    for (std::filesystem::path dir = start.parent_path();
         !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      std::filesystem::path candidate = dir / "rules" / library;
      if (IsDir(candidate.string())) return candidate.string();
    }
  }
  return own;
}

}  // namespace graft::dsl
