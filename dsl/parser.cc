#include "dsl/parser.h"

#include <memory>
#include <optional>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dsl/grammar.h"
#include "dsl/parser_messages.h"
#include "tao/pegtl/contrib/parse_tree.hpp"

namespace graft::dsl {
namespace {

namespace p = tao::pegtl;
namespace g = grammar;

// Messages per commit point: dsl/parser_messages.h.
using parser_messages::Control;

// ---- which parse-tree nodes to keep ----

template <typename Rule>
using Selector = p::parse_tree::selector<
    Rule,
    p::parse_tree::store_content::on<
        g::import_decl, g::dialect_decl, g::dialect_name, g::param_decl,
        g::rule_decl, g::param_name, g::type_name, g::default_value,
        g::param_range, g::range_bound, g::rule_name, g::control_name,
        g::doc_item, g::priority_value, g::match_block, g::rewrite_block,
        g::test_block, g::pattern_stmt, g::where_clause, g::for_clause,
        g::for_var, g::for_source, g::plan_decl, g::output_order_decl,
        g::for_action, g::rewrite_for_var, g::list_comp, g::comp_var,
        g::plan_name, g::if_expr, g::index_suffix, g::gap_operand,
        g::pattern_decl, g::pattern_def_name, g::pattern_params,
        g::pattern_param, g::pattern_root, g::pattern_where, g::pattern_call,
        g::pattern_call_name, g::pattern_arg, g::guard_decl, g::guard_name,
        g::fragment_mark, g::guard_param, g::optional_mark, g::stand_in_mark,
        g::pattern_ref, g::anonymous_bound, g::node_pattern, g::nested_operand,
        g::op_name, g::wildcard, g::control_operand, g::variadic_operand,
        g::wildcard_variadic, g::wildcard_operand, g::bound_operand,
        g::port_number, g::operand_list, g::name, g::string_body, g::int_lit,
        g::float_lit, g::kw_true, g::kw_false, g::list_expr, g::create_expr,
        g::matched_op, g::named_op, g::shared_mark, g::call_args, g::attr_block,
        g::attr_spread, g::spread_node, g::attr_set, g::attr_key,
        g::name_template, g::call_expr, g::qualified_name, g::name_ref,
        g::member, g::member_name, g::port_suffix, g::neg_op, g::mul_op,
        g::add_op, g::cmp_op, g::not_op, g::and_op, g::or_op, g::let_action,
        g::let_name, g::replace_action, g::reroute_action, g::swap_action,
        g::erase_action, g::rename_action, g::control_action,
        g::uncontrol_action, g::device_action, g::set_action, g::unset_action,
        g::assign_action, g::clone_action, g::clone_src, g::clone_dst,
        g::tensor_pair, g::fail_action, g::splice_action, g::splice_path,
        g::splice_param, g::splice_root, g::require_decl, g::splice_prefix,
        g::splice_input, g::splice_take, g::take_name, g::node_ref, g::set_attr,
        g::filter_only, g::filter_except, g::set_member, g::input_item,
        g::op_count, g::count_value, g::expect_ops_item, g::expect_nodes_item,
        g::expect_no_nodes_item, g::expect_edges_item, g::edge_item,
        g::no_match_item, g::all_rules_item, g::test_param_item,
        g::test_param_name, g::test_param_value>,
    p::parse_tree::fold_one::on<g::expr, g::or_expr, g::and_expr, g::not_expr,
                                g::cmp_expr, g::add_expr, g::mul_expr, g::unary,
                                g::postfix, g::paren_expr>>;

using Node = p::parse_tree::node;

absl::string_view AV(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

Loc LocOf(const Node& n) {
  p::position pos = n.begin();
  return {static_cast<int>(pos.line), static_cast<int>(pos.column)};
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The text of the first string literal below `n`.
std::string StringOf(const Node& n) {
  if (n.is_type<g::string_body>()) return Unescape(n.string_view());
  for (const auto& c : n.children) {
    std::string s = StringOf(*c);
    if (!s.empty() || c->is_type<g::string_body>()) return s;
  }
  return "";
}

// Rule text that would drive recursion (the grammar's, the AST's, the
// checker's and the evaluator's) as deep as the input goes is refused:
// brackets and prefix operators nest at most kMaxNesting deep, and an
// expression's tree is at most kMaxExprDepth deep (a chain of 1,000 `+`
// is 1,000 deep).
constexpr int kMaxNesting = 256;
constexpr int kMaxExprDepth = 500;

struct TextProblem {
  size_t offset;
  std::string message;
};

// The first place `source` nests deeper than kMaxNesting: brackets, or a
// run of prefix `not` / `-` (comments and strings skipped).
std::optional<TextProblem> CheckNesting(const std::string& source) {
  int depth = 0, prefix_run = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '#') {
      while (i < source.size() && source[i] != '\n') ++i;
      continue;
    }
    if (c == '"') {
      for (++i; i < source.size() && source[i] != '"'; ++i) {
        if (source[i] == '\\') ++i;
      }
      prefix_run = 0;
      continue;
    }
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) continue;
    auto word_char = [&](size_t j) {
      return j < source.size() &&
             (absl::ascii_isalnum(static_cast<unsigned char>(source[j])) ||
              source[j] == '_');
    };
    bool word_not = source.compare(i, 3, "not") == 0 && !word_char(i + 3) &&
                    (i == 0 || !word_char(i - 1));
    if (word_not || c == '-') {
      if (++prefix_run > kMaxNesting) {
        return TextProblem{i, absl::StrCat("more than ", kMaxNesting,
                                           " prefix operators in a row")};
      }
      if (word_not) i += 2;
      continue;
    }
    prefix_run = 0;
    if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        return TextProblem{
            i, absl::StrCat("nested more than ", kMaxNesting, " levels deep")};
      }
    } else if (c == ')' || c == ']' || c == '}') {
      depth = std::max(0, depth - 1);
    }
  }
  return std::nullopt;
}

