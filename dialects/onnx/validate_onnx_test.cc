// ONNX element types kept from one use to the next (HeldTypes) follow the
// graph's edits: they equal types inferred afresh after an edit that changes
// a type downstream, and after one rolled back.
#include "dialects/onnx/validate_onnx.h"

#include <string>

#include "dialects/onnx/onnx_model.h"
#include "engine/rewriter.h"
#include "gtest/gtest.h"

namespace graft::validate_onnx {
namespace {

// x float [2] -> Relu a -> Abs b -> Neg c.
Graph Chain() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("chain");
  onnx::ValueInfoProto& x = *g.add_input();
  x.set_name("x");
  x.mutable_type()->mutable_tensor_type()->set_elem_type(1);
  x.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  const char* ops[][3] = {{"Relu", "x", "a"}, {"Abs", "a", "b"}, {"Neg", "b", "c"}};
  for (const auto& [op, in, out] : ops) {
    onnx::NodeProto& n = *g.add_node();
    n.set_name(out);
    n.set_op_type(op);
    n.add_input(in);
    n.add_output(out);
  }
  g.add_output()->set_name("c");
  absl::StatusOr<Graph> graph = ParseOnnx(model.SerializeAsString(), "chain.onnx");
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::move(*graph);
}

// Inside an open rewrite: `spec`'s node, reading `from`, made what `reader`
// reads instead of `from`; its id (kNoNode where that failed).
NodeId InsertBefore(Rewriter& rewriter, NodeSpec spec, Endpoint from,
                    NodeId reader) {
  spec.inputs = {from};
  absl::StatusOr<NodeId> id = rewriter.AddNode(std::move(spec));
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return kNoNode;
  EXPECT_TRUE(
      rewriter.Reroute(from, {*id, 0}, ConsumerFilter::Only({reader})).ok());
  return *id;
}

void ExpectFresh(const Graph& graph) {
  HeldTypes held(graph);
  Types fresh(graph);
  graph.ForEachNode([&](const Node& n) {
    EXPECT_EQ(held.types().Of({n.id(), 0}), fresh.Of({n.id(), 0})) << n.name();
    EXPECT_EQ(held.types().Problems(n.id()), fresh.Problems(n.id())) << n.name();
  });
}

TEST(HeldTypes, FollowTheGraphsEdits) {
  Graph graph = Chain();
  const NodeId a = graph.FindId("a"), b = graph.FindId("b"), c = graph.FindId("c");
  EXPECT_EQ(HeldTypes(graph).types().Of({c, 0}), tf::DT_FLOAT);
  // a Cast to int32 between a and b: b and c become int32
  Rewriter rewriter(graph);
  rewriter.Begin();
  NodeSpec cast;
  cast.name = "cast";
  cast.op = "Cast";
  cast.attrs["to"].set_i(6);
  const NodeId id = InsertBefore(rewriter, std::move(cast), {a, 0}, b);
  ASSERT_NE(id, kNoNode);
  rewriter.Commit();
  EXPECT_EQ(HeldTypes(graph).types().Of({c, 0}), tf::DT_INT32);
  ExpectFresh(graph);
  // rolled back: as it was
  rewriter.Begin();
  NodeSpec back;
  back.name = "back";
  back.op = "Cast";
  back.attrs["to"].set_i(1);
  ASSERT_NE(InsertBefore(rewriter, std::move(back), {id, 0}, b), kNoNode);
  EXPECT_EQ(HeldTypes(graph).types().Of({c, 0}), tf::DT_FLOAT);
  rewriter.Rollback();
  EXPECT_EQ(HeldTypes(graph).types().Of({c, 0}), tf::DT_INT32);
  ExpectFresh(graph);
}

// An op of a domain the model does not import (onnxruntime's, as a rewrite
// adds it) has its outputs' types at the opset the writer will import, so
// what reads them knows theirs.
TEST(Types, OfAnOpOfADomainNotImported) {
  Graph graph = Chain();
  const NodeId a = graph.FindId("a"), b = graph.FindId("b");
  Rewriter rewriter(graph);
  rewriter.Begin();
  NodeSpec gelu;
  gelu.name = "gelu";
  gelu.op = "com.microsoft.FastGelu";
  const NodeId id = InsertBefore(rewriter, std::move(gelu), {a, 0}, b);
  ASSERT_NE(id, kNoNode);
  rewriter.Commit();
  Types types(graph);
  EXPECT_EQ(types.Of({id, 0}), tf::DT_FLOAT);
  EXPECT_EQ(types.Of({b, 0}), tf::DT_FLOAT);
  EXPECT_TRUE(types.Problems(id).empty());
}

}  // namespace
}  // namespace graft::validate_onnx
