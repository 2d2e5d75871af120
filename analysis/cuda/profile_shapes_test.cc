#include "analysis/cuda/profile_shapes.h"

#include "analysis/shapes.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

// What the CUDA profiler writes, the roofline model reads back, and its
// keys are the ones the model looks up for the same ops in a graph.
TEST(ProfileShapesTest, WrittenProfilesLoadAndMatchGraphOps) {
  DeviceProfile base = *LoadDeviceProfile("h100_sxm");
  std::vector<Measurement> measured;
  for (const ConvShape& c : DefaultConvShapes())
    measured.push_back({Key(c), 100, RooflineTimeUs(base, c)});
  for (const MatMulShape& m : DefaultMatMulShapes())
    measured.push_back({Key(m), 50, RooflineTimeUs(base, m)});
  EXPECT_GE(measured.size(), 10u);
  absl::StatusOr<DeviceProfile> p = ParseDeviceProfile(
      ProfileYaml("h100_measured", base, measured), "p.yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "h100_measured");
  EXPECT_EQ(p->peak_tflops, base.peak_tflops);
  EXPECT_EQ(p->measured_us.size(), measured.size());

  Graph g = testing::GraphFromText(R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "shape"
        value {
          shape {
            dim { size: 32 }
            dim { size: 56 }
            dim { size: 56 }
            dim { size: 64 }
          }
        }
      }
    }
    node {
      name: "w"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "shape"
        value {
          shape {
            dim { size: 3 }
            dim { size: 3 }
            dim { size: 64 }
            dim { size: 64 }
          }
        }
      }
    }
    node {
      name: "conv"
      op: "Conv2D"
      input: "x"
      input: "w"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
      attr {
        key: "strides"
        value { list { i: 1 i: 1 i: 1 i: 1 } }
      }
      attr {
        key: "padding"
        value { s: "SAME" }
      }
    }
  )pb");
  ShapeMap shapes = InferShapes(g);
  NodeCost c = RooflineModel(*p).Cost(g, shapes, testing::Id(g, "conv"));
  EXPECT_EQ(c.bound, "measured");
  EXPECT_EQ(c.time_us, 100);
  // The profiler's own roofline agrees with the model's for that conv.
  NodeCost estimate =
      RooflineModel(base).Cost(g, shapes, testing::Id(g, "conv"));
  EXPECT_NEAR(estimate.time_us, RooflineTimeUs(base, DefaultConvShapes()[2]),
              1e-9);
}

TEST(ProfileShapesTest, ErrorTable) {
  std::string table = ErrorTable({{"a", 10, 5}, {"b", 10, 20}});
  EXPECT_NE(table.find("-50%"), std::string::npos);
  EXPECT_NE(table.find("+100%"), std::string::npos);
  EXPECT_NE(table.find("mean |error|: 75% over 2 shapes"), std::string::npos);
}

}  // namespace
}  // namespace graft::analysis