class Converter {
 public:
  explicit Converter(RuleFile* file) : file_(file) {}

  // Expressions refused for their depth (see kMaxExprDepth).
  const std::vector<std::pair<Loc, std::string>>& problems() const {
    return problems_;
  }

  void TopItem(const Node& n) {
    if (n.is_type<g::import_decl>()) {
      file_->imports.push_back({StringOf(n), LocOf(n)});
    } else if (n.is_type<g::dialect_decl>()) {
      file_->dialect = n.children[0]->string();
      file_->dialect_loc = LocOf(n);
    } else if (n.is_type<g::param_decl>()) {
      Param param;
      param.loc = LocOf(n);
      for (const auto& c : n.children) {
        if (c->is_type<g::param_name>()) param.name = c->string();
        if (c->is_type<g::type_name>()) {
          param.type = c->string();
          param.type_loc = LocOf(*c);
        }
        if (c->is_type<g::default_value>())
          param.default_value = ExprOf(*c->children[0]);
        if (c->is_type<g::param_range>() && c->children.size() == 2) {
          param.has_range = true;
          (void)absl::SimpleAtod(AV(c->children[0]->string_view()),
                                 &param.range_min);
          (void)absl::SimpleAtod(AV(c->children[1]->string_view()),
                                 &param.range_max);
          param.range_loc = LocOf(*c);
        }
      }
      file_->params.push_back(std::move(param));
    } else if (n.is_type<g::pattern_decl>()) {
      PatternDef def;
      def.loc = LocOf(n);
      int patterns = 0;  // node patterns read: the first, then its alternatives
      for (const auto& c : n.children) {
        if (c->is_type<g::pattern_def_name>()) {
          def.name = c->string();
        } else if (c->is_type<g::pattern_params>()) {
          def.has_params = true;
          for (const auto& param : c->children)
            def.params.push_back({param->string(), LocOf(*param)});
        } else if (c->is_type<g::pattern_root>()) {
          def.root = c->string();
          def.root_loc = LocOf(*c);
        } else if (c->is_type<g::pattern_where>()) {
          def.where = ExprOf(*c->children[0]);
        } else {
          (patterns++ == 0 ? def.pattern : def.or_patterns.emplace_back()) =
              PatternOf(*c);
        }
      }
      file_->pattern_defs.push_back(std::move(def));
    } else if (n.is_type<g::guard_decl>()) {
      GuardDef def;
      def.loc = LocOf(n);
      for (const auto& c : n.children) {
        if (c->is_type<g::fragment_mark>()) {
          def.fragment = true;
        } else if (c->is_type<g::guard_name>()) {
          def.name = c->string();
        } else if (c->is_type<g::guard_param>()) {
          def.params.push_back({c->string(), LocOf(*c)});
        } else {
          def.body = ExprOf(*c);
        }
      }
      file_->guard_defs.push_back(std::move(def));
    } else if (n.is_type<g::plan_decl>()) {
      file_->plans.push_back(
          {n.children[0]->string(), ExprOf(*n.children[1]), LocOf(n)});
    } else if (n.is_type<g::output_order_decl>()) {
      file_->output_orders.push_back({ExprOf(*n.children[0]), LocOf(n)});
    } else if (n.is_type<g::require_decl>()) {
      file_->requirements.push_back({ExprOf(*n.children[0]), LocOf(n)});
    } else if (n.is_type<g::rule_decl>()) {
      file_->rules.push_back(RuleOf(n));
    }
  }

