#include "dsl/compiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "analysis/hooks.h"
#include "builtins/builtins.h"
#include "dialects/graph_io.h"
#include "dsl/evaluator.h"
#include "dsl/parser.h"
#include "engine/test_graphs.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace graft::dsl {
namespace {

struct DiagnosticCase {
  const char* name;
  const char* source;
  int line;
  int col;
  const char* message;
};

// Each case: a rule file with one mistake, and the first error it gives.
const DiagnosticCase kCases[] = {
    {"missing_rule_name", "rule {\n}\n", 1, 6,
     "expected a rule name (lowercase, as in `rule fold_bn {`)"},
    {"missing_rule_brace", "rule a\n  match {}\n", 2, 3,
     "expected `{` after the rule name"},
    {"bad_rule_item", "rule a {\n  mathc { }\n}\n", 2, 3,
     "expected `doc`, `priority`, `match`, `rewrite`, `test` or `}` in the "
     "rule"},
    {"bad_top_level", "rul a {}\n", 1, 1,
     "expected `rule`, `pattern`, `guard`, `fragment`, `param`, `plan`, "
     "`require` or `import`"},
    {"unterminated_string", "rule a {\n  doc \"oops\n}\n", 2, 12,
     "unterminated string: expected `\"`"},
    {"missing_pattern_equals", "rule a {\n  match { x Relu(y) }\n}\n", 2, 13,
     "expected `=` after the pattern name (as in `conv = Conv2D(x, w)`)"},
    {"lowercase_op",
     "rule a {\n  match { x = relu(y) }\n  rewrite { erase x }\n}\n", 2, 15,
     "unknown pattern `relu` (ops start with a capital letter)"},
    {"lowercase_op_with_a_pattern_operand",
     "rule a {\n  match { x = relu(Relu(y)) }\n}\n", 2, 20,
     "expected a name, `_`, `,` or `)`: a named pattern's arguments are names "
     "or `_` (ops start with a capital letter)"},
    {"unclosed_operands", "rule a {\n  match { x = Relu(y }\n}\n", 2, 22,
     "expected `,` or `)` in the operand list"},
    {"bad_alternation", "rule a {\n  match { x = (Relu | )(y) }\n}\n", 2, 23,
     "expected an op name (ops start with a capital letter)"},
    {"bad_match_item", "rule a {\n  match { 3 }\n}\n", 2, 11,
     "expected a pattern (`name = Op(...)`), `where`, `let` or `}` in the "
     "match block"},
    {"missing_where_expr", "rule a {\n  match { x = Relu(_) where }\n}\n", 2,
     29, "expected an expression"},
    {"replace_without_with",
     "rule a {\n  match { x = Relu(_) }\n  rewrite { replace x by x }\n}\n", 3,
     23, "expected `with` (as in `replace bn with out`)"},
    {"bad_action",
     "rule a {\n  match { x = Relu(_) }\n  rewrite { delete x }\n}\n", 3, 13,
     "expected an action (`let`, `replace`, `reroute`, `swap`, `erase`, "
     "`rename`, `control`, "
     "`uncontrol`, `device`, `set`, `clone`, `splice`, `fail`, `name = "
     "Op(...)`) or `}`"},
    {"fail_without_message",
     "rule a {\n  match { x = Relu(_) }\n  rewrite { fail }\n}\n", 3, 18,
     "expected the error message (a string) after `fail`"},
    {"fail_with_a_number",
     "rule a {\n  match { x = Relu(_) }\n  rewrite { fail 3 }\n}\n", 3, 18,
     "expected the message, a string, not an int"},
    {"too_many_walk_args",
     "rule a {\n  match { c = Relu(_) where len(forward_walk(c, true, [], [], "
     "false, 1)) > 0 }\n  rewrite { erase c }\n}\n",
     2, 33, "`forward_walk` takes 1 to 5 argument(s), got 6"},
    {"ranges_default_not_a_path", "param r: ranges = 3\n", 1, 19,
     "the default of `r` is not a ranges"},
    {"reroute_without_arrow",
     "rule a {\n  match { x = Relu(_) }\n  rewrite { reroute x x }\n}\n", 3, 23,
     "expected `->` (as in `reroute t -> u`)"},
    {"bad_param_type", "param bits: integer = 8\n", 1, 13,
     "expected a param type: `int`, `float`, `bool`, `string`, `ranges` or "
     "`graph`"},
    {"unknown_op",
     "rule a {\n  match { c = Conv2d(_, _) }\n  rewrite { erase c }\n}\n", 2,
     15, "unknown op `Conv2d`"},
    {"unknown_name",
     "rule a {\n  match { c = Relu(_) where d.T == \"float32\" }\n  rewrite { "
     "erase c }\n}\n",
     2, 29, "unknown name `d`"},
    {"unused_binding",
     "rule a {\n  match { c = Relu(x) }\n  rewrite { erase c }\n}\n", 2, 20,
     "`x` is bound but never used; write `_` to match any input"},
    {"unused_let",
     "rule a {\n  match { c = Relu(_) }\n  rewrite {\n    let k = 2\n    erase "
     "c\n  }\n}\n",
     4, 9, "`k` is never used"},
    {"unknown_function",
     "rule a {\n  match { c = Relu(_) where usess(c) == 1 }\n  rewrite { erase "
     "c }\n}\n",
     2, 29, "unknown function `usess`"},
    {"wrong_arity",
     "rule a {\n  match { c = Relu(_) where uses(c, c) == 1 }\n  rewrite { "
     "erase c }\n}\n",
     2, 29, "`uses` takes 1 argument(s), got 2"},
    {"wrong_argument_type",
     "rule a {\n  match { c = Relu(_) where name_matches(c, 3) }\n  rewrite { "
     "erase c }\n}\n",
     2, 45, "argument 2 of `name_matches` must be a regex, not an int"},
    // Regexes compile with the rules: a bad one is an error at its text.
    {"bad_regex",
     "rule a {\n  match { c = Relu(_) where name_matches(c, \"m[\") }\n  "
     "rewrite { erase c }\n}\n",
     2, 45, "bad regex `m[`"},
    {"bad_regex_param",
     "param pattern: string = \"(\"\nrule a {\n  match { c = Relu(_) where "
     "scope_matches(c, pattern) }\n  rewrite { erase c }\n}\n",
     3, 46, "bad regex `(`"},
    {"set_op",
     "rule a {\n  match { c = Relu(_) }\n  rewrite { set c.op = \"Tanh\" "
     "}\n}\n",
     3, 19,
     "`set n.op` cannot change a node's op: create the node you want (`out = "
     "NewOp(...) { ..n.attrs }`) and `replace n with out`"},
    {"set_name",
     "rule a {\n  match { c = Relu(_) }\n  rewrite { set c.name = \"x\" }\n}\n",
     3, 19, "`name` is not an attr: use `rename n to \"...\"`"},
    {"self_operand",
     "rule a {\n  match { c = Relu(c) }\n  rewrite { erase c }\n}\n", 2, 20,
     "`c` is its own operand: a node cannot read itself"},
    {"compare_int_with_string",
     "rule a {\n  match { c = Relu(_) where uses(c) == \"one\" }\n  rewrite { "
     "erase c }\n}\n",
     2, 37, "cannot compare an int with a string"},
    {"order_lists",
     "rule a {\n  match { c = Relu(_) where [1, 2] < [3] }\n  rewrite { "
     "erase c }\n}\n",
     2, 36, "cannot order a list with a list"},
    {"create_unknown_attr",
     "rule a {\n  match { c = Relu(x) }\n  rewrite {\n    out = Tanh(x) { "
     "colour: 1 }\n    replace c with out\n  }\n}\n",
     4, 21, "`Tanh` has no attr `colour`"},
    {"unknown_op_in_an_op_list",
     "rule a {\n  match { c = Relu(x) where consumed_by(x, \"Neg|Relu7\") }\n"
     "  rewrite { erase c }\n}\n",
     2, 44, "unknown op `Relu7`"},
    {"op_glob_matching_nothing",
     "param waits: string = \"MatMul|Conv9*\"\nrule a {\n  match { c = Relu(x) "
     "where len(filter_ops(readers(x), waits)) > 0 }\n  rewrite { erase c "
     "}\n}\n",
     3, 56,
     "`Conv9*` (param `waits`) matches no op of the tensorflow registry"},
    {"duplicate_rule",
     "rule a {\n  match { c = Relu(_) }\n  rewrite { erase c }\n}\nrule a {\n  "
     "match { c = Relu(_) }\n  rewrite { erase c }\n}\n",
     5, 1, "duplicate rule `a`"},
    {"ill_typed_param_default", "param bits: int = \"eight\"\n", 1, 19,
     "the default of `bits` is not an int"},
    {"two_roots",
     "rule a {\n  match {\n    b = Relu(x)\n    c = Tanh(x)\n  }\n  rewrite { "
     "erase b erase c }\n}\n",
     2, 3,
     "the pattern has 2 roots (`b`, `c`); connect them, or split the rule"},
    {"no_rewrite", "rule a {\n  match { c = Relu(_) }\n}\n", 1, 1,
     "rule `a` has no `rewrite` block"},
    {"constant_as_input",
     "rule a {\n  match { c = Relu(x) }\n  rewrite {\n    n = Neg(2.0)\n    "
     "replace c with n\n    erase x\n  }\n}\n",
     4, 13, "a constant is not a tensor; wrap it in `Const(...)`"},
    {"port_of_free_name",
     "rule a {\n  match { c = Relu(y:1) }\n  rewrite { erase c }\n}\n", 2, 20,
     "`y:1` needs `y` to be a pattern of this match"},
    {"port_of_a_number",
     "rule a {\n  match { c = Relu(_) where uses(0.0:05) == 1 }\n  rewrite { "
     "erase c }\n}\n",
     2, 34, "`:5` takes a node's output, not of a float"},
    {"unknown_import", "import \"nowhere.graft\"\n", 1, 1,
     "cannot import `nowhere.graft`: no such file"},
    {"guard_not_bool",
     "rule a {\n  match { c = Relu(_) where uses(c) }\n  rewrite { erase c "
     "}\n}\n",
     2, 29, "`where` needs a bool, not an int"},
    {"param_default_out_of_range",
     "param bits: int = 20 in 2..16\nrule a {\n  match { c = Relu(_) where "
     "bits > 1 }\n  rewrite { erase c }\n}\n",
     1, 1, "param `bits`: 20 is outside 2..16"},
    {"range_on_a_string_param",
     "param s: string = \"a\" in 1..2\nrule a {\n  match { c = Relu(_) where s "
     "== \"a\" }\n  rewrite { erase c }\n}\n",
     1, 23, "only int and float params have a range"},
    {"node_action_on_let",
     "rule a {\n  match { c = Relu(_) }\n  rewrite {\n    let k = 2\n    erase "
     "k\n    erase c\n  }\n}\n",
     5, 11, "expected a node or a list of nodes, not an int"},
    // ---- whole-graph forms ----
    {"index_on_a_number",
     "rule a {\n  match { c = Relu(_) where 3[0] == 1 }\n  rewrite { erase c "
     "}\n}\n",
     2, 30, "`[...]` needs a list or a set clone's copies, not an int"},
    {"list_index_not_int",
     "rule a {\n  match { c = Relu(_) where [1, 2][\"x\"] == 1 }\n  rewrite "
     "{ erase c }\n}\n",
     2, 36, "a list's index is an int, not a string"},
    {"index_out_of_range",
     "rule a {\n  match { c = Relu(_) where [1, 2][-3] == 1 }\n  rewrite { "
     "erase c }\n}\n",
     2, 36, "index -3 is out of range for a list of 2 item(s)"},
    {"modulo_of_a_string",
     "rule a {\n  match { c = Relu(_) where c.name % 2 == 1 }\n  rewrite { "
     "erase c }\n}\n",
     2, 36, "`%` needs numbers, not a string"},
    {"if_needs_a_bool",
     "rule a {\n  match { c = Relu(_) where (if 1 then true else false) }\n"
     "  rewrite { erase c }\n}\n",
     2, 33, "`if` needs a bool, not an int"},
    {"if_without_else",
     "rule a {\n  match { c = Relu(_) where if true then true }\n  rewrite "
     "{ erase c }\n}\n",
     2, 47, "expected `else` (as in `if c then a else b`)"},
    {"for_over_a_param",
     "param p: int = 1\nrule a {\n  match { for t in p where p == 1 }\n  "
     "rewrite { erase t }\n}\n",
     3, 11, "`for` iterates a plan; `p` is not one"},
    {"for_over_a_number_plan",
     "plan n = 3\nrule a {\n  match { for t in n }\n  rewrite { erase t "
     "}\n}\n",
     3, 11, "`for` iterates a list; plan `n` is an int"},
    {"for_var_not_in_pattern",
     "plan xs = filter_ops(forward_walk([]), \"Relu\")\nrule a {\n  match "
     "{\n    for t in xs\n    c = Relu(_)\n  }\n  rewrite { erase c }\n}\n",
     4, 5,
     "the pattern must bind `t` (as a pattern or an operand): the rule is "
     "anchored on the pattern's root; or leave the match to `for` and "
     "`where` alone"},
    {"plan_never_used", "plan n = 3\n", 1, 1, "plan `n` is never used"},
    {"plan_hides_param", "param n: int = 1\nplan n = 3\n", 2, 1,
     "`n` is already a param"},
    {"gap_needs_one_operand",
     "rule a {\n  match { c = AddN(.., x, y, ..) }\n  rewrite { erase c "
     "}\n}\n",
     2, 15,
     "`..` goes on both sides of one operand: `Op(.., t, ..)` reads `t` at "
     "any input position"},
    {"set_clone_names_one_lookup",
     "rule a {\n  match { c = Relu(_) }\n  rewrite {\n    clone "
     "forward_walk(c) as x, y\n  }\n}\n",
     4, 5,
     "`clone` of a set names one lookup for its copies (as in `clone seg as "
     "copies`, then `copies[t]`)"},
    {"clone_template_without_node",
     "rule a {\n  match { c = Relu(_) }\n  rewrite {\n    clone c as d "
     "named \"x\"\n    erase d\n  }\n}\n",
     4, 5,
     "a clone's name template needs `{node}` (the original's name), as in "
     "`named \"{node}/recompute\"`"},
    {"copies_index_by_number",
     "rule a {\n  match { c = Relu(_) }\n  rewrite {\n    clone "
     "forward_walk(c) as cs\n    erase cs[0]\n  }\n}\n",
     5, 14, "copies are looked up by a tensor or a list of them, not an int"},
    {"op_name_not_a_string",
     "rule a {\n  match { c = Relu(x) }\n  rewrite {\n    m = op(1)(x)\n    "
     "replace c with m\n  }\n}\n",
     4, 12, "expected the op's name, a string, not an int"},
    {"op_name_unclosed",
     "rule a {\n  match { c = Relu(x) }\n  rewrite { m = op(\"Neg\" (x) }\n}\n",
     3, 26, "expected `)` after the op's name in `op(...)`"},
    {"output_order_not_a_list", "output order 3\n", 1, 14,
     "`output order` needs a list of nodes, not an int"},
    {"output_order_without_order", "output execution_order()\n", 1, 8,
     "expected `order` and the nodes' order after `output` (as in "
     "`output order execution_order()`)"},
    {"rewrite_for_not_a_list",
     "rule a {\n  match { c = Relu(_) }\n  rewrite {\n    for r in 3 { erase r "
     "}\n    erase c\n  }\n}\n",
     4, 14, "`for` iterates a list, not an int"},
    {"rewrite_for_without_in",
     "rule a {\n  match { c = Relu(x) }\n  rewrite { for r readers(c) { } "
     "}\n}\n",
     3, 19, "expected `in` and a list (as in `for r in readers(t) { ... }`)"},
    {"comprehension_in_a_guard",
     "rule a {\n  match { c = Relu(x) where len([t for t in [x]]) == 1 }\n"
     "  rewrite { erase c }\n}\n",
     2, 33, "`[... for x in xs]` is for rewrites"},
    {"unknown_named_pattern",
     "rule a {\n  match { c = weighted }\n  rewrite { erase c }\n}\n", 2, 15,
     "unknown pattern `weighted` (ops start with a capital letter)"},
    {"named_pattern_uses_itself",
     "pattern p = Relu(_: p)\nrule a {\n  match { c = p }\n  rewrite { "
     "erase c }\n}\n",
     1, 21, "pattern `p` uses itself"},
    {"guard_reads_a_rule_name",
     "guard g(t) = uses(t) == uses(c)\nrule a {\n  match { c = Relu(x) where "
     "g(x) }\n  rewrite { erase c }\n}\n",
     1, 30,
     "guard `g` reads `c`, which is none of its parameters (a guard reads its "
     "parameters, params and plans)"},
    {"guard_argument_count",
     "guard g(t, u) = uses(t) == uses(u)\nrule a {\n  match { c = Relu(x) "
     "where g(x) }\n  rewrite { erase c }\n}\n",
     3, 29, "guard `g` takes 2 argument(s), got 1"},
    {"guard_calls_itself",
     "guard g(t) = g(t)\nrule a {\n  match { c = Relu(x) where g(x) }\n  "
     "rewrite { erase c }\n}\n",
     1, 14, "guard `g` calls itself"},
    {"guard_parameter_never_read",
     "guard g(t, u) = uses(t) == 1\nrule a {\n  match { c = Relu(x) where g(x, "
     "c) }\n  "
     "rewrite { erase c }\n}\n",
     1, 12, "guard `g` never reads its parameter `u`"},
    {"guards_doubling_past_the_bound",
     "guard g0(t) = uses(t) == 1\n"
     "guard g1(t) = g0(t) and g0(t)\nguard g2(t) = g1(t) and g1(t)\n"
     "guard g3(t) = g2(t) and g2(t)\nguard g4(t) = g3(t) and g3(t)\n"
     "guard g5(t) = g4(t) and g4(t)\nguard g6(t) = g5(t) and g5(t)\n"
     "guard g7(t) = g6(t) and g6(t)\nguard g8(t) = g7(t) and g7(t)\n"
     "guard g9(t) = g8(t) and g8(t)\nguard ga(t) = g9(t) and g9(t)\n"
     "guard gb(t) = ga(t) and ga(t)\nguard gc(t) = gb(t) and gb(t)\n"
     "guard gd(t) = gc(t) and gc(t)\nguard ge(t) = gd(t) and gd(t)\n"
     "guard gf(t) = ge(t) and ge(t)\nguard gg(t) = gf(t) and gf(t)\n"
     "guard gh(t) = gg(t) and gg(t)\nguard gi(t) = gh(t) and gh(t)\n"
     "rule a {\n  match { c = Relu(x) where gi(x) }\n  rewrite { erase c "
     "}\n}\n",
     21, 29,
     "guard `gi` inlines too much: guards nest at most 32 deep and inline at "
     "most 100000 "
     "expression nodes in all"},
    {"guard_never_used",
     "guard g(t) = uses(t) == 1\nrule a {\n  match { c = Relu(_) }\n  "
     "rewrite { erase c }\n}\n",
     1, 1, "guard `g` is never used"},
    {"guard_with_a_builtin_name",
     "guard uses(t) = 1\nrule a {\n  match { c = Relu(x) where uses(x) == 1 "
     "}\n  rewrite { erase c }\n}\n",
     1, 1, "guard `uses` has a builtin's name"},
    {"guard_without_parameters_list", "guard g = 1\n", 1, 9,
     "expected `(` and the parameters (as in `guard small(t) = "
     "bytes(t) < 1024`)"},
    {"guard_that_builds_nodes",
     "guard g(t) = Tanh(t)\nrule a {\n  match { c = Relu(x) }\n"
     "  rewrite {\n    o = g(x)\n    replace c with o\n  }\n}\n",
     1, 1,
     "guard `g` builds nodes: declare it `fragment` (a guard only computes a "
     "value)"},
    {"fragment_that_builds_none",
     "fragment f(t) = uses(t) == 1\nrule a {\n  match { c = Relu(x) where f(x) "
     "}\n"
     "  rewrite { erase c }\n}\n",
     1, 1, "fragment `f` builds no nodes: declare it `guard`"},
    {"guard_that_calls_a_fragment",
     "fragment f(t) = Tanh(t)\nguard g(t) = f(t)\nrule a {\n  match { c = "
     "Relu(x) }\n"
     "  rewrite {\n    o = g(x)\n    replace c with o\n  }\n}\n",
     2, 1,
     "guard `g` builds nodes: declare it `fragment` (a guard only computes a "
     "value)"},
    {"fragment_argument_built_at_each_read",
     "fragment twice(a) = Add(a, a)\nrule a {\n  match { c = Relu(x) }\n"
     "  rewrite {\n    o = twice(Tanh(x))\n    replace c with o\n  }\n}\n",
     5, 15,
     "fragment `twice` reads `a` more than once, and its argument builds "
     "nodes: each "
     "read would build them again (name the node first, or make it `shared`)"},
    {"shared_node_in_a_guard",
     "rule a {\n  match { c = Relu(x) where uses(shared Tanh(x)) > 0 }\n"
     "  rewrite { erase c }\n}\n",
     2, 34, "a guard cannot create nodes"},
    {"guard_port_of_an_expression",
     "guard g(t) = uses(t:1) == 1\nrule a {\n  match { c = Relu(x) where "
     "g(uses(x)) }\n  rewrite { erase c }\n}\n",
     1, 19, "guard `g` reads `t` as a node: its argument must be a name"},
    {"optional_without_operand",
     "rule a {\n  match { c = Relu? }\n  rewrite { erase c }\n}\n", 2, 15,
     "an optional node needs a first operand to stand in for it (as in "
     "`BiasAdd?(conv, b)`)"},
    {"stand_in_of_a_node_not_optional",
     "rule a {\n  match { c = Relu(?x) where uses(x) == 1 }\n  rewrite { erase "
     "c "
     "}\n}\n",
     2, 20,
     "`?` marks the operand that stands in for an optional node, and this "
     "node is not optional (write `Op?(...)`)"},
    {"two_stand_ins",
     "rule a {\n  match { c = Relu(Sub?(?x, ?y)) where bound(y) and uses(x) "
     "== 1 }\n  rewrite { erase c }\n}\n",
     2, 29, "one operand stands in for an optional node, not two"},
    {"stand_in_wildcard",
     "rule a {\n  match { c = Relu(Sub?(x, ?_)) where uses(x) == 1 }\n  "
     "rewrite { erase c }\n}\n",
     2, 28,
     "the operand that stands in must be a tensor or a pattern (as `p` in "
     "`Where?(IsNaN(p), z, ?p)`)"},
    {"bound_of_a_number",
     "rule a {\n  match { c = Relu(_) where bound(3) }\n  rewrite { erase c "
     "}\n}\n",
     2, 29,
     "`bound` takes one name the rule's pattern binds (as in `bound(b)`)"},
    {"named_pattern_never_used",
     "pattern p = Relu(_)\nrule a {\n  match { c = Relu(_) }\n  rewrite { "
     "erase c }\n}\n",
     1, 1, "pattern `p` is never used"},
    {"pattern_call_argument_count",
     "pattern p(x) = Relu(x)\nrule a {\n  match { c = p(y, z) where uses(y) "
     "+ uses(z) > 0 }\n  rewrite { erase c }\n}\n",
     3, 15, "pattern `p` takes 1 argument(s), got 2"},
    {"pattern_without_parameters_called",
     "pattern p = Relu(_)\nrule a {\n  match { c = p() }\n  rewrite { erase "
     "c }\n}\n",
     3, 15, "pattern `p` takes no arguments: write `p` alone"},
    {"pattern_with_parameters_not_called",
     "pattern p(x) = Relu(x)\nrule a {\n  match { c = p }\n  rewrite { erase "
     "c }\n}\n",
     3, 15, "pattern `p` takes 1 argument(s): call it as `p(...)`"},
    {"pattern_binds_a_name_it_never_reads",
     "pattern p(x) = Relu(b: BiasAdd(x, _))\nrule a {\n  match { c = p(_) }\n"
     "  rewrite { erase c }\n}\n",
     1, 21,
     "pattern `p` binds `b` but never reads it; write `_` to match any input"},
    {"pattern_where_reads_a_rule_name",
     "pattern p(x) = Relu(x) where uses(c) == 1\nrule a {\n  match { c = p(_) "
     "}\n  rewrite { erase c }\n}\n",
     1, 35,
     "pattern `p` reads `c`, which it neither binds nor takes as a parameter"},
    {"pattern_parameter_never_matched",
     "pattern p(x, y) = Relu(x)\nrule a {\n  match { c = p(_, _) }\n  rewrite "
     "{ erase c }\n}\n",
     1, 14,
     "pattern `p` never matches its parameter `y` (write it in the pattern)"},
    {"pattern_root_of_an_anonymous_call",
     "pattern p(x) = r: Relu(x) where uses(r) == 1\nrule a {\n  match { c = "
     "Neg(p(_)) }\n  rewrite { erase c }\n}\n",
     3, 19,
     "pattern `p` reads its root `r`: name the call (`n = p(...)` or `t: "
     "p(...)`)"},
    {"alternatives_without_parameters",
     "pattern p = Relu(_) | Tanh(_)\nrule a {\n  match { c = p }\n  rewrite { "
     "erase c }\n}\n",
     1, 1,
     "pattern `p` has alternatives, so it takes parameters (`pattern name(a) "
     "= x(a) | y(a)`): the other names of each alternative are its own"},
    {"alternatives_with_a_root",
     "pattern p(x) = r: Relu(x) | Tanh(x) where uses(r) == 1\nrule a {\n  "
     "match { c = p(_) }\n  rewrite { erase c }\n}\n",
     1, 16,
     "pattern `p` names its root `r`, but it has alternatives: a call names "
     "the root of the one that matched"},
    {"alternative_without_a_parameter",
     "pattern p(x) = Relu(x) | Tanh(_)\nrule a {\n  match { c = p(_) }\n  "
     "rewrite { erase c }\n}\n",
     1, 26,
     "pattern `p` never matches its parameter `x` in alternative 2 (write it "
     "in each alternative)"},
    {"alternatives_where_reads_an_alternatives_name",
     "pattern p(x) = Relu(x) | AddV2(t: Tanh(x), t) where uses(t) == 1\nrule "
     "a {\n  match { c = p(_) }\n  rewrite { erase c }\n}\n",
     1, 58,
     "pattern `p` reads `t`, which is none of its parameters (a `where` of "
     "alternatives reads only them)"},
    {"alternative_missing_after_the_bar",
     "pattern p(x) = Relu(x) |\nrule a {\n  match { c = p(_) }\n  rewrite "
     "{ erase c }\n}\n",
     2, 1,
     "expected a pattern after `|`: an op pattern or a named pattern's "
     "call"},
    {"too_many_variants",
     "pattern p(x) = Relu(x) | Tanh(x) | Neg(x)\nrule a {\n  match {\n    "
     "s = AddN(p(_), p(_), p(_), p(_))\n  }\n  rewrite { erase s }\n}\n",
     2, 1,
     "rule `a` has more than 64 variants (the alternatives of the named "
     "patterns it calls, each choice of them one variant)"},
    {"pattern_parameter_list_unclosed", "pattern p(x = Relu(x)\n", 1, 13,
     "expected `,` or `)` after a parameter"},
    {"rename_a_list",
     "rule a {\n  match { c = AddN(xs...) }\n  rewrite { rename xs to \"y\" "
     "}\n}\n",
     3, 20, "`xs` is not a node"},
    {"control_from_a_string",
     "rule a {\n  match { c = Relu(_) }\n  rewrite { control \"x\" -> c "
     "}\n}\n",
     3, 21, "expected a node or a list of nodes, not a string"},
    // What the op registry knows: input counts and attr names.
    {"operand_count_an_op_cannot_have",
     "rule a {\n  match { p = Pad(_, _, _) }\n  rewrite { erase p }\n}\n", 2,
     15,
     "`Pad` takes 2 data input(s); this pattern gives it 3, so it never "
     "matches"},
    {"operand_count_of_a_variadic_op",
     "rule a {\n  match { c = ConcatV2(_) }\n  rewrite { erase c }\n}\n", 2, 15,
     "`ConcatV2` takes at least 3 data input(s); this pattern gives it 1, "
     "so it never matches"},
    {"attr_name_in_a_guard",
     "rule a {\n  match { c = Conv2D(_, _) where c.paddin == \"SAME\" }\n"
     "  rewrite { erase c }\n}\n",
     2, 36, "`c` (Conv2D) has no attr `paddin`"},
    {"attr_name_of_a_bound_operand",
     "rule a {\n  match { r = Relu(w: Const) where w.dtyp == \"float32\" }\n"
     "  rewrite { erase r }\n}\n",
     2, 38, "`w` (Const) has no attr `dtyp`"},
    {"match_let_shadows_a_pattern",
     "rule a {\n  match { c = Relu(x)\n    let c = x }\n"
     "  rewrite { erase c }\n}\n",
     3, 9, "`c` is already bound"},
    {"match_let_never_used",
     "rule a {\n  match { c = Relu(_)\n    let n = uses(c) }\n"
     "  rewrite { erase c }\n}\n",
     3, 9, "`n` is never used"},
    {"match_let_creates_a_node",
     "rule a {\n  match { c = Relu(x)\n    let t = Tanh(x)\n    where uses(t) "
     "> 0 }\n"
     "  rewrite { erase c }\n}\n",
     3, 13, "a guard cannot create nodes"},
    {"match_let_read_before_it_is_bound",
     "rule a {\n  match { c = Relu(_)\n    let n = m + 1\n    let m = uses(c)\n"
     "    where n > 0 }\n  rewrite { erase c }\n}\n",
     3, 13, "unknown name `m`"},
    {"attr_name_in_an_attr_block",
     "rule a {\n  match { c = Conv2D(x, w) }\n  rewrite {\n    o = c.op(x, w) "
     "{ ..c.attrs, explict_paddings: [1] }\n    replace c with o\n  }\n}\n",
     4, 33, "`c` (Conv2D) has no attr `explict_paddings`"},
};

class DiagnosticTest : public ::testing::TestWithParam<DiagnosticCase> {};

TEST_P(DiagnosticTest, ReportsTheMistakeWhereItIs) {
  const DiagnosticCase& c = GetParam();
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  std::unique_ptr<RuleSet> rules =
      CompileRuleText("case.graft", c.source, {}, hooks, &d);
  EXPECT_EQ(rules, nullptr);
  ASSERT_TRUE(d.has_errors()) << c.name;
  // The first error in source order.
  const Diagnostic* first = &d.errors()[0];
  for (const Diagnostic& e : d.errors()) {
    if (std::make_pair(e.loc.line, e.loc.col) <
        std::make_pair(first->loc.line, first->loc.col)) {
      first = &e;
    }
  }
  EXPECT_EQ(first->message, c.message) << c.name << "\n" << d.Render();
  EXPECT_EQ(first->loc.line, c.line) << c.name << "\n" << d.Render();
  EXPECT_EQ(first->loc.col, c.col) << c.name << "\n" << d.Render();
}

INSTANTIATE_TEST_SUITE_P(Cases, DiagnosticTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           return std::string(info.param.name);
                         });

