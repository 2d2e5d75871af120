#include "dsl/transforms.h"

#include "gtest/gtest.h"

namespace graft::dsl {
namespace {

// GTT's README "Optimizing for deployment" string, as deployment scripts
// carry it (newlines, quoted values with commas, repeated keys).
constexpr char kDeployment[] = R"(
  strip_unused_nodes(type=float, shape="1,299,299,3")
  remove_nodes(op=Identity, op=CheckNumerics)
  fold_constants(ignore_errors=true)
  fold_batch_norms
  fold_old_batch_norms)";

TEST(TransformsTest, ParsesGttSyntax) {
  absl::StatusOr<std::vector<TransformCall>> calls =
      ParseTransforms(kDeployment);
  ASSERT_TRUE(calls.ok()) << calls.status();
  ASSERT_EQ(calls->size(), 5u);
  EXPECT_EQ((*calls)[0].name, "strip_unused_nodes");
  ASSERT_EQ((*calls)[0].params.size(), 2u);
  EXPECT_EQ((*calls)[0].params[1].first, "shape");
  EXPECT_EQ((*calls)[0].params[1].second, "1,299,299,3");
  EXPECT_EQ((*calls)[1].params.size(), 2u);
  EXPECT_EQ((*calls)[1].params[1].second, "CheckNumerics");
  EXPECT_EQ((*calls)[3].name, "fold_batch_norms");
  EXPECT_TRUE((*calls)[3].params.empty());
}

TEST(TransformsTest, ErrorsNameTheColumn) {
  for (const auto& [text, want] :
       std::vector<std::pair<std::string, std::string>>{
           {"fold_constants(ignore_errors",
            "--transforms:1:29: error: expected `=`"},
           {"a(b=\"c", "--transforms:1:7: error: a quoted value is not closed"},
           {"a(b=\"c\" d=e)", "--transforms:1:9: error: expected `,` or `)`"},
           {"  ", "no transforms"},
           {"a(=1)", "expected a param name"},
       }) {
    absl::StatusOr<std::vector<TransformCall>> calls = ParseTransforms(text);
    ASSERT_FALSE(calls.ok()) << text;
    EXPECT_NE(calls.status().message().find(want), std::string::npos)
        << text << ": " << calls.status().message();
  }
}

TEST(TransformsTest, StepsOverTheRuleFiles) {
  TransformOptions options{"rules/tf/gtt", "input", "softmax,logits"};
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<PipelineStep>> steps =
      TransformSteps(*ParseTransforms(kDeployment), options, &notes);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 5u);
  EXPECT_EQ((*steps)[0].rule_files[0], "rules/tf/gtt/strip_unused_nodes.graft");
  EXPECT_EQ((*steps)[0].params.at("outputs"), "softmax,logits");
  // A repeated key is one `a|b` param; --inputs / --outputs where declared.
  EXPECT_EQ((*steps)[1].params.at("op"), "Identity|CheckNumerics");
  EXPECT_EQ((*steps)[1].params.at("inputs"), "input");
  // Params graft accepts but does not need are said, not passed.
  EXPECT_EQ((*steps)[2].params.count("ignore_errors"), 0u);
  ASSERT_EQ(notes.size(), 3u);  // type, shape, ignore_errors
  EXPECT_NE(notes[2].find("fold_constants: `ignore_errors`"),
            std::string::npos);

  std::string yaml = PipelineYaml(*steps, "rules/pipelines", kDeployment);
  EXPECT_NE(yaml.find("  - rules: ../tf/gtt/remove_nodes.graft\n    params: "
                      "{inputs: \"input\", op: \"Identity|CheckNumerics\", "
                      "outputs: \"softmax,logits\"}"),
            std::string::npos)
      << yaml;
}

TEST(TransformsTest, UnknownTransformsAndParamsListTheKnownOnes) {
  TransformOptions options{"rules/tf/gtt", "", ""};
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<PipelineStep>> steps = TransformSteps(
      *ParseTransforms("fold_batch_norms quantize_wieghts"), options, &notes);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find(
                "unknown transform `quantize_wieghts` (column 18); known: "),
            std::string::npos)
      << steps.status().message();
  EXPECT_NE(steps.status().message().find("fold_old_batch_norms"),
            std::string::npos);
  steps = TransformSteps(*ParseTransforms("remove_nodes(ops=Identity)"),
                         options, &notes);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find(
                "transform `remove_nodes` has no param `ops`; its params: "
                "inputs, max_inputs, op, outputs"),
            std::string::npos)
      << steps.status().message();
}

}  // namespace
}  // namespace graft::dsl
