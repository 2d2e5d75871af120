#include "dialects/tf/constant_args.h"

#include <fstream>
#include <sstream>

#include "dialects/tf/function_body.h"
#include "dialects/graph_io.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

// Made by TensorFlow (tests/data/make_tf_producers.py): a conv and batch
// norm in each branch of a tf.cond and in a tf.while_loop body, frozen
// without lowering the control flow.
constexpr char kControlFlow[] = "tests/data/tf_producers/control_flow.pbtxt";
// A while loop whose body halves its filter each iteration.
constexpr char kLoopCarried[] = "tests/data/tf_producers/loop_carried.pbtxt";

tf::GraphDef ReadGraphDef(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  tf::GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &def)) << path;
  return def;
}

Graph Parse(const tf::GraphDef& def) {
  absl::StatusOr<Graph> g = ParseGraph(def.SerializeAsString(), GraphFormat::kBinary, "test graph");
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph();
}

// The library function whose name starts with `prefix`.
const tf::FunctionDef& Function(const Graph& graph, const std::string& prefix) {
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    if (f.signature().name().rfind(prefix, 0) == 0) return f;
  }
  static const tf::FunctionDef none;
  ADD_FAILURE() << "no function " << prefix << "...";
  return none;
}

int MarkedConstants(const Graph& body) {
  int n = 0;
  body.ForEachNode([&](const Node& node) {
    n += node.op() == "Const" && node.attr("_graft_constant_arg") != nullptr;
  });
  return n;
}

TEST(ConstantArgsTest, BranchAndLoopInvariantArgsHoldTheirConstants) {
  Graph graph = Parse(ReadGraphDef(kControlFlow));
  ConstantArgs args = ConstantArgs::Of(graph);
  // The If passes the condition, then each branch's weights and x: the
  // then branch's first five args are its conv filter and BN parameters.
  const std::string then = Function(graph, "cond_true").signature().name();
  for (int i = 0; i < 5; ++i) EXPECT_NE(args.ConstantOf(then, i), nullptr) << i;
  EXPECT_EQ(args.ConstantOf(then, 5), nullptr);  // x, a Placeholder
  // The loop: counter, max iterations (a constant, returned unchanged),
  // i, y, n, then the weights, returned unchanged.
  const std::string body = Function(graph, "while_body").signature().name();
  EXPECT_EQ(args.ConstantOf(body, 0), nullptr);  // the loop counter changes
  EXPECT_NE(args.ConstantOf(body, 1), nullptr);
  EXPECT_EQ(args.ConstantOf(body, 3), nullptr);  // y
  EXPECT_EQ(args.ConstantOf(body, 4), nullptr);  // n, a Placeholder
  for (int i = 5; i < 10; ++i) EXPECT_NE(args.ConstantOf(body, i), nullptr) << i;
  const std::string cond = Function(graph, "while_cond").signature().name();
  EXPECT_NE(args.ConstantOf(cond, 5), nullptr);
}

TEST(ConstantArgsTest, ExposedArgsAreConstantsAndGoBackWhenStillRead) {
  Graph graph = Parse(ReadGraphDef(kControlFlow));
  ConstantArgs args = ConstantArgs::Of(graph);
  const tf::FunctionDef& then = Function(graph, "cond_true");
  absl::StatusOr<Graph> body = FunctionBodyGraph(then, graph.header().library());
  ASSERT_TRUE(body.ok()) << body.status();
  const int before = body->num_nodes();
  absl::StatusOr<int> shown = args.Expose(then.signature().name(), *body);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(*shown, 5);
  EXPECT_EQ(MarkedConstants(*body), 5);
  // The conv's filter is read through an Identity of a Const now.
  const Node* read = body->FindNode("cond/Conv2D/ReadVariableOp_tfg_inlined_cond_0");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(body->node(read->input(0).node).op(), "Const");
  // Nothing consumed them: each goes back, and something still computes
  // with each.
  absl::StatusOr<int> computed = ConstantArgs::Restore(*body);
  ASSERT_TRUE(computed.ok());
  EXPECT_EQ(*computed, 5);
  EXPECT_EQ(MarkedConstants(*body), 0);
  EXPECT_EQ(body->num_nodes(), before);
  EXPECT_EQ(body->node(read->input(0).node).op(), "_Arg");
}

TEST(ConstantArgsTest, AFunctionCalledWithTwoConstantsIsLeftAlone) {
  tf::GraphDef def = ReadGraphDef(kControlFlow);
  // A second If calling the same branches passes the other branch's
  // filter (another value) as the first branch's.
  const tf::NodeDef* cond = nullptr;
  for (const tf::NodeDef& n : def.node())
    if (n.name() == "cond") cond = &n;
  ASSERT_NE(cond, nullptr);
  tf::NodeDef again = *cond;
  again.set_name("cond_again");
  ASSERT_EQ(again.input(1), "cond/input_0");
  again.set_input(1, "cond/input_6");
  *def.add_node() = again;
  Graph graph = Parse(def);
  ConstantArgs args = ConstantArgs::Of(graph);
  const std::string then = Function(graph, "cond_true").signature().name();
  EXPECT_EQ(args.ConstantOf(then, 0), nullptr);
  EXPECT_NE(args.ConstantOf(then, 1), nullptr);  // the same constant twice
  // The same value from another Const counts as the same.
  tf::GraphDef twin = ReadGraphDef(kControlFlow);
  const int count = twin.node_size();
  for (int i = 0; i < count; ++i) {
    tf::NodeDef copy = twin.node(i);
    if (copy.name() == "cond") {
      copy.set_name("cond_again");
      copy.set_input(1, "cond/input_0_copy");
    } else if (copy.name() == "cond/input_0") {
      copy.set_name("cond/input_0_copy");
    } else {
      continue;
    }
    *twin.add_node() = copy;
  }
  Graph twins = Parse(twin);
  EXPECT_NE(ConstantArgs::Of(twins).ConstantOf(then, 0), nullptr);
}

TEST(ConstantArgsTest, ALoopCarriedInputIsNeverAConstant) {
  Graph graph = Parse(ReadGraphDef(kLoopCarried));
  ConstantArgs args = ConstantArgs::Of(graph);
  const std::string body = Function(graph, "while_body").signature().name();
  // The filter enters as Identity(Identity(Const)), and the body halves it.
  EXPECT_EQ(args.ConstantOf(body, 3), nullptr);
  const std::string cond = Function(graph, "while_cond").signature().name();
  EXPECT_EQ(args.ConstantOf(cond, 3), nullptr);
  EXPECT_NE(args.ConstantOf(body, 1), nullptr);  // max iterations, unchanged
}

}  // namespace
}  // namespace graft
