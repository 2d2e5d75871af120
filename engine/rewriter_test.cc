#include "engine/rewriter.h"

#include <algorithm>

#include "dialects/graph_io.h"
#include "engine/test_graphs.h"
#include "engine/validate.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;
using ::graft::testing::InputNames;

// graph_editor's test fixture: c0 = f(a0, b0), c1 = f(a1, b1).
constexpr char kTwoAdds[] = R"pb(
  node {
    name: "a0"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT } }
    }
  }
  node {
    name: "b0"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT } }
    }
  }
  node {
    name: "c0"
    op: "AddV2"
    input: "a0"
    input: "b0"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "a1"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT } }
    }
  }
  node {
    name: "b1"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT } }
    }
  }
  node {
    name: "c1"
    op: "AddV2"
    input: "a1"
    input: "b1"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "i"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value { tensor { dtype: DT_INT32 } }
    }
  }
)pb";

Endpoint T(const Graph& g, absl::string_view name, int port = 0) {
  return {Id(g, name), port};
}

// Records what listeners hear.
class Recorder : public RewriteListener {
 public:
  void NodeInserted(const Graph& g, NodeId id) override {
    events.push_back("+" + g.node(id).name());
  }
  void NodeChanged(const Graph& g, NodeId id) override {
    events.push_back("~" + g.node(id).name());
  }
  void NodeErased(const Graph& g, NodeId id) override {
    events.push_back("-" + g.node(id).name());
  }
  std::vector<std::string> events;
};

// The whole graph as text, to show that a failed edit changed nothing.
std::string Snapshot(const Graph& g) {
  return SerializeGraph(g, GraphFormat::kText);
}

TEST(RerouteTest, GraphEditorRerouteScenario) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  // reroute_ts([a0, b0], [a1, b1]): the consumers of a1, b1 read a0, b0.
  Endpoint to[] = {T(g, "a0"), T(g, "b0")};
  Endpoint from[] = {T(g, "a1"), T(g, "b1")};
  absl::StatusOr<int> changed = r.Reroute(from, to);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(*changed, 2);
  EXPECT_EQ(InputNames(g, "c0"), (std::vector<std::string>{"a0", "b0"}));
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"a0", "b0"}));
  EXPECT_TRUE(g.node(Id(g, "a1")).consumers(0).empty());
  EXPECT_EQ(g.node(Id(g, "a0")).consumers(0).size(), 2u);

  // Rerouting back onto c1 alone (can_modify) restores the graph.
  changed = r.Reroute(to, from, ConsumerFilter::Only({Id(g, "c1")}));
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(*changed, 2);
  EXPECT_EQ(InputNames(g, "c0"), (std::vector<std::string>{"a0", "b0"}));
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"a1", "b1"}));

  // Unrestricted, the reverse reroute moves every consumer (graph_editor's
  // second half of test_reroute).
  changed = r.Reroute(to, from);
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*changed, 2);
  EXPECT_EQ(InputNames(g, "c0"), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_TRUE(CheckValid(g).ok()) << CheckValid(g);
}

TEST(RerouteTest, CannotModifySparesConsumers) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  ASSERT_TRUE(r.Reroute(T(g, "a1"), T(g, "a0")).ok());  // c0, c1 read a0
  absl::StatusOr<int> changed =
      r.Reroute(T(g, "a0"), T(g, "b1"), ConsumerFilter::Except({Id(g, "c0")}));
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*changed, 1);
  EXPECT_EQ(InputNames(g, "c0"), (std::vector<std::string>{"a0", "b0"}));
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"b1", "b1"}));
}

TEST(RerouteTest, DifferentDtypesFailAndChangeNothing) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  std::string before = Snapshot(g);
  Endpoint from[] = {T(g, "a1"), T(g, "b1")};
  Endpoint to[] = {T(g, "a0"), T(g, "i")};  // second pair: float <- int32
  absl::StatusOr<int> changed = r.Reroute(from, to);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(
      changed.status().message(),
      "cannot reroute `b1` (float32) to `i` (int32): their dtypes differ");
  EXPECT_EQ(Snapshot(g), before);  // the first pair was not applied either
}