 private:
  Rule RuleOf(const Node& n) {
    Rule rule;
    rule.loc = LocOf(n);
    for (const auto& c : n.children) {
      if (c->is_type<g::rule_name>()) {
        rule.name = c->string();
      } else if (c->is_type<g::doc_item>()) {
        rule.doc = StringOf(*c);
      } else if (c->is_type<g::priority_value>()) {
        rule.has_priority = true;
        (void)absl::SimpleAtoi(AV(c->string_view()), &rule.priority);
      } else if (c->is_type<g::match_block>()) {
        rule.has_match = true;
        rule.match_loc = LocOf(*c);
        for (const auto& item : c->children) {
          if (item->is_type<g::pattern_stmt>()) {
            PatternStmt stmt;
            stmt.loc = LocOf(*item);
            stmt.name = item->children[0]->string();
            stmt.pattern = PatternOf(*item->children[1]);
            rule.patterns.push_back(std::move(stmt));
          } else if (item->is_type<g::where_clause>()) {
            rule.guards.push_back(ExprOf(*item->children[0]));
          } else if (item->is_type<g::let_action>()) {
            LetStmt let;
            let.loc = LocOf(*item);
            let.name = item->children[0]->string();
            let.name_loc = LocOf(*item->children[0]);
            let.expr = ExprOf(*item->children[1]);
            let.wheres_before = rule.guards.size();
            rule.lets.push_back(std::move(let));
          } else if (item->is_type<g::for_clause>()) {
            rule.for_loc = LocOf(*item);
            rule.for_var = item->children[0]->string();
            rule.for_source = item->children[1]->string();
          }
        }
      } else if (c->is_type<g::rewrite_block>()) {
        rule.has_rewrite = true;
        for (const auto& a : c->children) rule.actions.push_back(ActionOf(*a));
      } else if (c->is_type<g::test_block>()) {
        rule.tests.push_back(TestOf(*c));
      }
    }
    return rule;
  }

