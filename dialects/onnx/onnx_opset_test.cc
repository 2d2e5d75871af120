#include "dialects/onnx/onnx_opset.h"

#include <string>
#include <vector>

#include "dialects/onnx/onnx_model.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

// x [2, 4] -> one node of `op` (with `attr` = 1 when given) -> y, at `opset`.
std::string OneNode(const std::string& op, int64_t opset,
                    const std::string& attr = "") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(opset);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("one");
  for (auto [v, name] :
       {std::pair{g.add_input(), "x"}, std::pair{g.add_output(), "y"}}) {
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  }
  onnx::NodeProto& n = *g.add_node();
  n.set_name("n");
  n.set_op_type(op);
  n.add_input("x");
  n.add_output("y");
  if (!attr.empty()) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(attr);
    a.set_type(onnx::AttributeProto::INTS);
    a.add_ints(1);
  }
  return model.SerializeAsString();
}

int64_t OpsetOf(const Graph& graph) { return OnnxOf(graph)->opset; }

TEST(OnnxOpset, RaisesWhereTheOpsMeanTheSame) {
  // Relu gains types at 14; ReduceMean without axes reduces every axis
  // before and after they became an input (18)
  for (const char* op : {"Relu", "ReduceMean"}) {
    absl::StatusOr<Graph> graph = ParseOnnx(OneNode(op, 13), "m.onnx");
    ASSERT_TRUE(graph.ok()) << graph.status();
    ASSERT_TRUE(RaiseOnnxOpset(*graph, 21).ok()) << op;
    EXPECT_EQ(OpsetOf(*graph), 21);
    absl::StatusOr<std::string> bytes = SerializeOnnx(*graph);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    onnx::ModelProto written;
    ASSERT_TRUE(written.ParseFromString(*bytes));
    ASSERT_EQ(written.opset_import_size(), 1);
    EXPECT_EQ(written.opset_import(0).version(), 21);
    EXPECT_EQ(written.ir_version(), 10);  // what opset 21 needs
    // already there: nothing to do
    EXPECT_TRUE(RaiseOnnxOpset(*graph, 20).ok());
    EXPECT_EQ(OpsetOf(*graph), 21);
  }
}

TEST(OnnxOpset, RefusesWhereAnOpCouldMeanSomethingElse) {
  struct Case {
    std::string op, attr;
    int64_t from, to;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"ReduceMean", "axes", 17, 18,
            "cannot raise the opset from 17 to 18: ReduceMean (node `n`) drops "
            "the attr "
            "`axes` it sets at opset 18"},
           {"GroupNormalization", "", 18, 21,
            "cannot raise the opset from 18 to 21: GroupNormalization (node "
            "`n`) computes "
            "something else under the same signature at opset 21"},
           {"Relu", "", 13, 99, "opset 99 is past the newest graft knows (28)"},
       }) {
    absl::StatusOr<Graph> graph =
        ParseOnnx(OneNode(c.op, c.from, c.attr), "m.onnx");
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(RaiseOnnxOpset(*graph, c.to).message(), c.message);
    EXPECT_EQ(OpsetOf(*graph), c.from);  // unchanged
  }
  absl::StatusOr<Graph> newest = ParseOnnx(OneNode("Relu", 13), "m.onnx");
  ASSERT_TRUE(newest.ok());
  EXPECT_TRUE(RaiseOnnxOpset(*newest, 28).ok());
  Graph tf_graph;
  EXPECT_FALSE(RaiseOnnxOpset(tf_graph, 21).ok());
}

}  // namespace
}  // namespace graft