TEST(RerouteTest, OutputPortOneOfAMultiOutputOp) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
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
      attr {
        key: "value"
        value { tensor { dtype: DT_INT32 } }
      }
    }
    node {
      name: "s"
      op: "Split"
      input: "dim"
      input: "x"
      attr {
        key: "num_split"
        value { i: 3 }
      }
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "u"
      op: "Relu"
      input: "s:1"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "v"
      op: "Relu"
      input: "s:1"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "w"
      op: "Relu"
      input: "s:0"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Rewriter r(g);
  absl::StatusOr<int> changed = r.Reroute(T(g, "s", 1), T(g, "s", 2));
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*changed, 2);
  EXPECT_EQ(InputNames(g, "u"), (std::vector<std::string>{"s:2"}));
  EXPECT_EQ(InputNames(g, "v"), (std::vector<std::string>{"s:2"}));
  EXPECT_EQ(InputNames(g, "w"), (std::vector<std::string>{"s"}));
  EXPECT_TRUE(g.node(Id(g, "s")).consumers(1).empty());
  EXPECT_EQ(g.node(Id(g, "s")).consumers(2).size(), 2u);
  // Split has 3 outputs: port 3 does not exist.
  absl::StatusOr<int> bad = r.Reroute(T(g, "s", 0), T(g, "s", 3));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "reroute: `s` (Split) has 3 output(s), there is no output 3");
  // The rewritten node spells its inputs anew on export.
  EXPECT_EQ(g.ExportNodeDef(Id(g, "u")).input(0), "s:2");
}

TEST(RerouteTest, ThatWouldCreateACycleFailsAndChangesNothing) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "a"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "b"
      op: "Relu"
      input: "a"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "c"
      op: "Relu"
      input: "b"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Rewriter r(g);
  std::string before = Snapshot(g);
  // b's consumers (c) would read c itself.
  absl::StatusOr<int> changed = r.Reroute(T(g, "b"), T(g, "c"));
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(
      changed.status().message(),
      "edit would create a cycle: `c` depends on `c`, which would read it");
  // a's consumer b would read c, which depends on b.
  changed = r.Reroute(T(g, "a"), T(g, "c"));
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(
      changed.status().message(),
      "edit would create a cycle: `c` depends on `b`, which would read it");
  EXPECT_FALSE(r.AddControlEdge(Id(g, "c"), Id(g, "a")).ok());
  EXPECT_FALSE(r.SetInput(Id(g, "b"), 0, T(g, "c")).ok());
  EXPECT_EQ(Snapshot(g), before);
}

TEST(SwapTest, ExchangesConsumers) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  absl::StatusOr<int> changed = r.Swap(T(g, "a0"), T(g, "a1"));
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*changed, 2);
  EXPECT_EQ(InputNames(g, "c0"), (std::vector<std::string>{"a1", "b0"}));
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"a0", "b1"}));
  // Restricted to c0: only c0's input flips back.
  changed = r.Swap(T(g, "a0"), T(g, "a1"), ConsumerFilter::Only({Id(g, "c0")}));
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*changed, 1);
  EXPECT_EQ(InputNames(g, "c0"), (std::vector<std::string>{"a0", "b0"}));
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"a0", "b1"}));
}

TEST(AddNodeTest, NamesAreUniqueAndDeterministic) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  r.SetProvenance("fold_bn");
  NodeSpec spec;
  spec.name = "c0";
  spec.op = "Relu";
  spec.inputs = {T(g, "c0")};
  spec.device = "/device:CPU:0";
  spec.attrs["T"].set_type(tf::DT_FLOAT);
  absl::StatusOr<NodeId> first = r.AddNode(spec);
  absl::StatusOr<NodeId> second = r.AddNode(spec);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(g.node(*first).name(), "c0_1");
  EXPECT_EQ(g.node(*second).name(), "c0_2");
  EXPECT_EQ(g.node(*first).device(), "/device:CPU:0");
  EXPECT_EQ(g.Provenance(*first), "fold_bn");
  EXPECT_EQ(g.Provenance(Id(g, "c0")), "");
  EXPECT_EQ(g.node(Id(g, "c0")).consumers(0).size(), 2u);
  EXPECT_EQ(g.NodesWithOp("Relu"), (std::vector<NodeId>{*first, *second}));
  spec.name = "bad name!";
  EXPECT_FALSE(r.AddNode(spec).ok());
  spec.name = "x";
  spec.inputs = {{999, 0}};
  EXPECT_FALSE(r.AddNode(spec).ok());
}

