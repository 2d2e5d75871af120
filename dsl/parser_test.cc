#include "dsl/parser.h"

#include "gtest/gtest.h"

namespace graft::dsl {
namespace {

constexpr char kFoldBn[] = R"graft(# fold batch norms
import "common.graft"
param eps: float = 0.001

rule fold_fused_batch_norm {
  doc "BN(conv(x, w)) => BiasAdd(conv(x, w*s), beta - mean*s)"
  priority 10
  match {
    conv = (Conv2D | DepthwiseConv2dNative | MatMul)(x, w: Const)
    bn = FusedBatchNorm*(conv, gamma: Const, beta: Const, mean: Const, var: Const)
    where bn.is_training == false and uses(conv) == 1 and unused(bn:1, bn:2)
  }
  rewrite {
    let s = gamma * rsqrt(var + bn.epsilon)
    w2 = Const(scale_output_channels(w, s, conv)) named "{conv}/folded_weights"
    out = BiasAdd(conv.op(x, w2) { ..conv.attrs }, Const(beta - mean * s)) { T: "float32" }
    replace bn with out
  }
  test "nhwc" { input "a.pbtxt" expect_ops { FusedBatchNormV3: 0, BiasAdd: 1 } }
}
)graft";

TEST(ParserTest, ParsesAWholeRule) {
  Diagnostics d;
  RuleFile f = ParseRuleFile("fold.graft", kFoldBn, &d);
  ASSERT_FALSE(d.has_errors()) << d.Render();
  ASSERT_EQ(f.imports.size(), 1u);
  EXPECT_EQ(f.imports[0].path, "common.graft");
  ASSERT_EQ(f.params.size(), 1u);
  EXPECT_EQ(f.params[0].name, "eps");
  EXPECT_EQ(f.params[0].type, "float");
  EXPECT_EQ(f.params[0].default_value->float_value, 0.001);
  ASSERT_EQ(f.rules.size(), 1u);
  const Rule& r = f.rules[0];
  EXPECT_EQ(r.name, "fold_fused_batch_norm");
  EXPECT_EQ(r.loc.line, 5);
  EXPECT_EQ(r.priority, 10);
  ASSERT_EQ(r.patterns.size(), 2u);
  EXPECT_EQ(
      r.patterns[0].pattern.ops,
      (std::vector<std::string>{"Conv2D", "DepthwiseConv2dNative", "MatMul"}));
  ASSERT_EQ(r.patterns[0].pattern.operands.size(), 2u);
  EXPECT_EQ(r.patterns[0].pattern.operands[1].kind,
            OperandPattern::Kind::kBound);
  EXPECT_EQ(r.patterns[0].pattern.operands[1].nested->ops,
            (std::vector<std::string>{"Const"}));
  EXPECT_EQ(r.patterns[1].pattern.ops,
            (std::vector<std::string>{"FusedBatchNorm*"}));
  ASSERT_EQ(r.guards.size(), 1u);
  EXPECT_EQ(r.guards[0]->kind, Expr::Kind::kBinary);
  EXPECT_EQ(r.guards[0]->text, "and");
  ASSERT_EQ(r.actions.size(), 4u);
  EXPECT_EQ(r.actions[0].kind, Action::Kind::kLet);
  EXPECT_EQ(r.actions[1].kind, Action::Kind::kAssign);
  EXPECT_EQ(r.actions[1].a->kind, Expr::Kind::kCreate);
  EXPECT_EQ(r.actions[1].a->name_template, "{conv}/folded_weights");
  const Expr& out = *r.actions[2].a;
  EXPECT_EQ(out.text, "BiasAdd");
  ASSERT_EQ(out.args.size(), 2u);
  EXPECT_EQ(out.args[0]->op_of, "conv");
  ASSERT_EQ(out.args[0]->attrs.size(), 1u);
  EXPECT_TRUE(out.args[0]->attrs[0].spread);
  ASSERT_EQ(out.attrs.size(), 1u);
  EXPECT_EQ(out.attrs[0].name, "T");
  EXPECT_EQ(r.actions[3].kind, Action::Kind::kReplace);
  ASSERT_EQ(r.tests.size(), 1u);
  EXPECT_EQ(r.tests[0].input, "a.pbtxt");
  EXPECT_EQ(r.tests[0].expect_ops.size(), 2u);
}

TEST(ParserTest, ReportsOneErrorPerItemAndGoesOn) {
  Diagnostics d;
  RuleFile f = ParseRuleFile("bad.graft", R"(rule a {
  match { x = Relu(y }
}
rule b {
  match { y = Relu(z) }
  rewrite { erase y }
}
rule c {
  rewrite { replace x wth y }
}
)",
                             &d);
  ASSERT_EQ(d.errors().size(), 2u) << d.Render();
  EXPECT_EQ(d.errors()[0].loc.line, 2);
  EXPECT_EQ(d.errors()[0].loc.col, 22);
  EXPECT_EQ(d.errors()[0].message, "expected `,` or `)` in the operand list");
  EXPECT_EQ(d.errors()[1].loc.line, 9);
  EXPECT_EQ(d.errors()[1].message,
            "expected `with` (as in `replace bn with out`)");
  ASSERT_EQ(f.rules.size(), 1u);
  EXPECT_EQ(f.rules[0].name, "b");
  EXPECT_NE(
      d.Render().find(
          "bad.graft:2:22: error: expected `,` or `)` in the operand list\n"
          "      match { x = Relu(y }\n"
          "                         ^\n"),
      std::string::npos)
      << d.Render();
}

TEST(ParserTest, OrAtTheTopOfAnExpressionKeepsBothSides) {
  Diagnostics d;
  RuleFile f = ParseRuleFile("or.graft", R"(rule a {
  match { n = Relu(_) where n.device == "" or (uses(n) == 1 or not false) }
  rewrite { erase n }
}
param p: int = 1
)",
                             &d);
  ASSERT_FALSE(d.has_errors()) << d.Render();
  const Expr& g = *f.rules[0].guards[0];
  ASSERT_EQ(g.kind, Expr::Kind::kBinary);
  EXPECT_EQ(g.text, "or");
  const Expr& rhs = *g.args[1];
  ASSERT_EQ(rhs.kind, Expr::Kind::kBinary);
  EXPECT_EQ(rhs.text, "or");
  EXPECT_EQ(rhs.args[1]->kind, Expr::Kind::kUnary);
  EXPECT_EQ(f.params[0].default_value->int_value, 1);
}

TEST(ParserTest, AnotherDomainsOpIsDomainDotName) {
  Diagnostics d;
  RuleFile f = ParseRuleFile("domain.graft", R"(dialect onnx
rule a {
  match { g = com.microsoft.Gelu(x) where g.domain_attr == 1 }
  rewrite { out = com.microsoft.FastGelu(x) { k: g.T } replace g with out }
}
)",
                             &d);
  ASSERT_FALSE(d.has_errors()) << d.Render();
  EXPECT_EQ(f.rules[0].patterns[0].pattern.ops,
            (std::vector<std::string>{"com.microsoft.Gelu"}));
  // `g.domain_attr` and `g.T` stay attrs of `g`, not ops of a domain `g`.
  EXPECT_EQ(f.rules[0].guards[0]->args[0]->kind, Expr::Kind::kMember);
  const Expr& created = *f.rules[0].actions[0].a;
  EXPECT_EQ(created.text, "com.microsoft.FastGelu");
  EXPECT_EQ(created.attrs[0].value->kind, Expr::Kind::kMember);
}

}  // namespace
}  // namespace graft::dsl
