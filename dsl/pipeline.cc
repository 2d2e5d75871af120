#include "dsl/pipeline.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "dsl/ast.h"
#include "engine/files.h"
#include "yaml-cpp/yaml.h"

namespace graft::dsl {
namespace {

absl::Status At(const std::string& path, const YAML::Mark& mark,
                const std::string& what) {
  if (mark.line < 0)
    return absl::InvalidArgumentError(absl::StrCat(path, ": error: ", what));
  return absl::InvalidArgumentError(absl::StrCat(
      path, ":", mark.line + 1, ":", mark.column + 1, ": error: ", what));
}

// Pipelines nest (`- pipeline: other.yaml`) at most this deep: one that
// includes itself is an error, not a recursion without end.
constexpr int kMaxPipelineDepth = 8;

absl::StatusOr<Pipeline> Load(const std::string& path, int depth);

}  // namespace

absl::StatusOr<Pipeline> LoadPipeline(const std::string& path) {
  return Load(path, 0);
}

namespace {

absl::StatusOr<Pipeline> Load(const std::string& path, int depth) {
  absl::StatusOr<std::string> text =
      ReadFileBytes(path, kMaxTextFileBytes, "a pipeline (YAML)");
  if (!text.ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return At(path, e.mark, e.msg);
  }
  Pipeline pipeline;
  pipeline.path = path;
  if (!root.IsMap() || !root["steps"] || !root["steps"].IsSequence()) {
    return At(path, root.Mark(), "expected a map with a `steps` list");
  }
  for (const auto& key : root) {
    if (key.first.as<std::string>() != "steps") {
      return At(path, key.first.Mark(),
                absl::StrCat("unknown key `", key.first.as<std::string>(),
                             "` (expected `steps`)"));
    }
  }
  for (const YAML::Node& step : root["steps"]) {
    if (!step.IsMap()) {
      return At(
          path, step.Mark(),
          "each step is a map with `rules` and maybe `params`, or `pipeline`");
    }
    for (const auto& key : step) {
      std::string k = key.first.as<std::string>();
      if (k != "rules" && k != "params" && k != "pipeline") {
        return At(
            path, key.first.Mark(),
            absl::StrCat(
                "unknown key `", k,
                "` in a step (expected `rules`, `params` or `pipeline`)"));
      }
    }
    if (const YAML::Node& other = step["pipeline"]) {
      // Another pipeline's steps, in its order, its files relative to it.
      if (step.size() != 1 || !other.IsScalar()) {
        return At(path, other.Mark(),
                  "a `pipeline` step names one pipeline file, alone (its steps "
                  "set their own params)");
      }
      if (depth + 1 >= kMaxPipelineDepth) {
        return At(path, other.Mark(),
                  absl::StrCat("pipelines nest at most ", kMaxPipelineDepth,
                               " deep (does one include itself?)"));
      }
      absl::StatusOr<Pipeline> included =
          Load(PathRelativeTo(path, other.as<std::string>()), depth + 1);
      if (!included.ok()) return included.status();
      for (PipelineStep& s : included->steps)
        pipeline.steps.push_back(std::move(s));
      continue;
    }
    if (!step["rules"]) {
      return At(path, step.Mark(),
                "each step needs `rules` (a file or a list of files)");
    }
    PipelineStep out;
    const YAML::Node& rules = step["rules"];
    std::vector<YAML::Node> files;
    if (rules.IsScalar()) {
      files.push_back(rules);
    } else if (rules.IsSequence()) {
      for (const YAML::Node& f : rules) files.push_back(f);
    } else {
      return At(path, rules.Mark(),
                "`rules` must be a file or a list of files");
    }
    for (const YAML::Node& f : files) {
      if (!f.IsScalar()) return At(path, f.Mark(), "expected a rule file path");
      std::string file = f.as<std::string>();
      out.rule_files.push_back(PathRelativeTo(path, file));
    }
    if (const YAML::Node& params = step["params"]) {
      if (!params.IsMap())
        return At(path, params.Mark(), "`params` must be a map");
      for (const auto& p : params) {
        if (!p.second.IsScalar()) {
          return At(path, p.second.Mark(), "a param value must be a scalar");
        }
        std::string name = p.first.as<std::string>();
        out.params[name] = p.second.as<std::string>();
        out.param_locs[name] = {
            path, Loc{p.first.Mark().line + 1, p.first.Mark().column + 1}};
      }
    }
    pipeline.steps.push_back(std::move(out));
  }
  return pipeline;
}

}  // namespace
}  // namespace graft::dsl
