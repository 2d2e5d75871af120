// From rule files to rules the driver runs: loading (with imports), checking
// and compiling. Every problem is a located diagnostic; a rule set with any
// error does not compile.
//
// The stages: dsl/parser.h (text -> AST), dsl/checker.h (names, types,
// diagnostics, lint), dsl/matcher.h (compiled patterns and the search),
// dsl/evaluator.h (expressions), dsl/actions.h (rewrite actions),
// dsl/compiled_rule.h (a rule the driver runs).
#ifndef GRAFT_DSL_COMPILER_H_
#define GRAFT_DSL_COMPILER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ast.h"
#include "dsl/compiled_rule.h"
#include "dsl/diagnostics.h"
#include "engine/driver.h"
#include "engine/hooks.h"

namespace graft::dsl {

// A compiled rule set is immutable: its rules may match, explain and
// rewrite (each on its own graph) from several threads at once.
class RuleSet {
 public:
  std::vector<const ::graft::Rule*> rules() const;
  const std::vector<std::string>& files() const { return files_; }
  int size() const { return static_cast<int>(rules_.size()); }
  // The params the files declare.
  const std::vector<std::string>& params() const { return params_; }
  // The parsed files (for the tests inside them).
  const std::vector<std::shared_ptr<const RuleFile>>& files_ast() const {
    return asts_;
  }
  // The dialect of graphs the rules are for (the first file's `dialect`,
  // else the default dialect's name: engine/dialect.h).
  std::string dialect() const;
  // The compiled rule called `name`, or nullptr.
  const ::graft::Rule* Find(const std::string& name) const;
  // Drops the rules whose names match one of `patterns` (names, or fnmatch
  // globs: `rotary_*`), or with `keep` those that match none; returns the
  // dropped rules' names in file order and sets `matched[i]` where pattern
  // i matched one.
  std::vector<std::string> Drop(const std::vector<std::string>& patterns,
                                std::vector<bool>* matched, bool keep = false);
  // Whether a file says how the result is ordered (`output order`).
  bool orders_output() const { return output_order_.expr != nullptr; }
  // Gives `graph` (after the rules ran) the order a file's `output order
  // expr` says it is written in; nothing when no file says one.
  absl::Status OrderOutput(Graph& graph) const;

 private:
  friend class Checker;
  std::vector<std::unique_ptr<::graft::Rule>> rules_;
  std::vector<std::string> files_;
  std::vector<std::string> params_;
  struct OutputOrderDef {
    ExprPtr expr;
    std::string where;  // "file:line"
    RuleSetShared shared;
  };
  OutputOrderDef output_order_;
  std::vector<std::shared_ptr<const RuleFile>> asts_;
};

struct CompileOptions {
  // Param values by name, as text (from the CLI or a pipeline).
  std::map<std::string, std::string> params;
  // Skip values for params no file declares (a pipeline step that shares
  // the command line's params with other steps).
  bool ignore_unknown_params = false;
};

// Loads `paths` and the files they import, checks and compiles them.
// Returns nullptr when any error was reported to `diagnostics`.
std::unique_ptr<RuleSet> CompileRuleFiles(const std::vector<std::string>& paths,
                                          const CompileOptions& options,
                                          const HookRegistry& hooks,
                                          Diagnostics* diagnostics);

// The same for rule text already in memory (tests); imports resolve
// relative to the current directory.
std::unique_ptr<RuleSet> CompileRuleText(const std::string& path,
                                         const std::string& text,
                                         const CompileOptions& options,
                                         const HookRegistry& hooks,
                                         Diagnostics* diagnostics);

// What a rule makes of one node, without rewriting anything.
struct Explanation {
  bool matched = false;
  // Why not: the pattern element or guard that failed, as far as the search
  // got ("operand 1 of `conv`: expected Const, found Identity `w/read`").
  std::string reason;
  // When it matched: each name and what it is bound to, sorted by name.
  std::vector<std::pair<std::string, std::string>> bindings;
};

// Explains rule `rule` of `set` at `node`. The rule must be in the set.
Explanation ExplainAt(const RuleSet& set, const std::string& rule,
                      const Graph& graph, NodeId node);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_COMPILER_H_
