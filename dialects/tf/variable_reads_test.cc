#include "dialects/tf/variable_reads.h"

#include "dialects/tf/function_body.h"
#include "engine/rewriter.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

constexpr char kCnn[] = "tests/data/saved_models/cnn";
constexpr char kModel[] = "__inference__wrapped_model_142";
constexpr char kKernel[] = "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE";

const tf::FunctionDef& Function(const Graph& graph, const std::string& name) {
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    if (f.signature().name() == name) return f;
  }
  static const tf::FunctionDef none;
  ADD_FAILURE() << "no function " << name;
  return none;
}

TEST(VariableReadsTest, ArgsHoldTheVariablesTheSignatureCallPasses) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok()) << graph.status();
  VariableReads reads = VariableReads::Of(*graph);
  // The serving call passes the input then the 8 handles to the wrapper,
  // which passes them on to the model.
  EXPECT_EQ(reads.KeyOf(kModel, 0), "");  // the image
  EXPECT_EQ(reads.KeyOf(kModel, 1), kKernel);
  EXPECT_EQ(reads.KeyOf("__inference_signature_wrapper_377", 1), kKernel);
  // A layer's own call function: no node calls it.
  EXPECT_EQ(reads.KeyOf("__inference_conv2d_layer_call_and_return_conditional_losses_216", 1),
            "");
}

TEST(VariableReadsTest, ExposedReadsAreValuesAndGoBackWhenStillRead) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok());
  VariableReads reads = VariableReads::Of(*graph);
  const tf::FunctionDef& model = Function(*graph, kModel);
  absl::StatusOr<Graph> body = FunctionBodyGraph(model, graph->header().library());
  ASSERT_TRUE(body.ok()) << body.status();
  const int nodes = body->num_nodes();
  absl::StatusOr<int> exposed = reads.Expose(kModel, *body);
  ASSERT_TRUE(exposed.ok()) << exposed.status();
  EXPECT_EQ(*exposed, 8);  // conv 2, batch norm 4, dense 2
  const Node& conv = body->node(body->NodesWithOp("Conv2D")[0]);
  const Node& kernel = body->node(conv.input(1).node);
  EXPECT_EQ(kernel.op(), "Const");
  EXPECT_EQ(kernel.value_content().size(), 3u * 3 * 3 * 4 * 4);
  // A rule consumes the kernel: the conv reads another constant.
  Rewriter rewriter(*body);
  NodeSpec other;
  other.name = "other";
  other.op = "Const";
  other.attrs["dtype"] = *kernel.attr("dtype");
  other.attrs["value"] = *kernel.attr("value");
  absl::StatusOr<NodeId> made = rewriter.AddNode(other);
  ASSERT_TRUE(made.ok());
  ASSERT_TRUE(rewriter.SetInput(conv.id(), 1, {*made, 0}).ok());
  absl::StatusOr<int> restored = VariableReads::Restore(*body);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(*restored, 7);
  // Every marked constant is gone; the other readers read the variables.
  for (NodeId id : body->NodesWithOp("Const"))
    EXPECT_EQ(body->node(id).attr("_graft_variable_read"), nullptr);
  EXPECT_EQ(body->num_nodes(), nodes + 1);
  const Node& dense = body->node(body->NodesWithOp("MatMul")[0]);
  EXPECT_EQ(body->node(dense.input(1).node).op(), "ReadVariableOp");
  // The body still converts back to a function with the same signature.
  absl::StatusOr<tf::FunctionDef> back =
      FunctionFromBody(*body, model, graph->header().library());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->signature().SerializeAsString(), model.signature().SerializeAsString());
}

TEST(VariableReadsTest, AFunctionThatWritesAVariableKeepsItsReads) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok());
  VariableReads reads = VariableReads::Of(*graph);
  // The restore function's args hold every variable, but it assigns them.
  const std::string restore = "__inference__traced_restore_601";
  EXPECT_EQ(reads.KeyOf(restore, 1).empty(), false);
  absl::StatusOr<Graph> body =
      FunctionBodyGraph(Function(*graph, restore), graph->header().library());
  ASSERT_TRUE(body.ok());
  absl::StatusOr<int> exposed = reads.Expose(restore, *body);
  ASSERT_TRUE(exposed.ok());
  EXPECT_EQ(*exposed, 0);
}

TEST(VariableReadsTest, GraphsNotReadInPlaceShowNothing) {
  absl::StatusOr<Graph> graph = LoadSavedModel(kCnn);
  ASSERT_TRUE(graph.ok());
  Graph plain;
  VariableReads reads = VariableReads::Of(plain);
  absl::StatusOr<Graph> body =
      FunctionBodyGraph(Function(*graph, kModel), graph->header().library());
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*reads.Expose(kModel, *body), 0);
}

}  // namespace
}  // namespace graft
