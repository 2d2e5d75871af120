// The fixpoint driver: applies rules over a graph until nothing more
// matches.
//
// A worklist holds nodes in id order (the file's order, then new nodes).
// At each node the rules anchored on its op are tried by priority (higher
// first), then in the order given. A match is rewritten inside a Rewriter
// transaction; the driver then removes the matched nodes the rewrite left
// unused, checks safety and commits, or rolls everything back and reports
// the skip. Nodes a rewrite inserts or touches, and their neighbours, go
// back on the worklist.
//
// Safety is the engine's, not each rule's: a node that is removed must not
// feed anything outside the removed set (data or control) and must not be a
// graph output, unless a new node takes over its name. Orderings carry
// over: a removed node's control inputs go to its heir (the node that takes
// its name) or else to the nodes that read it and stay, and control readers
// of a node with an heir wait on the heir.
#ifndef GRAFT_ENGINE_DRIVER_H_
#define GRAFT_ENGINE_DRIVER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/rewriter.h"
#include "proto/report.pb.h"

namespace graft {

// What a rule matched: the root and every node of the pattern. Rules keep
// their own bindings in a subclass.
struct MatchState {
  virtual ~MatchState() = default;
  NodeId root = kNoNode;
  std::vector<NodeId> nodes;
};

// Removals a rewrite asks for; the driver carries them out after checking.
struct RewritePlan {
  // Nodes replaced by others (`replace`): a graph output among them needs a
  // takeover.
  std::vector<NodeId> remove;
  // Nodes erased on purpose (`erase`): may be nodes nothing reads, but not
  // outputs the caller named.
  std::vector<NodeId> erase;
  // (removed node, new node that takes over its name)
  std::vector<std::pair<NodeId, NodeId>> takeover;
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual const std::string& name() const = 0;
  virtual int priority() const = 0;
  // Rules run in stages: those of stage 0 to a fixpoint, then those of
  // stages 0 and 1 to a fixpoint, and so on; a rule is prepared when its
  // stage starts (a rule file's plans see what its imports' rules made).
  virtual int stage() const { return 0; }
  // Ops the pattern's root may have (`Name*` globs allowed); empty: any op.
  virtual std::vector<std::string> anchor_ops() const = 0;
  // The match rooted at `root`, or nullptr.
  virtual std::unique_ptr<MatchState> Match(const Graph& graph,
                                            NodeId root) const = 0;
  // The same, saying in `guard_error` why not when a guard failed with an
  // error rather than being false (rules that have guards override it).
  virtual std::unique_ptr<MatchState> MatchReporting(
      const Graph& graph, NodeId root, std::string* /*guard_error*/) const {
    return Match(graph, root);
  }
  // Checks the rule's inputs against the graph before anything changes
  // (a param's data naming tensors, say); an error stops the apply.
  virtual absl::Status Prepare(const Graph& /*graph*/) const {
    return absl::OkStatus();
  }
  // Edits the graph through `rewriter` only. An error from FailRewrite
  // stops the whole apply; any other error skips this rewrite.
  virtual absl::Status Rewrite(const MatchState& match, Rewriter& rewriter,
                               RewritePlan* plan) const = 0;
};

// An error that stops the apply (a rule's `fail`), not just this rewrite.
absl::Status FailRewrite(absl::string_view message);
bool IsFailRewrite(const absl::Status& status);
// `status` with `prefix` before its message; its code and payloads (a
// FailRewrite mark among them) are kept.
absl::Status Prefixed(absl::string_view prefix, const absl::Status& status);

// The default rewrite limit grows with the graph: a rule that never stops
// on a small graph ends quickly (with the non-convergence report), and
// memory stays bounded by the graph.
inline constexpr int64_t kRewritesBase = 1000;
inline constexpr int64_t kRewritesPerNode = 10;

struct ApplyOptions {
  // At most this many rewrites; 0: kRewritesBase + kRewritesPerNode per
  // node of the graph.
  int64_t max_rewrites = 0;
  // Graph outputs (fetch nodes) besides the nodes nothing reads.
  std::vector<std::string> outputs;
};

// Applies `rules` to a fixpoint, stage by stage, and reports what happened.
// Fails when a rule's Prepare fails (nothing changed when it is of the
// first stage), when a rule fails the rewrite on
// purpose (FailRewrite; the graph is as it was before that rewrite), or on
// an internal error; skipped rewrites and non-convergence are in the report.
// The rewrite limit `options` give for `graph`.
int64_t RewriteLimit(const ApplyOptions& options, const Graph& graph);

absl::StatusOr<report::ApplyReport> ApplyRules(
    Graph& graph, absl::Span<const Rule* const> rules,
    const ApplyOptions& options = {});

}  // namespace graft

#endif  // GRAFT_ENGINE_DRIVER_H_