TEST(RemoveTest, RefusesNodesThatStillFeedOthers) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  absl::Status s = r.RemoveNode(Id(g, "a0"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot remove `a0`: `c0` still reads it");
  ASSERT_TRUE(r.RemoveNode(Id(g, "c0")).ok());
  EXPECT_FALSE(g.Contains("c0"));
  EXPECT_TRUE(g.node(Id(g, "a0")).consumers(0).empty());
  EXPECT_EQ(g.num_nodes(), 6);
  // A set may hold producer and consumer together.
  ASSERT_TRUE(r.RemoveNodes({Id(g, "a1"), Id(g, "b1"), Id(g, "c1")}).ok());
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_TRUE(g.NodesWithOp("AddV2").empty());
  EXPECT_TRUE(CheckValid(g).ok()) << CheckValid(g);
}

TEST(RemoveTest, ControlConsumersBlockRemoval) {
  Graph g = GraphFromText(R"pb(
    node { name: "init" op: "NoOp" }
    node { name: "a" op: "NoOp" input: "^init" }
  )pb");
  Rewriter r(g);
  absl::Status s = r.RemoveNode(Id(g, "init"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "cannot remove `init`: `a` has a control edge from it");
  ASSERT_TRUE(r.RemoveControlEdge(Id(g, "init"), Id(g, "a")).ok());
  EXPECT_TRUE(r.RemoveNode(Id(g, "init")).ok());
}

TEST(RenameTest, ConsumersFollowTheNewName) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "a"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "b"
      op: "Relu"
      input: "a"
      input: "^a"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Rewriter r(g);
  ASSERT_TRUE(r.Rename(Id(g, "a"), "input").ok());
  EXPECT_FALSE(g.Contains("a"));
  tf::NodeDef b = g.ExportNodeDef(Id(g, "b"));
  ASSERT_EQ(b.input_size(), 2);
  EXPECT_EQ(b.input(0), "input");
  EXPECT_EQ(b.input(1), "^input");
  absl::Status s = r.Rename(Id(g, "b"), "input");
  EXPECT_EQ(s.message(),
            "cannot rename `b` to `input`: a node of that name exists");
  EXPECT_FALSE(r.Rename(Id(g, "b"), "").ok());
}

TEST(ControlEdgeTest, AddAndRemove) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  ASSERT_TRUE(r.AddControlEdge(Id(g, "c0"), Id(g, "c1")).ok());
  ASSERT_TRUE(r.AddControlEdge(Id(g, "c0"), Id(g, "c1")).ok());  // no duplicate
  EXPECT_EQ(g.node(Id(g, "c1")).control_inputs().size(), 1u);
  EXPECT_EQ(g.node(Id(g, "c0")).control_consumers().size(), 1u);
  EXPECT_EQ(g.ExportNodeDef(Id(g, "c1")).input(2), "^c0");
  EXPECT_FALSE(r.AddControlEdge(Id(g, "c1"), Id(g, "c0")).ok());  // cycle
  EXPECT_FALSE(r.AddControlEdge(Id(g, "c1"), Id(g, "c1")).ok());  // self
  ASSERT_TRUE(r.RemoveControlEdge(Id(g, "c0"), Id(g, "c1")).ok());
  EXPECT_TRUE(g.node(Id(g, "c0")).control_consumers().empty());
  EXPECT_EQ(r.RemoveControlEdge(Id(g, "c0"), Id(g, "c1")).message(),
            "there is no control edge from `c0` to `c1`");
}

TEST(ControlEdgeTest, KeptThroughRerouteAndSetInput) {
  Graph g = GraphFromText(R"pb(
    node { name: "init" op: "NoOp" }
    node {
      name: "a"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "value"
        value { tensor { dtype: DT_FLOAT } }
      }
    }
    node {
      name: "b"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "value"
        value { tensor { dtype: DT_FLOAT } }
      }
    }
    node {
      name: "c"
      op: "Relu"
      input: "a"
      input: "^init"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Rewriter r(g);
  ASSERT_TRUE(r.Reroute(T(g, "a"), T(g, "b")).ok());
  tf::NodeDef c = g.ExportNodeDef(Id(g, "c"));
  ASSERT_EQ(c.input_size(), 2);
  EXPECT_EQ(c.input(0), "b");
  EXPECT_EQ(c.input(1), "^init");
  ASSERT_TRUE(r.SetInput(Id(g, "c"), 0, T(g, "a")).ok());
  EXPECT_EQ(g.ExportNodeDef(Id(g, "c")).input(1), "^init");
}

