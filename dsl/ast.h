// The AST of a rule file, as the parser builds it and the checker reads it.
#ifndef GRAFT_DSL_AST_H_
#define GRAFT_DSL_AST_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace graft::dsl {

// A position in a rule file, 1-based.
struct Loc {
  int line = 0;
  int col = 0;
};

// `path` as written in `file` (a rule file, pipeline): relative to the
// file's folder unless absolute; `..` and `.` resolved, so that a file
// imported by two spellings (`rules/x.graft`, `rules/tf/gtt/../x.graft`) is one
// file.
inline std::string PathRelativeTo(const std::string& file,
                                  const std::string& path) {
  if (!path.empty() && path[0] == '/')
    return std::filesystem::path(path).lexically_normal().string();
  size_t slash = file.rfind('/');
  std::string joined =
      slash == std::string::npos ? path : file.substr(0, slash + 1) + path;
  return std::filesystem::path(joined).lexically_normal().string();
}

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

// `..conv.attrs` (copy every attr of a matched node) or `name: value`.
struct AttrItem {
  bool spread = false;
  std::string name;  // the attr, or the node whose attrs are copied
  ExprPtr value;
  Loc loc;
};

struct Expr {
  enum class Kind {
    kBool,      // true / false
    kInt,       // 42
    kFloat,     // 1e-3
    kString,    // "text"
    kName,      // x
    kPort,      // x:1
    kMember,    // x.epsilon (args[0] is x)
    kCall,      // f(a, b) or ns.f(a)
    kCreate,    // Op(a, b) { attrs } named "template" / conv.op(a, b)
    kUnary,     // -x, not x
    kBinary,    // a + b, a and b, a == b, ...
    kList,      // [a, b]
    kIndex,     // xs[i] (args: xs, i)
    kIf,        // if c then a else b (args: c, a, b)
    kListComp,  // [body for text in source] (args: body, source)
  };
  Kind kind = Kind::kInt;
  Loc loc;
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  // kString: the text; kName/kPort: the name; kMember: the member; kCall: the
  // function; kCreate: the op (empty with op_of); kUnary/kBinary: operator.
  std::string text;
  int port = 0;                 // kPort
  std::string op_of;            // kCreate: `conv.op(...)` copies conv's op
  ExprPtr op_expr;              // kCreate: `op(name)(...)`: the op's name
  std::vector<ExprPtr> args;    // operands, call arguments, list items
  std::vector<AttrItem> attrs;  // kCreate
  std::string name_template;    // kCreate: `named "{bn}/scaled"`
  bool has_name_template = false;
  // kCreate: `shared Op(...)`: the nodes it builds are read from the graph
  // where an equal one is there (same op, inputs, attrs, device).
  bool shared = false;
};

struct NodePattern;

// One operand of a node pattern.
struct OperandPattern {
  enum class Kind {
    kName,      // x: a tensor (or output 0 of the pattern node named x)
    kPort,      // n:1: output 1 of n
    kBound,     // w: Const(...): tensor w, produced by the nested pattern
    kNested,    // Relu(x): an anonymous producer
    kWildcard,  // _
    kVariadic,  // xs...: the remaining inputs
    kControl,   // ^c: a control input from c
    kGap,       // ..: any number of inputs (`_(.., t, ..)`)
  };
  Kind kind = Kind::kWildcard;
  std::string name;
  int port = 0;
  std::shared_ptr<NodePattern> nested;
  // `?t` in an optional node's operands: `t` stands in when it is absent.
  bool stand_in = false;
  Loc loc;
};

// Op alternatives (with `*` globs; `_` for any op) and, optionally, the
// operands in order.
struct NodePattern {
  std::vector<std::string> ops;  // empty: any op
  // `Op?(a, ...)`: the node may be absent; then `a`'s producer (or that of
  // the operand marked `?`) stands in and the other operands bind nothing.
  bool optional = false;
  std::string ref;  // a named pattern used here (`conv = weighted_op`)
  // `repeated(kh, _)`: a named pattern with parameters, called with these
  // names ("_": one the rule does not name).
  bool ref_call = false;
  std::vector<std::pair<std::string, Loc>> ref_args;
  bool has_operands = false;
  std::vector<OperandPattern> operands;
  Loc loc;
};

struct PatternStmt {
  std::string name;
  NodePattern pattern;
  Loc loc;
};

struct Action {
  enum class Kind {
    kLet,        // let s = expr (a constant or any value)
    kAssign,     // x = Op(...): create a node
    kReplace,    // replace t with u
    kReroute,    // reroute t -> u [only|except {a, b}]
    kSwap,       // swap t, u
    kErase,      // erase n
    kRename,     // rename n to "name"
    kControl,    // control a -> b
    kUncontrol,  // uncontrol a -> b
    kDevice,     // device n "/device:GPU:0"
    kSet,        // set n.attr = value, set n[name] = value
    kUnset,      // unset n.attr, unset n[name]
    kClone,      // clone a, b as a2, b2 [with {x -> y}]
    kSplice,  // splice "g.pbtxt" [prefix "p/"] [inputs {"in": x}] [take {out:
              // "name"}]
    kFail,    // fail "message {n}": stops the whole apply with an error
    kFor,     // for x in list { actions }: `body` once per item
  };
  enum class Filter { kAll, kOnly, kExcept };
  Kind kind = Kind::kLet;
  Loc loc;
  std::string name;  // let/assign target, renamed/set node
  Loc name_loc;
  std::string target;  // set/unset: the attr (empty: its name is `b`)
  Loc target_loc;
  // replace/reroute/swap: the tensors; control/uncontrol: the nodes (each a
  // node or a list); erase/device: the nodes (a), device: the device (b);
  // set/unset n[name]: the name (b), set: the value (a).
  ExprPtr a, b;
  Filter filter = Filter::kAll;
  std::vector<ExprPtr> filter_nodes;  // each a node or a list of nodes
  // kClone: the nodes copied (nodes, or one list: a set) and the names their
  // copies get (one per node; a set's copies are one lookup); tensor
  // replacements for the copies' inputs; a name template for a set's copies
  // (`{node}`: the original's name).
  std::vector<Action> body;  // kFor: the actions repeated (name: the item)
  std::vector<ExprPtr> clone_from;
  std::vector<std::pair<std::string, Loc>> clone_to;
  std::vector<std::pair<ExprPtr, ExprPtr>> replacements;
  std::string name_template;
  bool has_name_template = false;
  // kSplice: the graph file (relative to the rule file), the name prefix,
  // its placeholders fed from the graph, and names bound to spliced nodes.
  std::string path;
  std::string path_param;  // or a `graph` param
  Loc path_loc;
  std::string splice_root;  // `for "name"`: only what computes this node
  std::string prefix;
  std::vector<std::pair<std::string, ExprPtr>> splice_inputs;
  std::vector<std::pair<std::pair<std::string, Loc>, std::string>> take;
};

