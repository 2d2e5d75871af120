#include "analysis/partition.h"

#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::OpNode;
using ::graft::testing::PlaceholderNode;

// x -> mm = x w -> relu -> out; the backward (from the tangent t) reads mm
// and relu: 256 KiB each.
const std::string kJoint =
    PlaceholderNode("x", {256, 256}) + PlaceholderNode("w", {256, 256}) +
    OpNode("mm", "MatMul", {"x", "w"}) + OpNode("relu", "Relu", {"mm"}) +
    PlaceholderNode("t", {256, 256}) + OpNode("g1", "Mul", {"t", "relu"}) +
    OpNode("g2", "Mul", {"g1", "mm"}) + OpNode("grad", "_Retval", {"g2"});

// Two matrix products of x the backward reads: 256 KiB each.
const std::string kTwoProducts =
    PlaceholderNode("x", {256, 256}) + PlaceholderNode("w", {256, 256}) +
    PlaceholderNode("v", {256, 256}) + OpNode("a", "MatMul", {"x", "w"}) +
    OpNode("b", "MatMul", {"x", "v"}) + PlaceholderNode("t", {256, 256}) +
    OpNode("ga", "Mul", {"t", "a"}) + OpNode("gb", "Mul", {"ga", "b"}) +
    OpNode("grad", "_Retval", {"gb"});