  NodePattern PatternOf(const Node& n) {
    NodePattern pattern;
    pattern.loc = LocOf(n);
    for (const auto& c : n.children) {
      if (c->is_type<g::op_name>()) {
        pattern.ops.push_back(c->string());
      } else if (c->is_type<g::optional_mark>()) {
        pattern.optional = true;
      } else if (c->is_type<g::pattern_ref>()) {
        pattern.ref = c->string();
      } else if (c->is_type<g::pattern_call>()) {
        pattern.ref_call = true;
        for (const auto& a : c->children) {
          if (a->is_type<g::pattern_call_name>()) {
            pattern.ref = a->string();
          } else {
            pattern.ref_args.push_back({a->string(), LocOf(*a)});
          }
        }
      } else if (c->is_type<g::operand_list>()) {
        pattern.has_operands = true;
        const Node* stand_in = nullptr;  // the `?` before an operand
        for (const auto& o : c->children) {
          if (o->is_type<g::stand_in_mark>()) {
            stand_in = o.get();
            continue;
          }
          pattern.operands.push_back(OperandOf(*o));
          if (stand_in != nullptr) {
            pattern.operands.back().stand_in = true;
            pattern.operands.back().loc = LocOf(*stand_in);
          }
          stand_in = nullptr;
        }
      }
      // g::wildcard: any op, `ops` stays empty.
    }
    return pattern;
  }

  OperandPattern OperandOf(const Node& n) {
    OperandPattern o;
    o.loc = LocOf(n);
    if (n.is_type<g::control_operand>()) {
      o.kind = OperandPattern::Kind::kControl;
      o.name = n.children[0]->string();
    } else if (n.is_type<g::variadic_operand>()) {
      o.kind = OperandPattern::Kind::kVariadic;
      o.name = n.children[0]->string();
    } else if (n.is_type<g::wildcard_variadic>()) {
      o.kind = OperandPattern::Kind::kVariadic;  // no name: binds nothing
    } else if (n.is_type<g::wildcard_operand>()) {
      o.kind = OperandPattern::Kind::kWildcard;
    } else if (n.is_type<g::gap_operand>()) {
      o.kind = OperandPattern::Kind::kGap;
    } else if (n.is_type<g::anonymous_bound>()) {
      // `_: Op(...)`: an anonymous producer (a port number binds nothing).
      const Node& target = *n.children.back();
      if (target.is_type<g::node_pattern>()) {
        o.kind = OperandPattern::Kind::kNested;
        o.nested = std::make_shared<NodePattern>(PatternOf(target));
      } else {
        o.kind = OperandPattern::Kind::kWildcard;
      }
    } else if (n.is_type<g::bound_operand>()) {
      o.name = n.children[0]->string();
      if (n.children.size() == 1) {
        o.kind = OperandPattern::Kind::kName;
      } else if (n.children[1]->is_type<g::port_number>()) {
        o.kind = OperandPattern::Kind::kPort;
        (void)absl::SimpleAtoi(AV(n.children[1]->string_view()), &o.port);
      } else {
        o.kind = OperandPattern::Kind::kBound;
        o.nested = std::make_shared<NodePattern>(PatternOf(*n.children[1]));
      }
    } else {  // nested_operand, holding its node_pattern
      o.kind = OperandPattern::Kind::kNested;
      const Node& pattern =
          n.children.size() == 1 && n.children[0]->is_type<g::node_pattern>()
              ? *n.children[0]
              : n;
      o.nested = std::make_shared<NodePattern>(PatternOf(pattern));
    }
    return o;
  }

  ExprPtr Make(Expr::Kind kind, const Node& n) {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->loc = LocOf(n);
    return e;
  }

  // The expression of `n`, refused (a placeholder and a problem) where its
  // tree would be deeper than kMaxExprDepth.
  ExprPtr ExprOf(const Node& n) {
    // How deep this node's own tree goes: a chain of N operands joined by
    // operators (children: operand, operator, operand, ...) is N - 1 deep.
    int chain = 1;
    if (n.is_type<g::expr>() || n.is_type<g::or_expr>() ||
        n.is_type<g::and_expr>() || n.is_type<g::cmp_expr>() ||
        n.is_type<g::add_expr>() || n.is_type<g::mul_expr>()) {
      chain = static_cast<int>(n.children.size() + 1) / 2;
    } else if (n.is_type<g::postfix>()) {
      chain = static_cast<int>(n.children.size());
    }
    if (depth_ + chain > kMaxExprDepth) {
      if (!too_deep_reported_) {
        problems_.emplace_back(LocOf(n),
                               absl::StrCat("an expression nested more than ",
                                            kMaxExprDepth, " levels deep"));
        too_deep_reported_ = true;
      }
      return Make(Expr::Kind::kInt, n);
    }
    depth_ += chain;
    ExprPtr e = ExprOfNode(n);
    depth_ -= chain;
    return e;
  }

