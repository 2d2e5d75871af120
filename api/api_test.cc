#include "api/graft.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace graft::api {
namespace {

constexpr char kModel[] = "examples/keras_cnn.pb";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<const Rules> Compile(RulesSpec spec) {
  Result<std::shared_ptr<const Rules>> rules = CompileRules(spec);
  EXPECT_TRUE(rules.ok()) << rules.error().message;
  return rules.ok() ? *rules : nullptr;
}

TEST(ApiTest, BytesInBytesOutEqualTheFileWritten) {
  RulesSpec spec;
  spec.pipeline = "rules/pipelines/inference.yaml";
  std::shared_ptr<const Rules> rules = Compile(spec);
  ASSERT_NE(rules, nullptr);
  Result<Applied> in_memory =
      Apply(Model::Bytes(ReadAll(kModel)), *rules, ApplyOptions{});
  ASSERT_TRUE(in_memory.ok()) << in_memory.error().message;
  std::string path = testing::TempDir() + "/folded.pb";
  Result<Applied> to_file =
      Apply(Model::File(kModel), *rules, ApplyOptions{}, Output{path});
  ASSERT_TRUE(to_file.ok()) << to_file.error().message;
  EXPECT_TRUE(to_file->bytes.empty());
  EXPECT_EQ(in_memory->bytes, ReadAll(path));
  EXPECT_GT(in_memory->report.rewrites(), 0);
  EXPECT_LT(in_memory->report.nodes_after(), in_memory->report.nodes_before());
  // The input file is untouched and the rewritten bytes load again.
  Result<report::GraphStats> stats = Stats(Model::Bytes(in_memory->bytes));
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->num_nodes(), in_memory->report.nodes_after());
}

TEST(ApiTest, RuleTextThatDoesNotCompileIsALocatedError) {
  RulesSpec spec;
  spec.rule_text = "rule r {\n  match { x = Relu(y) }\n  rewrite { replace x:0 with zz }\n}\n";
  spec.rule_text_name = "notebook.graft";
  Result<std::shared_ptr<const Rules>> rules = CompileRules(spec);
  ASSERT_FALSE(rules.ok());
  ASSERT_FALSE(rules.error().diagnostics.empty());
  const dsl::Diagnostic& d = rules.error().diagnostics[0];
  EXPECT_EQ(d.path, "notebook.graft");
  EXPECT_EQ(d.loc.line, 3);
  EXPECT_NE(rules.error().message.find("notebook.graft:3:"), std::string::npos)
      << rules.error().message;
}

TEST(ApiTest, ABadParamIsTheCallersError) {
  RulesSpec spec;
  spec.rule_files = {"rules/tf/fold_batch_norms.graft"};
  spec.params = {{"no_such_param", "1"}};
  Result<std::shared_ptr<const Rules>> rules = CompileRules(spec);
  ASSERT_FALSE(rules.ok());
  EXPECT_TRUE(rules.error().usage);
}

TEST(ApiTest, OneSourceOfRules) {
  RulesSpec spec;
  EXPECT_TRUE(CompileRules(spec).error().usage);
  spec.rule_files = {"rules/tf/fold_batch_norms.graft"};
  spec.pipeline = "rules/pipelines/inference.yaml";
  EXPECT_TRUE(CompileRules(spec).error().usage);
}

TEST(ApiTest, SkippedRulesLeaveEveryStepAndAreNamed) {
  RulesSpec spec;
  spec.pipeline = "rules/pipelines/inference.yaml";
  std::shared_ptr<const Rules> all = Compile(spec);
  spec.skip_rules = {"quantize_*", "fold_fused_batch_norm"};
  std::shared_ptr<const Rules> some = Compile(spec);
  ASSERT_NE(all, nullptr);
  ASSERT_NE(some, nullptr);
  EXPECT_LT(some->num_rules(), all->num_rules() - 2);
  ASSERT_FALSE(some->notes().empty());
  EXPECT_NE(some->notes().back().find("quantize_weights"), std::string::npos)
      << some->notes().back();
  Result<Applied> applied = Apply(Model::File(kModel), *some, ApplyOptions{});
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  for (const report::RuleStats& r : applied->report.rules()) {
    EXPECT_NE(r.name().rfind("quantize_", 0), 0u) << r.name();
    EXPECT_NE(r.name(), "fold_fused_batch_norm");
  }
  // A name that matches no rule is the caller's error, with the near one.
  spec.skip_rules = {"fold_fused_batchnorm"};
  Result<std::shared_ptr<const Rules>> typo = CompileRules(spec);
  ASSERT_FALSE(typo.ok());
  EXPECT_TRUE(typo.error().usage);
  EXPECT_NE(typo.error().message.find("did you mean `fold_fused_batch_norm`"),
            std::string::npos)
      << typo.error().message;
}

