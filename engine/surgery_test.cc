#include "engine/surgery.h"

#include "dialects/graph_io.h"
#include "engine/op_registry.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft::surgery {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;
using ::graft::testing::InputNames;

using ::graft::testing::FloatConstNode;

std::string Add(const std::string& name, const std::string& a,
                const std::string& b) {
  return testing::OpNode(name, "AddV2", {a, b});
}

std::vector<std::string> Names(const Graph& g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId id : ids) out.push_back(g.node(id).name());
  return out;
}

std::vector<std::string> Names(const Graph& g,
                               const std::vector<Endpoint>& ts) {
  std::vector<std::string> out;
  for (Endpoint t : ts) out.push_back(g.TensorName(t));
  return out;
}

// graph_editor's reroute_test fixture: c_i = a_i + b_i; a2, b2 have shape
// [3], the others [2].
Graph RerouteFixture() {
  return GraphFromText(FloatConstNode("a0", 2) + FloatConstNode("b0", 2) +
                       Add("c0", "a0", "b0") + FloatConstNode("a1", 2) +
                       FloatConstNode("b1", 2) + Add("c1", "a1", "b1") +
                       FloatConstNode("a2", 3) + FloatConstNode("b2", 3) +
                       Add("c2", "a2", "b2"));
}

TEST(GraphEditorScenarios, TestCompatibility) {
  // reroute_ts([a0, b0], [a2, b2]) raises: shapes [2] and [3] differ.
  Graph g = RerouteFixture();
  std::string before = SerializeGraph(g, GraphFormat::kText);
  Rewriter r(g);
  Endpoint from[] = {{Id(g, "a2"), 0}, {Id(g, "b2"), 0}};
  Endpoint to[] = {{Id(g, "a0"), 0}, {Id(g, "b0"), 0}};
  absl::StatusOr<int> n = r.Reroute(from, to);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(),
            "cannot reroute `a2` [3] to `a0` [2]: their shapes differ");
  EXPECT_EQ(SerializeGraph(g, GraphFormat::kText), before);
}