std::vector<std::string> Names(const Graph& g, const std::vector<Endpoint>& ts) {
  std::vector<std::string> out;
  for (Endpoint t : ts) out.push_back(g.node(t.node).name());
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<PartitionPlan> Plan(const Graph& g, double fraction,
                                   std::vector<std::string> pinned = {}) {
  PartitionOptions options;
  options.backward_inputs = {"t"};
  options.pinned = std::move(pinned);
  options.budget_fraction = fraction;
  return PlanPartition(g, InferShapes(g), options);
}

absl::StatusOr<PartitionPlan> PlanSwapping(const Graph& g, double fraction,
                                           std::vector<std::string> swappable) {
  PartitionOptions options;
  options.backward_inputs = {"t", "t2"};
  options.swappable = std::move(swappable);
  options.budget_fraction = fraction;
  return PlanPartition(g, InferShapes(g), options);
}

TEST(PartitionTest, FullBudgetRecomputesNoMatrixFlops) {
  Graph g = GraphFromText(kJoint);
  absl::StatusOr<PartitionPlan> plan = Plan(g, 1.0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The default saves what the backward reads; at no FLOPs' cost relu is
  // recomputed from mm rather than saved beside it.
  EXPECT_EQ(plan->default_bytes, 2 * 256 * 256 * 4);
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm"}));
  EXPECT_EQ(plan->recomputed_flops, 0);
  EXPECT_EQ(plan->least_bytes, 0);  // x and w are held anyway
}

TEST(PartitionTest, PinnedElementWiseOpsAreSaved) {
  Graph g = GraphFromText(kJoint);
  absl::StatusOr<PartitionPlan> plan = Plan(g, 1.0, {"relu"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm", "relu"}));
  EXPECT_TRUE(plan->recomputed.empty());
}

TEST(PartitionTest, HalfBudgetRecomputesTheCheapOp) {
  Graph g = GraphFromText(kJoint);
  absl::StatusOr<PartitionPlan> plan = Plan(g, 0.5);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // relu(mm) costs a FLOP per element, mm 2 x 256^3: keep mm.
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm"}));
  ASSERT_EQ(plan->recomputed.size(), 1u);
  EXPECT_EQ(g.node(plan->recomputed[0]).name(), "relu");
  EXPECT_EQ(plan->saved_bytes, 256 * 256 * 4);
  EXPECT_TRUE(plan->budget_met);
}

TEST(PartitionTest, ZeroBudgetRecomputesFromTheInputs) {
  Graph g = GraphFromText(kJoint);
  absl::StatusOr<PartitionPlan> plan = Plan(g, 0.0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"w", "x"}));
  EXPECT_EQ(plan->saved_bytes, 0);
  EXPECT_EQ(plan->recomputed.size(), 2u);
  EXPECT_DOUBLE_EQ(plan->recomputed_flops, 2.0 * 256 * 256 * 256);  // relu: none
}

TEST(PartitionTest, PinnedOpsAreSavedAndABudgetBelowTheLeastSaysSo) {
  Graph g = GraphFromText(kJoint);
  absl::StatusOr<PartitionPlan> plan = Plan(g, 0.0, {"mm"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->budget_met);
  EXPECT_EQ(plan->least_bytes, 256 * 256 * 4);
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm"}));
}

TEST(PartitionTest, FreeOpsAreRecomputedFromTheirBase) {
  // The backward also reads an alias of relu: recomputed from relu for free
  // rather than saved beside it.
  Graph g = GraphFromText(kJoint + OpNode("alias", "Identity", {"relu"}) +
                          OpNode("g3", "Mul", {"t", "alias"}) +
                          OpNode("grad3", "_Retval", {"g3"}));
  PartitionOptions options;
  options.backward_inputs = {"t"};
  options.free = {"alias"};
  options.pinned = {"relu"};
  absl::StatusOr<PartitionPlan> plan = PlanPartition(g, InferShapes(g), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm", "relu"}));
  EXPECT_EQ(plan->default_bytes, 2 * 256 * 256 * 4);
  ASSERT_EQ(plan->recomputed.size(), 1u);
  EXPECT_EQ(g.node(plan->recomputed[0]).name(), "alias");
}

TEST(PartitionTest, ABudgetBetweenHullPointsIsSpent) {
  // Two equal matrix products the backward reads: lambda saves both or
  // recomputes both; half the bytes fit one saved, one recomputed.
  Graph g = GraphFromText(kTwoProducts);
  absl::StatusOr<PartitionPlan> plan = Plan(g, 0.5);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->saved_bytes, 256 * 256 * 4);
  EXPECT_EQ(plan->recomputed.size(), 1u);
  EXPECT_DOUBLE_EQ(plan->recomputed_flops, 2.0 * 256 * 256 * 256);
}

TEST(PartitionTest, OpsOutsideTheRegistryAreRecomputedOnlyWhenPure) {
  // p = SomePrim(mm), an op the registry lacks (its shape and type
  // declared), read by the backward beside mm.
  const std::string shape =
      "attr { key: \"_output_shapes\" value { list { shape { dim { size: 256 } "
      "dim { size: 256 } } } } } attr { key: \"_output_types\" value { list { type: "
      "DT_FLOAT } } }";
  Graph g = GraphFromText(
      PlaceholderNode("x", {256, 256}) + PlaceholderNode("w", {256, 256}) +
      OpNode("mm", "MatMul", {"x", "w"}) +
      "node { name: \"p\" op: \"SomePrim\" input: \"mm\" " + shape + " }\n" +
      PlaceholderNode("t", {256, 256}) + OpNode("g1", "Mul", {"t", "p"}) +
      OpNode("g2", "Mul", {"g1", "mm"}) + OpNode("grad", "_Retval", {"g2"}));
  PartitionOptions options;
  options.backward_inputs = {"t"};
  absl::StatusOr<PartitionPlan> plan = PlanPartition(g, InferShapes(g), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm", "p"}));
  options.functional = {"p"};
  plan = PlanPartition(g, InferShapes(g), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"mm"}));
}

TEST(PartitionTest, SwappingComesBeforeRecomputingEarliestMadeFirst) {
  Graph g = GraphFromText(kTwoProducts);
  absl::StatusOr<PartitionPlan> plan = PlanSwapping(g, 0.5, {"a", "b"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->saved), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Names(g, plan->swapped), (std::vector<std::string>{"a"}));
  EXPECT_EQ(plan->saved_bytes, 256 * 256 * 4);  // b, on the device
  EXPECT_EQ(plan->swapped_bytes, 256 * 256 * 4);
  EXPECT_TRUE(plan->recomputed.empty());
  EXPECT_TRUE(plan->budget_met);
  // Nothing swappable: the same budget recomputes one product.
  plan = PlanSwapping(g, 0.5, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->swapped.empty());
  EXPECT_EQ(plan->recomputed.size(), 1u);
}

TEST(PartitionTest, SmallTensorsAreSwappedOnlyWhenTheLargerAreNotEnough) {
  // s (256 bytes) is made before b (256 KiB); the backward reads both.
  Graph g = GraphFromText(
      PlaceholderNode("y", {8, 8}) + PlaceholderNode("u", {8, 8}) +
      OpNode("s", "MatMul", {"y", "u"}) + PlaceholderNode("x", {256, 256}) +
      PlaceholderNode("w", {256, 256}) + OpNode("b", "MatMul", {"x", "w"}) +
      PlaceholderNode("t", {256, 256}) + OpNode("gb", "Mul", {"t", "b"}) +
      PlaceholderNode("t2", {8, 8}) + OpNode("gs", "Mul", {"t2", "s"}) +
      OpNode("grad", "_Retval", {"gb"}) +
      OpNode("grad_s", "_Retval", {"gs"}));
  absl::StatusOr<PartitionPlan> plan = PlanSwapping(g, 0.5, {"s", "b"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->swapped), (std::vector<std::string>{"b"}));
  EXPECT_EQ(plan->saved_bytes, 8 * 8 * 4);
  plan = PlanSwapping(g, 0, {"s", "b"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->swapped), (std::vector<std::string>{"b", "s"}));
  EXPECT_EQ(plan->saved_bytes, 0);
}

TEST(PartitionTest, ARecomputationMayReadASwappedTensor) {
  // At budget 0, relu is recomputed from mm (no matrix FLOPs) and mm waits
  // on the host: nothing stays on the device, no matrix FLOPs recomputed.
  Graph g = GraphFromText(kJoint);
  absl::StatusOr<PartitionPlan> plan = PlanSwapping(g, 0, {"mm", "relu"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Names(g, plan->swapped), (std::vector<std::string>{"mm"}));
  ASSERT_EQ(plan->recomputed.size(), 1u);
  EXPECT_EQ(g.node(plan->recomputed[0]).name(), "relu");
  EXPECT_EQ(plan->saved_bytes, 0);
  EXPECT_EQ(plan->least_bytes, 0);
  EXPECT_EQ(plan->recomputed_flops, 0);
  EXPECT_TRUE(plan->budget_met);
}

TEST(PartitionTest, NoBackwardInputIsAnError) {
  Graph g = GraphFromText(kJoint);
  PartitionOptions options;
  options.backward_inputs = {"missing"};
  absl::StatusOr<PartitionPlan> plan = PlanPartition(g, InferShapes(g), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("backward's inputs"), std::string::npos);
}

}  // namespace
}  // namespace graft::analysis