struct RuleTest {
  std::string name;
  Loc loc;
  std::string input;  // path, relative to the rule file
  Loc input_loc;
  std::vector<std::pair<std::string, int>> expect_ops;
  std::vector<std::string> expect_nodes;
  std::vector<std::string> expect_no_nodes;
  // (tensor, node): the tensor ("a", "a:1", "^a" for a control edge) is an
  // input of the node.
  std::vector<std::pair<std::string, std::string>> expect_edges;
  bool no_match = false;
  // `all_rules`: every rule of the set runs (the file's and its imports'),
  // as `graft apply -r` runs them; `no_match` and "it matched" then count
  // this rule's rewrites alone.
  bool all_rules = false;
  // `param name = value` items: the file is compiled with these values.
  struct ParamValue {
    std::string name;
    std::string value;  // as text, as `--param name=value` gives it
    Loc loc;
  };
  std::vector<ParamValue> params;
};

// `let name = expr` in a match: a value the `where`s and the rewrite read
// by name, computed once the names it reads are bound.
struct LetStmt {
  std::string name;
  Loc name_loc;
  ExprPtr expr;
  Loc loc;
  size_t wheres_before = 0;  // the `where`s written before it
};

struct Rule {
  std::string name;
  Loc loc;
  std::string doc;
  int priority = 0;
  bool has_priority = false;
  bool has_match = false;
  bool has_rewrite = false;
  Loc match_loc;
  // `for var in plan`: the rule matches once per item of the plan.
  std::string for_var;
  std::string for_source;
  Loc for_loc;
  std::vector<PatternStmt> patterns;
  std::vector<ExprPtr> guards;
  std::vector<LetStmt> lets;  // in the file's order: one reads earlier ones
  std::vector<Action> actions;
  std::vector<RuleTest> tests;
};

struct Param {
  std::string name;
  std::string type;  // int, float, bool, string, ranges, graph
  ExprPtr default_value;
  // `in lo..hi`: the allowed values of an int or float param (inclusive).
  bool has_range = false;
  double range_min = 0;
  double range_max = 0;
  Loc range_loc;
  Loc loc;
  Loc type_loc;
};

struct Import {
  std::string path;
  Loc loc;
};

// `require expr`: checked against the graph before any rule runs; false,
// or an error from a hook, stops the apply.
struct Require {
  ExprPtr expr;
  Loc loc;
};

// `pattern name = Op(...)`: a pattern piece rules use by name; the names it
// binds are bound in the rule that uses it.
// `pattern name(a, b) = r: Op(...) where expr`: with parameters, a call
// (`n = name(x, y)`) binds the parameters to the rule's names and the root
// `r` to the call's; its other names are its own at each call, and its
// `where` holds with the rule's.
struct PatternDef {
  std::string name;
  NodePattern pattern;
  Loc loc;
  bool has_params = false;
  std::vector<std::pair<std::string, Loc>> params;
  std::string root;  // `r: Op(...)`: the root's name, for the `where`
  Loc root_loc;
  ExprPtr where;
  // `= a(x) | b(x)`: the alternatives after the first (`pattern`); a rule
  // that calls the pattern matches where any of them does.
  std::vector<NodePattern> or_patterns;
};

// `guard name(a, b) = expr`: a named guard, inlined where it is called
// (`where name(x, y)`), its parameters replaced by the call's arguments. Its
// expression reads only its parameters, params and plans. A `fragment`
// builds nodes (and is called in rewrites); a guard never does.
struct GuardDef {
  std::string name;
  std::vector<std::pair<std::string, Loc>> params;
  ExprPtr body;
  Loc loc;
  bool fragment = false;
  const char* kind() const { return fragment ? "fragment" : "guard"; }
};

// `plan name = expr`: a value computed once per graph, before any rule runs,
// that guards and rewrites read by name.
struct Plan {
  std::string name;
  ExprPtr expr;
  Loc loc;
};

// `output order expr`: the nodes the graph is written in the order of,
// once the rules have run.
struct OutputOrder {
  ExprPtr expr;
  Loc loc;
};

struct RuleFile {
  std::string path;
  std::string source;
  std::string dialect;  // `dialect NAME`; empty: tensorflow
  Loc dialect_loc;
  std::vector<Import> imports;
  std::vector<Param> params;
  std::vector<Require> requirements;
  std::vector<Plan> plans;
  std::vector<OutputOrder> output_orders;
  std::vector<PatternDef> pattern_defs;
  std::vector<GuardDef> guard_defs;
  std::vector<Rule> rules;
};

}  // namespace graft::dsl

#endif  // GRAFT_DSL_AST_H_
