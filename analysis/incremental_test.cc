// Shapes and regions kept up to date from the graph's edit log equal those
// computed from scratch, after edits like the checkpoint and swap libraries
// make (copies of forward ops, identities between a tensor and its backward
// readers), rolled-back edits and erasures included.
#include <string>
#include <vector>

#include "analysis/regions.h"
#include "analysis/shapes.h"
#include "dialects/graph_io.h"
#include "engine/rewriter.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

void ExpectSameShapes(const Graph& g, const ShapeMap& kept) {
  ShapeMap fresh = InferShapes(g);
  g.ForEachNode([&](const Node& n) {
    ASSERT_EQ(kept.num_outputs(n.id()), fresh.num_outputs(n.id())) << n.name();
    for (int p = 0; p < fresh.num_outputs(n.id()); ++p) {
      const TensorInfo& a = kept.at({n.id(), p});
      const TensorInfo& b = fresh.at({n.id(), p});
      EXPECT_EQ(a.ShapeString(), b.ShapeString()) << n.name() << ":" << p;
      EXPECT_EQ(a.dtype, b.dtype) << n.name() << ":" << p;
      EXPECT_EQ(a.value, b.value) << n.name() << ":" << p;
    }
  });
}

void ExpectSameRegions(const Graph& g, const Regions& kept) {
  absl::StatusOr<Regions> fresh = FindRegions(g, InferShapes(g));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  g.ForEachNode([&](const Node& n) {
    EXPECT_EQ(kept.in_forward(n.id()), fresh->in_forward(n.id())) << n.name();
    EXPECT_EQ(kept.in_backward(n.id()), fresh->in_backward(n.id())) << n.name();
  });
}

class IncrementalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IncrementalTest, KeptAnalysesEqualFreshOnes) {
  absl::StatusOr<Graph> loaded = LoadGraph("tests/data/" + GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Graph& g = *loaded;
  ShapeMap shapes = InferShapes(g);
  absl::StatusOr<Regions> regions = FindRegions(g, shapes);
  ASSERT_TRUE(regions.ok()) << regions.status();
  std::vector<std::pair<Endpoint, std::vector<NodeId>>> targets(
      regions->backward_consumers.begin(), regions->backward_consumers.end());
  std::sort(targets.begin(), targets.end());
  ASSERT_GT(targets.size(), 4u);
  uint64_t version = g.version();
  Rewriter r(g);
  auto catch_up = [&] {
    std::vector<NodeId> touched;
    ASSERT_TRUE(g.EditsSince(version, &touched));
    UpdateShapes(g, {}, touched, &shapes);
    ASSERT_TRUE(UpdateRegions(g, touched, &*regions));
    version = g.version();
  };
  int edits = 0;
  for (const auto& [tensor, readers] : targets) {
    const Node& producer = g.node(tensor.node);
    if (producer.op() == "Const" || producer.op() == "Placeholder") continue;
    if (edits % 3 == 0) {
      // Swap style: the backward readers read an Identity of the tensor.
      NodeSpec spec;
      spec.name = producer.name() + "/swap_in";
      spec.op = "Identity";
      spec.inputs = {tensor};
      spec.attrs["T"].set_type(shapes.at(tensor).dtype);
      absl::StatusOr<NodeId> id = r.AddNode(std::move(spec));
      ASSERT_TRUE(id.ok()) << id.status();
      ASSERT_TRUE(
          r.Reroute(tensor, {*id, 0}, ConsumerFilter::Only(readers)).ok());
    } else if (edits % 3 == 1) {
      // Checkpoint style: the backward readers read a copy of the producer.
      absl::StatusOr<CloneResult> copy = r.Clone({tensor.node}, {}, "re/");
      ASSERT_TRUE(copy.ok()) << copy.status();
      NodeId c = copy->mapping.at(tensor.node);
      ASSERT_TRUE(
          r.Reroute(tensor, {c, tensor.port}, ConsumerFilter::Only(readers))
              .ok());
    } else {
      // An edit that is rolled back leaves everything as it was.
      r.Begin();
      NodeSpec spec;
      spec.name = "dropped";
      spec.op = "Identity";
      spec.inputs = {tensor};
      spec.attrs["T"].set_type(shapes.at(tensor).dtype);
      absl::StatusOr<NodeId> id = r.AddNode(std::move(spec));
      ASSERT_TRUE(id.ok());
      ASSERT_TRUE(
          r.Reroute(tensor, {*id, 0}, ConsumerFilter::Only(readers)).ok());
      r.Rollback();
    }
    catch_up();
    if (++edits % 4 == 0) {
      ExpectSameShapes(g, shapes);
      ExpectSameRegions(g, *regions);
    }
  }
  ExpectSameShapes(g, shapes);
  ExpectSameRegions(g, *regions);
  EXPECT_GT(edits, 4);
}

INSTANTIATE_TEST_SUITE_P(TrainingGraphs, IncrementalTest,
                         ::testing::Values("mlp_train.pb", "convnet_train.pb"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(0, n.find('.'));
                         });

// An edit of unknown reach, or another graph's version, cannot be caught up
// with: the log says so and the analyses start over.
TEST(EditLogTest, SaysWhenItCannotCatchUp) {
  absl::StatusOr<Graph> g = LoadGraph("tests/data/mlp_train.pb");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<Graph> other = LoadGraph("tests/data/mlp_train.pb");
  ASSERT_TRUE(other.ok());
  std::vector<NodeId> touched;
  EXPECT_TRUE(g->EditsSince(g->version(), &touched));
  EXPECT_TRUE(touched.empty());
  EXPECT_FALSE(g->EditsSince(other->version(), &touched));
  uint64_t before = g->version();
  g->BumpVersion(3);
  EXPECT_TRUE(g->EditsSince(before, &touched));
  EXPECT_EQ(touched, std::vector<NodeId>{3});
  g->BumpVersion();
  EXPECT_FALSE(g->EditsSince(before, &touched));
}

}  // namespace
}  // namespace graft::analysis
