#include "dialects/onnx/onnx_model.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/rewriter.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

// x:0 [2, 3] @ w:0 [3, 2] -> y:0, by a node named `m:1`: value and node
// names as TensorFlow's exporters write them.
std::string ColonNamedModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("colons");
  auto info = [](onnx::ValueInfoProto* v, const char* name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(1);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  info(g.add_input(), "x:0", {2, 3});
  info(g.add_output(), "y:0", {2, 2});
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("w:0");
  w.set_data_type(1);
  w.add_dims(3);
  w.add_dims(2);
  for (int i = 0; i < 6; ++i) w.add_float_data(0.5f * i);
  onnx::NodeProto& n = *g.add_node();
  n.set_name("m:1");
  n.set_op_type("MatMul");
  n.add_input("x:0");
  n.add_input("w:0");
  n.add_output("y:0");
  return model.SerializeAsString();
}

TEST(OnnxModel, ValueNamesWithColonsAreNotPorts) {
  const std::string bytes = ColonNamedModel();
  absl::StatusOr<Graph> graph = ParseOnnx(bytes, "colons.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const NodeId mm = graph->FindId("m_1");
  ASSERT_NE(mm, kNoNode);
  const Node& n = graph->node(mm);
  ASSERT_EQ(n.num_inputs(), 2);
  EXPECT_EQ(graph->node(n.input(0).node).name(), "x_0");
  EXPECT_EQ(graph->node(n.input(0).node).op(), "Placeholder");
  EXPECT_EQ(graph->node(n.input(1).node).name(), "w_0");
  EXPECT_EQ(OnnxOf(*graph)->ValueOf("w_0"), "w:0");
  // Unchanged: the same bytes; a changed weight keeps its value name.
  absl::StatusOr<std::string> again = SerializeOnnx(*graph);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, bytes);
  Rewriter rewriter(*graph);
  rewriter.Begin();
  tf::AttrValue value = *graph->node(n.input(1).node).attr("value");
  value.mutable_tensor()->set_float_val(0, 7.0f);
  ASSERT_TRUE(rewriter.SetAttr(n.input(1).node, "value", value).ok());
  rewriter.Commit();
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(*SerializeOnnx(*graph)));
  ASSERT_EQ(written.graph().initializer_size(), 1);
  EXPECT_EQ(written.graph().initializer(0).name(), "w:0");
  EXPECT_EQ(written.graph().input(0).name(), "x:0");
  EXPECT_EQ(written.graph().node(0).name(), "m:1");
  EXPECT_EQ(written.graph().node(0).input(1), "w:0");
}

// A node whose op type is one of graft's own marks (an absent input, a
// graph output, an input, an initializer) would be written back as that
// mark: refused, named.
TEST(OnnxModel, GraftsOwnMarksAreNoOpsAModelMayUse) {
  for (const char* op : {"_Absent", "_Retval", "Placeholder", "Const"}) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(ColonNamedModel()));
    onnx::NodeProto& n = *model.mutable_graph()->mutable_node(0);
    n.set_name("flatten");
    n.set_op_type(op);
    absl::StatusOr<Graph> graph = ParseOnnx(model.SerializeAsString(), "marks.onnx");
    ASSERT_FALSE(graph.ok()) << op;
    EXPECT_NE(graph.status().message().find(absl::StrCat(
                  "node `flatten`: op type `", op, "` is graft's own mark")),
              std::string::npos)
        << graph.status();
  }
}