  // Op(a, b) { attrs } named "template" / conv.op(a, b)
  ExprPtr CreateOf(const Node& n) {
    ExprPtr e = Make(Expr::Kind::kCreate, n);
    for (const auto& c : n.children) {
      if (c->is_type<g::shared_mark>()) {
        e->shared = true;
      } else if (c->is_type<g::op_name>()) {
        e->text = c->string();
      } else if (c->is_type<g::matched_op>()) {
        e->op_of = c->children[0]->string();
      } else if (c->is_type<g::named_op>()) {
        e->op_expr = ExprOf(*c->children[0]);
      } else if (c->is_type<g::call_args>()) {
        for (const auto& a : c->children) e->args.push_back(ExprOf(*a));
      } else if (c->is_type<g::attr_block>()) {
        for (const auto& item : c->children) {
          AttrItem attr;
          attr.loc = LocOf(*item);
          if (item->is_type<g::attr_spread>()) {
            attr.spread = true;
            attr.name = item->children[0]->string();
          } else {
            attr.name = item->children[0]->string();
            attr.value = ExprOf(*item->children[1]);
          }
          e->attrs.push_back(std::move(attr));
        }
      } else if (c->is_type<g::name_template>()) {
        e->has_name_template = true;
        e->name_template = StringOf(*c);
      }
    }
    return e;
  }

  ExprPtr ExprOfNode(const Node& n) {
    using K = Expr::Kind;
    if (n.is_type<g::kw_true>() || n.is_type<g::kw_false>()) {
      ExprPtr e = Make(K::kBool, n);
      e->bool_value = n.is_type<g::kw_true>();
      return e;
    }
    if (n.is_type<g::int_lit>()) {
      ExprPtr e = Make(K::kInt, n);
      if (!absl::SimpleAtoi(AV(n.string_view()), &e->int_value)) {
        e->kind = K::kFloat;
        (void)absl::SimpleAtod(AV(n.string_view()), &e->float_value);
      }
      return e;
    }
    if (n.is_type<g::float_lit>()) {
      ExprPtr e = Make(K::kFloat, n);
      (void)absl::SimpleAtod(AV(n.string_view()), &e->float_value);
      return e;
    }
    if (n.is_type<g::string_body>()) {
      ExprPtr e = Make(K::kString, n);
      e->loc.col -= 1;  // point at the opening quote
      e->text = Unescape(n.string_view());
      return e;
    }
    if (n.is_type<g::name_ref>()) {
      ExprPtr e = Make(K::kName, n);
      e->text = n.string();
      return e;
    }
    if (n.is_type<g::if_expr>()) {
      ExprPtr e = Make(K::kIf, n);
      for (const auto& c : n.children) e->args.push_back(ExprOf(*c));
      return e;
    }
    if (n.is_type<g::list_comp>()) {
      ExprPtr e = Make(K::kListComp, n);
      e->text = n.children[1]->string();
      e->args = {ExprOf(*n.children[0]), ExprOf(*n.children[2])};
      return e;
    }
    if (n.is_type<g::list_expr>()) {
      ExprPtr e = Make(K::kList, n);
      for (const auto& c : n.children) e->args.push_back(ExprOf(*c));
      return e;
    }
    if (n.is_type<g::call_expr>()) {
      ExprPtr e = Make(K::kCall, n);
      e->text = n.children[0]->string();  // qualified name
      for (const auto& a : n.children[1]->children)
        e->args.push_back(ExprOf(*a));
      return e;
    }
    if (n.is_type<g::create_expr>()) return CreateOf(n);
    if (n.is_type<g::postfix>()) {
      ExprPtr base = ExprOf(*n.children[0]);
      for (size_t i = 1; i < n.children.size(); ++i) {
        const Node& s = *n.children[i];
        if (s.is_type<g::member>()) {
          ExprPtr e = Make(K::kMember, s);
          e->loc = base->loc;
          e->text = s.children[0]->string();
          e->args.push_back(base);
          base = e;
        } else if (s.is_type<g::index_suffix>()) {
          ExprPtr e = Make(K::kIndex, s);
          e->args = {base, ExprOf(*s.children[0])};
          base = e;
        } else {  // port_suffix: x:1
          ExprPtr e = Make(K::kPort, s);
          e->loc = base->loc;
          e->text = base->kind == K::kName ? base->text : "";
          (void)absl::SimpleAtoi(AV(s.children[0]->string_view()), &e->port);
          e->args.push_back(base);
          base = e;
        }
      }
      return base;
    }
    if (n.is_type<g::unary>() || n.is_type<g::not_expr>()) {
      ExprPtr e = Make(K::kUnary, n);
      e->text = n.is_type<g::unary>() ? "-" : "not";
      e->args.push_back(ExprOf(*n.children[1]));
      return e;
    }
    if (n.is_type<g::expr>() || n.is_type<g::or_expr>() ||
        n.is_type<g::and_expr>() || n.is_type<g::cmp_expr>() ||
        n.is_type<g::add_expr>() || n.is_type<g::mul_expr>()) {
      ExprPtr lhs = ExprOf(*n.children[0]);
      for (size_t i = 1; i + 1 < n.children.size(); i += 2) {
        ExprPtr e = Make(K::kBinary, *n.children[i]);
        e->text = n.children[i]->string();
        e->args = {lhs, ExprOf(*n.children[i + 1])};
        lhs = e;
      }
      return lhs;
    }
    if (n.children.size() == 1) return ExprOf(*n.children[0]);
    ExprPtr e = Make(K::kInt, n);  // unreachable for well-formed trees
    return e;
  }