// An ONNX op's attrs are those of any of its versions: a rule may write the
// form an older opset takes (ReduceMax's `axes` attr, an input from opset 18).
TEST(OnnxAttrsTest, AnAttrOfAnyVersionOfTheOp) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  const char* older = R"(dialect onnx
rule a {
  match { r = Relu(x) }
  rewrite {
    out = if opset() >= 18 then ReduceMax(x, Const([-1]) { dtype: "int64" }) { keepdims: 1 }
    else ReduceMax(x) { axes: [-1], keepdims: 1 }
    replace r with out
  }
}
)";
  Diagnostics d;
  EXPECT_NE(CompileRuleText("older.graft", older, {}, hooks, &d), nullptr) << d.Render();
  // an attr no version has is still a mistake
  const char* none = R"(dialect onnx
rule a {
  match { r = Relu(x) }
  rewrite {
    out = ReduceMax(x) { axis: [-1] }
    replace r with out
  }
}
)";
  Diagnostics e;
  EXPECT_EQ(CompileRuleText("none.graft", none, {}, hooks, &e), nullptr);
  ASSERT_TRUE(e.has_errors());
  EXPECT_EQ(e.errors()[0].message, "`ReduceMax` has no attr `axis`") << e.Render();
}

TEST(DiagnosticRenderTest, ShowsTheLineACaretAndNotes) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  CompileRuleText(
      "r.graft",
      "rule a {\n  match { c = Conv2d(_, _) }\n  rewrite { erase c }\n}\n", {},
      hooks, &d);
  EXPECT_EQ(d.Render(),
            "r.graft:2:15: error: unknown op `Conv2d`\n"
            "      match { c = Conv2d(_, _) }\n"
            "                  ^\n"
            "note: did you mean `Conv2D`?\n");
}