TEST(SetAttrAndDeviceTest, MarkNodesModified) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  EXPECT_FALSE(g.node(Id(g, "c0")).modified());
  ASSERT_TRUE(r.SetDevice(Id(g, "c0"), "/device:GPU:0").ok());
  tf::AttrValue v;
  v.set_i(3);
  ASSERT_TRUE(r.SetAttr(Id(g, "c1"), "extra", v).ok());
  EXPECT_TRUE(g.node(Id(g, "c0")).modified());
  EXPECT_EQ(g.node(Id(g, "c0")).device(), "/device:GPU:0");
  EXPECT_EQ(g.node(Id(g, "c1")).attr("extra")->i(), 3);
}

TEST(CloneTest, CopiesWithInputReplacementsAndKeepsDevices) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "y"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node { name: "init" op: "NoOp" }
    node {
      name: "f/relu"
      op: "Relu"
      input: "x"
      input: "^init"
      device: "/device:GPU:0"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "f/neg"
      op: "Neg"
      input: "f/relu"
      device: "/device:GPU:1"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Rewriter r(g);
  r.SetProvenance("checkpoint");
  absl::flat_hash_map<Endpoint, Endpoint> replacements = {
      {T(g, "x"), T(g, "y")}};
  absl::StatusOr<CloneResult> clone =
      r.Clone({Id(g, "f/neg"), Id(g, "f/relu")}, replacements, "recompute/");
  ASSERT_TRUE(clone.ok()) << clone.status();
  ASSERT_EQ(clone->mapping.size(), 2u);
  const Node& relu = g.node(clone->mapping.at(Id(g, "f/relu")));
  const Node& neg = g.node(clone->mapping.at(Id(g, "f/neg")));
  EXPECT_EQ(relu.name(), "recompute/f/relu");
  EXPECT_EQ(neg.name(), "recompute/f/neg");
  EXPECT_EQ(InputNames(g, "recompute/f/relu"), (std::vector<std::string>{"y"}));
  EXPECT_EQ(InputNames(g, "recompute/f/neg"),
            (std::vector<std::string>{"recompute/f/relu"}));
  EXPECT_EQ(relu.device(), "/device:GPU:0");
  EXPECT_EQ(neg.device(), "/device:GPU:1");
  ASSERT_EQ(relu.control_inputs().size(), 1u);
  EXPECT_EQ(g.node(relu.control_inputs()[0]).name(), "init");
  EXPECT_EQ(g.Provenance(neg.id()), "checkpoint");
  // Originals untouched.
  EXPECT_EQ(InputNames(g, "f/relu"), (std::vector<std::string>{"x"}));
  // Cloning again gets fresh unique names.
  absl::StatusOr<CloneResult> again =
      r.Clone({Id(g, "f/relu")}, {}, "recompute/");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(g.node(again->created[0]).name(), "recompute/f/relu_1");
  EXPECT_TRUE(CheckValid(g).ok());
}

TEST(SpliceTest, GraftsAGraphUnderAPrefixWithUniqueNames) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "image"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "pre/scale"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "value"
        value { tensor { dtype: DT_FLOAT } }
      }
    }
  )pb");
  tf::GraphDef other;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        node {
          name: "image"
          op: "Placeholder"
          attr {
            key: "dtype"
            value { type: DT_FLOAT }
          }
        }
        node {
          name: "scale"
          op: "Const"
          attr {
            key: "dtype"
            value { type: DT_FLOAT }
          }
          attr {
            key: "value"
            value { tensor { dtype: DT_FLOAT } }
          }
        }
        node { name: "init" op: "NoOp" }
        node {
          name: "mul"
          op: "Mul"
          input: "image"
          input: "scale"
          input: "^init"
          attr {
            key: "T"
            value { type: DT_FLOAT }
          }
        }
      )pb",
      &other));
  Rewriter r(g);
  absl::StatusOr<SpliceResult> spliced =
      r.Splice(other, "pre/", {{"image", T(g, "image")}});
  ASSERT_TRUE(spliced.ok()) << spliced.status();
  // The placeholder the input map feeds is not copied.
  EXPECT_EQ(spliced->created.size(), 3u);
  EXPECT_FALSE(g.Contains("pre/image"));
  EXPECT_EQ(spliced->mapping.at("image"), Id(g, "image"));
  // `pre/scale` was taken in the target: the splice got a unique name.
  EXPECT_EQ(g.node(spliced->mapping.at("scale")).name(), "pre/scale_1");
  EXPECT_EQ(InputNames(g, "pre/mul"),
            (std::vector<std::string>{"image", "pre/scale_1"}));
  EXPECT_EQ(g.node(Id(g, "pre/mul")).control_inputs().size(), 1u);
  EXPECT_TRUE(CheckValid(g).ok()) << CheckValid(g);

  tf::GraphDef broken = other;
  broken.mutable_node(3)->set_input(0, "nowhere");
  std::string before = Snapshot(g);
  absl::StatusOr<SpliceResult> bad = r.Splice(broken, "p2/");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "splice: input `nowhere` of `mul` is neither in the spliced graph "
            "nor in the input map");
  EXPECT_EQ(Snapshot(g), before);
}