TEST(GraphEditorScenarios, TestRerouteCanModify) {
  // a is both an input and an output of sgv0 = {a, b, c}; swap_outputs with
  // sgv1 = {e, f} leaves the edge inside sgv0 (c reads a) alone.
  Graph g = GraphFromText(FloatConstNode("a", 2) + FloatConstNode("b", 2) +
                          Add("c", "a", "b") + Add("d", "a", "c") +
                          FloatConstNode("e", 2) + FloatConstNode("f", 2) +
                          Add("g", "e", "f"));
  SubgraphView sgv0(g, {Id(g, "a"), Id(g, "b"), Id(g, "c")});
  SubgraphView sgv1(g, {Id(g, "e"), Id(g, "f")});
  EXPECT_EQ(Names(g, sgv0.outputs()), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(Names(g, sgv0.inputs()), (std::vector<std::string>{}));
  Rewriter r(g);
  absl::StatusOr<int> n = SwapOutputs(r, sgv0, sgv1);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 4);
  EXPECT_EQ(InputNames(g, "g"), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(InputNames(g, "d"), (std::vector<std::string>{"e", "f"}));
  EXPECT_EQ(InputNames(g, "c"), (std::vector<std::string>{"a", "b"}));
}

TEST(GraphEditorScenarios, RerouteOutputsBetweenViews) {
  Graph g = RerouteFixture();
  Rewriter r(g);
  // The consumers of {a1, b1}'s outputs read {a0, b0}'s.
  absl::StatusOr<int> n =
      RerouteOutputs(r, SubgraphView(g, {Id(g, "a0"), Id(g, "b0")}),
                     SubgraphView(g, {Id(g, "a1"), Id(g, "b1")}));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(InputNames(g, "c1"), (std::vector<std::string>{"a0", "b0"}));
  EXPECT_FALSE(RerouteOutputs(r, SubgraphView(g, {Id(g, "a0")}),
                              SubgraphView(g, {Id(g, "a1"), Id(g, "b1")}))
                   .ok());
}

// x -> relu -> split(2) -> (s:0 -> m0, s:1 -> m1) -> out = m0 + m1, with a
// control edge relu -> m1.
constexpr char kChain[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "axis"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
  }
  node {
    name: "relu"
    op: "Relu"
    input: "x"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "s"
    op: "Split"
    input: "axis"
    input: "relu"
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
    name: "m0"
    op: "Neg"
    input: "s"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "m1"
    op: "Neg"
    input: "s:1"
    input: "^relu"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "out"
    op: "AddV2"
    input: "m0"
    input: "m1"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST(SubgraphViewTest, InputsOutputsAndPassthroughs) {
  Graph g = GraphFromText(kChain);
  SubgraphView v(g, {Id(g, "s"), Id(g, "m0"), Id(g, "m1")}, {{Id(g, "x"), 0}});
  EXPECT_EQ(Names(g, v.inputs()),
            (std::vector<std::string>{"axis", "relu", "x"}));
  EXPECT_EQ(Names(g, v.outputs()), (std::vector<std::string>{"m0", "m1", "x"}));
  EXPECT_EQ(Names(g, v.passthroughs()), (std::vector<std::string>{"x"}));
  EXPECT_TRUE(v.Contains(Id(g, "s")));
  EXPECT_FALSE(v.Contains(Id(g, "out")));
}

TEST(WalkTest, ForwardAndBackward) {
  Graph g = GraphFromText(kChain);
  EXPECT_EQ(Names(g, ForwardWalk(g, {Id(g, "relu")})),
            (std::vector<std::string>{"relu", "s", "m0", "m1", "out"}));
  WalkOptions exclusive;
  exclusive.inclusive = false;
  EXPECT_EQ(Names(g, ForwardWalk(g, {Id(g, "s")}, exclusive)),
            (std::vector<std::string>{"m0", "m1", "out"}));
  WalkOptions stop;
  stop.stop_at = {{Id(g, "s"), 1}};
  EXPECT_EQ(Names(g, ForwardWalk(g, {Id(g, "s")}, stop)),
            (std::vector<std::string>{"s", "m0", "out"}));
  EXPECT_EQ(Names(g, BackwardWalk(g, {Id(g, "m1")})),
            (std::vector<std::string>{"m1", "s", "axis", "relu", "x"}));
  WalkOptions control;
  control.control = true;
  control.stop_at = {{Id(g, "s"), 1}};
  // Stopped at s:1, the walk still reaches relu through the control edge.
  EXPECT_EQ(Names(g, BackwardWalk(g, {Id(g, "m1")}, control)),
            (std::vector<std::string>{"m1", "relu", "x"}));
  absl::flat_hash_set<NodeId> within = {Id(g, "relu"), Id(g, "s"), Id(g, "m0")};
  WalkOptions inside;
  inside.within = &within;
  EXPECT_EQ(Names(g, ForwardWalk(g, {Id(g, "relu")}, inside)),
            (std::vector<std::string>{"relu", "s", "m0"}));
}

TEST(WalkTest, IntersectionOfTwoWalks) {
  Graph g = GraphFromText(kChain);
  EXPECT_EQ(Names(g, WalksIntersection(g, {Id(g, "s")}, {Id(g, "m1")})),
            (std::vector<std::string>{"s", "m1"}));
  EXPECT_EQ(Names(g, WalksIntersection(g, {Id(g, "x")}, {Id(g, "out")})),
            (std::vector<std::string>{"x", "relu", "s", "m0", "m1", "out"}));
}

TEST(WalkTest, ReachesStopsWhereTheAnswerShows) {
  Graph g = GraphFromText(kChain);
  EXPECT_TRUE(Reaches(g, {Id(g, "x")}, {Id(g, "out")}));
  EXPECT_TRUE(Reaches(g, {Id(g, "m0")}, {Id(g, "m0")}));  // itself
  EXPECT_TRUE(Reaches(g, {Id(g, "m0"), Id(g, "axis")}, {Id(g, "relu"), Id(g, "m1")}));
  EXPECT_FALSE(Reaches(g, {Id(g, "out")}, {Id(g, "x")}));
  EXPECT_FALSE(Reaches(g, {Id(g, "m0")}, {Id(g, "m1")}));
  EXPECT_FALSE(Reaches(g, {Id(g, "axis")}, {Id(g, "relu")}));
  EXPECT_FALSE(Reaches(g, {}, {Id(g, "out")}));
  // A path of a control edge only: b waits for a.
  Graph c = GraphFromText(R"pb(
    node { name: "a" op: "NoOp" }
    node { name: "b" op: "NoOp" input: "^a" }
  )pb");
  EXPECT_FALSE(Reaches(c, {Id(c, "a")}, {Id(c, "b")}));
  EXPECT_TRUE(Reaches(c, {Id(c, "a")}, {Id(c, "b")}, /*control=*/true));
  EXPECT_FALSE(Reaches(c, {Id(c, "b")}, {Id(c, "a")}, /*control=*/true));
}

TEST(FilterTest, ByOpAndByName) {
  Graph g = GraphFromText(kChain);
  std::vector<NodeId> all = g.NodeIds();
  EXPECT_EQ(Names(g, FilterByOp(g, all, "Neg|Relu*")),
            (std::vector<std::string>{"relu", "m0", "m1"}));
  EXPECT_EQ(FilterByOp(g, all, "Neg|Relu*", /*matching=*/false).size(),
            all.size() - 3);
  // Empty alternatives are skipped; an empty list matches no op.
  EXPECT_EQ(SplitGlobs("|Neg||Relu*|"),
            (std::vector<std::string>{"Neg", "Relu*"}));
  EXPECT_TRUE(FilterByOp(g, all, "").empty());
  EXPECT_FALSE(GlobsMatch(SplitGlobs("Relu"), "Relu6"));
  absl::StatusOr<std::shared_ptr<const NameRegex>> re =
      NameRegex::Compile("m[0-9]");
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(Names(g, FilterByName(g, all, **re)),
            (std::vector<std::string>{"m0", "m1"}));
  EXPECT_EQ(FilterByName(g, all, **re, /*matching=*/false).size(),
            all.size() - 2);
  absl::StatusOr<std::shared_ptr<const NameRegex>> bad =
      NameRegex::Compile("m[");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "bad regex `m[`");
}

TEST(ByNameTest, GetContainsRemove) {
  Graph g = GraphFromText(kChain);
  EXPECT_EQ(*GetByName(g, "relu"), Id(g, "relu"));
  EXPECT_EQ(GetByName(g, "nope").status().message(), "no node `nope`");
  Rewriter r(g);
  EXPECT_FALSE(RemoveByName(r, "relu").ok());  // s still reads it
  ASSERT_TRUE(RemoveByName(r, "out").ok());
  EXPECT_FALSE(g.Contains("out"));
}

// graph_def_editor's add_preprocessing / add_postprocessing.
constexpr char kModel[] = R"pb(
  node {
    name: "image"
    op: "Placeholder"
    device: "/device:CPU:0"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "logits"
    op: "Relu"
    input: "image"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "other"
    op: "Neg"
    input: "image"
    input: "^image"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";
constexpr char kPre[] = R"pb(
  node {
    name: "image"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_UINT8 }
    }
  }
  node {
    name: "image_cast"
    op: "Cast"
    input: "image"
    attr {
      key: "SrcT"
      value { type: DT_UINT8 }
    }
    attr {
      key: "DstT"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "image_preprocessed"
    op: "Neg"
    input: "image_cast"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";
// A second placeholder that names no input of kModel.
constexpr char kPreUnused[] = R"pb(
  node {
    name: "unused"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "unused_preprocessed"
    op: "Neg"
    input: "unused"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";
constexpr char kPost[] = R"pb(
  node {
    name: "logits"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "logits_postprocessed"
    op: "Softmax"
    input: "logits"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

// EqualNode: a node that computes what a spec would (the same op, inputs,
// attrs and device), never one excluded nor a stateful op's; a Const only
// one a rewrite made, equal in value.
TEST(EqualNodeTest, FindsWhatComputesTheSame) {
  Graph g = GraphFromText(testing::PlaceholderNode("x", {2}) +
                          FloatConstNode("c", 2) +
                          testing::OpNode("r", "Relu", {"x"}) +
                          testing::IntConstNode("shape", {2}));
  Rewriter rewriter(g);
  NodeSpec relu;
  relu.name = "relu";
  relu.op = "Relu";
  relu.inputs = {{Id(g, "x"), 0}};
  relu.attrs["T"].set_type(tf::DT_FLOAT);
  EXPECT_EQ(EqualNode(g, relu), Id(g, "r"));
  EXPECT_EQ(EqualNode(g, relu, {Id(g, "r")}), kNoNode);
  NodeSpec placed = relu;
  placed.device = "/device:CPU:1";
  EXPECT_EQ(EqualNode(g, placed), kNoNode);
  NodeSpec tanh = relu;
  tanh.op = "Tanh";
  EXPECT_EQ(EqualNode(g, tanh), kNoNode);
  // a random op is never taken for another
  NodeSpec random;
  random.name = "random";
  random.op = "RandomUniform";
  random.inputs = {{Id(g, "shape"), 0}};
  random.attrs["dtype"].set_type(tf::DT_FLOAT);
  random.attrs["T"].set_type(tf::DT_INT32);
  ASSERT_TRUE(rewriter.AddNode(random).ok());
  EXPECT_EQ(EqualNode(g, random), kNoNode);
  // the model's own constant is never a rewrite's; one a rewrite made is,
  // where its value is the same
  NodeSpec zeros;
  zeros.name = "zeros";
  zeros.op = "Const";
  zeros.attrs = g.node(Id(g, "c")).attrs();
  EXPECT_EQ(EqualNode(g, zeros), kNoNode);
  rewriter.SetProvenance("a_rule");
  absl::StatusOr<NodeId> made = rewriter.AddNode(zeros);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(EqualNode(g, zeros), *made);
  NodeSpec ones = zeros;
  ones.attrs["value"].mutable_tensor()->add_float_val(1);
  EXPECT_EQ(EqualNode(g, ones), kNoNode);
}

TEST(GraphDefEditorScenarios, AddPreprocessing) {
  Graph g = GraphFromText(kModel);
  Graph pre = GraphFromText(kPre);
  Rewriter r(g);
  absl::Status s = AddPreprocessing(r, pre);
  ASSERT_TRUE(s.ok()) << s;
  // The input keeps its name, now with the preprocessing graph's dtype.
  const Node* image = g.FindNode("image");
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->attr("dtype")->type(), tf::DT_UINT8);
  EXPECT_EQ(InputNames(g, "image_cast"), (std::vector<std::string>{"image"}));
  EXPECT_EQ(InputNames(g, "logits"),
            (std::vector<std::string>{"image_preprocessed"}));
  EXPECT_EQ(InputNames(g, "other"),
            (std::vector<std::string>{"image_preprocessed"}));
  // The control edge from the old input now leaves the new one.
  ASSERT_EQ(g.node(Id(g, "other")).control_inputs().size(), 1u);
  EXPECT_EQ(g.node(Id(g, "other")).control_inputs()[0], image->id());
  EXPECT_EQ(g.num_nodes(), 5);
}

TEST(GraphDefEditorScenarios, AddPostprocessing) {
  Graph g = GraphFromText(kModel);
  Graph post = GraphFromText(kPost);
  Rewriter r(g);
  absl::Status s = AddPostprocessing(r, post);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(g.FindNode("logits")->op(), "Softmax");
  EXPECT_EQ(InputNames(g, "logits"), (std::vector<std::string>{"logits_raw"}));
  EXPECT_EQ(g.FindNode("logits_raw")->op(), "Relu");
  EXPECT_EQ(g.NodesWithOp("Placeholder").size(),
            1u);  // the fed placeholder is not copied
}

TEST(GraphDefEditorScenarios, ProblemsAreFoundBeforeAnythingChanges) {
  Graph g = GraphFromText(kModel);
  std::string before = SerializeGraph(g, GraphFormat::kText);
  Rewriter r(g);
  // A placeholder that names no input of the target.
  absl::Status s =
      AddPreprocessing(r, GraphFromText(std::string(kPre) + kPreUnused));
  EXPECT_EQ(s.message(),
            "the preprocessing graph's placeholder `unused` names no input of "
            "the target graph "
            "(its inputs: image)");
  // No `<name>_preprocessed` node.
  s = AddPreprocessing(r, GraphFromText(R"pb(
                         node {
                           name: "image"
                           op: "Placeholder"
                           attr {
                             key: "dtype"
                             value { type: DT_FLOAT }
                           }
                         }
                         node {
                           name: "image_scaled"
                           op: "Neg"
                           input: "image"
                           attr {
                             key: "T"
                             value { type: DT_FLOAT }
                           }
                         }
                       )pb"));
  EXPECT_EQ(s.message(),
            "the preprocessing graph has no node `image_preprocessed` for its "
            "placeholder `image`");
  // A target op with more than one output.
  Graph split = GraphFromText(kChain);
  Rewriter rs(split);
  s = AddPostprocessing(rs, GraphFromText(R"pb(
                          node {
                            name: "s"
                            op: "Placeholder"
                            attr {
                              key: "dtype"
                              value { type: DT_FLOAT }
                            }
                          }
                          node {
                            name: "s_postprocessed"
                            op: "Neg"
                            input: "s"
                            attr {
                              key: "T"
                              value { type: DT_FLOAT }
                            }
                          }
                        )pb"));
  EXPECT_EQ(
      s.message(),
      "`s` (Split) has 2 outputs; postprocessing takes an op with one output");
  EXPECT_EQ(SerializeGraph(g, GraphFormat::kText), before);
}

TEST(GraphDefEditorScenarios, SplicedNamesThatCollideGetUniqueNames) {
  Graph g =
      GraphFromText(std::string(kModel) + R"pb(node {
                                                 name: "image_cast"
                                                 op: "Const"
                                                 attr {
                                                   key: "dtype"
                                                   value { type: DT_FLOAT }
                                                 }
                                               })pb");
  Graph pre = GraphFromText(kPre);
  Rewriter r(g);
  ASSERT_TRUE(AddPreprocessing(r, pre).ok());
  EXPECT_EQ(g.FindNode("image_cast")->op(), "Const");
  EXPECT_EQ(InputNames(g, "image_preprocessed"),
            (std::vector<std::string>{"image_cast_1"}));
}

}  // namespace
}  // namespace graft::surgery

namespace graft::surgery {
namespace {

// Control edges survive every operation: a view swap moves data inputs
// only, a rename keeps the edges on the renamed node, a splice brings its
// own control edges, and postprocessing leaves the raw output's control
// consumers on it.
TEST(ControlEdgeTest, KeptThroughEveryOperation) {
  Graph g = GraphFromText(FloatConstNode("a", 2) + FloatConstNode("b", 2) +
                          Add("c", "a", "b") + FloatConstNode("e", 2) +
                          Add("g", "e", "e") + R"pb(
    node { name: "init" op: "NoOp" input: "^c" }
    node {
      name: "h"
      op: "Neg"
      input: "c"
      input: "^init"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Rewriter r(g);
  ASSERT_TRUE(SwapOutputs(r, SubgraphView(g, {Id(g, "c")}),
                          SubgraphView(g, {Id(g, "g")}))
                  .ok());
  EXPECT_EQ(InputNames(g, "h"), (std::vector<std::string>{"g"}));
  ASSERT_EQ(g.node(Id(g, "h")).control_inputs().size(), 1u);
  ASSERT_EQ(g.node(Id(g, "init")).control_inputs().size(), 1u);
  EXPECT_EQ(g.node(g.node(Id(g, "init")).control_inputs()[0]).name(), "c");

  ASSERT_TRUE(r.Rename(Id(g, "c"), "c2").ok());
  EXPECT_EQ(g.node(g.node(Id(g, "init")).control_inputs()[0]).name(), "c2");

  Graph post = GraphFromText(R"pb(
    node {
      name: "c2"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node { name: "dep" op: "NoOp" }
    node {
      name: "c2_postprocessed"
      op: "Neg"
      input: "c2"
      input: "^dep"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  ASSERT_TRUE(AddPostprocessing(r, post).ok());
  EXPECT_EQ(g.node(g.node(Id(g, "init")).control_inputs()[0]).name(), "c2_raw");
  const Node& result = g.node(Id(g, "c2"));
  ASSERT_EQ(result.control_inputs().size(), 1u);
  EXPECT_EQ(g.node(result.control_inputs()[0]).name(), "dep");
}

}  // namespace
}  // namespace graft::surgery
