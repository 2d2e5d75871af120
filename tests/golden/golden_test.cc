// Golden cases: each folder under tests/golden/ holds `rules.graft`,
// `in.pbtxt` (or, for an ONNX model, `in.onnxtxt`) and `expected.diff`
// (and optionally `params.txt`, lines of name=value). The rules applied to the input must give exactly the
// expected change, as `graft diff --full in out` prints it (every added node
// in full, tensors with their values: readable in review); applying them
// again must change nothing; two runs must agree byte for byte. A case
// whose whole output file matters (other tests read it) also keeps
// `out.pbtxt`, compared byte for byte. A folder with a `no_match` file is a
// case where nothing may change.
//
// To (re)write the expected results after a deliberate change:
//   bazel run //tests/golden:golden_test -- --update
#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "analysis/hooks.h"
#include "builtins/builtins.h"
#include "dsl/compiler.h"
#include "dsl/functions.h"
#include "engine/driver.h"
#include "engine/graph_diff.h"
#include "dialects/graph_io.h"
#include "engine/validate.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

bool update = false;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Cases() {
  std::vector<std::string> out;
  DIR* dir = opendir("tests/golden");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name[0] != '.' && e->d_type == DT_DIR) out.push_back(name);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

struct Result {
  std::string text;
  std::string diff;  // graft diff --full of the input and the output
  report::ApplyReport report;
};

// The rules in the input's library functions too, as the runner applies
// them.
absl::Status ApplyInFunctions(Graph& graph, const dsl::RuleSet& rules,
                              report::ApplyReport* report) {
  return dsl::RunOnFunctions(graph, {{"golden", &rules}}, {}, report);
}

// The case's input: an ONNX model's text form, or a GraphDef's.
std::string InputOf(const std::string& dir) {
  const std::string onnx = dir + "/in.onnxtxt";
  return std::ifstream(onnx).good() ? onnx : dir + "/in.pbtxt";
}

Result Apply(const std::string& dir, const dsl::RuleSet& rules) {
  absl::StatusOr<Graph> graph = LoadGraph(InputOf(dir));
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<report::ApplyReport> report =
      ApplyRules(*graph, rules.rules());
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report->converged()) << report->non_convergence();
  absl::Status ordered = rules.OrderOutput(*graph);  // as the runner does
  EXPECT_TRUE(ordered.ok()) << ordered;
  absl::Status in_functions = ApplyInFunctions(*graph, rules, &*report);
  EXPECT_TRUE(in_functions.ok()) << in_functions;
  // The input's custom ops (tests/golden/<case>/custom_ops.txt).
  ValidateOptions validate;
  if (std::ifstream(dir + "/custom_ops.txt").good()) {
    EXPECT_TRUE(ReadCustomOps(dir + "/custom_ops.txt", &validate.custom_ops)
                    .ok());
  }
  EXPECT_TRUE(CheckValid(*graph, validate).ok()) << CheckValid(*graph, validate);
  absl::StatusOr<Graph> input = LoadGraph(InputOf(dir));
  DiffOptions full;
  full.full = true;
  Result r{SerializeGraph(*graph, GraphFormat::kText),
           FormatDiffText(DiffGraphs(*input, *graph, full)), *report};
  // Idempotence: a second application changes nothing.
  absl::StatusOr<report::ApplyReport> again = ApplyRules(*graph, rules.rules());
  EXPECT_TRUE(ApplyInFunctions(*graph, rules, &*again).ok());
  EXPECT_EQ(again->rewrites(), 0)
      << dir << ": the rules fire again on their own output";
  EXPECT_EQ(SerializeGraph(*graph, GraphFormat::kText), r.text);
  return r;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, MatchesExpectedOutput) {
  std::string dir = "tests/golden/" + GetParam();
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  ASSERT_TRUE(analysis::RegisterAnalysisHooks(hooks).ok());
  dsl::CompileOptions options;
  std::istringstream params(Read(dir + "/params.txt"));
  for (std::string line; std::getline(params, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos)
      options.params[line.substr(0, eq)] = line.substr(eq + 1);
  }
  dsl::Diagnostics diagnostics;
  std::unique_ptr<dsl::RuleSet> rules = dsl::CompileRuleFiles(
      {dir + "/rules.graft"}, options, hooks, &diagnostics);
  ASSERT_NE(rules, nullptr) << diagnostics.Render();
  Result first = Apply(dir, *rules);
  Result second = Apply(dir, *rules);
  EXPECT_EQ(first.text, second.text) << "two runs differ";
  // A case whose folder has a `no_match` file must leave the graph as it
  // is; any other case must exercise its rules.
  bool no_match = std::ifstream(dir + "/no_match").good();
  if (no_match) {
    EXPECT_EQ(first.report.rewrites(), 0)
        << dir << ": a no-match case was rewritten";
  } else {
    EXPECT_TRUE(first.report.rewrites() + first.report.skipped_size() > 0 ||
                rules->orders_output())
        << dir << ": nothing happened; a golden case must exercise its rules";
  }
  std::string diff_path = dir + "/expected.diff";
  std::string out_path = dir + "/out.pbtxt";
  bool keeps_output = std::ifstream(out_path).good();
  if (update) {
    const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    std::string root = std::string(ws ? ws : ".") + "/";
    std::ofstream(root + diff_path) << first.diff;
    if (keeps_output) std::ofstream(root + out_path) << first.text;
    return;
  }
  EXPECT_EQ(first.diff, Read(diff_path)) << dir;
  if (keeps_output) {
    EXPECT_EQ(first.text, Read(out_path)) << dir;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace graft

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--update") graft::update = true;
  }
  return RUN_ALL_TESTS();
}
