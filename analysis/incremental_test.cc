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

// x [2, 3] read by five Relu chains of lengths 1 to 5, concatenated.
tf::GraphDef FiveBranches() {
  tf::GraphDef def;
  auto add = [&](const std::string& name, const std::string& op,
                 std::vector<std::string> inputs) -> tf::NodeDef& {
    tf::NodeDef& n = *def.add_node();
    n.set_name(name);
    n.set_op(op);
    for (const std::string& i : inputs) n.add_input(i);
    return n;
  };
  tf::NodeDef& x = add("x", "Placeholder", {});
  (*x.mutable_attr())["dtype"].set_type(tf::DT_FLOAT);
  auto* dims = (*x.mutable_attr())["shape"].mutable_shape();
  dims->add_dim()->set_size(2);
  dims->add_dim()->set_size(3);
  std::vector<std::string> ends;
  for (int k = 1; k <= 5; ++k) {
    std::string in = "x";
    for (int i = 0; i < k; ++i) {
      std::string name = "b" + std::to_string(k) + "_" + std::to_string(i);
      (*add(name, "Relu", {in}).mutable_attr())["T"].set_type(tf::DT_FLOAT);
      in = name;
    }
    ends.push_back(in);
  }
  tf::NodeDef& axis = add("axis", "Const", {});
  (*axis.mutable_attr())["dtype"].set_type(tf::DT_INT32);
  tf::TensorProto* t = (*axis.mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tf::DT_INT32);
  t->add_int_val(1);
  ends.push_back("axis");
  tf::NodeDef& concat = add("concat", "ConcatV2", ends);
  (*concat.mutable_attr())["T"].set_type(tf::DT_FLOAT);
  (*concat.mutable_attr())["N"].set_i(5);
  (*concat.mutable_attr())["Tidx"].set_type(tf::DT_INT32);
  (*add("y", "Relu", {"concat"}).mutable_attr())["T"].set_type(tf::DT_FLOAT);
  return def;
}

// A node where many changed paths meet (attention's Q, K, V and mask) is
// redone as often as they reach it: edits whose new nodes have ids above
// their readers' are caught up with all the same.
TEST(IncrementalShapes, PathsThatMeetAfterNewNodesAreCaughtUpWith) {
  absl::StatusOr<Graph> loaded = Graph::FromGraphDef(FiveBranches());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Graph& g = *loaded;
  ShapeMap shapes = InferShapes(g);
  ASSERT_EQ(shapes.at({g.FindId("concat"), 0}).ShapeString(), "[2, 15]");
  const uint64_t version = g.version();
  Rewriter r(g);
  const Endpoint x{g.FindId("x"), 0};
  for (int k = 1; k <= 5; ++k) {  // x -> Identity -> each chain
    NodeSpec spec;
    spec.name = "copy" + std::to_string(k);
    spec.op = "Identity";
    spec.inputs = {x};
    spec.attrs["T"].set_type(tf::DT_FLOAT);
    absl::StatusOr<NodeId> id = r.AddNode(std::move(spec));
    ASSERT_TRUE(id.ok()) << id.status();
    const NodeId first = g.FindId("b" + std::to_string(k) + "_0");
    ASSERT_TRUE(r.Reroute(x, {*id, 0}, ConsumerFilter::Only({first})).ok());
  }
  std::vector<NodeId> touched;
  ASSERT_TRUE(g.EditsSince(version, &touched));
  UpdateShapes(g, {}, touched, &shapes);
  ExpectSameShapes(g, shapes);
}

// A rewrite that keeps shapes costs its own nodes, however much lies
// downstream of it (a training graph's forward edits lie upstream of the
// whole backward pass): 2,000 Relus after the edited one are not redone.
TEST(IncrementalShapes, AnEditThatKeepsShapesRedoesOnlyItsNodes) {
  tf::GraphDef def;
  auto add = [&](const std::string& name, const std::string& op, const std::string& input) {
    tf::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op(op);
    if (!input.empty()) n->add_input(input);
    (*n->mutable_attr())[op == "Placeholder" ? "dtype" : "T"].set_type(tf::DT_FLOAT);
    return n;
  };
  tf::NodeDef* x = add("x", "Placeholder", "");
  auto* dims = (*x->mutable_attr())["shape"].mutable_shape();
  dims->add_dim()->set_size(2);
  dims->add_dim()->set_size(3);
  add("r0", "Relu", "x");
  for (int i = 1; i <= 2000; ++i)
    add("r" + std::to_string(i), "Relu", "r" + std::to_string(i - 1));
  absl::StatusOr<Graph> loaded = Graph::FromGraphDef(std::move(def));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Graph& g = *loaded;
  ShapeMap shapes = InferShapes(g);
  const uint64_t version = g.version();
  Rewriter r(g);
  ASSERT_TRUE(r.SetDevice(g.FindId("r0"), "/device:CPU:0").ok());
  std::vector<NodeId> touched;
  ASSERT_TRUE(g.EditsSince(version, &touched));
  EXPECT_EQ(UpdateShapes(g, {}, touched, &shapes), 1u);
  ExpectSameShapes(g, shapes);
}

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
