#include "dialects/onnx/onnx_bodies.h"

#include <set>
#include <string>
#include <vector>

#include "dialects/graph_io.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/rewriter.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

Graph Load(const std::string& name) {
  absl::StatusOr<Graph> graph = LoadGraph("tests/data/onnx/" + name);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

onnx::ModelProto Saved(const Graph& graph) {
  absl::StatusOr<std::string> bytes = SerializeOnnx(graph);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(*bytes));
  return model;
}

const onnx::GraphProto& Branch(const onnx::ModelProto& model, const std::string& attr) {
  for (const onnx::NodeProto& n : model.graph().node())
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.name() == attr) return a.g();
  static const onnx::GraphProto none;
  ADD_FAILURE() << "no attr " << attr;
  return none;
}

TEST(OnnxBodies, CapturesAreTrailingInputs) {
  Graph graph = Load("subgraph_bn.onnx");
  const Node& node = graph.node(graph.FindId("if"));
  // The branches' outer reads in order of first reading (else_branch
  // first: attrs are sorted by name); the Loop body's reads are its own.
  ASSERT_EQ(OnnxCaptureCount(node), 3);
  ASSERT_EQ(node.num_inputs(), 1 + 3);
  std::vector<std::string> names(node.attr(kCapturesAttr)->list().s().begin(),
                                 node.attr(kCapturesAttr)->list().s().end());
  EXPECT_EQ(names, (std::vector<std::string>{"trips", "y", "w_shared"}));
  EXPECT_EQ(graph.node(node.input(2).node).name(), "outer_bn");
  // The captured initializers have a reader, so no rewrite drops them.
  EXPECT_TRUE(graph.node(graph.FindId("w_shared")).HasConsumers());
}

TEST(OnnxBodies, ARerouteRenamesTheCaptureInTheBodies) {
  Graph graph = Load("subgraph_ok.onnx");  // both branches read outer `x`
  const NodeId if_node = graph.FindId("if");
  Rewriter rewriter(graph);
  rewriter.Begin();
  NodeSpec spec;
  spec.name = "abs";
  spec.op = "Abs";
  spec.inputs = {{graph.FindId("x"), 0}};
  absl::StatusOr<NodeId> abs = rewriter.AddNode(spec);
  ASSERT_TRUE(abs.ok()) << abs.status();
  absl::StatusOr<int> moved = rewriter.Reroute({graph.FindId("x"), 0}, {*abs, 0},
                                               ConsumerFilter::Only({if_node}));
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(*moved, 1);
  rewriter.Commit();
  onnx::ModelProto model = Saved(graph);
  EXPECT_EQ(model.graph().node(0).op_type(), "Abs");
  EXPECT_EQ(model.graph().node(1).input_size(), 1);  // operands only
  for (const char* branch : {"then_branch", "else_branch"})
    EXPECT_EQ(Branch(model, branch).node(0).input(0), "abs") << branch;
}

TEST(OnnxBodies, AnUnchangedBodyPutBackKeepsTheModel) {
  for (const char* file : {"subgraph_bn.onnx", "subgraph_ok.onnx"}) {
    Graph graph = Load(file);
    absl::StatusOr<std::string> before = SerializeOnnx(graph);
    ASSERT_TRUE(before.ok());
    std::vector<OnnxBody> bodies = OnnxBodies(graph);
    ASSERT_EQ(bodies.size(), 2u) << file;
    for (const OnnxBody& body : bodies) {
      absl::StatusOr<Graph> sub = OnnxBodyGraph(graph, body);
      ASSERT_TRUE(sub.ok()) << sub.status();
      ASSERT_TRUE(SetOnnxBody(graph, body, *sub).ok()) << body.Label();
    }
    absl::StatusOr<std::string> after = SerializeOnnx(graph);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(*after, *before) << file;
  }
}

TEST(OnnxBodies, ACapturedInitializerIsAConstantInTheBody) {
  Graph graph = Load("subgraph_bn.onnx");
  absl::StatusOr<Graph> then = OnnxBodyGraph(graph, {"if", "then_branch", -1});
  ASSERT_TRUE(then.ok()) << then.status();
  EXPECT_EQ(then->node(then->FindId("w_shared")).op(), "Const");
  EXPECT_EQ(then->node(then->FindId("y")).op(), "Placeholder");
  EXPECT_EQ(OnnxOf(*then)->captures, (std::set<std::string>{"w_shared", "y"}));
  EXPECT_FALSE(OnnxBodyGraph(graph, {"if", "no_such_attr", -1}).ok());
}

TEST(OnnxBodies, ABodyNoLongerReadingAnInitializerDropsIt) {
  Graph graph = Load("subgraph_bn.onnx");
  OnnxBody then{"if", "then_branch", -1};
  absl::StatusOr<Graph> sub = OnnxBodyGraph(graph, then);
  ASSERT_TRUE(sub.ok());
  // The branch's Conv reads `y` twice instead of `w_shared`.
  Rewriter rewriter(*sub);
  rewriter.Begin();
  const NodeId conv = sub->FindId("then_conv");
  ASSERT_TRUE(rewriter.SetInput(conv, 1, {sub->FindId("y"), 0}).ok());
  rewriter.Commit();
  ASSERT_TRUE(SetOnnxBody(graph, then, *sub).ok());
  EXPECT_FALSE(graph.Contains("w_shared"));
  EXPECT_EQ(OnnxCaptureCount(graph.node(graph.FindId("if"))), 2);
  onnx::ModelProto model = Saved(graph);
  for (const onnx::TensorProto& t : model.graph().initializer()) EXPECT_NE(t.name(), "w_shared");
  EXPECT_EQ(Branch(model, "then_branch").node(0).input(1), "y");
}

}  // namespace
}  // namespace graft