TEST(DiagnosticRenderTest, ReportsSeveralErrorsInOneRun) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  CompileRuleText(
      "r.graft",
      "rule a {\n  match { c = Reluu(x) }\n  rewrite { erase c }\n}\n"
      "rule b {\n  match { c = Relu(_) where nope(c) }\n  rewrite { erase c "
      "}\n}\n",
      {}, hooks, &d);
  EXPECT_EQ(d.errors().size(), 3u) << d.Render();
}

// ---- applying compiled rules ----

constexpr char kGraph[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "a"
    op: "Relu"
    input: "x"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "b"
    op: "Tanh"
    input: "a"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

// A caller's `cost.flops(n)` hook (100 for a Relu, else 1) that counts
// its calls.
void RegisterCountedFlops(HookRegistry& hooks, int* calls) {
  HookSignature sig;
  sig.params = {ValueType::kNode};
  sig.result = ValueType::kInt;
  ASSERT_TRUE(
      hooks
          .Register("cost.flops", sig,
                    [calls](const HookContext& ctx,
                            absl::Span<const Value> args) -> absl::StatusOr<Value> {
                      ++*calls;
                      return Value::Int(
                          ctx.graph.node(args[0].tensor.node).op() == "Relu" ? 100 : 1);
                    })
          .ok());
}

TEST(CompiledRuleTest, CallsAHookRegisteredByTheCaller) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  int calls = 0;
  RegisterCountedFlops(hooks, &calls);
  Diagnostics d;
  std::unique_ptr<RuleSet> rules =
      CompileRuleText("hook.graft",
                      "rule expensive_on_cpu {\n  match { n = _(_) where "
                      "cost.flops(n) > 10 and n.device == \"\" }\n"
                      "  rewrite { device n \"/device:CPU:0\" }\n}\n",
                      {}, hooks, &d);
  ASSERT_NE(rules, nullptr) << d.Render();
  Graph g = graft::testing::GraphFromText(kGraph);
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, rules->rules());
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rewrites(), 1);
  EXPECT_EQ(g.FindNode("a")->device(), "/device:CPU:0");
  EXPECT_EQ(g.FindNode("b")->device(), "");
  EXPECT_GE(calls, 2);

  // A wrongly typed call to the same hook does not compile.
  Diagnostics bad;
  EXPECT_EQ(CompileRuleText(
                "hook.graft",
                "rule r {\n  match { n = _(_) where cost.flops(\"n\") > 1 }\n"
                "  rewrite { erase n }\n}\n",
                {}, hooks, &bad),
            nullptr);
  ASSERT_TRUE(bad.has_errors());
  EXPECT_EQ(bad.errors()[0].message,
            "argument 1 of `cost.flops` must be a node, not a string");
}

