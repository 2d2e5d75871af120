#include "engine/tensor_ranges.h"

#include <cstdio>
#include <fstream>

#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TensorRanges, LoadsListsAndMaps) {
  std::string path = WriteFile("good.yaml",
                               "# calibrated\n"
                               "relu: [0, 5.5]\n"
                               "split:1: {min: -2, max: 3}\n");
  std::vector<RangeFileProblem> problems;
  TensorRanges t = LoadTensorRanges(path, &problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_NE(t.Find("relu"), nullptr);
  EXPECT_EQ(t.Find("relu:0"), t.Find("relu"));
  EXPECT_DOUBLE_EQ(t.Find("relu")->max, 5.5);
  EXPECT_EQ(t.Find("relu")->line, 2);
  ASSERT_NE(t.Find("split:1"), nullptr);
  EXPECT_DOUBLE_EQ(t.Find("split:1")->min, -2);
  EXPECT_EQ(t.Find("split"), nullptr);
}

TEST(TensorRanges, ReportsBadEntriesWithTheirLines) {
  std::string path = WriteFile("bad.yaml",
                               "a: [0, 1]\n"
                               "b: [3, 1]\n"
                               "c: [0]\n"
                               "d: [x, 1]\n"
                               "a:0: [0, 2]\n");
  std::vector<RangeFileProblem> problems;
  TensorRanges t = LoadTensorRanges(path, &problems);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].line, 2);
  EXPECT_NE(problems[0].message.find("min 3 is greater than max 1"),
            std::string::npos);
  EXPECT_EQ(problems[1].line, 3);
  EXPECT_NE(problems[1].message.find("two numbers"), std::string::npos);
  EXPECT_EQ(problems[2].line, 4);
  EXPECT_EQ(problems[3].line, 5);
  EXPECT_NE(problems[3].message.find("named twice (first on line 1)"),
            std::string::npos);
  EXPECT_EQ(t.ranges.size(), 1u);
}

TEST(TensorRanges, ReportsSyntaxErrorsAndMissingFiles) {
  std::vector<RangeFileProblem> problems;
  LoadTensorRanges(WriteFile("syntax.yaml", "a: [0, 1\nb: 2\n"), &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_GT(problems[0].line, 0);
  problems.clear();
  LoadTensorRanges(WriteFile("list.yaml", "- a\n- b\n"), &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("mapping"), std::string::npos);
  problems.clear();
  LoadTensorRanges(::testing::TempDir() + "/no_such.yaml", &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("cannot read"), std::string::npos);
}

TEST(TensorRanges, ChecksNamesAgainstTheGraph) {
  Graph g = testing::GraphFromText(R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "relu" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  )");
  std::vector<RangeFileProblem> problems;
  TensorRanges ok = LoadTensorRanges(
      WriteFile("ok.yaml", "relu: [0, 1]\nx:0: [-1, 1]\n"), &problems);
  EXPECT_TRUE(CheckTensorRanges(ok, g).ok());
  TensorRanges missing = LoadTensorRanges(
      WriteFile("missing.yaml", "relu: [0, 1]\nconv: [0, 1]\n"), &problems);
  absl::Status s = CheckTensorRanges(missing, g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      s.message().find("missing.yaml:2:1: tensor `conv:0` is not in the graph"),
      std::string::npos)
      << s;
  TensorRanges port =
      LoadTensorRanges(WriteFile("port.yaml", "relu:1: [0, 1]\n"), &problems);
  s = CheckTensorRanges(port, g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has 1 output(s)"), std::string::npos) << s;
  EXPECT_TRUE(problems.empty());
}

}  // namespace
}  // namespace graft
