// The rewrite actions of a compiled rule: one function per action kind
// (let, create, replace, reroute, swap, erase, rename, device, control,
// set, clone, splice, fail), all editing the graph through the Rewriter.
#ifndef GRAFT_DSL_ACTIONS_H_
#define GRAFT_DSL_ACTIONS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dsl/ast.h"
#include "dsl/bindings.h"
#include "dsl/evaluator.h"
#include "engine/driver.h"
#include "engine/rewriter.h"

namespace graft::dsl {

// The graph a `splice` copies from: a file, or a `graph` param (null when
// the param was given no file).
struct SpliceSource {
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const tf::GraphDef> whole;  // the whole graph, when no `for`
  std::string what;                           // "`file`" or "param `name`"
};

// A rule's rewrite: its actions and the graphs its splices read, loaded when
// the rule compiled (by action index).
struct RewriteProgram {
  std::string path;  // the rule file, for errors ("file:line: ...")
  std::vector<Action> actions;
  std::map<std::ptrdiff_t, SpliceSource> splices;
};

// Runs `program` on a match rooted at `root`, binding new names in
// `bindings`. Errors carry the action's line.
absl::Status RunRewrite(const RewriteProgram& program,
                        const Evaluator& evaluator, NodeId root,
                        Bindings& bindings, Rewriter& rewriter,
                        RewritePlan* plan);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_ACTIONS_H_