// A match's `let` is evaluated once per candidate, however many guards and
// actions read it; a guard reads it as soon as the let is bound.
TEST(CompiledRuleTest, MatchLetIsEvaluatedOncePerCandidate) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  int calls = 0;
  RegisterCountedFlops(hooks, &calls);
  Diagnostics d;
  std::unique_ptr<RuleSet> rules = CompileRuleText(
      "let.graft",
      "rule expensive_on_cpu {\n  match {\n    n = _(_)\n"
      "    let f = cost.flops(n)\n    let where_to = if f > 50 then "
      "\"/device:CPU:0\" else \"\"\n"
      "    where f > 10 and f < 1000 and n.device != where_to\n  }\n"
      "  rewrite { device n where_to }\n}\n",
      {}, hooks, &d);
  ASSERT_NE(rules, nullptr) << d.Render();
  Graph g = graft::testing::GraphFromText(kGraph);
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, rules->rules());
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rewrites(), 1);
  EXPECT_EQ(g.FindNode("a")->device(), "/device:CPU:0");
  EXPECT_EQ(g.FindNode("b")->device(), "");
  // Candidates a and b, then a again (the rewrite changed it): one call
  // each, where three reads of `f` would make seven.
  EXPECT_EQ(calls, 3);

  // A let waits for the `where`s written before it: only where they hold
  // is it evaluated.
  calls = 0;
  Diagnostics d2;
  rules = CompileRuleText(
      "let.graft",
      "rule tanh_on_cpu {\n  match {\n    n = _(_)\n"
      "    where n.op == \"Tanh\" and n.device == \"\"\n"
      "    let f = cost.flops(n)\n    where f > 0\n  }\n"
      "  rewrite { device n \"/device:CPU:0\" }\n}\n",
      {}, hooks, &d2);
  ASSERT_NE(rules, nullptr) << d2.Render();
  g = graft::testing::GraphFromText(kGraph);
  report = ApplyRules(g, rules->rules());
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rewrites(), 1);
  EXPECT_EQ(g.FindNode("b")->device(), "/device:CPU:0");
  EXPECT_EQ(calls, 1);
}

// A rule file compiled with the builtin hooks, which the rules keep using.
struct Compiled {
  HookRegistry hooks;
  Diagnostics d;
  std::unique_ptr<RuleSet> rules;
};
std::unique_ptr<Compiled> CompileWithBuiltins(const std::string& path,
                                              const std::string& text) {
  auto c = std::make_unique<Compiled>();
  RegisterBuiltinHooks(c->hooks);
  c->rules = CompileRuleText(path, text, {}, c->hooks, &c->d);
  return c;
}