  Action ActionOf(const Node& n) {
    Action a;
    a.loc = LocOf(n);
    using K = Action::Kind;
    auto expr_at = [&](size_t i) { return ExprOf(*n.children[i]); };
    auto name_at = [&](size_t i) {
      return std::make_pair(n.children[i]->string(), LocOf(*n.children[i]));
    };
    if (n.is_type<g::for_action>()) {
      a.kind = K::kFor;
      std::tie(a.name, a.name_loc) = name_at(0);
      a.a = expr_at(1);
      for (size_t i = 2; i < n.children.size(); ++i)
        a.body.push_back(ActionOf(*n.children[i]));
    } else if (n.is_type<g::let_action>() || n.is_type<g::assign_action>()) {
      a.kind = n.is_type<g::let_action>() ? K::kLet : K::kAssign;
      std::tie(a.name, a.name_loc) = name_at(0);
      a.a = expr_at(1);
    } else if (n.is_type<g::replace_action>()) {
      a.kind = K::kReplace;
      a.a = expr_at(0);
      a.b = expr_at(1);
    } else if (n.is_type<g::reroute_action>() || n.is_type<g::swap_action>()) {
      a.kind = n.is_type<g::reroute_action>() ? K::kReroute : K::kSwap;
      a.a = expr_at(0);
      a.b = expr_at(1);
      for (size_t i = 2; i < n.children.size(); ++i) {
        const Node& c = *n.children[i];
        if (c.is_type<g::filter_only>()) a.filter = Action::Filter::kOnly;
        if (c.is_type<g::filter_except>()) a.filter = Action::Filter::kExcept;
        if (c.is_type<g::set_member>())
          a.filter_nodes.push_back(ExprOf(*c.children[0]));
      }
    } else if (n.is_type<g::erase_action>()) {
      a.kind = K::kErase;
      a.a = expr_at(0);
    } else if (n.is_type<g::rename_action>()) {
      a.kind = K::kRename;
      std::tie(a.name, a.name_loc) = name_at(0);
      a.a = expr_at(1);
    } else if (n.is_type<g::device_action>() ||
               n.is_type<g::control_action>() ||
               n.is_type<g::uncontrol_action>()) {
      a.kind = n.is_type<g::device_action>()    ? K::kDevice
               : n.is_type<g::control_action>() ? K::kControl
                                                : K::kUncontrol;
      a.a = expr_at(0);
      a.b = expr_at(1);
    } else if (n.is_type<g::clone_action>()) {
      a.kind = K::kClone;
      for (const auto& c : n.children) {
        if (c->is_type<g::clone_src>())
          a.clone_from.push_back(ExprOf(*c->children[0]));
        if (c->is_type<g::name_template>()) {
          a.has_name_template = true;
          a.name_template = StringOf(*c);
        }
        if (c->is_type<g::clone_dst>())
          a.clone_to.emplace_back(c->string(), LocOf(*c));
        if (c->is_type<g::tensor_pair>()) {
          a.replacements.emplace_back(ExprOf(*c->children[0]),
                                      ExprOf(*c->children[1]));
        }
      }
    } else if (n.is_type<g::splice_action>()) {
      a.kind = K::kSplice;
      for (const auto& c : n.children) {
        if (c->is_type<g::splice_path>()) {
          a.path = StringOf(*c);
          a.path_loc = LocOf(*c);
        } else if (c->is_type<g::splice_param>()) {
          a.path_param = c->string();
          a.path_loc = LocOf(*c);
        } else if (c->is_type<g::splice_root>()) {
          a.splice_root = StringOf(*c);
        } else if (c->is_type<g::splice_prefix>()) {
          a.prefix = StringOf(*c);
        } else if (c->is_type<g::splice_input>()) {
          a.splice_inputs.emplace_back(StringOf(*c->children[0]),
                                       ExprOf(*c->children[1]));
        } else if (c->is_type<g::splice_take>()) {
          a.take.emplace_back(
              std::make_pair(c->children[0]->string(), LocOf(*c->children[0])),
              StringOf(*c->children[1]));
        }
      }
    } else if (n.is_type<g::fail_action>()) {
      a.kind = K::kFail;
      a.a = expr_at(0);
    } else if (n.is_type<g::set_action>() || n.is_type<g::unset_action>()) {
      a.kind = n.is_type<g::set_action>() ? K::kSet : K::kUnset;
      std::tie(a.name, a.name_loc) = name_at(0);
      if (n.children[1]->is_type<g::set_attr>()) {
        std::tie(a.target, a.target_loc) = name_at(1);
      } else {  // n[expr]
        a.b = expr_at(1);
        a.target_loc = a.b->loc;
      }
      if (a.kind == K::kSet) a.a = expr_at(2);
    }
    return a;
  }

