// Compiled patterns and the matcher: the search that binds a rule's pattern
// nodes to graph nodes, from the root down its operands, checking each guard
// as soon as the names it reads are bound.
//
// Bindings live in slot-indexed frames (dsl/bindings.h) with undo on
// backtrack; nothing is copied per branch or per candidate. "Why not
// matched" goes to an ExplainSink the caller passes in; without one, no
// message is ever built.
#ifndef GRAFT_DSL_MATCHER_H_
#define GRAFT_DSL_MATCHER_H_

#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/bindings.h"
#include "dsl/evaluator.h"
#include "engine/graph.h"

namespace graft::dsl {

struct PatternOperand {
  OperandPattern::Kind kind = OperandPattern::Kind::kWildcard;
  std::string name;
  int port = 0;
  int nested = -1;  // pattern node of a nested / bound operand
  int stmt = -1;    // pattern node of the statement `name` refers to
  int slot = -1;    // the slot `name` binds (a tensor, a list, a control)
};

struct PatternNode {
  std::vector<std::string> ops;  // empty: any op
  std::string binding;           // statement name, or empty
  int slot = -1;                 // binding's slot
  bool has_operands = false;
  bool variadic = false;
  // `Op(.., t, ..)`: data[0] is read at any input position.
  bool anywhere = false;
  // `Op?(a, ...)`: may be absent (then data[stand_in] is matched in its
  // place).
  bool optional = false;
  int stand_in = 0;
  std::vector<PatternOperand> data;
  std::vector<PatternOperand> control;
  // How explanations name this node: "`conv`", or "operand 1 of `conv`" for
  // an anonymous nested pattern.
  std::string what;
};

// A conjunct of a rule's `where`, checked once every slot it reads is bound.
struct Guard {
  ExprPtr expr;  // null for a `for` membership check
  std::vector<int> slots;
  // `for t in plan` with a pattern: the value in slots[0] must be an item of
  // the plan (Bindings::for_items).
  bool for_member = false;
  // Reads a name bound in an optional part: checked when the match is
  // complete (the name may be unbound; `bound(name)` says).
  bool at_end = false;
};

// A match's `let name = expr`: bound (on the trail, so backtracking unbinds
// it) once every slot it reads is bound and the guards written before it
// hold, so that a `where` can keep an expensive or partial `let` from
// running where it does not apply.
struct MatchLet {
  int slot = -1;
  ExprPtr expr;
  std::vector<int> slots;
  size_t guards_before = 0;  // guards[0, guards_before) come first
  bool at_end = false;       // reads a name of an optional part
};

struct CompiledPattern {
  std::vector<PatternNode> nodes;  // statements first, then nested patterns
  int root = -1;  // -1: no patterns (a `for` rule): only the guards
  std::vector<MatchLet> lets;  // in the file's order
  std::vector<Guard> guards;
};

// Where the search says why it failed: the reason of the branch that got
// furthest (most pattern nodes bound).
struct ExplainSink {
  std::string reason;
  size_t depth = 0;
  bool any = false;
  bool guard = false;  // the reason is a false guard
};

// Matches `pattern` rooted at graph node `root`. On success the pattern's
// slots are bound in `bindings` and `nodes` lists the matched graph nodes;
// on failure both are as they were.
// With `guard_error`, the first guard that failed with an error (not just
// false) is said there: a rule that silently never matches is a bug to see.
bool MatchPattern(const CompiledPattern& pattern, const Evaluator& evaluator,
                  const Graph& graph, NodeId root, Bindings* bindings,
                  std::vector<NodeId>* nodes, ExplainSink* sink,
                  std::string* guard_error = nullptr);

bool OpMatches(const std::vector<std::string>& ops, const std::string& op);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_MATCHER_H_