// GraphDef text of a float placeholder, a float scalar constant, a float op.
std::string PlaceholderText(const char* name) {
  return absl::StrCat("node { name: \"", name,
                      "\" op: \"Placeholder\" attr { key: \"dtype\" value { "
                      "type: DT_FLOAT } } }\n");
}
std::string ScalarText(const char* name, float v) {
  return absl::StrCat(
      "node { name: \"", name,
      "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
      "attr { key: \"value\" value { tensor { dtype: DT_FLOAT "
      "tensor_shape { } float_val: ",
      v, " } } } }\n");
}
std::string OpText(const char* name, const char* type,
                   std::vector<const char*> inputs) {
  std::string out =
      absl::StrCat("node { name: \"", name, "\" op: \"", type, "\"");
  for (const char* in : inputs) absl::StrAppend(&out, " input: \"", in, "\"");
  return absl::StrCat(out, " attr { key: \"T\" value { type: DT_FLOAT } } }\n");
}

// The graph's live nodes by op.
std::map<std::string, int> OpCounts(const Graph& g) {
  std::vector<std::pair<std::string, int>> histogram = g.OpHistogram();
  return {histogram.begin(), histogram.end()};
}

// A let that reads a name of an optional part is bound once the match is
// whole, whether the part is there or not.
TEST(CompiledRuleTest, MatchLetOfAnOptionalPart) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "let.graft",
      "rule place {\n  match {\n    r = Relu(BiasAdd?(_, bias))\n"
      "    let where_to = if bound(bias) then \"/device:CPU:1\" else "
      "\"/device:CPU:0\"\n    where r.device == \"\"\n  }\n"
      "  rewrite { device r where_to }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1 } } } }
    node { name: "ba" op: "BiasAdd" input: "x" input: "c" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r1" op: "Relu" input: "ba" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r2" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 2);
  EXPECT_EQ(g.FindNode("r1")->device(), "/device:CPU:1");
  EXPECT_EQ(g.FindNode("r2")->device(), "/device:CPU:0");
}

// `consumed_by` takes an op list as `filter_ops` does: a tensor read by
// one op of `Neg|Sig*` is tagged, one read by neither is not.
TEST(CompiledRuleTest, ConsumedByTakesAnOpList) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "consumed.graft",
      "rule tag {\n  match { r = Relu(_) where consumed_by(r, \"Neg|Sig*\") "
      "and r.device == \"\" }\n  rewrite { device r \"/device:CPU:1\" }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(
      PlaceholderText("x") + OpText("r1", "Relu", {"x"}) +
      OpText("r2", "Relu", {"x"}) + OpText("r3", "Relu", {"x"}) +
      OpText("n", "Neg", {"r1"}) + OpText("s", "Sigmoid", {"r2"}) +
      OpText("t", "Tanh", {"r3"}));
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 2);
  EXPECT_EQ(g.FindNode("r1")->device(), "/device:CPU:1");
  EXPECT_EQ(g.FindNode("r2")->device(), "/device:CPU:1");
  EXPECT_EQ(g.FindNode("r3")->device(), "");
}

// `Sub?(sq: Square(x), ?x)`: absent, its marked operand stands in (not its
// first); present, the marked operand is the same tensor as the other's.
TEST(CompiledRuleTest, OptionalNodeWithAMarkedStandIn) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "stand_in.graft",
      "rule place {\n  match {\n    r = Relu(Sub?(sq: Square(x), ?x))\n"
      "    let where_to = if bound(sq) then \"/device:CPU:1\" else "
      "\"/device:CPU:0\"\n    where r.device == \"\"\n  }\n"
      "  rewrite { device r where_to }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(R"pb(
    node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "c" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "sq" op: "Square" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "s1" op: "Sub" input: "sq" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r1" op: "Relu" input: "s1" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r2" op: "Relu" input: "c" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "s3" op: "Sub" input: "sq" input: "c" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r3" op: "Relu" input: "s3" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 3);
  EXPECT_EQ(g.FindNode("r1")->device(), "/device:CPU:1");  // a^2 - a
  EXPECT_EQ(g.FindNode("r2")->device(), "/device:CPU:0");  // x = c
  // a^2 - c is not the pattern's a^2 - a: absent, x is the Sub itself.
  EXPECT_EQ(g.FindNode("r3")->device(), "/device:CPU:0");
}

// A named guard is inlined where it is called, its parameters replaced by
// the arguments (an optional part's name included: `bound` reads it), and
// one guard may call another.
TEST(CompiledRuleTest, NamedGuardsAreInlinedWhereCalled) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "guards.graft",
      "param most: int = 1\n"
      "guard read_once(t) = uses(t) <= most\n"
      "guard bias_read_once(b, t) = read_once(t) and bound(b) and "
      "read_once(b)\n"
      "rule place {\n  match {\n    r = Relu(ba: BiasAdd?(_, bias))\n"
      "    where bias_read_once(bias, ba) and r.device == \"\"\n  }\n"
      "  rewrite { device r \"/device:CPU:1\" }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1 } } } }
    node { name: "ba" op: "BiasAdd" input: "x" input: "c" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r1" op: "Relu" input: "ba" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "d" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 2 } } } }
    node { name: "bb" op: "BiasAdd" input: "x" input: "d" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r2" op: "Relu" input: "bb" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "s" op: "Square" input: "d" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  // r1: its bias read once; r2: `d` is read twice (and absent, the BiasAdd
  // binds no bias).
  EXPECT_EQ(report->rewrites(), 1);
  EXPECT_EQ(g.FindNode("r1")->device(), "/device:CPU:1");
  EXPECT_EQ(g.FindNode("r2")->device(), "");
}

// A file of no rules is a library of guards and patterns for other files
// to import: what it defines need not be used in it.
TEST(CompiledRuleTest, AFileOfNoRulesIsALibraryOfGuards) {
  std::unique_ptr<Compiled> c =
      CompileWithBuiltins("guards.graft",
                          "guard read_once(t) = uses(t) == 1\n"
                          "pattern biased = BiasAdd(_, Const)\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  EXPECT_TRUE(c->rules->rules().empty());
}

// A named pattern with parameters, called twice in one rule: each call
// binds its own names (`r`, `c`) and its `where` holds at each; `t: p(y)`
// binds the call's output, `_` a parameter the rule does not name.
TEST(CompiledRuleTest, NamedPatternWithParametersIsItsOwnAtEachCall) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "calls.graft",
      "pattern doubled(x) = r: Mul(x, c: Const) where all_equal(c, 2.0) and "
      "uses(r) == 1\n"
      "rule sum_of_doubles {\n  match {\n    a = doubled(x)\n"
      "    s = AddV2(a, t: doubled(_))\n"
      "    where uses(x) > 0 and uses(t) == 1 and s.device == \"\"\n"
      "  }\n  rewrite { device s \"/device:CPU:1\" }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  auto op = [](const char* name, const char* type, const char* a,
               const char* b) {
    return OpText(name, type, {a, b});
  };
  std::string text =
      PlaceholderText("x") + ScalarText("two", 2) + ScalarText("three", 3) +
      // s1: both doubled; s2: its second a tripling; s3: its second read twice
      op("a1", "Mul", "x", "two") + op("b1", "Mul", "x", "two") +
      op("s1", "AddV2", "a1", "b1") + op("a2", "Mul", "x", "two") +
      op("b2", "Mul", "x", "three") + op("s2", "AddV2", "a2", "b2") +
      op("a3", "Mul", "x", "two") + op("b3", "Mul", "x", "two") +
      op("s3", "AddV2", "a3", "b3") + op("n3", "Mul", "b3", "two");
  Graph g = graft::testing::GraphFromText(text);
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 1);
  EXPECT_EQ(g.FindNode("s1")->device(), "/device:CPU:1");
  EXPECT_EQ(g.FindNode("s2")->device(), "");
  EXPECT_EQ(g.FindNode("s3")->device(), "");
  // A parameter may name a tensor inside the pattern for the rule to read
  // (`c`, each call's constant): s2 alone, doubled then tripled.
  std::unique_ptr<Compiled> out = CompileWithBuiltins(
      "calls.graft",
      "pattern scaled(x, c) = r: Mul(x, c: Const) where uses(r) == 1\n"
      "rule doubled_and_tripled {\n  match {\n    a = scaled(x, two)\n"
      "    s = AddV2(a, b: scaled(_, three))\n    where all_equal(two, 2.0) "
      "and "
      "all_equal(three, 3.0)\n      and uses(x) > 0 and uses(b) == 1 and "
      "s.device == \"\"\n"
      "  }\n  rewrite { device s \"/device:CPU:2\" }\n}\n");
  ASSERT_NE(out->rules, nullptr) << out->d.Render();
  Graph h = graft::testing::GraphFromText(text);
  report = ApplyRules(h, out->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 1);
  EXPECT_EQ(h.FindNode("s2")->device(), "/device:CPU:2");
  EXPECT_EQ(h.FindNode("s1")->device(), "");
}

