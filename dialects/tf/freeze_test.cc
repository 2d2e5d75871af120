#include "dialects/tf/freeze.h"

#include "dialects/tf/saved_model.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

constexpr char kCnn[] = "tests/data/saved_models/cnn";

int CountOp(const Graph& graph, const std::string& op) {
  return static_cast<int>(graph.NodesWithOp(op).size());
}

TEST(FreezeTest, RestoreKeysNameEveryVariable) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto keys = RestoredVariableKeys(*graph);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 8u);  // conv 2, batch norm 4, dense 2
  EXPECT_EQ(keys->at("conv2d/kernel"),
            "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(keys->at("batch_normalization/moving_variance"),
            "layer_with_weights-1/moving_variance/.ATTRIBUTES/VARIABLE_VALUE");
}

TEST(FreezeTest, InlinesTheSignatureAndReadsVariablesAsConstants) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok());
  FreezeSummary summary;
  absl::StatusOr<Graph> frozen = FreezeSavedModel(*std::move(graph), {}, &summary);
  ASSERT_TRUE(frozen.ok()) << frozen.status();
  EXPECT_EQ(summary.signatures, std::vector<std::string>{"serving_default"});
  // The signature wrapper, and the model it calls.
  EXPECT_EQ(summary.calls_inlined, 2);
  EXPECT_EQ(summary.variables, 8);
  EXPECT_EQ(CountOp(*frozen, "StatefulPartitionedCall"), 0);
  EXPECT_EQ(CountOp(*frozen, "VarHandleOp"), 0);
  EXPECT_EQ(CountOp(*frozen, "ReadVariableOp"), 0);
  EXPECT_EQ(CountOp(*frozen, "Conv2D"), 1);
  EXPECT_EQ(CountOp(*frozen, "FusedBatchNormV3"), 1);
  EXPECT_EQ(frozen->header().library().function_size(), 0);
  // The signature's tensors keep their names.
  const Node* out = frozen->FindNode("StatefulPartitionedCall");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->op(), "Identity");
  EXPECT_TRUE(frozen->Contains("serving_default_input_1"));
  // The conv reads its kernel straight from a constant named as the variable.
  const Node& conv = frozen->node(frozen->NodesWithOp("Conv2D")[0]);
  const Node& kernel = frozen->node(conv.input(1).node);
  EXPECT_EQ(kernel.op(), "Const");
  EXPECT_EQ(kernel.name(), "conv2d/kernel");
  EXPECT_EQ(kernel.value_content().size(), 3u * 3 * 3 * 4 * 4);
  ASSERT_NE(SavedModelOf(*frozen), nullptr);
  EXPECT_TRUE(SavedModelOf(*frozen)->frozen);
  EXPECT_EQ(SavedModelOf(*frozen)->proto.meta_graphs(0).signature_def().count(
                "serving_default"),
            1u);
}

TEST(FreezeTest, AnUnknownSignatureIsNamed) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok());
  FreezeOptions options;
  options.signatures = {"predict"};
  absl::StatusOr<Graph> frozen = FreezeSavedModel(*std::move(graph), options);
  ASSERT_FALSE(frozen.ok());
  EXPECT_NE(frozen.status().message().find(
                "no signature `predict`; the SavedModel's signatures: "
                "serving_default"),
            std::string::npos)
      << frozen.status();
}

TEST(FreezeTest, AGraphDefIsNotFrozen) {
  absl::StatusOr<Graph> graph = Graph::FromGraphDef(tf::GraphDef());
  ASSERT_TRUE(graph.ok());
  EXPECT_FALSE(FreezeSavedModel(*std::move(graph)).ok());
}

}  // namespace
}  // namespace graft
