#include "engine/driver.h"

#include "dialects/graph_io.h"
#include "engine/test_graphs.h"
#include "engine/validate.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::InputNames;

// A hand-written rule: Identity(x) => x (bypass), to exercise the driver.
class BypassIdentity : public Rule {
 public:
  const std::string& name() const override { return name_; }
  int priority() const override { return 1; }
  std::vector<std::string> anchor_ops() const override { return {"Identity"}; }
  std::unique_ptr<MatchState> Match(const Graph& g,
                                    NodeId root) const override {
    if (g.node(root).num_inputs() != 1) return nullptr;
    auto m = std::make_unique<MatchState>();
    m->root = root;
    m->nodes = {root};
    return m;
  }
  absl::Status Rewrite(const MatchState& m, Rewriter& r,
                       RewritePlan* plan) const override {
    Endpoint in = r.graph().node(m.root).input(0);
    absl::StatusOr<int> n = r.Reroute({m.root, 0}, in);
    if (!n.ok()) return n.status();
    plan->remove.push_back(m.root);
    return absl::OkStatus();
  }

 private:
  std::string name_ = "bypass_identity";
};

// Neg(x) => Neg(Neg(Neg(x))) never converges.
class Explode : public Rule {
 public:
  const std::string& name() const override { return name_; }
  int priority() const override { return 0; }
  std::vector<std::string> anchor_ops() const override { return {"Neg"}; }
  std::unique_ptr<MatchState> Match(const Graph& g,
                                    NodeId root) const override {
    auto m = std::make_unique<MatchState>();
    m->root = root;
    m->nodes = {root};
    (void)g;
    return m;
  }
  absl::Status Rewrite(const MatchState& m, Rewriter& r,
                       RewritePlan*) const override {
    NodeSpec spec;
    spec.name = "neg";
    spec.op = "Neg";
    spec.attrs["T"].set_type(tf::DT_FLOAT);
    spec.inputs = {r.graph().node(m.root).input(0)};
    absl::StatusOr<NodeId> n = r.AddNode(spec);
    if (!n.ok()) return n.status();
    return r.SetInput(m.root, 0, {*n, 0});
  }

 private:
  std::string name_ = "explode";
};

constexpr char kChain[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "i1"
    op: "Identity"
    input: "x"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "i2"
    op: "Identity"
    input: "i1"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "r"
    op: "Relu"
    input: "i2"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "out"
    op: "Identity"
    input: "r"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST(DriverTest, RewritesToAFixpointAndSkipsUnsafeRewrites) {
  Graph g = GraphFromText(kChain);
  BypassIdentity rule;
  const Rule* rules[] = {&rule};
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, rules);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->converged());
  EXPECT_EQ(report->rewrites(), 2);
  EXPECT_EQ(InputNames(g, "r"), (std::vector<std::string>{"x"}));
  // `out` is a graph output (nothing reads it): removing it is unsafe.
  EXPECT_TRUE(g.Contains("out"));
  ASSERT_EQ(report->skipped_size(), 1);
  EXPECT_EQ(report->skipped(0).node(), "out");
  EXPECT_EQ(report->skipped(0).reason(),
            "`out` is a graph output and would be removed");
  EXPECT_EQ(report->rules(0).applied(), 2);
  EXPECT_EQ(report->rules(0).nodes_removed(), 2);
  EXPECT_TRUE(CheckValid(g).ok());
  // A second application changes nothing.
  std::string once = SerializeGraph(g, GraphFormat::kText);
  report = ApplyRules(g, rules);
  EXPECT_EQ(report->rewrites(), 0);
  EXPECT_EQ(SerializeGraph(g, GraphFormat::kText), once);
}

TEST(DriverTest, ReportsNonConvergence) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "n"
      op: "Neg"
      input: "x"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  Explode rule;
  const Rule* rules[] = {&rule};
  ApplyOptions options;
  options.max_rewrites = 50;
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, rules, options);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->converged());
  EXPECT_EQ(report->rewrites(), 50);
  EXPECT_NE(report->non_convergence().find(
                "no fixpoint after 50 rewrites; still firing: `explode` (at `"),
            std::string::npos)
      << report->non_convergence();
}

}  // namespace
}  // namespace graft