// A named pattern of alternatives: the rule matches where any does (one
// rule, its variants tried the largest first), its calls' nodes the roots
// of the alternatives that matched; `explain` says why each fails.
TEST(CompiledRuleTest, NamedPatternOfAlternatives) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "alternatives.graft",
      "pattern times_two(x) = r: Mul(x, c: Const) where all_equal(c, 2.0) and "
      "uses(r) == 1\n"
      "pattern doubled(x) = Add(x, x) | times_two(x)\n"
      "  | Sub(x, Neg(x))\n"
      "rule double {\n  match {\n    d = doubled(x)\n    where d.device == \"\"\n"
      "  }\n  rewrite {\n    out = AddV2(x, x)\n    replace d with out\n  }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  ASSERT_EQ(c->rules->rules().size(), 1u);
  // the variants' roots: Add, Mul, Sub
  std::vector<std::string> anchors = c->rules->rules()[0]->anchor_ops();
  std::sort(anchors.begin(), anchors.end());
  EXPECT_EQ(anchors, (std::vector<std::string>{"Add", "Mul", "Sub"}));
  std::string text =
      PlaceholderText("x") + ScalarText("two", 2) + ScalarText("three", 3) +
      OpText("a", "Add", {"x", "x"}) + OpText("m", "Mul", {"x", "two"}) +
      OpText("m3", "Mul", {"x", "three"}) + OpText("n", "Neg", {"x"}) +
      OpText("s", "Sub", {"x", "n"}) +
      OpText("y", "AddN", {"a", "m", "m3", "s"});
  Graph g = graft::testing::GraphFromText(text);
  Explanation why = ExplainAt(*c->rules, "double", g, g.FindId("m3"));
  EXPECT_FALSE(why.matched);
  EXPECT_NE(why.reason.find("no variant of the rule matches: (1)"), std::string::npos)
      << why.reason;
  EXPECT_NE(why.reason.find("all_equal"), std::string::npos) << why.reason;
  Explanation sub = ExplainAt(*c->rules, "double", g, g.FindId("s"));
  EXPECT_TRUE(sub.matched) << sub.reason;
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 3);
  ASSERT_EQ(report->rules_size(), 1);
  EXPECT_EQ(report->rules(0).applied(), 3);
  std::map<std::string, int> ops = OpCounts(g);
  EXPECT_EQ(ops["AddV2"], 3);
  EXPECT_EQ(ops["Add"], 0);
  EXPECT_EQ(ops["Sub"], 0);
  EXPECT_EQ(ops["Neg"], 0);
  EXPECT_EQ(ops["Mul"], 1);  // m3, tripled
}

// A named pattern that calls another with its own names: a rule's `_`
// stays the pattern's own name at the inner call too; an error in a
// pattern's `where` is said once, however many calls check it.
TEST(CompiledRuleTest, NamedPatternsCallingNamedPatterns) {
  const std::string patterns =
      "pattern inner(x) = r: Relu(x) where uses(r) == 1\n"
      "pattern outer(x) = o: Neg(i: inner(x)) where uses(i) == 1 and uses(o) "
      "== 1\n";
  const std::string rule =
      "rule r {\n  match {\n    a = outer(_)\n    b = outer(y)\n"
      "    s = AddV2(a, b)\n    where uses(y) > 0 and s.device == \"\"\n  }\n"
      "  rewrite { device s \"/device:CPU:1\" }\n}\n";
  std::unique_ptr<Compiled> c =
      CompileWithBuiltins("nested.graft", patterns + rule);
  EXPECT_NE(c->rules, nullptr) << c->d.Render();
  std::unique_ptr<Compiled> bad = CompileWithBuiltins(
      "nested.graft",
      "pattern inner(x) = r: Relu(x) where uses(r) == 1 and nope(r)\n" +
          patterns.substr(patterns.find("pattern outer")) + rule);
  EXPECT_EQ(bad->rules, nullptr);
  ASSERT_EQ(bad->d.errors().size(), 1u) << bad->d.Render();
  EXPECT_EQ(bad->d.errors()[0].message, "unknown function `nope`");
}

// `shared Op(...)`: every node it builds is read from the graph where an
// equal one is there (one made by an earlier rewrite included), never a
// stateful op's; a fragment builds nodes where a rewrite calls it.
TEST(CompiledRuleTest, SharedNodesAreBuiltOnce) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "shared.graft",
      "fragment gate(x) = shared Sigmoid(Mul(x, Const([2.0]) { dtype: \"float32\" }))\n"
      "rule relu {\n  match {\n    r = Relu(x)\n  }\n"
      "  rewrite {\n"
      "    noise = shared RandomUniform(node_named(\"shape\")) { dtype: \"float32\" }\n"
      "    out = Mul(Mul(x, gate(x)), noise)\n"
      "    replace r with out\n  }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 } } } }
    node { name: "r1" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r2" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y1" op: "Square" input: "r1" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y2" op: "Square" input: "r2" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 2 } } } }
    node { name: "y3" op: "Square" input: "two" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 2);
  std::map<std::string, int> ops = OpCounts(g);
  // one gate (Sigmoid, its Mul and constant) for both; a random op each;
  // the model's own constant 2 is not the rewrites'
  EXPECT_EQ(ops["Sigmoid"], 1);
  EXPECT_EQ(ops["Mul"], 5);
  EXPECT_EQ(ops["Const"], 3);
  EXPECT_EQ(ops["RandomUniform"], 2);
  EXPECT_EQ(ops["Relu"], 0);
}

// A fragment may build its nodes through other fragments alone (defined
// after it, or in an `if` of its own).
TEST(CompiledRuleTest, AFragmentBuildsThroughOtherFragments) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "calls.graft",
      "fragment gated(x) = if uses(x) > 1 then squashed(x) else clipped(x)\n"
      "fragment squashed(x) = Tanh(x)\n"
      "fragment clipped(x) = Relu(x)\n"
      "rule relu {\n  match {\n    r = Sigmoid(x)\n  }\n"
      "  rewrite {\n    out = gated(x)\n    replace r with out\n  }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "r" op: "Sigmoid" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y" op: "Square" input: "r" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 1);
  std::map<std::string, int> ops = OpCounts(g);
  EXPECT_EQ(ops["Relu"], 1);  // x read once: clipped
  EXPECT_EQ(ops["Tanh"], 0);
  EXPECT_EQ(ops["Sigmoid"], 0);
}

// A guard is shown as it reads: parentheses where an operand binds looser
// than its operator (an inlined guard has no source text of its own).
TEST(ExprTextTest, ParenthesizesWhatBindsLooser) {
  Diagnostics d;
  RuleFile f = ParseRuleFile(
      "text.graft",
      "rule a {\n  match { c = Relu(x)\n    where not bound(x) or (uses(x) == 1 "
      "and (uses(c) > 1 or -(2 - 1) * (3 + 4) == 7 - (1 - 1))) }\n"
      "  rewrite { erase c }\n}\n",
      &d);
  ASSERT_FALSE(d.has_errors()) << d.Render();
  ASSERT_EQ(f.rules.size(), 1u);
  ASSERT_EQ(f.rules[0].guards.size(), 1u);
  EXPECT_EQ(ExprText(*f.rules[0].guards[0]),
            "not bound(x) or uses(x) == 1 and (uses(c) > 1 or -(2 - 1) * (3 + 4) "
            "== 7 - (1 - 1))");
}

// A constant a rewrite makes and leaves unread (a `let` only an `if`'s other
// branch reads) is not left in the graph.
TEST(CompiledRuleTest, AnUnreadConstantTheRewriteMadeGoes) {
  std::unique_ptr<Compiled> c = CompileWithBuiltins(
      "unread.graft",
      "rule relu_to_add {\n  match {\n    r = Relu(x)\n  }\n"
      "  rewrite {\n    let one = Const([1.0]) { dtype: \"float32\" }\n"
      "    out = if r.device == \"\" then Identity(x) else Add(x, one)\n"
      "    replace r with out\n  }\n}\n");
  ASSERT_NE(c->rules, nullptr) << c->d.Render();
  Graph g = graft::testing::GraphFromText(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "r" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y" op: "Square" input: "r" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, c->rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 1);
  int consts = 0;
  g.ForEachNode([&](const Node& n) { consts += n.op() == "Const"; });
  EXPECT_EQ(consts, 0);
  EXPECT_EQ(g.num_nodes(), 3);  // x, the Identity, y
}

// A plan is computed once per apply, before any rule runs, however many
// rewrites read it; a plan that fails stops the apply with its location.
TEST(PlanTest, ComputedOncePerApply) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  HookSignature sig;
  sig.result = ValueType::kList;
  int calls = 0;
  bool fail = false;
  ASSERT_TRUE(hooks
                  .Register("all_nodes", sig,
                            [&](const HookContext& ctx, absl::Span<const Value>)
                                -> absl::StatusOr<Value> {
                              ++calls;
                              if (fail)
                                return absl::InternalError("planner broke");
                              std::vector<Value> out;
                              ctx.graph.ForEachNode([&](const Node& n) {
                                out.push_back(Value::NodeRef(n.id()));
                              });
                              return Value::List(std::move(out));
                            })
                  .ok());
  Diagnostics d;
  std::unique_ptr<RuleSet> rules = CompileRuleText(
      "plan.graft",
      "plan nodes = all_nodes()\n"
      "rule tag {\n  match { for n in nodes where not name_matches(n, "
      "\".*_seen\") }\n  rewrite { rename n to \"{n}_seen\" }\n}\n",
      {}, hooks, &d);
  ASSERT_NE(rules, nullptr) << d.Render();
  Graph g = graft::testing::GraphFromText(kGraph);
  int nodes = g.num_nodes();
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), nodes);
  EXPECT_EQ(calls, 1);
  // A new apply computes it anew.
  fail = true;
  report = ApplyRules(g, rules->rules());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "plan.graft:1: plan `nodes`: planner broke");
  EXPECT_EQ(calls, 2);
}