  RuleTest TestOf(const Node& n) {
    RuleTest t;
    t.loc = LocOf(n);
    for (const auto& c : n.children) {
      if (c->is_type<g::string_body>()) {
        t.name = Unescape(c->string_view());
      } else if (c->is_type<g::input_item>()) {
        t.input = StringOf(*c);
        t.input_loc = LocOf(*c);
      } else if (c->is_type<g::expect_ops_item>()) {
        for (const auto& oc : c->children) {
          int count = 0;
          (void)absl::SimpleAtoi(AV(oc->children[1]->string_view()), &count);
          t.expect_ops.emplace_back(oc->children[0]->string(), count);
        }
      } else if (c->is_type<g::expect_nodes_item>() ||
                 c->is_type<g::expect_no_nodes_item>()) {
        auto& list = c->is_type<g::expect_nodes_item>() ? t.expect_nodes
                                                        : t.expect_no_nodes;
        for (const auto& s : c->children)
          list.push_back(Unescape(s->string_view()));
      } else if (c->is_type<g::expect_edges_item>()) {
        for (const auto& e : c->children) {
          t.expect_edges.emplace_back(Unescape(e->children[0]->string_view()),
                                      Unescape(e->children[1]->string_view()));
        }
      } else if (c->is_type<g::no_match_item>()) {
        t.no_match = true;
      } else if (c->is_type<g::all_rules_item>()) {
        t.all_rules = true;
      } else if (c->is_type<g::test_param_item>()) {
        const Node& value = *c->children[1];
        bool quoted =
            !value.string_view().empty() && value.string_view()[0] == '"';
        t.params.push_back({c->children[0]->string(),
                            quoted ? StringOf(value) : value.string(),
                            LocOf(*c)});
      }
    }
    return t;
  }

