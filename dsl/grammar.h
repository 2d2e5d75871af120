// The PEGTL grammar of rule files. Every commit point (`must<>`) has its own
// error message (dsl/parser.cc); see docs/rules.md for the language.
#ifndef GRAFT_DSL_GRAMMAR_H_
#define GRAFT_DSL_GRAMMAR_H_

#include "tao/pegtl.hpp"

namespace graft::dsl::grammar {

namespace p = tao::pegtl;

// ---- lexical ----

struct comment : p::seq<p::one<'#'>, p::until<p::eolf>> {};
struct ws : p::star<p::sor<p::space, comment>> {};

struct ident_rest : p::identifier_other {};
struct ident
    : p::seq<p::sor<p::range<'a', 'z'>, p::one<'_'>>, p::plus<ident_rest>> {};
struct short_ident : p::range<'a', 'z'> {};
struct name : p::sor<ident, short_ident> {};
// An op of another ONNX domain is named `domain.Name`
// (`com.microsoft.SkipLayerNormalization`).
struct domain_part
    : p::seq<p::range<'a', 'z'>,
             p::star<p::sor<p::range<'a', 'z'>, p::digit, p::one<'_'>>>> {};
// Two parts at least (`com.microsoft`, `ai.onnx.ml`), so `conv.T` stays an
// attr of `conv`.
struct op_domain : p::seq<domain_part, p::plus<p::one<'.'>, domain_part>,
                          p::one<'.'>, p::at<p::range<'A', 'Z'>>> {};
// A PyTorch op as torch.fx names it, `namespace.name.overload`
// (`aten.conv2d.default`, `aten.add.Tensor`), in the aten dialect.
struct torch_namespace : p::sor<TAO_PEGTL_STRING("aten"), TAO_PEGTL_STRING("prims")> {};
struct torch_op : p::seq<torch_namespace, p::one<'.'>, p::identifier, p::one<'.'>,
                         p::identifier> {};
// The graph IR's own ops (`_Retval`; `_Absent`, an optional input left out).
struct ir_op : p::seq<p::one<'_'>, p::range<'A', 'Z'>, p::star<ident_rest>> {};
struct op_name
    : p::sor<torch_op, ir_op,
             p::seq<p::opt<op_domain>, p::range<'A', 'Z'>,
                    p::star<p::sor<ident_rest, p::one<'*'>>>>> {};
struct wildcard : p::seq<p::one<'_'>, p::not_at<ident_rest>> {};
// Attr names are TensorFlow's: `T`, `data_format`, `_output_shapes`.
struct attr_ident : p::identifier {};

struct escaped : p::seq<p::one<'\\'>, p::any> {};
struct string_char : p::sor<escaped, p::not_one<'"', '\n'>> {};
struct string_body : p::star<string_char> {};
struct string_close : p::one<'"'> {};
struct string_lit : p::seq<p::one<'"'>, string_body, p::must<string_close>> {};

struct digits : p::plus<p::digit> {};
struct exponent : p::seq<p::one<'e', 'E'>, p::opt<p::one<'+', '-'>>, digits> {};
struct float_lit
    : p::seq<digits,
             p::sor<p::seq<p::one<'.'>, digits, p::opt<exponent>>, exponent>> {
};
struct int_lit : digits {};

template <typename Key>
struct kw : p::seq<Key, p::not_at<ident_rest>> {};
#define GRAFT_KW(id, text) \
  struct kw_##id : kw<TAO_PEGTL_STRING(text)> {}
GRAFT_KW(import, "import");
GRAFT_KW(dialect, "dialect");
GRAFT_KW(param, "param");
GRAFT_KW(rule, "rule");
GRAFT_KW(doc, "doc");
GRAFT_KW(priority, "priority");
GRAFT_KW(match, "match");
GRAFT_KW(where, "where");
GRAFT_KW(rewrite, "rewrite");
GRAFT_KW(test, "test");
GRAFT_KW(let, "let");
GRAFT_KW(replace, "replace");
GRAFT_KW(with, "with");
GRAFT_KW(reroute, "reroute");
GRAFT_KW(only, "only");
GRAFT_KW(except, "except");
GRAFT_KW(swap, "swap");
GRAFT_KW(erase, "erase");
GRAFT_KW(rename, "rename");
GRAFT_KW(to, "to");
GRAFT_KW(control, "control");
GRAFT_KW(uncontrol, "uncontrol");
GRAFT_KW(unset, "unset");
GRAFT_KW(device, "device");
GRAFT_KW(set, "set");
GRAFT_KW(and, "and");
GRAFT_KW(or, "or");
GRAFT_KW(not, "not");
GRAFT_KW(true, "true");
GRAFT_KW(false, "false");
GRAFT_KW(named, "named");
GRAFT_KW(input, "input");
GRAFT_KW(expect_ops, "expect_ops");
GRAFT_KW(expect_nodes, "expect_nodes");
GRAFT_KW(expect_no_nodes, "expect_no_nodes");
GRAFT_KW(no_match, "no_match");
GRAFT_KW(all_rules, "all_rules");
GRAFT_KW(expect_edges, "expect_edges");
GRAFT_KW(in, "in");
GRAFT_KW(clone, "clone");
GRAFT_KW(as, "as");
GRAFT_KW(splice, "splice");
GRAFT_KW(prefix, "prefix");
GRAFT_KW(fail, "fail");
GRAFT_KW(for, "for");
GRAFT_KW(require, "require");
GRAFT_KW(inputs, "inputs");
GRAFT_KW(take, "take");
GRAFT_KW(plan, "plan");
GRAFT_KW(pattern, "pattern");
GRAFT_KW(guard, "guard");
GRAFT_KW(fragment, "fragment");
GRAFT_KW(output, "output");
GRAFT_KW(order, "order");
GRAFT_KW(if, "if");
GRAFT_KW(then, "then");
GRAFT_KW(else, "else");
GRAFT_KW(shared, "shared");
#undef GRAFT_KW

struct lbrace : p::one<'{'> {};
struct rbrace : p::one<'}'> {};
struct lparen : p::one<'('> {};
struct rparen : p::one<')'> {};
struct rbracket : p::one<']'> {};
struct equals : p::one<'='> {};
struct colon : p::one<':'> {};
struct comma : p::one<','> {};
struct arrow : TAO_PEGTL_STRING("->") {};
struct dot : p::one<'.'> {};

// ---- expressions ----

struct expr;
struct bool_lit : p::sor<kw_true, kw_false> {};
struct number : p::sor<float_lit, int_lit> {};

struct call_close : rparen {};
struct call_args
    : p::seq<lparen, ws,
             p::opt<expr, ws, p::star<comma, ws, p::must<expr>, ws>>,
             p::must<call_close>> {};
struct attrs_kw : TAO_PEGTL_STRING("attrs") {};
struct spread_node : name {};
struct spread_dot : dot {};
struct attr_spread : p::seq<TAO_PEGTL_STRING(".."), p::must<spread_node>,
                            p::must<spread_dot>, p::must<attrs_kw>> {};
struct attr_colon : colon {};
struct attr_key : attr_ident {};
struct attr_set : p::seq<attr_key, ws, p::must<attr_colon>, ws, p::must<expr>> {
};
struct attr_item : p::sor<attr_spread, attr_set> {};
struct attr_close : rbrace {};
struct attr_block
    : p::seq<lbrace, ws,
             p::opt<attr_item, ws, p::star<comma, ws, p::must<attr_item>, ws>>,
             p::must<attr_close>> {};
struct name_template : p::seq<kw_named, ws, p::must<string_lit>> {};
struct op_kw : TAO_PEGTL_STRING("op") {};
struct matched_op : p::seq<name, dot, op_kw, p::at<ws, lparen>> {};
// `op(expr)(a, b)`: a node whose op an expression (a param) names.
struct op_name_close : rparen {};
struct named_op : p::seq<op_kw, ws, lparen, ws, p::must<expr>, ws,
                         p::must<op_name_close>, p::at<ws, lparen>> {};
struct create_head : p::sor<named_op, op_name, matched_op> {};
// `shared Op(...)`: an equal node the graph already has is read instead
// (every node the expression builds).
struct shared_mark : kw_shared {};
struct create_expr
    : p::seq<p::opt<shared_mark, ws>, create_head, ws, p::must<call_args>,
             p::opt<ws, attr_block>, p::opt<ws, name_template>> {};
struct qualified_name : p::seq<name, p::opt<dot, name>> {};
struct call_expr : p::seq<qualified_name, ws, p::at<lparen>, call_args> {};
struct list_expr
    : p::seq<p::one<'['>, ws,
             p::opt<expr, ws, p::star<comma, ws, p::must<expr>, ws>>,
             p::must<rbracket>> {};
// `[f(x) for x in xs]`: a list of one value per item (in a rewrite; it may
// create nodes).
struct comp_var : name {};
struct comp_in : kw_in {};
struct comp_close : rbracket {};
struct list_comp
    : p::seq<p::one<'['>, ws, expr, ws, kw_for, ws, p::must<comp_var>, ws,
             p::must<comp_in>, ws, p::must<expr>, ws, p::must<comp_close>> {};
struct paren_close : rparen {};
struct paren_expr
    : p::seq<lparen, ws, p::must<expr>, ws, p::must<paren_close>> {};
struct name_ref : name {};
// `if c then a else b`
struct if_then : kw_then {};
struct if_else : kw_else {};
struct if_expr
    : p::seq<kw_if, ws, p::must<expr>, ws, p::must<if_then>, ws, p::must<expr>,
             ws, p::must<if_else>, ws, p::must<expr>> {};
struct primary : p::sor<bool_lit, number, string_lit, list_comp, list_expr,
                        paren_expr, if_expr, create_expr, call_expr, name_ref> {
};
struct member_name : attr_ident {};
struct member : p::seq<dot, p::not_at<dot>, p::must<member_name>> {};
struct port_suffix : p::seq<colon, int_lit> {};
// `xs[i]`: a list's item (negative: from the end), or a clone's copy of a
// tensor.
struct index_close : rbracket {};
struct index_suffix
    : p::seq<p::one<'['>, ws, p::must<expr>, ws, p::must<index_close>> {};
struct postfix
    : p::seq<primary, p::star<p::sor<member, port_suffix, index_suffix>>> {};
struct neg_op : p::one<'-'> {};
struct unary : p::sor<p::seq<neg_op, ws, p::must<unary>>, postfix> {};
struct mul_op : p::sor<TAO_PEGTL_STRING("//"), p::one<'*', '/', '%'>> {};
struct mul_expr : p::seq<unary, p::star<ws, mul_op, ws, p::must<unary>>> {};
struct add_op
    : p::sor<p::one<'+'>, p::seq<p::one<'-'>, p::not_at<p::one<'>'>>>> {};
struct add_expr : p::seq<mul_expr, p::star<ws, add_op, ws, p::must<mul_expr>>> {
};
struct cmp_op : p::sor<TAO_PEGTL_STRING("=="), TAO_PEGTL_STRING("!="),
                       TAO_PEGTL_STRING("<="), TAO_PEGTL_STRING(">="),
                       p::one<'<'>, p::one<'>'>> {};
struct cmp_expr : p::seq<add_expr, p::opt<ws, cmp_op, ws, p::must<add_expr>>> {
};
struct not_op : kw_not {};
struct not_expr : p::sor<p::seq<not_op, ws, p::must<not_expr>>, cmp_expr> {};
struct and_op : kw_and {};
struct and_expr : p::seq<not_expr, p::star<ws, and_op, ws, p::must<not_expr>>> {
};
struct or_op : kw_or {};
struct or_expr : p::seq<and_expr, p::star<ws, or_op, ws, p::must<and_expr>>> {};
struct expr : or_expr {};

// ---- patterns ----

struct node_pattern;
struct alt_close : rparen {};
struct op_alt_list : p::seq<lparen, ws, p::must<op_name>, ws,
                            p::star<p::one<'|'>, ws, p::must<op_name>, ws>,
                            p::must<alt_close>> {};
struct op_alt : p::sor<op_alt_list, op_name, wildcard> {};
struct control_name : name {};
struct control_operand : p::seq<p::one<'^'>, p::must<control_name>> {};
struct variadic_operand : p::seq<name, TAO_PEGTL_STRING("...")> {};
struct wildcard_variadic : p::seq<p::one<'_'>, TAO_PEGTL_STRING("...")> {};
struct port_number : int_lit {};
struct bound_target : p::sor<port_number, node_pattern> {};
// (a name before `(` is a named pattern's call: a nested operand)
struct bound_operand : p::seq<name, p::not_at<p::one<'('>>,
                              p::opt<ws, colon, ws, p::must<bound_target>>> {};
struct wildcard_operand : wildcard {};
// `_: constant`: an anonymous input produced by a pattern (a named one, too).
struct anonymous_bound
    : p::seq<wildcard, ws, colon, ws, p::must<bound_target>> {};
// `..`: any number of inputs (`_(.., t, ..)` reads `t` at any position).
struct gap_operand : p::seq<TAO_PEGTL_STRING(".."), p::not_at<p::one<'.'>>> {};
struct nested_operand : p::seq<node_pattern> {};
// `Where?(IsNaN(p), z, ?p)`: the operand that stands in for an optional node
// when it is absent (by default its first).
struct stand_in_mark : p::one<'?'> {};
struct operand
    : p::seq<p::opt<stand_in_mark>,
             p::sor<control_operand, variadic_operand, wildcard_variadic,
                    gap_operand, anonymous_bound, wildcard_operand,
                    bound_operand, nested_operand>> {};
struct operand_close : rparen {};
struct operand_list
    : p::seq<lparen, ws,
             p::opt<operand, ws, p::star<comma, ws, p::must<operand>, ws>>,
             p::must<operand_close>> {};
// `BiasAdd?(conv, b)`: the node may be absent (its first operand, or the one
// marked `?`, stands in).
struct optional_mark : p::one<'?'> {};
// A named pattern (`pattern name = ...`) used in its place.
struct pattern_ref : p::seq<name, p::not_at<p::one<'('>>> {};
// A named pattern with parameters, called with the rule's names
// (`repeated(kh)`; `_` for one the rule does not name).
struct pattern_call_name : name {};
struct pattern_arg : p::sor<p::seq<p::one<'_'>, p::not_at<ident_rest>>, name> {
};
struct pattern_args_close : rparen {};
struct pattern_call
    : p::seq<
          pattern_call_name, lparen, ws,
          p::opt<pattern_arg, ws, p::star<comma, ws, p::must<pattern_arg>, ws>>,
          p::must<pattern_args_close>> {};
struct node_pattern
    : p::sor<p::seq<op_alt, p::opt<optional_mark>, p::opt<ws, operand_list>>,
             pattern_call, pattern_ref> {};
struct pattern_equals : equals {};
struct pattern_stmt
    : p::seq<name, ws, p::must<pattern_equals>, ws, p::must<node_pattern>> {};
struct where_clause : p::seq<kw_where, ws, p::must<expr>> {};
// `for t in plan`: the rule matches once per item of a plan.
struct for_var : name {};
struct for_in : kw_in {};
struct for_source : name {};
struct for_clause : p::seq<kw_for, ws, p::must<for_var>, ws, p::must<for_in>,
                           ws, p::must<for_source>> {};
// `let name = expr`: a value the `where`s and the rewrite read by name.
struct let_action;
struct match_item : p::sor<where_clause, for_clause, let_action, pattern_stmt> {};
struct match_open : lbrace {};
struct match_close : rbrace {};
struct match_block : p::seq<kw_match, ws, p::must<match_open>, ws,
                            p::star<match_item, ws>, p::must<match_close>> {};

// ---- rewrites ----

struct set_open : lbrace {};
struct set_close : rbrace {};
struct set_member : expr {};
struct name_set
    : p::seq<
          p::must<set_open>, ws,
          p::opt<set_member, ws, p::star<comma, ws, p::must<set_member>, ws>>,
          p::must<set_close>> {};
struct filter_only : kw_only {};
struct filter_except : kw_except {};
struct let_name : name {};
struct let_equals : equals {};
struct node_ref : name {};
// Nodes an action takes: a name, a list, a hook call.
struct nodes_arg : expr {};
struct nodes_arg2 : expr {};
struct set_attr : attr_ident {};
struct set_dot : dot {};
struct set_equals : equals {};
struct reroute_arrow : arrow {};
struct edge_arrow : arrow {};
struct swap_comma : comma {};
struct action;
struct let_action : p::seq<kw_let, ws, p::must<let_name>, ws,
                           p::must<let_equals>, ws, p::must<expr>> {};
struct replace_action : p::seq<kw_replace, ws, p::must<expr>, ws,
                               p::must<kw_with>, ws, p::must<expr>> {};
struct reroute_action : p::seq<kw_reroute, ws, p::must<expr>, ws,
                               p::must<reroute_arrow>, ws, p::must<expr>,
                               p::opt<ws, p::sor<filter_only, filter_except>,
                                      ws, p::opt<kw_in, ws>, name_set>> {};
struct swap_action : p::seq<kw_swap, ws, p::must<expr>, ws, p::must<swap_comma>,
                            ws, p::must<expr>,
                            p::opt<ws, p::sor<filter_only, filter_except>, ws,
                                   p::opt<kw_in, ws>, name_set>> {};
struct erase_action : p::seq<kw_erase, ws, p::must<nodes_arg>> {};
struct rename_action : p::seq<kw_rename, ws, p::must<node_ref>, ws,
                              p::must<kw_to>, ws, p::must<expr>> {};
struct control_action : p::seq<kw_control, ws, p::must<nodes_arg>, ws,
                               p::must<edge_arrow>, ws, p::must<nodes_arg2>> {};
struct uncontrol_action : p::seq<kw_uncontrol, ws, p::must<nodes_arg>, ws,
                                 p::must<edge_arrow>, ws, p::must<nodes_arg2>> {
};
struct device_value : expr {};
struct device_action
    : p::seq<kw_device, ws, p::must<nodes_arg>, ws, p::must<device_value>> {};
// n.attr, or n[expr]: an attr whose name an expression (a param) gives.
struct attr_name_expr : expr {};
struct attr_index_open : p::one<'['> {};
struct attr_index_close : p::one<']'> {};
struct attr_target : p::sor<p::seq<set_dot, p::must<set_attr>>,
                            p::seq<attr_index_open, ws, p::must<attr_name_expr>,
                                   ws, p::must<attr_index_close>>> {};
struct set_action : p::seq<kw_set, ws, p::must<node_ref>, p::must<attr_target>,
                           ws, p::must<set_equals>, ws, p::must<expr>> {};
struct unset_action
    : p::seq<kw_unset, ws, p::must<node_ref>, p::must<attr_target>> {};
struct clone_src : expr {};
struct clone_dst : name {};
struct clone_as : kw_as {};
struct pair_arrow : arrow {};
struct tensor_pair : p::seq<expr, ws, p::must<pair_arrow>, ws, p::must<expr>> {
};
struct map_open : lbrace {};
struct map_close : rbrace {};
struct tensor_map
    : p::seq<
          p::must<map_open>, ws,
          p::opt<tensor_pair, ws, p::star<comma, ws, p::must<tensor_pair>, ws>>,
          p::must<map_close>> {};
struct clone_action
    : p::seq<kw_clone, ws, p::must<clone_src>, ws,
             p::star<comma, ws, p::must<clone_src>, ws>, p::must<clone_as>, ws,
             p::must<clone_dst>, p::star<ws, comma, ws, p::must<clone_dst>>,
             p::opt<ws, name_template>, p::opt<ws, kw_with, ws, tensor_map>> {};
struct splice_path : string_lit {};
struct splice_prefix : string_lit {};
struct splice_input
    : p::seq<string_lit, ws, p::must<attr_colon>, ws, p::must<expr>> {};
struct take_name : name {};
struct splice_take
    : p::seq<take_name, ws, p::must<attr_colon>, ws, p::must<string_lit>> {};
struct splice_inputs
    : p::seq<kw_inputs, ws, p::must<map_open>, ws,
             p::opt<splice_input, ws,
                    p::star<comma, ws, p::must<splice_input>, ws>>,
             p::must<map_close>> {};
struct splice_takes
    : p::seq<
          kw_take, ws, p::must<map_open>, ws,
          p::opt<splice_take, ws, p::star<comma, ws, p::must<splice_take>, ws>>,
          p::must<map_close>> {};
struct splice_param : name {};
struct splice_source : p::sor<splice_path, splice_param> {};
struct splice_root : string_lit {};
struct splice_action
    : p::seq<kw_splice, ws, p::must<splice_source>,
             p::opt<ws, kw_for, ws, p::must<splice_root>>,
             p::opt<ws, kw_prefix, ws, p::must<splice_prefix>>,
             p::opt<ws, splice_inputs>, p::opt<ws, splice_takes>> {};
struct fail_message : expr {};
struct fail_action : p::seq<kw_fail, ws, p::must<fail_message>> {};
struct assign_action : p::seq<name, ws, equals, ws, p::must<expr>> {};
// `for r in readers(t) { ... }`: the actions once per item of a list.
struct rewrite_for_var : name {};
struct rewrite_for_in : kw_in {};
struct rewrite_for_open : lbrace {};
struct rewrite_for_close : rbrace {};
struct for_action
    : p::seq<kw_for, ws, p::must<rewrite_for_var>, ws, p::must<rewrite_for_in>,
             ws, p::must<expr>, ws, p::must<rewrite_for_open>, ws,
             p::star<action, ws>, p::must<rewrite_for_close>> {};
struct action
    : p::sor<let_action, for_action, replace_action, reroute_action,
             swap_action, erase_action, rename_action, control_action,
             uncontrol_action, device_action, set_action, unset_action,
             clone_action, splice_action, fail_action, assign_action> {};
struct rewrite_open : lbrace {};
struct rewrite_close : rbrace {};
struct rewrite_block : p::seq<kw_rewrite, ws, p::must<rewrite_open>, ws,
                              p::star<action, ws>, p::must<rewrite_close>> {};

// ---- tests inside rule files ----

struct count_colon : colon {};
struct count_value : int_lit {};
struct op_count
    : p::seq<op_name, ws, p::must<count_colon>, ws, p::must<count_value>> {};
struct counts_open : lbrace {};
struct counts_close : rbrace {};
struct expect_ops_item
    : p::seq<kw_expect_ops, ws, p::must<counts_open>, ws,
             p::opt<op_count, ws, p::star<comma, ws, p::must<op_count>, ws>>,
             p::must<counts_close>> {};
struct list_open : lbrace {};
struct list_close : rbrace {};
struct string_list
    : p::seq<
          list_open, ws,
          p::opt<string_lit, ws, p::star<comma, ws, p::must<string_lit>, ws>>,
          p::must<list_close>> {};
struct expect_nodes_item : p::seq<kw_expect_nodes, ws, p::must<string_list>> {};
struct expect_no_nodes_item
    : p::seq<kw_expect_no_nodes, ws, p::must<string_list>> {};
struct edge_arrow2 : arrow {};
struct edge_item
    : p::seq<string_lit, ws, p::must<edge_arrow2>, ws, p::must<string_lit>> {};
struct expect_edges_item
    : p::seq<kw_expect_edges, ws, p::must<list_open>, ws,
             p::opt<edge_item, ws, p::star<comma, ws, p::must<edge_item>, ws>>,
             p::must<list_close>> {};
struct input_item : p::seq<kw_input, ws, p::must<string_lit>> {};
struct no_match_item : kw_no_match {};
// `all_rules`: the test applies every rule of the set, not only its own.
struct all_rules_item : kw_all_rules {};
// `param bits = 4`: the test compiles the file with this param's value.
struct test_param_name : name {};
struct test_param_equals : equals {};
struct test_param_value
    : p::sor<string_lit, p::seq<p::opt<p::one<'-'>>, number>, kw_true,
             kw_false> {};
struct test_param_item
    : p::seq<kw_param, ws, p::must<test_param_name>, ws,
             p::must<test_param_equals>, ws, p::must<test_param_value>> {};
struct test_item
    : p::sor<input_item, test_param_item, expect_ops_item, expect_nodes_item,
             expect_no_nodes_item, expect_edges_item, no_match_item,
             all_rules_item> {};
struct test_open : lbrace {};
struct test_close : rbrace {};
struct test_block
    : p::seq<kw_test, ws, p::must<string_lit>, ws, p::must<test_open>, ws,
             p::star<test_item, ws>, p::must<test_close>> {};

// ---- files ----

struct doc_item : p::seq<kw_doc, ws, p::must<string_lit>> {};
struct priority_value : p::seq<p::opt<p::one<'-'>>, int_lit> {};
struct priority_item : p::seq<kw_priority, ws, p::must<priority_value>> {};
struct rule_item
    : p::sor<doc_item, priority_item, match_block, rewrite_block, test_block> {
};
struct rule_name : name {};
struct rule_open : lbrace {};
struct rule_close : rbrace {};
struct rule_decl
    : p::seq<kw_rule, ws, p::must<rule_name>, ws, p::must<rule_open>, ws,
             p::star<rule_item, ws>, p::must<rule_close>> {};
struct type_name
    : p::sor<TAO_PEGTL_KEYWORD("int"), TAO_PEGTL_KEYWORD("float"),
             TAO_PEGTL_KEYWORD("bool"), TAO_PEGTL_KEYWORD("string"),
             TAO_PEGTL_KEYWORD("ranges"), TAO_PEGTL_KEYWORD("graph")> {};
struct param_name : name {};
struct param_colon : colon {};
struct default_value : p::seq<equals, ws, p::must<expr>> {};
struct range_bound : p::seq<p::opt<p::one<'-'>>, number> {};
struct range_dots : TAO_PEGTL_STRING("..") {};
struct param_range : p::seq<kw_in, ws, p::must<range_bound>, ws,
                            p::must<range_dots>, ws, p::must<range_bound>> {};
struct param_decl : p::seq<kw_param, ws, p::must<param_name>, ws,
                           p::must<param_colon>, ws, p::must<type_name>,
                           p::opt<ws, default_value>, p::opt<ws, param_range>> {
};
struct import_decl : p::seq<kw_import, ws, p::must<string_lit>> {};
// `dialect onnx`: the rules are for that dialect's graphs (default
// tensorflow); ops and attrs are checked against its op schemas.
struct dialect_name : name {};
struct dialect_decl : p::seq<kw_dialect, ws, p::must<dialect_name>> {};
struct require_decl : p::seq<kw_require, ws, p::must<expr>> {};
// `plan name = expr`: computed once per graph, before any rule runs.
struct plan_name : name {};
struct plan_equals : equals {};
struct plan_decl : p::seq<kw_plan, ws, p::must<plan_name>, ws,
                          p::must<plan_equals>, ws, p::must<expr>> {};
// `pattern name = Op(...)`: a pattern piece that rules use by name;
// `pattern name(a, b) = r: Op(...) where expr`: one with parameters, its
// other names its own at each use, its root named `r` for its `where`.
struct pattern_def_name : name {};
struct pattern_param : name {};
struct pattern_params_close : rparen {};
struct pattern_params
    : p::seq<lparen, ws,
             p::opt<pattern_param, ws,
                    p::star<comma, ws, p::must<pattern_param>, ws>>,
             p::must<pattern_params_close>> {};
struct pattern_root : name {};
struct pattern_where : p::seq<kw_where, ws, p::must<expr>> {};
// `pattern name(a) = x(a) | y(a)`: alternatives, one of which matches (a
// declaration's keyword is not one: `|` then a new line's `rule`).
struct pattern_or : p::one<'|'> {};
struct top_keyword
    : p::sor<kw_import, kw_dialect, kw_param, kw_require, kw_plan, kw_pattern,
             kw_guard, kw_fragment, kw_output, kw_rule> {};
struct or_alternative : p::seq<p::not_at<top_keyword>, node_pattern> {};
struct pattern_decl
    : p::seq<kw_pattern, ws, p::must<pattern_def_name>, ws,
             p::opt<pattern_params, ws>, p::must<pattern_equals>, ws,
             p::opt<pattern_root, ws, colon, ws>, p::must<node_pattern>,
             p::star<ws, pattern_or, ws, p::must<or_alternative>>,
             p::opt<ws, pattern_where>> {};
// `guard name(a, b) = expr`: a named guard that `where`s, `let`s and
// rewrites call as a function; inlined, its parameters replaced by the
// call's arguments. `fragment name(a) = expr`: the same for an expression
// that builds nodes (rewrites only).
struct fragment_mark : kw_fragment {};
struct guard_name : name {};
struct guard_param : name {};
struct guard_params_close : rparen {};
struct guard_params
    : p::seq<lparen, ws,
             p::opt<guard_param, ws,
                    p::star<comma, ws, p::must<guard_param>, ws>>,
             p::must<guard_params_close>> {};
struct guard_equals : equals {};
struct guard_decl : p::seq<p::sor<kw_guard, fragment_mark>, ws,
                           p::must<guard_name>, ws, p::must<guard_params>, ws,
                           p::must<guard_equals>, ws, p::must<expr>> {};
// `output order expr`: the graph the rules leave is written with these
// nodes first, in this order (sort_by_execution_order).
struct output_order_kw : kw_order {};
struct output_order_decl
    : p::seq<kw_output, ws, p::must<output_order_kw>, ws, p::must<expr>> {};
struct top_item : p::sor<import_decl, dialect_decl, param_decl, require_decl, plan_decl,
                         pattern_decl, guard_decl, output_order_decl, rule_decl> {};
// One top-level item; the parser loops so that it can report an error per
// item and go on.
struct item : p::seq<p::must<top_item>, ws> {};

}  // namespace graft::dsl::grammar

#endif  // GRAFT_DSL_GRAMMAR_H_
