#include "analysis/cost.h"

#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;

using ::graft::testing::ConvAttrs;
using ::graft::testing::OpNode;
using ::graft::testing::PlaceholderNode;

const std::string kConvAndMatMul =
    PlaceholderNode("x", {8, 32, 32, 64}) +
    PlaceholderNode("w", {3, 3, 64, 128}) +
    OpNode("conv", "Conv2D", {"x", "w"}, ConvAttrs(1, "SAME")) +
    PlaceholderNode("a", {1024, 4096}) + PlaceholderNode("b", {4096, 4096}) +
    OpNode("mm", "MatMul", {"a", "b"}) + OpNode("relu", "Relu", {"mm"});

TEST(RooflineTest, Conv2DByHand) {
  Graph g = GraphFromText(kConvAndMatMul);
  ShapeMap shapes = InferShapes(g);
  absl::StatusOr<DeviceProfile> h100 = LoadDeviceProfile("h100_sxm");
  ASSERT_TRUE(h100.ok()) << h100.status();
  RooflineModel model(*h100);
  NodeCost c = model.Cost(g, shapes, Id(g, "conv"));
  // 2 x (8 x 32 x 32 x 128 outputs) x (3 x 3 x 64 per output)
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 8 * 32 * 32 * 128 * 3 * 3 * 64);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (8 * 32 * 32 * 64 + 3 * 3 * 64 * 128));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 8 * 32 * 32 * 128);
  // Compute: 1.208e9 FLOPs / 494.7 TFLOP/s = 2.442 us; memory: 6.59 MB /
  // 3.35 TB/s = 1.966 us; compute-bound, plus 5 us launch.
  EXPECT_EQ(c.bound, "compute");
  EXPECT_NEAR(c.time_us, 1207959552.0 / 494.7e6 + 5, 1e-9);
  EXPECT_NEAR(c.time_us, 7.442, 1e-3);
}

TEST(RooflineTest, MatMulByHandOnTwoDevices) {
  Graph g = GraphFromText(kConvAndMatMul);
  ShapeMap shapes = InferShapes(g);
  RooflineModel h100(*LoadDeviceProfile("h100_sxm"));
  NodeCost c = h100.Cost(g, shapes, Id(g, "mm"));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 1024 * 4096 * 4096);
  EXPECT_NEAR(c.time_us, 2.0 * 1024 * 4096 * 4096 / 494.7e6 + 5,
              1e-9);  // 74.456 us
  // The CPU profile: 160 GFLOP/s.
  RooflineModel cpu(*LoadDeviceProfile("cpu"));
  EXPECT_NEAR(cpu.Cost(g, shapes, Id(g, "mm")).time_us,
              2.0 * 1024 * 4096 * 4096 / 0.16e6 + 1, 1e-6);
  // Relu reads and writes 16 MiB: memory-bound on H100 (3.35 TB/s).
  NodeCost relu = h100.Cost(g, shapes, Id(g, "relu"));
  EXPECT_EQ(relu.bound, "memory");
  EXPECT_NEAR(relu.time_us, 2.0 * 4 * 1024 * 4096 / 3350e3 + 5, 1e-9);
  // A placeholder runs no kernel.
  EXPECT_EQ(h100.Cost(g, shapes, Id(g, "a")).time_us, 0);
}

TEST(RooflineTest, MeasuredTimesReplaceTheEstimate) {
  Graph g = GraphFromText(kConvAndMatMul);
  ShapeMap shapes = InferShapes(g);
  std::string key = MeasurementKey(shapes, g.node(Id(g, "mm")));
  EXPECT_EQ(key, "MatMul a=[1024,4096] b=[4096,4096] ta=0 tb=0");
  EXPECT_EQ(MeasurementKey(shapes, g.node(Id(g, "conv"))),
            "Conv2D x=[8,32,32,64] w=[3,3,64,128] strides=[1,1,1,1] SAME NHWC");
  absl::StatusOr<DeviceProfile> p = ParseDeviceProfile(
      "name: measured\npeak_tflops: {float32: 100}\nmemory_bandwidth_gbps: "
      "1000\n"
      "measured:\n  - {key: \"" +
          key + "\", time_us: 123.5}\n",
      "measured.yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  NodeCost c = RooflineModel(*p).Cost(g, shapes, Id(g, "mm"));
  EXPECT_EQ(c.bound, "measured");
  EXPECT_EQ(c.time_us, 123.5);
}

TEST(DeviceProfileTest, ShippedProfilesLoadAndBadOnesAreLocated) {
  std::vector<std::string> names = DeviceProfileNames();
  EXPECT_EQ(names, (std::vector<std::string>{"a100", "cpu", "h100_pcie",
                                             "h100_sxm", "h200"}));
  for (const std::string& name : names) {
    absl::StatusOr<DeviceProfile> p = LoadDeviceProfile(name);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->name, name);
    EXPECT_GT(p->peak_tflops.at("float32"), 0);
  }
  EXPECT_EQ(LoadDeviceProfile("h300").status().message(),
            "no device profile `h300` (shipped: a100, cpu, h100_pcie, "
            "h100_sxm, h200; or a YAML file)");
  absl::Status bad =
      ParseDeviceProfile("name: x\npeak_tflops: {float32: fast}\n", "x.yaml")
          .status();
  EXPECT_EQ(bad.message(), "x.yaml:2:24: expected a number");
  bad = ParseDeviceProfile("name: x\npeek_tflops: 1\n", "x.yaml").status();
  EXPECT_EQ(bad.message(), "x.yaml:2:1: unknown key `peek_tflops`");
}

}  // namespace
}  // namespace graft::analysis
