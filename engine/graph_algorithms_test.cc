#include "engine/graph_algorithms.h"

#include "dialects/graph_io.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;

TEST(TopologicalOrderTest, ProducersComeFirst) {
  absl::StatusOr<Graph> g = LoadGraph("tests/data/control_devices.pb");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::vector<NodeId>> order = TopologicalOrder(*g);
  ASSERT_TRUE(order.ok()) << order.status();
  ASSERT_EQ(static_cast<int>(order->size()), g->num_nodes());
  std::vector<int> rank(g->id_limit(), -1);
  for (size_t i = 0; i < order->size(); ++i)
    rank[(*order)[i]] = static_cast<int>(i);
  g->ForEachNode([&](const Node& n) {
    for (Endpoint e : n.inputs())
      EXPECT_LT(rank[e.node], rank[n.id()]) << n.name();
    for (NodeId c : n.control_inputs())
      EXPECT_LT(rank[c], rank[n.id()]) << n.name();
  });
  // Deterministic.
  EXPECT_EQ(*TopologicalOrder(*g), *order);
}

// A TF1 while loop: NextIteration feeds Merge back. That edge is not a
// cycle (TensorFlow runs it); a cycle through anything else still is.
TEST(TopologicalOrderTest, LoopBackEdgesAreNotCycles) {
  Graph g = GraphFromText(R"pb(
    node { name: "x" op: "NoOp" }
    node { name: "enter" op: "Enter" input: "x" }
    node { name: "merge" op: "Merge" input: "enter" input: "next" }
    node { name: "body" op: "Identity" input: "merge" }
    node { name: "next" op: "NextIteration" input: "body" }
  )pb");
  absl::StatusOr<std::vector<NodeId>> order = TopologicalOrder(g);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_FALSE(FindCycle(g).has_value());
  EXPECT_TRUE(IsBackEdge(g, Id(g, "next"), Id(g, "merge")));
  EXPECT_FALSE(IsBackEdge(g, Id(g, "enter"), Id(g, "merge")));
  Graph bad = GraphFromText(R"pb(
    node { name: "merge" op: "Merge" input: "body" }
    node { name: "body" op: "Identity" input: "merge" }
  )pb");
  EXPECT_TRUE(FindCycle(bad).has_value());
}

TEST(TopologicalOrderTest, CycleIsNamed) {
  Graph g = GraphFromText(R"pb(
    node { name: "x" op: "NoOp" }
    node { name: "a" op: "NoOp" input: "^b" input: "^x" }
    node { name: "b" op: "NoOp" input: "^a" }
  )pb");
  absl::StatusOr<std::vector<NodeId>> order = TopologicalOrder(g);
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().message(), "the graph has a cycle: a -> b -> a");
  std::optional<std::vector<NodeId>> cycle = FindCycle(g);
  ASSERT_TRUE(cycle.has_value());
  EXPECT_EQ(*cycle, (std::vector<NodeId>{Id(g, "a"), Id(g, "b")}));
}

TEST(FindCycleTest, NoneInADag) {
  Graph g = GraphFromText(R"pb(
    node { name: "a" op: "NoOp" }
    node { name: "b" op: "NoOp" input: "^a" }
    node { name: "c" op: "NoOp" input: "^a" input: "^b" }
  )pb");
  EXPECT_FALSE(FindCycle(g).has_value());
}

TEST(FindCycleTest, SelfLoop) {
  Graph g = GraphFromText(R"pb(node { name: "a" op: "NoOp" input: "^a" })pb");
  std::optional<std::vector<NodeId>> cycle = FindCycle(g);
  ASSERT_TRUE(cycle.has_value());
  EXPECT_EQ(*cycle, (std::vector<NodeId>{Id(g, "a")}));
}

}  // namespace
}  // namespace graft
