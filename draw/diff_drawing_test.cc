#include "draw/diff_drawing.h"

#include "engine/graph_diff.h"
#include "dialects/graph_io.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft::draw {
namespace {

using testing::FloatConstNode;
using testing::GraphFromText;
using testing::OpNode;
using testing::PlaceholderNode;

// conv -> bn -> relu -> r1 ... r6, weights read through an Identity; the
// head folds the batch norm: new weights, a BiasAdd, the old ones gone.
std::string Tail() {
  std::string out = OpNode("r1", "Relu", {"relu"});
  for (int i = 2; i <= 6; ++i)
    out +=
        OpNode("r" + std::to_string(i), "Relu", {"r" + std::to_string(i - 1)});
  return out;
}
Graph Before() {
  return GraphFromText(PlaceholderNode("x", {1, 4}) + FloatConstNode("w", 4) +
                       OpNode("w_read", "Identity", {"w"}) +
                       OpNode("conv", "MatMul", {"x", "w_read"}) +
                       FloatConstNode("s", 4) +
                       OpNode("bn", "Mul", {"conv", "s"}) +
                       OpNode("relu", "Relu", {"bn"}) + Tail());
}
Graph After() {
  return GraphFromText(PlaceholderNode("x", {1, 4}) + FloatConstNode("w2", 4) +
                       OpNode("conv", "MatMul", {"x", "w2"}) +
                       FloatConstNode("b", 4) +
                       OpNode("bias", "BiasAdd", {"conv", "b"}) +
                       OpNode("relu", "Relu", {"bias"}) + Tail());
}

bool Drawn(const DiffDrawing& d, const std::string& name) {
  return d.details_json.find("\"name\":\"" + name + "\",\"op\"") !=
         std::string::npos;
}

TEST(DiffDrawingTest, ChangedRegionWithOneHopOfContext) {
  Graph before = Before(), after = After();
  GraphDiff diff = DiffGraphs(before, after);
  absl::StatusOr<DiffDrawing> d = DrawDiff(before, after, diff);
  ASSERT_TRUE(d.ok()) << d.status();
  for (const char* name : {"conv", "bn", "bias", "relu", "x", "r1"})
    EXPECT_TRUE(Drawn(*d, name)) << name;
  for (const char* name : {"r2", "r6"}) EXPECT_FALSE(Drawn(*d, name)) << name;
  EXPECT_EQ(d->hidden, 5);  // r2 .. r6
  // Constants are rows of their readers' boxes, not boxes.
  for (const char* name : {"w2", "w_read", "s", "b"})
    EXPECT_FALSE(Drawn(*d, name)) << name;
  EXPECT_EQ(d->folded, 4);
  EXPECT_NE(d->details_json.find("\"folded\":[{\"name\":\"w2\""),
            std::string::npos);
  // Laid out by Graphviz: an <svg> with the node ids the page's script uses.
  EXPECT_EQ(d->svg.rfind("<svg", 0), 0u);
  EXPECT_NE(d->svg.find("id=\"n0\""), std::string::npos);
  EXPECT_NE(d->svg.find("MatMul"), std::string::npos);
  // The click panel's data: conv's inputs before and after.
  EXPECT_NE(d->details_json.find("input 1: `w_read`"), std::string::npos);
  EXPECT_NE(d->details_json.find("input 1: `w2`"), std::string::npos);
}

TEST(DiffDrawingTest, FullAndUnfolded) {
  Graph before = Before(), after = After();
  GraphDiff diff = DiffGraphs(before, after);
  DrawingOptions full;
  full.full = true;
  absl::StatusOr<DiffDrawing> d = DrawDiff(before, after, diff, full);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->hidden, 0);
  EXPECT_TRUE(Drawn(*d, "r6"));

  DrawingOptions unfolded;
  unfolded.fold_constants = false;
  unfolded.context = 0;
  d = DrawDiff(before, after, diff, unfolded);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->folded, 0);
  for (const char* name : {"w2", "w_read", "b", "conv"})
    EXPECT_TRUE(Drawn(*d, name)) << name;
  EXPECT_FALSE(Drawn(*d, "x"));  // unchanged, and no context asked for
}

TEST(DiffDrawingTest, TooLargeIsRefused) {
  Graph before = Before(), after = After();
  DrawingOptions small;
  small.max_nodes = 2;
  absl::StatusOr<DiffDrawing> d =
      DrawDiff(before, after, DiffGraphs(before, after), small);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("--context"), std::string::npos);
}

TEST(DiffDrawingTest, PageHoldsDrawingPanelAndText) {
  Graph before = Before(), after = After();
  absl::StatusOr<std::string> page =
      DiffPage(before, after, DiffGraphs(before, after));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_NE(page->find("graft-panel"), std::string::npos);
  EXPECT_NE(page->find("graftDetails"), std::string::npos);
  EXPECT_NE(page->find("- bn (Mul)"), std::string::npos);
  EXPECT_EQ(page->find("</script>\n</script>"), std::string::npos);
}

// A golden fold: every box coloured by what happened to it, the folded
// conv's new weights inside its box.
TEST(DiffDrawingTest, GoldenFoldColours) {
  absl::StatusOr<Graph> before =
      LoadGraph("tests/golden/fold_bn_conv/in.pbtxt");
  absl::StatusOr<Graph> after =
      LoadGraph("tests/golden/fold_bn_conv/out.pbtxt");
  ASSERT_TRUE(before.ok() && after.ok());
  GraphDiff diff = DiffGraphs(*before, *after);
  absl::StatusOr<std::string> page = DiffPage(*before, *after, diff);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page->find("3 added, 6 removed, 1 changed"), std::string::npos);
  EXPECT_NE(page->find("\"name\":\"bn/folded\",\"op\":\"Conv2D\""),
            std::string::npos);
  for (const char* fill : {"#b7f0b1", "#ffd08a", "#ffe4e1"})  // + ~ -
    EXPECT_NE(page->find(absl::StrCat("fill=\"", fill, "\"")),
              std::string::npos)
        << fill;
}

}  // namespace
}  // namespace graft::draw