// A file with plans runs after the files it imports: its plans see the
// graph their rules made (the Relu they turned into a Tanh), and a file
// without plans runs with the first stage.
TEST(PlanTest, AFilesPlansSeeWhatItsImportsRulesMade) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  write("stage_base.graft",
        "rule to_tanh {\n  match { c = Relu(x) }\n  rewrite {\n"
        "    out = Tanh(x)\n    replace c with out\n  }\n}\n");
  std::string top = write(
      "stage_top.graft",
      "import \"stage_base.graft\"\n"
      "plan tanhs = filter_ops(forward_walk(node_named(\"x\")), \"Tanh\")\n"
      "rule tag {\n  match { for n in tanhs where n.device == \"\" }\n"
      "  rewrite { device n \"/device:CPU:1\" }\n}\n");
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  std::unique_ptr<RuleSet> rules = CompileRuleFiles({top}, {}, hooks, &d);
  ASSERT_NE(rules, nullptr) << d.Render();
  EXPECT_EQ(rules->Find("to_tanh")->stage(), 0);
  EXPECT_EQ(rules->Find("tag")->stage(), 1);
  Graph g = graft::testing::GraphFromText(kGraph);
  absl::StatusOr<report::ApplyReport> report = ApplyRules(g, rules->rules());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->rewrites(), 3);
  int tagged = 0;
  g.ForEachNode([&](const Node& n) {
    if (n.op() == "Tanh") {
      EXPECT_EQ(n.device(), "/device:CPU:1") << n.name();
      ++tagged;
    }
  });
  EXPECT_EQ(tagged, 2);
}

TEST(CompiledRuleTest, RulesThatUndoEachOtherAreReportedByName) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  std::unique_ptr<RuleSet> rules = CompileRuleText("pingpong.graft", R"(
rule relu_to_tanh {
  match { r = Relu(x) }
  rewrite { t = Tanh(x) replace r with t }
}
rule tanh_to_relu {
  match { t = Tanh(x) }
  rewrite { r = Relu(x) replace t with r }
}
)",
                                                   {}, hooks, &d);
  ASSERT_NE(rules, nullptr) << d.Render();
  Graph g = graft::testing::GraphFromText(kGraph);
  ApplyOptions options;
  options.max_rewrites = 100;
  absl::StatusOr<report::ApplyReport> report =
      ApplyRules(g, rules->rules(), options);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->converged());
  EXPECT_NE(report->non_convergence().find("`relu_to_tanh`"), std::string::npos)
      << report->non_convergence();
  EXPECT_NE(report->non_convergence().find("`tanh_to_relu`"),
            std::string::npos);
}

TEST(CompiledRuleTest, OutputIsByteIdenticalAcrossRuns) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  std::unique_ptr<RuleSet> rules = CompileRuleFiles(
      {"tests/golden/pattern_op_alternation/rules.graft"}, {}, hooks, &d);
  ASSERT_NE(rules, nullptr) << d.Render();
  std::string first;
  for (int run = 0; run < 3; ++run) {
    absl::StatusOr<Graph> g =
        LoadGraph("tests/golden/pattern_op_alternation/in.pbtxt");
    ASSERT_TRUE(g.ok());
    ASSERT_TRUE(ApplyRules(*g, rules->rules()).ok());
    std::string bytes = SerializeGraph(*g, GraphFormat::kBinary);
    if (run == 0) first = bytes;
    EXPECT_EQ(bytes, first) << "run " << run;
  }
}

// Folding a graph read from a binary file (its weights left in the file's
// mapping, folded filters computed as they are written) gives what folding
// the same GraphDef in memory gives, and so does quantizing after it (which
// reads the folded filters).
TEST(CompiledRuleTest, FoldingWeightsKeptApartEqualsFoldingInMemory) {
  using namespace graft::testing;  // NOLINT: the graph builders
  tf::GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      PlaceholderNode("x", {1, 8, 8, 64}) + FloatConstNode("w", 1) +
          OpNode("conv", "Conv2D", {"x", "w"},
                 ConvAttrs(1, "SAME") +
                     " attr { key: \"data_format\" value { s: \"NHWC\" } }") +
          FloatConstNode("gamma", 128) + FloatConstNode("beta", 128) +
          FloatConstNode("mean", 128) + FloatConstNode("var", 128) +
          OpNode("bn", "FusedBatchNormV3",
                 {"conv", "gamma", "beta", "mean", "var"},
                 " attr { key: \"U\" value { type: DT_FLOAT } }"
                 " attr { key: \"epsilon\" value { f: 0.001 } }"
                 " attr { key: \"is_training\" value { b: false } }") +
          OpNode("relu", "Relu", {"bn"}),
      &def));
  auto fill = [&](const std::string& name, std::vector<int64_t> shape,
                  double offset) {
    for (tf::NodeDef& n : *def.mutable_node()) {
      if (n.name() != name) continue;
      tf::TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
      t->clear_tensor_shape();
      int64_t count = 1;
      for (int64_t d : shape) {
        t->mutable_tensor_shape()->add_dim()->set_size(d);
        count *= d;
      }
      std::string bytes(count * 4, '\0');
      for (int64_t i = 0; i < count; ++i) {
        float v = static_cast<float>(offset + std::sin(0.1 * i + offset));
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
      t->set_tensor_content(bytes);
    }
  };
  fill("w", {3, 3, 64, 128}, 0.0);  // 288 KiB
  fill("gamma", {128}, 1.5);
  fill("beta", {128}, 0.0);
  fill("mean", {128}, 0.2);
  fill("var", {128}, 2.0);
  std::string bytes = SerializeDeterministic(def);

  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  ASSERT_TRUE(analysis::RegisterAnalysisHooks(hooks).ok());  // shapes
  std::vector<std::unique_ptr<RuleSet>> stages;
  for (const char* file :
       {"rules/tf/fold_batch_norms.graft", "rules/tf/quantize.graft"}) {
    Diagnostics d;
    stages.push_back(CompileRuleFiles({file}, {}, hooks, &d));
    ASSERT_NE(stages.back(), nullptr) << d.Render();
  }
  for (size_t count : {size_t{1}, size_t{2}}) {
    SCOPED_TRACE(count == 1 ? "fold" : "fold, quantize");
    absl::StatusOr<Graph> from_file =
        ParseGraph(bytes, GraphFormat::kBinary, "model.pb");
    ASSERT_TRUE(from_file.ok()) << from_file.status();
    ASSERT_NE(from_file->FindNode("w")->value_content_apart(), nullptr);
    absl::StatusOr<Graph> in_memory = Graph::FromGraphDef(def);
    ASSERT_TRUE(in_memory.ok());
    for (size_t s = 0; s < count; ++s) {
      ASSERT_TRUE(ApplyRules(*from_file, stages[s]->rules()).ok());
      ASSERT_TRUE(ApplyRules(*in_memory, stages[s]->rules()).ok());
    }
    EXPECT_EQ(from_file->FindNode("bn")->op(), "BiasAdd");
    bool deferred = false;
    from_file->ForEachNode([&](const Node& n) {
      if (n.op() == "Const" && n.value_content_apart() != nullptr &&
          n.name() != "w") {
        deferred = true;
      }
    });
    EXPECT_TRUE(deferred);
    tf::GraphDef saved;
    ASSERT_TRUE(saved.ParseFromString(
        SerializeGraph(*from_file, GraphFormat::kBinary)));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
        saved, in_memory->ToGraphDef()));
  }
}

TEST(CompiledRuleTest, ParamsFromOptionsAreCheckedAndUsed) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  const char* text =
      "param bits: int = 8\nrule r {\n  match { n = Relu(_) where bits > 4 and "
      "n.device == \"\" }\n"
      "  rewrite { device n \"/device:CPU:0\" }\n}\n";
  CompileOptions options;
  options.params["bits"] = "eight";
  Diagnostics d;
  EXPECT_EQ(CompileRuleText("p.graft", text, options, hooks, &d), nullptr);
  ASSERT_TRUE(d.has_errors());
  EXPECT_EQ(d.errors()[0].message, "param `bits`: `eight` is not an int");
  options.params = {{"bitz", "4"}};
  Diagnostics d2;
  EXPECT_EQ(CompileRuleText("p.graft", text, options, hooks, &d2), nullptr);
  EXPECT_EQ(d2.errors()[0].message, "unknown param `bitz`");
  EXPECT_EQ(d2.errors()[0].notes,
            std::vector<std::string>{"did you mean `bits`?"});
  options.params = {{"bits", "2"}};
  Diagnostics d3;
  std::unique_ptr<RuleSet> rules =
      CompileRuleText("p.graft", text, options, hooks, &d3);
  ASSERT_NE(rules, nullptr) << d3.Render();
  Graph g = graft::testing::GraphFromText(kGraph);
  EXPECT_EQ(ApplyRules(g, rules->rules())->rewrites(),
            0);  // bits = 2 fails the guard
}

}  // namespace
}  // namespace graft::dsl

namespace graft::dsl {
namespace {

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinHooks(hooks_);
    set_ = CompileRuleFiles({"tests/golden/pattern_use_count/rules.graft"}, {},
                            hooks_, &d_);
    ASSERT_NE(set_, nullptr) << d_.Render();
  }
  Explanation At(const std::string& model, const std::string& node) {
    absl::StatusOr<Graph> g = LoadGraph(model);
    EXPECT_TRUE(g.ok());
    graph_ = std::move(*g);
    return ExplainAt(*set_, "fold_bn_single_use", graph_, graph_.FindId(node));
  }
  HookRegistry hooks_;
  Diagnostics d_;
  std::unique_ptr<RuleSet> set_;
  Graph graph_;
};

TEST_F(ExplainTest, MatchListsBindings) {
  Explanation e = At("tests/golden/pattern_use_count/in.pbtxt", "bn");
  ASSERT_TRUE(e.matched) << e.reason;
  EXPECT_EQ(e.bindings.front(),
            (std::pair<std::string, std::string>{"beta", "`beta`"}));
}

