// What is kept per graph is made once, then caught up with the graph's
// edits (the nodes each touched); a graph whose edit log does not reach back
// to it, or another graph, gets a value made anew; the graphs asked about
// last are kept.
#include "engine/kept_per_graph.h"

#include <memory>
#include <vector>

#include "engine/rewriter.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

// A value that says how it came about.
struct Seen {
  int made = 0;
  std::vector<NodeId> touched;  // by the last update
  int updates = 0;
};

std::shared_ptr<KeptPerGraph<Seen>::Entry> Ask(KeptPerGraph<Seen>& kept,
                                               const Graph& graph, int* made) {
  std::unique_lock<std::recursive_mutex> lock;
  return kept.For(
      graph, &lock,
      [&] {
        auto s = std::make_unique<Seen>();
        s->made = ++*made;
        return s;
      },
      [](Seen& s, const std::vector<NodeId>& touched) {
        s.touched = touched;
        ++s.updates;
      });
}

Graph Chain() {
  return testing::GraphFromText(R"pb(
    node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Relu" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
}

TEST(KeptPerGraph, MadeOnceThenCaughtUpWithEdits) {
  KeptPerGraph<Seen> kept(2);
  Graph graph = Chain();
  int made = 0;
  EXPECT_EQ(Ask(kept, graph, &made)->value->made, 1);
  EXPECT_EQ(Ask(kept, graph, &made)->value->updates, 0);  // nothing edited
  const NodeId b = graph.FindId("b");
  Rewriter rewriter(graph);
  rewriter.Begin();
  ASSERT_TRUE(rewriter.SetDevice(b, "/device:CPU:0").ok());
  ASSERT_TRUE(rewriter.SetDevice(b, "/device:CPU:1").ok());
  rewriter.Commit();
  auto entry = Ask(kept, graph, &made);
  EXPECT_EQ(entry->value->made, 1);
  EXPECT_EQ(entry->value->updates, 1);
  EXPECT_EQ(entry->value->touched, std::vector<NodeId>{b});  // each once
  EXPECT_EQ(entry->version, graph.version());
}

TEST(KeptPerGraph, MadeAnewWhereTheEditLogDoesNotReach) {
  KeptPerGraph<Seen> kept(2);
  Graph graph = Chain();
  int made = 0;
  Ask(kept, graph, &made);
  graph.BumpVersion();  // an edit of unknown reach
  EXPECT_EQ(Ask(kept, graph, &made)->value->made, 2);
}

TEST(KeptPerGraph, KeepsTheGraphsAskedAboutLast) {
  KeptPerGraph<Seen> kept(2);
  Graph a = Chain(), b = Chain(), c = Chain();
  int made = 0;
  Ask(kept, a, &made);
  Ask(kept, b, &made);
  Ask(kept, a, &made);  // a is the latest again: b goes for c
  Ask(kept, c, &made);
  EXPECT_EQ(made, 3);
  EXPECT_EQ(Ask(kept, a, &made)->value->made, 1);
  EXPECT_EQ(Ask(kept, b, &made)->value->made, 4);
}

}  // namespace
}  // namespace graft
