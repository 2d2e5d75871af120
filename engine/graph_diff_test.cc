#include "engine/graph_diff.h"

#include "dialects/graph_io.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

Graph Load(const std::string& path) {
  absl::StatusOr<Graph> g = LoadGraph(path);
  EXPECT_TRUE(g.ok()) << g.status();
  return std::move(*g);
}

TEST(GraphDiffTest, FoldedBatchNorm) {
  Graph before = Load("tests/golden/fold_bn_conv/in.pbtxt");
  Graph after = Load("tests/golden/fold_bn_conv/out.pbtxt");
  GraphDiff diff = DiffGraphs(before, after);
  EXPECT_EQ(diff.removed, (std::vector<std::string>{
                              "w (Const)", "conv (Conv2D)", "gamma (Const)",
                              "beta (Const)", "mean (Const)", "var (Const)"}));
  EXPECT_EQ(diff.added,
            (std::vector<std::string>{"bn/w2 (Const)", "bn/folded (Conv2D)",
                                      "bn/Const (Const)"}));
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_EQ(diff.changed[0].name, "bn");
  EXPECT_EQ(diff.changed[0].changes[0], "op: FusedBatchNormV3 -> BiasAdd");
  EXPECT_EQ(diff.changed[0].changes[1], "input 0: `conv` -> `bn/folded`");
  std::string text = FormatDiffText(diff);
  EXPECT_NE(text.find("- conv (Conv2D)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("+ bn/folded (Conv2D)\n"), std::string::npos);
  EXPECT_NE(text.find("3 added, 6 removed, 1 changed\n"), std::string::npos);
  std::string dot = FormatDiffDot(before, after, diff);
  EXPECT_NE(
      dot.find(
          "\"bn/folded\" [label=\"bn/folded (Conv2D)\", fillcolor=palegreen]"),
      std::string::npos)
      << dot;
  EXPECT_NE(dot.find("\"conv\" [label=\"conv (Conv2D)\", fillcolor=mistyrose"),
            std::string::npos);
  EXPECT_NE(dot.find("\"bn/folded\" -> \"bn\""), std::string::npos);
}

// In full, an added node is shown whole and tensors with their values, so
// the diff says everything the output has that the input does not.
TEST(GraphDiffTest, FullShowsAddedNodesAndValues) {
  Graph before = Load("tests/golden/fold_bn_conv/in.pbtxt");
  Graph after = Load("tests/golden/fold_bn_conv/out.pbtxt");
  DiffOptions full;
  full.full = true;
  std::string text = FormatDiffText(DiffGraphs(before, after, full));
  EXPECT_NE(text.find("+ bn/folded (Conv2D)\n"
                      "    input 0: `x`\n"
                      "    input 1: `bn/w2`\n"
                      "    device: \"/device:CPU:0\"\n"
                      "    attr `T`: type: DT_FLOAT\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    attr `value`: tensor float32 [2] = [-0.5, -2.5]\n"),
            std::string::npos)
      << text;
  // Without `full`, the same diff names the added nodes only.
  std::string brief = FormatDiffText(DiffGraphs(before, after));
  EXPECT_EQ(brief.find("input 0: `x`"), std::string::npos);
}

TEST(GraphDiffTest, AttrsAndDevices) {
  Graph before = Load("tests/golden/rewrite_set_attr_device/in.pbtxt");
  Graph after = Load("tests/golden/rewrite_set_attr_device/out.pbtxt");
  GraphDiff diff = DiffGraphs(before, after);
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_EQ(diff.changed[0].changes,
            (std::vector<std::string>{"attr `epsilon`: f: 0.001 -> f: 0.01",
                                      "device: \"\" -> \"/device:CPU:0\""}));
}

TEST(GraphDiffTest, SameGraphHasNoDifferences) {
  Graph a = Load("tests/golden/fold_bn_conv/in.pbtxt");
  Graph b = Load("tests/golden/fold_bn_conv/in.pbtxt");
  GraphDiff diff = DiffGraphs(a, b);
  EXPECT_TRUE(diff.empty());
  EXPECT_EQ(FormatDiffText(diff), "0 added, 0 removed, 0 changed\n");
}

// A constant written in another encoding (tensor_content, or the typed
// fields) holds the same values: no change. Other values are one.
TEST(GraphDiffTest, ConstantsCompareByValue) {
  auto graph = [](const std::string& tensor) {
    absl::StatusOr<Graph> g = ParseGraph(
        "node { name: \"w\" op: \"Const\" attr { key: \"dtype\" value { type: "
        "DT_INT8 } }"
        " attr { key: \"value\" value { tensor { dtype: DT_INT8 tensor_shape { "
        "dim { size: 2 } } " +
            tensor + " } } } }",
        GraphFormat::kText, "w.pbtxt");
    EXPECT_TRUE(g.ok()) << g.status();
    return std::move(*g);
  };
  Graph typed = graph("int_val: 1 int_val: -2");
  Graph content = graph("tensor_content: \"\\001\\376\"");
  Graph other = graph("int_val: 1 int_val: -3");
  EXPECT_TRUE(DiffGraphs(typed, content).empty());
  ASSERT_EQ(DiffGraphs(typed, other).changed.size(), 1u);
  EXPECT_EQ(DiffGraphs(typed, other).changed[0].changes,
            (std::vector<std::string>{
                "attr `value`: tensor int8 [2] (values changed)"}));
}

}  // namespace
}  // namespace graft