// A node that leaves an optional input out keeps its place when the model is
// written: the reader's stand-in for "" (made after every node) keeps no
// reader waiting, so clip stays before relu.
TEST(OnnxModel, ALeftOutInputKeepsTheNodeOrder) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(ColonNamedModel()));
  onnx::GraphProto& g = *model.mutable_graph();
  g.clear_node();
  g.clear_output();
  onnx::TensorProto& hi = *g.add_initializer();
  hi.set_name("hi");
  hi.set_data_type(1);
  hi.add_float_data(1.0f);
  auto add = [&](const char* name, const char* op, std::vector<std::string> inputs) {
    onnx::NodeProto& n = *g.add_node();
    n.set_name(name);
    n.set_op_type(op);
    for (const std::string& i : inputs) n.add_input(i);
    n.add_output(absl::StrCat(name, "_out"));
    onnx::ValueInfoProto& out = *g.add_output();
    out.set_name(absl::StrCat(name, "_out"));
    out.mutable_type()->mutable_tensor_type()->set_elem_type(1);
  };
  add("clip", "Clip", {"x:0", "", "hi"});
  add("relu", "Relu", {"x:0"});
  absl::StatusOr<Graph> graph = ParseOnnx(model.SerializeAsString(), "clip.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  // a change, so that the model is written from the graph
  Rewriter rewriter(*graph);
  rewriter.Begin();
  const NodeId w = graph->FindId("w_0");
  ASSERT_NE(w, kNoNode);
  ASSERT_TRUE(rewriter.RemoveNode(w).ok());
  rewriter.Commit();
  absl::StatusOr<std::string> bytes = SerializeOnnx(*graph);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(*bytes));
  ASSERT_EQ(written.graph().node_size(), 2);
  EXPECT_EQ(written.graph().node(0).name(), "clip");
  EXPECT_EQ(written.graph().node(0).input(1), "");
  EXPECT_EQ(written.graph().node(1).name(), "relu");
}

// int4 values listed in int32_data, a packed byte each: read as the bytes
// raw_data would hold (three values, two bytes), written back as read;
// a count that does not fit the shape, or a value that is not a byte, is a
// located error.
TEST(OnnxModel, ReadsFourBitValuesListedInInt32Data) {
  auto with_int4 = [](std::vector<int32_t> listed) {
    onnx::ModelProto model;
    model.ParseFromString(ColonNamedModel());
    model.mutable_opset_import(0)->set_version(21);
    onnx::NodeProto& n = *model.mutable_graph()->mutable_node(0);  // w unread
    n.set_op_type("Identity");
    n.mutable_input()->RemoveLast();
    onnx::TensorProto& q = *model.mutable_graph()->add_initializer();
    q.set_name("q");
    q.set_data_type(onnx::TensorProto::INT4);
    q.add_dims(3);
    for (int32_t v : listed) q.add_int32_data(v);
    return model.SerializeAsString();
  };
  absl::StatusOr<Graph> graph = ParseOnnx(with_int4({0x21, 0x0f}), "int4.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& q = graph->node(graph->FindId("q"));
  EXPECT_EQ(q.attr("dtype")->type(), tf::DT_INT4);
  EXPECT_EQ(q.attr("value")->tensor().tensor_content(),
            std::string("\x21\x0f", 2));
  Rewriter rewriter(
      *graph);  // a change, so that the model is written from the graph
  rewriter.Begin();
  ASSERT_TRUE(rewriter.RemoveNode(graph->FindId("w_0")).ok());
  rewriter.Commit();
  absl::StatusOr<std::string> bytes = SerializeOnnx(*graph);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(*bytes));
  bool found = false;
  for (const onnx::TensorProto& t : written.graph().initializer()) {
    if (t.name() != "q") continue;
    found = true;
    EXPECT_EQ(t.data_type(), onnx::TensorProto::INT4);
    // as it was read: an initializer no rewrite touched keeps its message
    ASSERT_EQ(t.int32_data_size(), 2);
    EXPECT_EQ(t.int32_data(1), 0x0f);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ParseOnnx(with_int4({0x21}), "int4.onnx").status().message(),
            "int4.onnx: error: tensor `q` lists 1 bytes in int32_data; its "
            "shape needs 2");
  EXPECT_EQ(ParseOnnx(with_int4({0x21, 300}), "int4.onnx").status().message(),
            "int4.onnx: error: tensor `q` has 300 in int32_data, which is not "
            "a byte");
}

}  // namespace
}  // namespace graft