TEST(ListenerTest, HearsInsertChangeAndErase) {
  Graph g = GraphFromText(kTwoAdds);
  Rewriter r(g);
  Recorder rec;
  r.AddListener(&rec);
  NodeSpec spec;
  spec.name = "n";
  spec.op = "Neg";
  spec.inputs = {T(g, "c0")};
  absl::StatusOr<NodeId> n = r.AddNode(spec);
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE(r.Reroute(T(g, "c0"), T(g, "c1")).ok());
  ASSERT_TRUE(r.RemoveNode(Id(g, "c0")).ok());
  EXPECT_EQ(rec.events, (std::vector<std::string>{
                            "+n", "~c0",             // insert; producer touched
                            "~c0", "~c1", "~n",      // reroute
                            "-c0", "~a0", "~b0"}));  // erase; producers touched
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

TEST(TransactionTest, RollbackRestoresTheGraphByteForByte) {
  absl::StatusOr<Graph> loaded = LoadGraph("tests/data/control_devices.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Graph& g = *loaded;
  std::string before = SerializeGraph(g, GraphFormat::kBinary);
  std::string text_before = SerializeGraph(g, GraphFormat::kText);
  Rewriter r(g);
  r.Begin();
  NodeSpec spec;
  spec.name = "extra";
  spec.op = "Identity";
  spec.inputs = {{g.FindId("sum"), 0}};
  spec.attrs["T"].set_type(tf::DT_FLOAT);
  absl::StatusOr<NodeId> extra = r.AddNode(spec);
  ASSERT_TRUE(extra.ok());
  ASSERT_TRUE(r.Reroute({g.FindId("sum"), 0}, {*extra, 0},
                        ConsumerFilter::Except({*extra}))
                  .ok());
  ASSERT_TRUE(r.Rename(g.FindId("x"), "renamed_x").ok());
  ASSERT_TRUE(r.SetDevice(g.FindId("bn"), "/device:GPU:0").ok());
  tf::AttrValue v;
  v.set_i(1);
  ASSERT_TRUE(r.SetAttr(g.FindId("bn"), "epsilon", v).ok());
  ASSERT_TRUE(r.SetAttr(g.FindId("bn"), "new_attr", v).ok());
  ASSERT_TRUE(r.AddControlEdge(g.FindId("ids"), g.FindId("img")).ok());
  ASSERT_TRUE(r.RemoveControlEdge(g.FindId("init"), g.FindId("sum")).ok());
  ASSERT_TRUE(r.RemoveNode(g.FindId("uniq_f")).ok());
  absl::StatusOr<CloneResult> clone = r.Clone({g.FindId("img")}, {}, "c/");
  ASSERT_TRUE(clone.ok());
  EXPECT_NE(SerializeGraph(g, GraphFormat::kBinary), before);
  r.Rollback();
  EXPECT_EQ(SerializeGraph(g, GraphFormat::kText), text_before);
  EXPECT_EQ(SerializeGraph(g, GraphFormat::kBinary), before);
  EXPECT_TRUE(g.Contains("x"));
  EXPECT_FALSE(g.Contains("renamed_x"));
  EXPECT_FALSE(g.Contains("extra"));
  EXPECT_TRUE(g.Contains("uniq_f"));
  EXPECT_EQ(g.node(g.FindId("ids")).control_consumers().size(), 0u);
  EXPECT_TRUE(CheckValid(g).ok());
  // The graph is usable after a rollback, and a committed edit stays.
  r.Begin();
  ASSERT_TRUE(r.SetDevice(g.FindId("bn"), "/device:GPU:0").ok());
  r.Commit();
  EXPECT_EQ(g.FindNode("bn")->device(), "/device:GPU:0");
}

}  // namespace
}  // namespace graft
