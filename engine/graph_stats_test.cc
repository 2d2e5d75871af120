#include "engine/graph_stats.h"

#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(GraphStatsTest, CountsEverything) {
  Graph g = testing::GraphFromText(R"pb(
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
      device: "/device:CPU:0"
      attr {
        key: "dtype"
        value { type: DT_INT32 }
      }
    }
    node {
      name: "s"
      op: "Split"
      input: "dim"
      input: "x"
      device: "/device:CPU:0"
      attr {
        key: "num_split"
        value { i: 2 }
      }
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "init" op: "NoOp" }
    node { name: "y" op: "MyOp" input: "s:1" input: "^init" }
  )pb");
  report::GraphStats stats = ComputeGraphStats(g);
  EXPECT_EQ(stats.num_nodes(), 5);
  EXPECT_EQ(stats.num_data_edges(), 3);
  EXPECT_EQ(stats.num_control_edges(), 1);
  ASSERT_EQ(stats.ops_size(), 5);
  EXPECT_EQ(stats.ops(0).name(), "Const");
  ASSERT_EQ(stats.devices_size(), 2);
  EXPECT_EQ(stats.devices(0).name(), "");
  EXPECT_EQ(stats.devices(0).count(), 3);
  EXPECT_EQ(stats.devices(1).name(), "/device:CPU:0");
  // float32: x, s:0, s:1; int32: dim; unknown: y (MyOp).
  ASSERT_EQ(stats.dtypes_size(), 3);
  EXPECT_EQ(stats.dtypes(0).name(), "float32");
  EXPECT_EQ(stats.dtypes(0).count(), 3);
  EXPECT_EQ(stats.dtypes(1).name(), "int32");
  EXPECT_EQ(stats.dtypes(2).name(), "unknown");
  ASSERT_EQ(stats.inputs_size(), 1);
  EXPECT_EQ(stats.inputs(0), "x");
  ASSERT_EQ(stats.outputs_size(), 1);
  EXPECT_EQ(stats.outputs(0), "y");
}

}  // namespace
}  // namespace graft