// `graft explain` on the whole-graph forms: a `for` rule says where its
// items are not; an optional node says which case matched (`bound`).
TEST(ExplainWholeGraphTest, ForRulesAndOptionalNodes) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  ASSERT_TRUE(analysis::RegisterAnalysisHooks(hooks).ok());
  Diagnostics d;
  std::unique_ptr<RuleSet> set = CompileRuleFiles(
      {"tests/golden/plan_for_each/rules.graft",
       "tests/golden/fold_bn_lib_bias_and_identity_reads/rules.graft"},
      {}, hooks, &d);
  ASSERT_NE(set, nullptr) << d.Render();
  absl::StatusOr<Graph> g = LoadGraph("tests/golden/plan_for_each/in.pbtxt");
  ASSERT_TRUE(g.ok());
  Explanation item = ExplainAt(*set, "guard_each_relu", *g, g->FindId("r1"));
  EXPECT_TRUE(item.matched) << item.reason;
  Explanation not_item =
      ExplainAt(*set, "guard_each_relu", *g, g->FindId("out"));
  EXPECT_FALSE(not_item.matched);
  EXPECT_EQ(not_item.reason, "not an item of plan `relus`");

  g = LoadGraph("tests/golden/fold_bn_lib_bias_and_identity_reads/in.pbtxt");
  ASSERT_TRUE(g.ok());
  Explanation fold =
      ExplainAt(*set, "fold_fused_batch_norm", *g, g->FindId("bn"));
  ASSERT_TRUE(fold.matched) << fold.reason;
  std::map<std::string, std::string> bound(fold.bindings.begin(),
                                           fold.bindings.end());
  EXPECT_EQ(bound["bias"], "`bias`");  // the BiasAdd is there
  EXPECT_EQ(bound["b"], "`b`");
  EXPECT_EQ(bound["w"], "`w/read`");  // read through the Identity
}

TEST_F(ExplainTest, WrongOp) {
  Explanation e = At("tests/golden/pattern_use_count/in.pbtxt", "o1");
  EXPECT_FALSE(e.matched);
  EXPECT_EQ(e.reason, "the root: expected FusedBatchNormV3, found Relu `o1`");
}

TEST_F(ExplainTest, ExtraConsumers) {
  Explanation e = At("tests/golden/pattern_use_count/in.pbtxt", "bn2");
  EXPECT_FALSE(e.matched);
  EXPECT_EQ(e.reason, "guard `uses(conv) == 1` is false");
}

TEST_F(ExplainTest, NonConstOperand) {
  Explanation e =
      At("tests/golden/no_fold_lib_weights_not_constant/in.pbtxt", "bn");
  EXPECT_FALSE(e.matched);
  EXPECT_EQ(e.reason,
            "operand 1 of `conv`: expected Const, found Placeholder `w`");
}

TEST_F(ExplainTest, WrongAttr) {
  Explanation e = At("tests/golden/no_fold_lib_is_training/in.pbtxt", "bn");
  EXPECT_FALSE(e.matched);
  EXPECT_EQ(e.reason, "guard `bn.is_training == false` is false");
}

TEST(NestedPatternTest, AnonymousOperandsAreCheckedAtEveryLevel) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  std::unique_ptr<RuleSet> set = CompileRuleFiles(
      {"tests/golden/pattern_nested_no_match/rules.graft"}, {}, hooks, &d);
  ASSERT_NE(set, nullptr) << d.Render();
  absl::StatusOr<Graph> g =
      LoadGraph("tests/golden/pattern_nested_no_match/in.pbtxt");
  ASSERT_TRUE(g.ok());
  // `Relu(BiasAdd(MatMul(...)))`: r1 reads an AddV2; r2's BiasAdd reads a
  // Sub, not a MatMul.
  Explanation e1 = ExplainAt(*set, "tag_dense_relu", *g, g->FindId("r1"));
  EXPECT_FALSE(e1.matched);
  EXPECT_EQ(e1.reason, "operand 0 of `r`: expected BiasAdd, found AddV2 `add`");
  Explanation e = ExplainAt(*set, "tag_dense_relu", *g, g->FindId("r2"));
  EXPECT_FALSE(e.matched);
  EXPECT_EQ(e.reason,
            "operand 0 of operand 0 of `r`: expected MatMul, found Sub `sub`");
}

TEST_F(ExplainTest, WrongProducer) {
  // The BN reads a Placeholder where the pattern wants a Conv2D.
  Explanation e = At("tests/golden/rewrite_set_attr_device/in.pbtxt", "bn");
  EXPECT_FALSE(e.matched);
  EXPECT_EQ(e.reason, "`conv`: expected Conv2D, found Placeholder `x`");
}

// What one thread makes of a graph with a rule set: the rewritten text and
// every node's explanation.
std::string ApplyAndExplain(const RuleSet& set, const std::string& model) {
  absl::StatusOr<Graph> graph = LoadGraph(model);
  if (!graph.ok()) return "cannot load";
  std::string out;
  graph->ForEachNode([&](const Node& n) {
    for (const ::graft::Rule* rule : set.rules()) {
      Explanation e = ExplainAt(set, rule->name(), *graph, n.id());
      out += e.matched ? "match " + n.name() + "\n" : e.reason + "\n";
    }
  });
  absl::StatusOr<report::ApplyReport> report = ApplyRules(*graph, set.rules());
  if (!report.ok()) return std::string(report.status().message());
  return out + SerializeGraph(*graph, GraphFormat::kText);
}

// A compiled rule set is immutable: threads that match, explain and rewrite
// with it at once (each on its own graph) get what one thread alone gets.
TEST(RuleSetTest, SharedBetweenThreads) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  ASSERT_TRUE(analysis::RegisterAnalysisHooks(hooks).ok());
  Diagnostics d;
  std::unique_ptr<RuleSet> set = CompileRuleFiles(
      {"rules/tf/fold_batch_norms.graft", "rules/tf/quantize.graft"}, {}, hooks, &d);
  ASSERT_NE(set, nullptr) << d.Render();
  const std::vector<std::string> models = {
      "tests/golden/fold_bn_lib_nchw_conv/in.pbtxt",
      "tests/golden/fold_bn_lib_matmul_transpose_b/in.pbtxt",
      "tests/golden/pattern_use_count/in.pbtxt"};
  std::vector<std::string> alone;
  for (const std::string& m : models) alone.push_back(ApplyAndExplain(*set, m));
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<int> differences(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        size_t i = (t + round) % models.size();
        if (ApplyAndExplain(*set, models[i]) != alone[i]) ++differences[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(differences[t], 0);
  // The rules did something, so the comparison means something.
  EXPECT_NE(alone[0].find("match "), std::string::npos);
}

// Rule text that would drive recursion or quadratic work as far as the
// input goes is refused with a located error, quickly.
std::string FirstError(const std::string& text) {
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  Diagnostics d;
  std::unique_ptr<RuleSet> set =
      CompileRuleText("big.graft", text, {}, hooks, &d);
  EXPECT_EQ(set, nullptr);
  if (d.errors().empty()) return "";
  const auto& e = d.errors().front();
  return absl::StrCat(e.loc.line, ":", e.loc.col, ": ", e.message);
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(LimitsTest, DeepOrLongRuleText) {
  const std::string head = "rule a {\n  match { c = Relu(_) where ";
  const std::string tail = " }\n  rewrite { erase c }\n}\n";
  EXPECT_EQ(FirstError(head + Repeat("(", 10000) + "true" + Repeat(")", 10000) +
                       tail),
            "2:283: nested more than 256 levels deep");
  EXPECT_EQ(FirstError(head + Repeat("not ", 100000) + "true" + tail),
            "2:1053: more than 256 prefix operators in a row");
  EXPECT_EQ(FirstError(head + "uses(c) == 1" + Repeat(" + 1", 100000) + tail),
            "2:40: an expression nested more than 500 levels deep");
  EXPECT_EQ(FirstError("rule a {\n  match { c = " + Repeat("Relu(", 5000) +
                       "_" + Repeat(")", 5000) + tail),
            "2:1289: nested more than 256 levels deep");
  // An unknown op a megabyte long: reported at once, with no suggestion.
  std::string op = "R" + Repeat("x", 1 << 20);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(FirstError("rule a {\n  match { c = " + op + "(_)" + tail),
            absl::StrCat("2:15: unknown op `", op, "`"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Named patterns that each use the one before twice double the pattern at
// every level: refused once it grows past its bound, with and without
// parameters.
TEST(LimitsTest, NamedPatternsThatDoubleThePattern) {
  for (bool params : {false, true}) {
    std::string text =
        params ? "pattern p0(x) = Relu(x)\n" : "pattern p0 = Relu(_)\n";
    for (int i = 1; i <= 30; ++i) {
      text += params ? absl::StrCat("pattern p", i, "(x) = Add(_: p", i - 1,
                                    "(x), _: p", i - 1, "(x))\n")
                     : absl::StrCat("pattern p", i, " = Add(_: p", i - 1,
                                    ", _: p", i - 1, ")\n");
    }
    text += params ? "rule a {\n  match { c = p30(y) where uses(y) > 0 }\n"
                   : "rule a {\n  match { c = p30 }\n";
    text += "  rewrite { erase c }\n}\n";
    auto start = std::chrono::steady_clock::now();
    std::string error = FirstError(text);
    EXPECT_NE(error.find("the pattern grows past 10000 nodes here"),
              std::string::npos)
        << error;
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(10));
  }
}

}  // namespace
}  // namespace graft::dsl
