#include <string>

#include "dialects/aten/aten_graph.h"
#include "dialects/aten/aten_ops.h"
#include "dialects/graph_io.h"
#include "engine/dialect.h"
#include "engine/validate.h"
#include "engine/value.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

constexpr char kConvBn[] = "tests/data/aten/conv_bn.aten.pbtxt";

TEST(AtenDialectTest, ReadsTorchExportsGraphAsItsDialect) {
  ASSERT_TRUE(IsAtenPath("m.aten.pb") && IsAtenPath("M.ATEN.PBTXT") && !IsAtenPath("m.pb"));
  absl::StatusOr<Graph> graph = LoadGraph(kConvBn);  // the dispatch finds the dialect
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Dialect& dialect = DialectOf(*graph);
  EXPECT_EQ(dialect.name(), "aten");
  EXPECT_TRUE(Validate(*graph).empty());
  EXPECT_EQ(dialect.ModelOutputs(*graph), std::vector<std::string>{"output_0"});
  // A left-out `Tensor?` (conv2d's bias) reads the stand-in.
  const Node* conv = graph->FindNode("conv2d");
  ASSERT_NE(conv, nullptr);
  ASSERT_EQ(conv->num_inputs(), 3);
  EXPECT_EQ(graph->node(conv->input(2).node).op(), dialect.AbsentInput()->op);
  // Attrs the node leaves out are the schema's defaults.
  absl::StatusOr<Value> groups = AttrValueOf(*graph, *conv, "groups");
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_EQ(groups->i, 1);
}

TEST(AtenDialectTest, SchemasComeFromTorch) {
  const OpRegistry& ops = AtenOps();
  const tf::OpDef* bn = ops.Find("aten.batch_norm.default");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->input_arg_size(), 5);  // input, weight, bias, running_mean, running_var
  EXPECT_EQ(bn->input_arg(1).description(), "optional");
  // In-place ops say so.
  ASSERT_NE(ops.Find("aten.relu_.default"), nullptr);
  EXPECT_EQ(ops.Find("aten.relu_.default")->summary(), "mutates");
  EXPECT_EQ(ops.Find("aten.relu.default")->summary(), "");
  EXPECT_EQ(ops.Find("aten.conv2d.Default"), nullptr);
  // Ops that draw from the generator are stateful (never shared between
  // rewrites nor recomputed), as TensorFlow's and ONNX's random ops are.
  for (const char* random : {"aten.native_dropout.default", "aten.bernoulli.p",
                             "aten.rand_like.default", "aten.randn.default"}) {
    ASSERT_NE(ops.Find(random), nullptr) << random;
    EXPECT_TRUE(ops.Find(random)->is_stateful()) << random;
  }
  EXPECT_FALSE(ops.Find("aten.add.Tensor")->is_stateful());
  EXPECT_FALSE(ops.Find("aten.relu_.default")->is_stateful());
  // Neither a random nor an in-place op stands for another of its kind
  // (merge_duplicates, `shared`); a pure one does.
  EXPECT_TRUE(OpRegistry::SameInputsSameOutputs(ops.Find("aten.relu.default")));
  EXPECT_FALSE(
      OpRegistry::SameInputsSameOutputs(ops.Find("aten.relu_.default")));
  EXPECT_FALSE(OpRegistry::SameInputsSameOutputs(ops.Find("aten.bernoulli.p")));
  EXPECT_FALSE(OpRegistry::SameInputsSameOutputs(nullptr));
}

TEST(AtenDialectTest, UnknownOpsAndCountsAreSaid) {
  absl::StatusOr<Graph> graph = ParseGraph(
      "node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
      "node { name: \"r\" op: \"aten.relu.default\" input: \"x\" input: \"x\" }\n"
      "node { name: \"q\" op: \"aten.nosuch.default\" input: \"x\" }\n",
      GraphFormat::kText, "inline.aten.pbtxt");
  ASSERT_TRUE(graph.ok());
  graph->set_origin(std::make_shared<AtenOrigin>());
  std::string all;
  for (const ValidationIssue& issue : Validate(*graph)) all += issue.message + "\n";
  EXPECT_NE(all.find("`r` (aten.relu.default) has 2 data input(s); its schema takes 1"),
            std::string::npos) << all;
  EXPECT_NE(all.find("`q` has op `aten.nosuch.default`"), std::string::npos) << all;
}

}  // namespace
}  // namespace graft
