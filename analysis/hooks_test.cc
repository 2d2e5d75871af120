#include "analysis/hooks.h"

#include <thread>

#include "builtins/builtins.h"
#include "dsl/compiler.h"
#include "engine/driver.h"
#include "dialects/graph_io.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

// A rule that reads every analysis hook: it tags the forward activations of
// 16 KiB that live long enough to be saved for the backward pass.
constexpr char kRule[] = R"(
rule tag_saved_activations {
  match {
    r = Relu(_)
    where in_forward(r) and not in_backward(r) and lifetime(r) > 10 and bytes(r) == 16384
      and cost.flops(r) == 4096 and cost.time_us(r) > 5 and topo_order(r) > 0
      and peak_bytes("") > 100000 and not name_matches(r, ".*_saved")
  }
  rewrite {
    rename r to "{r}_saved"
  }
}
)";

// kRule, compiled with the builtin and analysis hooks (added to `hooks`).
std::unique_ptr<dsl::RuleSet> CompileRule(HookRegistry& hooks) {
  RegisterBuiltinHooks(hooks);
  EXPECT_TRUE(RegisterAnalysisHooks(hooks).ok());
  dsl::Diagnostics diagnostics;
  std::unique_ptr<dsl::RuleSet> rules =
      dsl::CompileRuleText("saved.graft", kRule, {}, hooks, &diagnostics);
  EXPECT_NE(rules, nullptr) << diagnostics.Render();
  return rules;
}

TEST(AnalysisHooksTest, RulesSeeShapesRegionsScheduleMemoryAndCost) {
  HookRegistry hooks;
  std::unique_ptr<dsl::RuleSet> rules = CompileRule(hooks);
  ASSERT_NE(rules, nullptr);
  absl::StatusOr<Graph> graph = LoadGraph("tests/data/mlp_train.pb");
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<report::ApplyReport> report =
      ApplyRules(*graph, rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  // The two hidden layers of 128 units (32 x 128 x 4 bytes); not the
  // 64-unit one, and not the ReluGrads of the backward pass.
  EXPECT_EQ(report->rewrites(), 2);
  EXPECT_TRUE(graph->Contains("Relu_saved"));
  EXPECT_TRUE(graph->Contains("Relu_1_saved"));
  EXPECT_TRUE(graph->Contains("Relu_2"));
}

// The analyses are cached per graph version and shared by the rule set's
// users: threads rewriting their own copies at once each get the result one
// thread alone gets.
TEST(AnalysisHooksTest, SharedBetweenThreads) {
  HookRegistry hooks;
  std::unique_ptr<dsl::RuleSet> rules = CompileRule(hooks);
  ASSERT_NE(rules, nullptr);
  constexpr int kThreads = 4, kRounds = 5;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        absl::StatusOr<Graph> graph = LoadGraph("tests/data/mlp_train.pb");
        absl::StatusOr<report::ApplyReport> report =
            graph.ok() ? ApplyRules(*graph, rules->rules())
                       : absl::StatusOr<report::ApplyReport>(graph.status());
        if (!report.ok() || report->rewrites() != 2 ||
            !graph->Contains("Relu_1_saved"))
          ++wrong[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0);
}

TEST(AnalysisHooksTest, AnUnknownDeviceIsAnError) {
  HookRegistry hooks;
  AnalysisHookOptions options;
  options.device = "tpu";
  EXPECT_FALSE(RegisterAnalysisHooks(hooks, options).ok());
}

}  // namespace
}  // namespace graft::analysis
