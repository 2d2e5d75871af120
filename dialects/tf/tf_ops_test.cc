#include "engine/op_registry.h"
#include "dialects/tf/tf_ops.h"

#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;

TEST(OpRegistryTest, KnowsTensorflowOps) {
  const OpRegistry& ops = TensorflowOps();
  EXPECT_GT(ops.size(), 1000);
  const tf::OpDef* conv = ops.Find("Conv2D");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->input_arg_size(), 2);
  EXPECT_TRUE(ops.Find("AddV2")->is_commutative());
  EXPECT_EQ(ops.Find("NoSuchOp"), nullptr);
}

TEST(OpRegistryTest, ExpandsOutputTypes) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "bn"
      op: "FusedBatchNormV3"
      attr {
        key: "T"
        value { type: DT_HALF }
      }
      attr {
        key: "U"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "split"
      op: "Split"
      attr {
        key: "num_split"
        value { i: 3 }
      }
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    node {
      name: "idn"
      op: "IdentityN"
      attr {
        key: "T"
        value { list { type: DT_FLOAT type: DT_BOOL } }
      }
    }
    node {
      name: "shape"
      op: "Shape"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "relu" op: "Relu" }
    node { name: "custom" op: "MyCustomOp" }
  )pb");
  const OpRegistry& ops = TensorflowOps();
  auto bn = ops.OutputTypes(g.node(Id(g, "bn")));
  ASSERT_TRUE(bn.has_value());
  ASSERT_EQ(bn->size(), 6u);
  EXPECT_EQ((*bn)[0], tf::DT_HALF);
  EXPECT_EQ((*bn)[1], tf::DT_FLOAT);
  EXPECT_EQ(ops.OutputTypes(g.node(Id(g, "split")))->size(), 3u);
  EXPECT_EQ(ops.OutputType(g.node(Id(g, "split")), 2), tf::DT_INT64);
  EXPECT_EQ(*ops.OutputTypes(g.node(Id(g, "idn"))),
            (std::vector<tf::DataType>{tf::DT_FLOAT, tf::DT_BOOL}));
  // Shape's out_type defaults to int32.
  EXPECT_EQ(ops.OutputType(g.node(Id(g, "shape")), 0), tf::DT_INT32);
  // Missing attr or unknown op: unknown.
  EXPECT_FALSE(ops.OutputTypes(g.node(Id(g, "relu"))).has_value());
  EXPECT_FALSE(ops.OutputTypes(g.node(Id(g, "custom"))).has_value());
  EXPECT_EQ(ops.OutputType(g.node(Id(g, "split")), 3), tf::DT_INVALID);
}

TEST(OpRegistryTest, TypeNames) {
  EXPECT_EQ(DataTypeName(tf::DT_FLOAT), "float32");
  EXPECT_EQ(DataTypeName(tf::DT_FLOAT_REF), "float32_ref");
  EXPECT_EQ(DataTypeName(tf::DT_QINT8), "qint8");
  EXPECT_EQ(BaseType(tf::DT_INT32_REF), tf::DT_INT32);
}

}  // namespace
}  // namespace graft
