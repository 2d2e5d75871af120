// The parser's error messages: one per grammar commit point (`must<>`).
// Included by dsl/parser.cc only.
#ifndef GRAFT_DSL_PARSER_MESSAGES_H_
#define GRAFT_DSL_PARSER_MESSAGES_H_

#include "dsl/grammar.h"
#include "tao/pegtl.hpp"

namespace graft::dsl::parser_messages {

namespace g = grammar;
namespace p = tao::pegtl;

template <typename Rule>
inline constexpr const char* kError = nullptr;

#define GRAFT_ERROR(rule, text) \
  template <>                   \
  inline constexpr const char* kError<g::rule> = text
GRAFT_ERROR(top_item,
            "expected `rule`, `pattern`, `guard`, `fragment`, `param`, `plan`, "
            "`require` or `import`");
GRAFT_ERROR(guard_name, "expected a name after `guard` or `fragment`");
GRAFT_ERROR(guard_params,
            "expected `(` and the parameters (as in `guard "
            "small(t) = bytes(t) < 1024`)");
GRAFT_ERROR(guard_param, "expected a parameter's name after `,`");
GRAFT_ERROR(guard_params_close, "expected `,` or `)` after a parameter");
GRAFT_ERROR(guard_equals,
            "expected `=` and the expression after the parameters");
GRAFT_ERROR(pattern_def_name, "expected a name after `pattern`");
GRAFT_ERROR(pattern_param, "expected a parameter's name after `,`");
GRAFT_ERROR(pattern_params_close, "expected `,` or `)` after a parameter");
GRAFT_ERROR(pattern_arg,
            "expected a name or `_` after `,` (a named pattern's argument)");
GRAFT_ERROR(pattern_args_close,
            "expected a name, `_`, `,` or `)`: a named pattern's arguments "
            "are names or `_` (ops start with a capital letter)");
GRAFT_ERROR(plan_name, "expected a name after `plan`");
GRAFT_ERROR(output_order_kw,
            "expected `order` and the nodes' order after `output` (as in "
            "`output order execution_order()`)");
GRAFT_ERROR(plan_equals, "expected `=` after the plan's name");
GRAFT_ERROR(if_then, "expected `then` (as in `if c then a else b`)");
GRAFT_ERROR(if_else, "expected `else` (as in `if c then a else b`)");
GRAFT_ERROR(index_close, "expected `]` after the index");
GRAFT_ERROR(for_var, "expected a name after `for` (as in `for t in plan`)");
GRAFT_ERROR(for_in, "expected `in` (as in `for t in plan`)");
GRAFT_ERROR(for_source, "expected the plan to iterate after `in`");
GRAFT_ERROR(nodes_arg, "expected a node, a list of nodes or a call");
GRAFT_ERROR(nodes_arg2, "expected the node (or list) the edge goes to");
GRAFT_ERROR(device_value, "expected the device, a string");
GRAFT_ERROR(string_close, "unterminated string: expected `\"`");
GRAFT_ERROR(string_lit, "expected a string in double quotes");
GRAFT_ERROR(expr, "expected an expression");
GRAFT_ERROR(unary, "expected an operand after `-`");
GRAFT_ERROR(mul_expr, "expected an operand after the operator");
GRAFT_ERROR(add_expr, "expected an operand after the operator");
GRAFT_ERROR(not_expr, "expected an operand after `not` or `and`");
GRAFT_ERROR(and_expr, "expected an operand after `or`");
GRAFT_ERROR(call_args, "expected `(` and the arguments of the new node");
GRAFT_ERROR(call_close, "expected `,` or `)` after an argument");
GRAFT_ERROR(paren_close, "expected `)` to close the parenthesis");
GRAFT_ERROR(rbracket, "expected `,` or `]` in the list");
GRAFT_ERROR(member_name, "expected an attr name after `.`");
GRAFT_ERROR(spread_node,
            "expected a matched node after `..` (as in `..conv.attrs`)");
GRAFT_ERROR(spread_dot, "expected `.attrs` after the node in `..node.attrs`");
GRAFT_ERROR(attrs_kw, "expected `attrs` (as in `..conv.attrs`)");
GRAFT_ERROR(attr_colon, "expected `:` between an attr name and its value");
GRAFT_ERROR(attr_item,
            "expected `name: value` or `..node.attrs` in the attr block");
GRAFT_ERROR(attr_close, "expected `,` or `}` to close the attr block");
GRAFT_ERROR(op_name, "expected an op name (ops start with a capital letter)");
GRAFT_ERROR(alt_close, "expected `|` or `)` in the op alternatives");
GRAFT_ERROR(control_name, "expected a node name after `^`");
GRAFT_ERROR(bound_target,
            "expected an output port number or an op pattern after `:`");
GRAFT_ERROR(operand,
            "expected an operand: a name, `name: Op`, `Op(...)`, `_`, `xs...` "
            "or `^name`");
GRAFT_ERROR(operand_close, "expected `,` or `)` in the operand list");
GRAFT_ERROR(
    pattern_equals,
    "expected `=` after the pattern name (as in `conv = Conv2D(x, w)`)");
GRAFT_ERROR(node_pattern,
            "expected an op pattern (ops start with a capital letter): an "
            "op, `(OpA | OpB)`, `_` or a named pattern");
GRAFT_ERROR(or_alternative,
            "expected a pattern after `|`: an op pattern or a named "
            "pattern's call");
GRAFT_ERROR(match_open, "expected `{` after `match`");
GRAFT_ERROR(match_close,
            "expected a pattern (`name = Op(...)`), `where`, `let` or `}` in "
            "the match block");
GRAFT_ERROR(set_open, "expected `{` and node names after `only` or `except`");
GRAFT_ERROR(set_member, "expected a node (or a list of nodes) in the set");
GRAFT_ERROR(set_close, "expected `,` or `}` in the node set");
GRAFT_ERROR(let_name, "expected a name after `let`");
GRAFT_ERROR(rewrite_for_var, "expected a name after `for`");
GRAFT_ERROR(comp_var, "expected a name after `for` in `[... for x in xs]`");
GRAFT_ERROR(comp_in, "expected `in` and a list in `[... for x in xs]`");
GRAFT_ERROR(comp_close, "expected `]` after `[... for x in xs`");
GRAFT_ERROR(rewrite_for_in,
            "expected `in` and a list (as in `for r in readers(t) { ... }`)");
GRAFT_ERROR(rewrite_for_open, "expected `{` and the actions to repeat");
GRAFT_ERROR(rewrite_for_close, "expected an action or `}` to end the `for`");
GRAFT_ERROR(let_equals, "expected `=` after the name in `let`");
GRAFT_ERROR(kw_with, "expected `with` (as in `replace bn with out`)");
GRAFT_ERROR(reroute_arrow, "expected `->` (as in `reroute t -> u`)");
GRAFT_ERROR(swap_comma, "expected `,` between the two tensors of `swap`");
GRAFT_ERROR(node_ref, "expected the name of a node");
GRAFT_ERROR(kw_to, "expected `to` (as in `rename n to \"name\"`)");
GRAFT_ERROR(edge_arrow,
            "expected `->` between the two nodes of a control edge");
GRAFT_ERROR(set_dot,
            "expected `.` and an attr name (as in `set n.T = \"float32\"`)");
GRAFT_ERROR(set_attr, "expected an attr name after `.`");
GRAFT_ERROR(op_name_close, "expected `)` after the op's name in `op(...)`");
GRAFT_ERROR(attr_target,
            "expected the attr: `.name` or `[expr]` (as in `set n.T = ...`, "
            "`unset n[attr_name]`)");
GRAFT_ERROR(attr_name_expr, "expected the attr's name, an expression");
GRAFT_ERROR(attr_index_close, "expected `]` after the attr's name");
GRAFT_ERROR(set_equals, "expected `=` after the attr in `set`");
GRAFT_ERROR(rewrite_open, "expected `{` after `rewrite`");
GRAFT_ERROR(rewrite_close,
            "expected an action (`let`, `replace`, `reroute`, `swap`, `erase`, "
            "`rename`, `control`, `uncontrol`, `device`, `set`, `clone`, "
            "`splice`, `fail`, `name = Op(...)`) or `}`");
GRAFT_ERROR(count_colon, "expected `:` after the op name");
GRAFT_ERROR(count_value, "expected a count");
GRAFT_ERROR(test_param_name, "expected the param's name after `param`");
GRAFT_ERROR(test_param_equals,
            "expected `=` and the param's value (as in `param bits = 4`)");
GRAFT_ERROR(test_param_value,
            "expected the param's value: a string, a number, true or false");
GRAFT_ERROR(op_count, "expected `Op: count`");
GRAFT_ERROR(counts_open, "expected `{` after `expect_ops`");
GRAFT_ERROR(counts_close, "expected `,` or `}` in `expect_ops`");
GRAFT_ERROR(string_list, "expected `{` and node names in quotes");
GRAFT_ERROR(list_open, "expected `{` and node names in quotes");
GRAFT_ERROR(list_close, "expected `,` or `}` in the list of node names");
GRAFT_ERROR(test_open, "expected `{` after the test name");
GRAFT_ERROR(test_close,
            "expected `input`, `param`, `expect_ops`, `expect_nodes`, "
            "`expect_no_nodes`, `expect_edges`, `no_match`, `all_rules` or "
            "`}` in the test");
GRAFT_ERROR(priority_value, "expected an integer priority");
GRAFT_ERROR(rule_name,
            "expected a rule name (lowercase, as in `rule fold_bn {`)");
GRAFT_ERROR(rule_open, "expected `{` after the rule name");
GRAFT_ERROR(rule_close,
            "expected `doc`, `priority`, `match`, `rewrite`, `test` or `}` in "
            "the rule");
GRAFT_ERROR(type_name,
            "expected a param type: `int`, `float`, `bool`, `string`, `ranges` "
            "or `graph`");
GRAFT_ERROR(splice_source,
            "expected the graph file to splice, in quotes, or a `graph` param");
GRAFT_ERROR(splice_root,
            "expected the node whose inputs to splice, in quotes (as in `for "
            "\"{x}_out\"`)");
GRAFT_ERROR(fail_message, "expected the error message (a string) after `fail`");
GRAFT_ERROR(param_name, "expected a param name");
GRAFT_ERROR(dialect_name, "expected a dialect: tensorflow or onnx");
GRAFT_ERROR(param_colon, "expected `:` and a type after the param name");
GRAFT_ERROR(clone_src, "expected the nodes to clone (names or a list)");
GRAFT_ERROR(clone_as, "expected `,` or `as` (as in `clone a, b as a2, b2`)");
GRAFT_ERROR(clone_dst, "expected a name for the copy");
GRAFT_ERROR(pair_arrow, "expected `->` between a tensor and its replacement");
GRAFT_ERROR(tensor_pair, "expected `tensor -> replacement`");
GRAFT_ERROR(map_open, "expected `{`");
GRAFT_ERROR(map_close, "expected `,` or `}`");
GRAFT_ERROR(splice_prefix, "expected the name prefix, in quotes");
GRAFT_ERROR(splice_input, "expected `\"placeholder\": tensor`");
GRAFT_ERROR(splice_take, "expected `name: \"node in the spliced graph\"`");
GRAFT_ERROR(edge_arrow2, "expected `->` (as in `\"conv\" -> \"bn\"`)");
GRAFT_ERROR(edge_item, "expected `\"tensor\" -> \"node\"`");
GRAFT_ERROR(range_bound,
            "expected a number (as in `param bits: int = 8 in 2..16`)");
GRAFT_ERROR(range_dots, "expected `..` between the bounds of the range");
#undef GRAFT_ERROR

struct ErrorMessages {
  template <typename Rule>
  static constexpr auto message = kError<Rule>;
  // Only `must<>` raises; a rule with a message may still fail quietly
  // where it is one alternative among others.
  template <typename Rule>
  static constexpr bool raise_on_failure = false;
};

template <typename Rule>
using Control = p::must_if<ErrorMessages>::control<Rule>;

}  // namespace graft::dsl::parser_messages

#endif  // GRAFT_DSL_PARSER_MESSAGES_H_
