#include "dsl/format.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "dsl/parser.h"
#include "gtest/gtest.h"

namespace graft::dsl {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every shipped and golden rule file.
std::vector<std::string> RuleFiles() {
  std::vector<std::string> out = {"rules/tf/fold_batch_norms.graft",
                                  "rules/tf/fold_constants.graft"};
  DIR* dir = opendir("tests/golden");
  while (dir != nullptr) {
    dirent* e = readdir(dir);
    if (e == nullptr) break;
    std::string name = e->d_name;
    if (name[0] == '.') continue;
    for (const char* f : {"/rules.graft", "/common.graft"}) {
      std::string path = "tests/golden/" + name + f;
      if (std::ifstream(path).good()) out.push_back(path);
    }
  }
  if (dir != nullptr) closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

// The file without whitespace: formatting may change nothing else.
std::string Squeeze(const std::string& s) {
  std::string out;
  bool in_string = false;
  for (char c : s) {
    if (c == '"') in_string = !in_string;
    if (!in_string && (c == ' ' || c == '\n' || c == '\t')) continue;
    out.push_back(c);
  }
  return out;
}

class FormatFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FormatFileTest, IsFormattedIdempotentAndKeepsMeaning) {
  std::string source = Read(GetParam());
  ASSERT_FALSE(source.empty());
  std::string once = FormatRuleText(source);
  EXPECT_EQ(FormatRuleText(once), once) << "formatting is not idempotent";
  EXPECT_EQ(Squeeze(once), Squeeze(source))
      << "formatting changed more than whitespace";
  Diagnostics d;
  ParseRuleFile(GetParam(), once, &d);
  EXPECT_FALSE(d.has_errors()) << d.Render();
  // Shipped and golden files are kept formatted.
  EXPECT_EQ(once, source) << GetParam()
                          << " is not formatted; run graft fmt on it";
}

INSTANTIATE_TEST_SUITE_P(RuleFiles, FormatFileTest,
                         ::testing::ValuesIn(RuleFiles()));

TEST(FormatTest, CanonicalSpacingAndIndent) {
  EXPECT_EQ(FormatRuleText("rule a{\nmatch {  c=Conv2D( x,w :Const )\n"
                           "where uses( c )==1 and -c.x<-1}\n\n\n"
                           "rewrite{replace c with x   # keep\n}}\n"),
            "rule a {\n"
            "  match { c = Conv2D(x, w: Const)\n"
            "    where uses(c) == 1 and -c.x < -1 }\n"
            "\n"
            "  rewrite { replace c with x # keep\n"
            "  } }\n");
}

// A named pattern's `where` goes on its declaration, and so does each
// condition after it; the next declaration starts at the margin again.
TEST(FormatTest, IndentsANamedPatternsWhere) {
  EXPECT_EQ(
      FormatRuleText("pattern p( x ,y) = r:Relu(AddV2( x,y ))\n"
                     "where uses(r)==1\nand uses(x) ==1\n"
                     "guard g(t) = uses(t) == 1\nand uses(t) > 0\n"
                     "pattern q = Relu(_) where true\n\n# q\nrule a {}\n"),
      "pattern p(x, y) = r: Relu(AddV2(x, y))\n"
      "  where uses(r) == 1\n"
      "    and uses(x) == 1\n"
      "guard g(t) = uses(t) == 1\n"
      "  and uses(t) > 0\n"
      "pattern q = Relu(_) where true\n\n# q\nrule a { }\n");
}

// A named pattern's alternatives on lines of their own go on its
// declaration too.
TEST(FormatTest, IndentsANamedPatternsAlternatives) {
  EXPECT_EQ(FormatRuleText("pattern p(x) = Relu(x)\n|Tanh( x )\n   | q(x)\n"
                           "where uses(x)==1\nrule a {}\n"),
            "pattern p(x) = Relu(x)\n"
            "  | Tanh(x)\n"
            "  | q(x)\n"
            "  where uses(x) == 1\n"
            "rule a { }\n");
}

TEST(FormatTest, KeepsPortsGlobsSpreadsAndVariadics) {
  std::string text =
      "rule a {\n"
      "  match {\n"
      "    s = FusedBatchNorm*(conv, _, _, _, _)\n"
      "    n = AddN(xs..., ^c)\n"
      "    where unused(s:1, s:2)\n"
      "  }\n"
      "  rewrite {\n"
      "    out = (Relu | Relu6)\n"
      "    b = BiasAdd(conv.op(x) { ..conv.attrs, T: \"float32\" }, y)\n"
      "    reroute s:0 -> b except { n }\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(FormatRuleText(text), text);
}

// Ports of any node (`qs[0]:1`), lists of ports, comprehensions, ops named
// by expressions, and `for` over actions keep their tight spacing.
TEST(FormatTest, KeepsComprehensionsAndComputedPorts) {
  std::string text =
      "rule a {\n"
      "  match { n = Conv2D(x, w) }\n"
      "  rewrite {\n"
      "    let qs = [Relu(t) for t in [x, w]]\n"
      "    r = op(\"Quantized\" + n.op)(qs[0]:0, qs[1]:2)\n"
      "    reroute [n:0, n:1] -> [r:0, r:1]\n"
      "    for t in qs {\n"
      "      erase t\n"
      "    }\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(FormatRuleText(text), text);
}

}  // namespace
}  // namespace graft::dsl
