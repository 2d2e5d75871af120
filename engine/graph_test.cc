#include "engine/graph.h"

#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;
using ::graft::testing::InputNames;

constexpr char kDiamond[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "s"
    op: "Split"
    input: "dim"
    input: "x"
    attr {
      key: "num_split"
      value { i: 2 }
    }
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "dim"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
  }
  node {
    name: "add"
    op: "AddV2"
    input: "s"
    input: "s:1"
    input: "^init"
    device: "/device:CPU:0"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node { name: "init" op: "NoOp" }
  node {
    name: "out"
    op: "Identity"
    input: "add"
    input: "^init"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST(GraphTest, IndexesNamesOpsAndConsumers) {
  Graph g = GraphFromText(kDiamond);
  EXPECT_EQ(g.num_nodes(), 6);
  EXPECT_EQ(g.node(Id(g, "add")).device(), "/device:CPU:0");
  // Forward references resolve (dim comes after s in the file).
  EXPECT_EQ(InputNames(g, "s"), (std::vector<std::string>{"dim", "x"}));
  EXPECT_EQ(InputNames(g, "add"), (std::vector<std::string>{"s", "s:1"}));
  const Node& s = g.node(Id(g, "s"));
  ASSERT_EQ(s.num_used_ports(), 2);
  ASSERT_EQ(s.consumers(0).size(), 1u);
  EXPECT_EQ(s.consumers(0)[0], (InputSlot{Id(g, "add"), 0}));
  EXPECT_EQ(s.consumers(1)[0], (InputSlot{Id(g, "add"), 1}));
  EXPECT_TRUE(s.consumers(7).empty());
  const Node& init = g.node(Id(g, "init"));
  EXPECT_EQ(std::vector<NodeId>(init.control_consumers().begin(),
                                init.control_consumers().end()),
            (std::vector<NodeId>{Id(g, "add"), Id(g, "out")}));
  EXPECT_EQ(g.node(Id(g, "out")).control_inputs().size(), 1u);
  EXPECT_EQ(g.NodesWithOp("Const"), (std::vector<NodeId>{Id(g, "dim")}));
  EXPECT_TRUE(g.NodesWithOp("Conv2D").empty());
  auto histogram = g.OpHistogram();
  ASSERT_EQ(histogram.size(), 6u);
  EXPECT_EQ(histogram.front(), (std::pair<std::string, int>{"AddV2", 1}));
  EXPECT_FALSE(g.Contains("nope"));
  EXPECT_EQ(g.FindNode("nope"), nullptr);
}

TEST(GraphTest, IterationFollowsFileOrder) {
  Graph g = GraphFromText(kDiamond);
  std::vector<std::string> names;
  g.ForEachNode([&](const Node& n) { names.push_back(n.name()); });
  EXPECT_EQ(names,
            (std::vector<std::string>{"x", "s", "dim", "add", "init", "out"}));
}

TEST(GraphTest, KeepsUnresolvedInputsForTheValidator) {
  Graph g = GraphFromText(R"pb(
    node { name: "a" op: "Identity" input: "ghost:1" input: "^phantom" }
  )pb");
  const Node& a = g.node(Id(g, "a"));
  EXPECT_FALSE(a.input(0).valid());
  EXPECT_EQ(a.input(0).port, 1);
  EXPECT_EQ(g.UnresolvedInputName(a.id(), 0), "ghost");
  EXPECT_EQ(g.UnresolvedControlInputName(a.id(), 0), "phantom");
  // Exported unchanged.
  tf::NodeDef def = g.ExportNodeDef(a.id());
  ASSERT_EQ(def.input_size(), 2);
  EXPECT_EQ(def.input(0), "ghost:1");
  EXPECT_EQ(def.input(1), "^phantom");
}

TEST(GraphTest, RejectsDuplicateAndEmptyNames) {
  tf::GraphDef def;
  def.add_node()->set_name("a");
  def.add_node()->set_name("a");
  absl::StatusOr<Graph> g = Graph::FromGraphDef(def);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "duplicate node name `a` (nodes #0 and #1)");

  tf::GraphDef unnamed;
  unnamed.add_node()->set_op("NoOp");
  g = Graph::FromGraphDef(unnamed);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "node #0 has no name");
}

TEST(GraphTest, RejectsMalformedInputs) {
  tf::GraphDef def;
  tf::NodeDef* n = def.add_node();
  n->set_name("a");
  n->add_input("b:x");
  absl::StatusOr<Graph> g = Graph::FromGraphDef(def);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "node `a` has a malformed input `b:x` (a tensor is `node`, "
            "`node:port` with a port up to 65535, or `^node`)");
  // A port so large it would size the consumer lists by it.
  n->set_input(0, "b:1413168946");
  EXPECT_FALSE(Graph::FromGraphDef(def).ok());
}

TEST(GraphTest, ParsesTensorNames) {
  absl::string_view node;
  int port = 0;
  ASSERT_TRUE(Graph::ParseTensorName("a/b", &node, &port));
  EXPECT_EQ(node, "a/b");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(Graph::ParseTensorName("a:12", &node, &port));
  EXPECT_EQ(node, "a");
  EXPECT_EQ(port, 12);
  ASSERT_TRUE(Graph::ParseTensorName("^c", &node, &port));
  EXPECT_EQ(node, "c");
  EXPECT_EQ(port, -1);
  EXPECT_FALSE(Graph::ParseTensorName("", &node, &port));
  EXPECT_FALSE(Graph::ParseTensorName("^", &node, &port));
  EXPECT_FALSE(Graph::ParseTensorName("a:", &node, &port));
  EXPECT_FALSE(Graph::ParseTensorName(":1", &node, &port));
}

TEST(GraphTest, CarriesGraphLevelFieldsThrough) {
  Graph g = GraphFromText(R"pb(
    node { name: "a" op: "NoOp" }
    versions { producer: 1882 min_consumer: 12 }
    library { function { signature { name: "f" } } }
  )pb");
  tf::GraphDef out = g.ToGraphDef();
  EXPECT_EQ(out.versions().producer(), 1882);
  ASSERT_EQ(out.library().function_size(), 1);
  EXPECT_EQ(out.library().function(0).signature().name(), "f");
  EXPECT_EQ(out.node_size(), 1);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

TEST(GraphVersionTest, UniqueAcrossGraphsAndEdits) {
  uint64_t first;
  {
    Graph g;
    first = g.version();
  }
  Graph h;  // may sit where `g` was: still a new version
  EXPECT_NE(h.version(), first);
  uint64_t before = h.version();
  h.BumpVersion();
  EXPECT_NE(h.version(), before);
}

}  // namespace
}  // namespace graft