  RuleFile* file_;
  int depth_ = 0;
  bool too_deep_reported_ = false;
  std::vector<std::pair<Loc, std::string>> problems_;
};

// The offset of the next line that starts a top-level item, or the end.
size_t NextItemStart(const std::string& source, size_t from) {
  size_t pos = source.find('\n', from);
  while (pos != std::string::npos) {
    std::string_view rest(source.data() + pos + 1, source.size() - pos - 1);
    for (std::string_view kw :
         {"rule ", "param ", "import ", "require ", "plan ", "pattern "}) {
      if (rest.substr(0, kw.size()) == kw) return pos + 1;
    }
    pos = source.find('\n', pos + 1);
  }
  return source.size();
}

}  // namespace

RuleFile ParseRuleFile(const std::string& path, const std::string& source,
                       Diagnostics* diagnostics) {
  RuleFile file;
  file.path = path;
  file.source = source;
  diagnostics->AddSource(path, source);
  if (std::optional<TextProblem> deep = CheckNesting(source)) {
    int line_no = 1, col = 1;
    for (size_t i = 0; i < deep->offset; ++i) {
      if (source[i] == '\n') {
        ++line_no;
        col = 1;
      } else {
        ++col;
      }
    }
    diagnostics->Error(path, {line_no, col}, deep->message);
    return file;
  }
  Converter converter(&file);
  size_t offset = 0;
  size_t line = 1;
  size_t line_start = 0;
  // Skip leading blank lines and comments.
  auto skip_ws = [&] {
    p::memory_input<p::tracking_mode::eager> in(
        source.data() + offset, source.data() + source.size(), path);
    p::parse<g::ws>(in);
    size_t consumed =
        static_cast<size_t>(in.current() - (source.data() + offset));
    for (size_t i = offset; i < offset + consumed; ++i) {
      if (source[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    offset += consumed;
  };
  skip_ws();
  while (offset < source.size()) {
    p::memory_input<p::tracking_mode::eager> in(
        source.data() + offset, source.data() + source.size(), path, offset,
        line, offset - line_start + 1);
    try {
      auto root =
          p::parse_tree::parse<g::item, Selector, p::nothing, Control>(in);
      size_t consumed =
          static_cast<size_t>(in.current() - (source.data() + offset));
      if (root) {
        for (const auto& child : root->children) converter.TopItem(*child);
      }
      for (size_t i = offset; i < offset + consumed; ++i) {
        if (source[i] == '\n') {
          ++line;
          line_start = i + 1;
        }
      }
      offset += consumed;
      if (consumed == 0) break;
    } catch (const p::parse_error& e) {
      const p::position& pos = e.positions().front();
      diagnostics->Error(
          path, {static_cast<int>(pos.line), static_cast<int>(pos.column)},
          std::string(e.message()));
      size_t next = NextItemStart(
          source, std::max(offset, static_cast<size_t>(pos.byte)));
      for (size_t i = offset; i < next; ++i) {
        if (source[i] == '\n') {
          ++line;
          line_start = i + 1;
        }
      }
      offset = next;
    }
    skip_ws();
  }
  for (const auto& [loc, message] : converter.problems())
    diagnostics->Error(path, loc, message);
  return file;
}

}  // namespace graft::dsl