TEST(ApiTest, OnlyRulesKeepThoseAloneInEveryStep) {
  RulesSpec spec;
  spec.pipeline = "rules/pipelines/inference.yaml";
  spec.only_rules = {"quantize_*", "fold_fused_batch_norm"};
  std::shared_ptr<const Rules> some = Compile(spec);
  ASSERT_NE(some, nullptr);
  ASSERT_FALSE(some->notes().empty());
  EXPECT_EQ(some->notes().back().rfind("kept ", 0), 0u) << some->notes().back();
  Result<Applied> applied = Apply(Model::File(kModel), *some, ApplyOptions{});
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  ASSERT_FALSE(applied->report.rules().empty());
  for (const report::RuleStats& r : applied->report.rules()) {
    EXPECT_TRUE(r.name().rfind("quantize_", 0) == 0 ||
                r.name() == "fold_fused_batch_norm")
        << r.name();
  }
  // then skip_rules leaves some of those out
  spec.skip_rules = {"quantize_*"};
  std::shared_ptr<const Rules> one = Compile(spec);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->num_rules(), 1);
  spec.skip_rules = {};
  spec.only_rules = {"fold_fused_batchnorm"};
  Result<std::shared_ptr<const Rules>> typo = CompileRules(spec);
  ASSERT_FALSE(typo.ok());
  EXPECT_TRUE(typo.error().usage);
  EXPECT_NE(typo.error().message.find("only rules: `fold_fused_batchnorm`"),
            std::string::npos)
      << typo.error().message;
  EXPECT_NE(typo.error().message.find("did you mean `fold_fused_batch_norm`"),
            std::string::npos)
      << typo.error().message;
}

TEST(ApiTest, ExplainListsEveryRuleAndItsMatches) {
  RulesSpec spec;
  spec.rule_files = {"rules/tf/fold_batch_norms.graft"};
  std::shared_ptr<const Rules> rules = Compile(spec);
  ASSERT_NE(rules, nullptr);
  Result<std::vector<ExplainedRule>> explained =
      Explain(Model::File(kModel), *rules);
  ASSERT_TRUE(explained.ok()) << explained.error().message;
  int matches = 0;
  for (const ExplainedRule& r : *explained) {
    for (const Explanation& e : r.at) matches += e.matched;
  }
  Result<Applied> applied =
      Apply(Model::File(kModel), *rules, ApplyOptions{});
  ASSERT_TRUE(applied.ok());
  EXPECT_GT(matches, 0);
  EXPECT_LE(matches, applied->report.rewrites());
  EXPECT_FALSE(Explain(Model::File(kModel), *rules, "no_such_rule").ok());
}

TEST(ApiTest, ABadModelFailsWithItsName) {
  RulesSpec spec;
  spec.rule_files = {"rules/tf/fold_batch_norms.graft"};
  std::shared_ptr<const Rules> rules = Compile(spec);
  ASSERT_NE(rules, nullptr);
  Result<Applied> applied =
      Apply(Model::Bytes("garbage", GraphFormat::kAuto, "upload.pb"), *rules,
            ApplyOptions{});
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error().message.rfind("upload.pb", 0), 0u)
      << applied.error().message;
  EXPECT_FALSE(applied.error().usage);
}

TEST(ApiTest, BatchModelsMergeAsTheBatchReportsThem) {
  RulesSpec spec;
  spec.rule_files = {"rules/tf/fold_batch_norms.graft"};
  std::shared_ptr<const Rules> rules = Compile(spec);
  ASSERT_NE(rules, nullptr);
  BatchOptions options;
  options.inputs = {kModel, "no_such_model.pb"};
  options.out_dir = testing::TempDir() + "/batch";
  options.jobs = 2;
  Result<report::BatchReport> whole = ApplyBatch(options, *rules);
  ASSERT_FALSE(whole.ok());  // a missing input is refused before any work
  options.inputs = {kModel};
  whole = ApplyBatch(options, *rules);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  Result<std::vector<PlannedModel>> plan = BatchPlan(options);
  ASSERT_TRUE(plan.ok());
  std::vector<report::BatchReport> parts;
  for (const PlannedModel& model : *plan) {
    report::BatchReport part;
    *part.add_models() = ApplyBatchModel(model, *rules, options);
    parts.push_back(part);
  }
  report::BatchReport merged = MergeBatchReports(parts);
  EXPECT_EQ(merged.ok(), whole->ok());
  EXPECT_EQ(merged.rewrites(), whole->rewrites());
  EXPECT_EQ(merged.models(0).status(), "ok");
}

TEST(ApiTest, MemAndCostOfAModel) {
  AnalysisSettings settings;
  settings.batch = 4;
  Result<MemReport> mem = Mem(Model::File(kModel), settings);
  ASSERT_TRUE(mem.ok()) << mem.error().message;
  ASSERT_FALSE(mem->devices.empty());
  EXPECT_GT(mem->devices[0].peak_bytes, 0);
  Result<CostReport> cost = Cost(Model::File(kModel), settings);
  ASSERT_TRUE(cost.ok()) << cost.error().message;
  EXPECT_GT(cost->flops, 0);
  settings.device = "no_such_device";
  EXPECT_FALSE(Cost(Model::File(kModel), settings).ok());
}

}  // namespace
}  // namespace graft::api
