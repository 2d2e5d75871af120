#include "engine/driver.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"
#include "engine/status_marks.h"
#include "engine/validate.h"

namespace graft {
namespace {

// A min-heap of node ids with membership flags.
class Worklist : public RewriteListener {
 public:
  explicit Worklist(const Graph& graph) { PushAll(graph); }
  void PushAll(const Graph& graph) {
    graph.ForEachNode([&](const Node& n) { Push(n.id()); });
  }
  bool Empty() const { return heap_.empty(); }
  NodeId Pop() {
    NodeId id = heap_.top();
    heap_.pop();
    queued_[id] = false;
    return id;
  }
  // While a rewrite is open, pushes wait: a rolled-back rewrite must not
  // requeue anything (or a skipped match would be tried again forever).
  void Hold() { holding_ = true; }
  void Release(bool keep) {
    holding_ = false;
    if (keep) {
      for (NodeId id : held_) Push(id);
    }
    held_.clear();
  }
  void Push(NodeId id) {
    if (id == kNoNode) return;
    if (holding_) {
      held_.push_back(id);
      return;
    }
    if (static_cast<size_t>(id) >= queued_.size())
      queued_.resize(id + 1024, false);
    if (queued_[id]) return;
    queued_[id] = true;
    heap_.push(id);
  }
  void PushWithNeighbours(const Graph& g, NodeId id) {
    Push(id);
    const Node& n = g.node(id);
    if (!n.alive()) return;
    for (Endpoint e : n.inputs()) Push(e.node);
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (InputSlot s : n.consumers(p)) Push(s.node);
    }
  }
  void NodeInserted(const Graph& g, NodeId id) override {
    PushWithNeighbours(g, id);
    inserted.push_back(id);
  }
  void NodeChanged(const Graph& g, NodeId id) override {
    PushWithNeighbours(g, id);
    changed.push_back(id);
  }

  std::vector<NodeId> inserted;  // since the last clear
  std::vector<NodeId> changed;   // since the last clear

 private:
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<NodeId>> heap_;
  std::vector<char> queued_;
  bool holding_ = false;
  std::vector<NodeId> held_;
};

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

class Driver {
 public:
  Driver(Graph& graph, absl::Span<const Rule* const> rules,
         const ApplyOptions& options)
      : graph_(graph), rewriter_(graph), options_(options), worklist_(graph) {
    for (size_t i = 0; i < rules.size(); ++i) {
      order_.push_back(i);
      report_.add_rules()->set_name(rules[i]->name());
    }
    rules_.assign(rules.begin(), rules.end());
    std::sort(order_.begin(), order_.end(),
              [&](size_t a, size_t b) { return Before(a, b); });
    for (const Rule* rule : rules_) anchors_.push_back(rule->anchor_ops());
    for (size_t i : order_) {
      const std::vector<std::string>& anchors = anchors_[i];
      bool generic = anchors.empty();
      for (const std::string& op : anchors) {
        if (op.find('*') != std::string::npos) generic = true;
      }
      if (generic) {
        generic_.push_back(i);
      } else {
        for (const std::string& op : anchors) by_op_[op].push_back(i);
      }
    }
    // Outputs: what the caller names, and what nothing reads.
    for (const std::string& name : options.outputs) {
      if (NodeId id = graph.FindId(name); id != kNoNode) {
        outputs_.insert(id);
        declared_.insert(id);
      }
    }
    graph.ForEachNode([&](const Node& n) {
      if (!n.HasConsumers()) outputs_.insert(n.id());
    });
    rewriter_.AddListener(&worklist_);
  }

  absl::StatusOr<report::ApplyReport> Run() {
    int last_stage = 0;
    for (const Rule* rule : rules_)
      last_stage = std::max(last_stage, rule->stage());
    report_.set_nodes_before(graph_.num_nodes());
    limit_ = RewriteLimit(options_, graph_);
    int64_t rewrites = 0;
    bool converged = true;
    for (stage_ = 0; stage_ <= last_stage && converged; ++stage_) {
      for (const Rule* rule : rules_) {
        if (rule->stage() != stage_) continue;
        absl::Status s = rule->Prepare(graph_);
        if (!s.ok()) return s;
      }
      if (stage_ > 0) worklist_.PushAll(graph_);
      while (!worklist_.Empty()) {
        NodeId id = worklist_.Pop();
        if (id >= graph_.id_limit() || !graph_.node(id).alive()) continue;
        if (rewrites >= limit_) {
          converged = false;
          break;
        }
        absl::StatusOr<bool> rewrote = TryRules(id);
        if (!rewrote.ok()) return rewrote.status();
        if (*rewrote) ++rewrites;
      }
    }
    report_.set_rewrites(rewrites);
    report_.set_converged(converged);
    if (!converged) report_.set_non_convergence(DescribeRecent());
    report_.set_nodes_after(graph_.num_nodes());
    return report_;
  }

 private:
  // Higher priority first, then the order the rules were given in.
  bool Before(size_t a, size_t b) const {
    int pa = rules_[a]->priority(), pb = rules_[b]->priority();
    return pa != pb ? pa > pb : a < b;
  }

  std::vector<size_t> Candidates(const std::string& op) const {
    std::vector<size_t> out;
    if (auto it = by_op_.find(op); it != by_op_.end()) out = it->second;
    for (size_t i : generic_) {
      if (anchors_[i].empty() || GlobsMatch(anchors_[i], op)) out.push_back(i);
    }
    if (!generic_.empty()) {
      std::sort(out.begin(), out.end(),
                [&](size_t a, size_t b) { return Before(a, b); });
    }
    return out;
  }

  // Tries the rules at `id`; true when one rewrote the graph; an error when
  // a rule failed on purpose.
  absl::StatusOr<bool> TryRules(NodeId id) {
    std::string op = graph_.node(id).op();
    for (size_t r : Candidates(op)) {
      const Rule& rule = *rules_[r];
      if (rule.stage() > stage_) continue;
      report::RuleStats& stats = *report_.mutable_rules(static_cast<int>(r));
      auto start = std::chrono::steady_clock::now();
      stats.set_candidates(stats.candidates() + 1);
      std::string guard_error;
      std::unique_ptr<MatchState> match =
          rule.MatchReporting(graph_, id, &guard_error);
      if (match == nullptr && !guard_error.empty()) {
        stats.set_guard_errors(stats.guard_errors() + 1);
        if (report_.guard_errors_size() < 100) {
          report::SkippedRewrite* e = report_.add_guard_errors();
          e->set_rule(rule.name());
          e->set_node(graph_.node(id).name());
          e->set_reason(std::move(guard_error));
        }
      }
      if (match == nullptr) {
        stats.set_time_ms(stats.time_ms() +
                          Ms(std::chrono::steady_clock::now() - start));
        continue;
      }
      stats.set_matches(stats.matches() + 1);
      std::string root_name = graph_.node(id).name();
      int before = graph_.num_nodes();
      int removed = 0;
      std::vector<ValidationIssue> issues;
      absl::Status status = Attempt(rule, *match, &removed, &issues);
      if (!issues.empty() && AllPreExisting(issues)) {
        // The nodes were invalid before the rewrite; it did not make them so.
        status = Attempt(rule, *match, &removed, nullptr);
      }
      if (!status.ok()) {
        if (IsFailRewrite(status)) {
          return absl::FailedPreconditionError(
              absl::StrCat("rule `", rule.name(), "` failed at `", root_name,
                           "`: ", status.message()));
        }
        stats.set_skipped(stats.skipped() + 1);
        if (report_.skipped_size() < 100) {
          report::SkippedRewrite* skip = report_.add_skipped();
          skip->set_rule(rule.name());
          skip->set_node(root_name);
          skip->set_reason(std::string(status.message()));
        }
        stats.set_time_ms(stats.time_ms() +
                          Ms(std::chrono::steady_clock::now() - start));
        continue;
      }
      stats.set_applied(stats.applied() + 1);
      stats.set_nodes_removed(stats.nodes_removed() + removed);
      stats.set_nodes_added(stats.nodes_added() + graph_.num_nodes() - before +
                            removed);
      stats.set_time_ms(stats.time_ms() +
                        Ms(std::chrono::steady_clock::now() - start));
      recent_.emplace_back(r, root_name);
      if (recent_.size() > 64) recent_.pop_front();
      return true;
    }
    return false;
  }

  // Runs one rewrite in a transaction: the rule's edits, the removals
  // (Finish), then, with `issues`, validation of every node the rewrite
  // inserted or changed (dtypes, input counts, Const values); problems fill
  // `issues`. Commits, or rolls back and says why.
  absl::Status Attempt(const Rule& rule, const MatchState& match, int* removed,
                       std::vector<ValidationIssue>* issues) {
    worklist_.inserted.clear();
    worklist_.changed.clear();
    rewriter_.SetProvenance(rule.name());
    worklist_.Hold();
    rewriter_.Begin();
    RewritePlan plan;
    SnapshotConsumers(match);
    absl::Status status = rule.Rewrite(match, rewriter_, &plan);
    if (status.ok()) status = Finish(match, plan, removed);
    if (status.ok() && issues != nullptr) {
      std::vector<NodeId> touched = worklist_.inserted;
      touched.insert(touched.end(), worklist_.changed.begin(),
                     worklist_.changed.end());
      *issues = ValidateNodes(graph_, touched);
      if (!issues->empty()) {
        status = absl::FailedPreconditionError(
            absl::StrCat("the rewrite would make the graph invalid: ",
                         issues->front().message));
      }
    }
    if (!status.ok()) {
      rewriter_.Rollback();
      worklist_.Release(false);
      return status;
    }
    rewriter_.Commit();
    worklist_.Release(true);
    // The root may match again (another item of a `for` rule's plan sits at
    // the same node, or another rule), even when the rewrite did not touch
    // it.
    if (graph_.node(match.root).alive()) worklist_.Push(match.root);
    return absl::OkStatus();
  }

  // Whether each problem a rewrite was refused for was there before it (the
  // rewrite has been rolled back): a node the input graph already had wrong.
  bool AllPreExisting(const std::vector<ValidationIssue>& issues) const {
    for (const ValidationIssue& issue : issues) {
      if (issue.node == kNoNode || issue.node >= graph_.id_limit() ||
          !graph_.node(issue.node).alive())
        return false;
      bool found = false;
      for (const ValidationIssue& before :
           ValidateNodes(graph_, {issue.node})) {
        found = found || before.message == issue.message;
      }
      if (!found) return false;
    }
    return true;
  }

  // What only removed nodes read goes with them, transitively, where the
  // dialect lets an unread producer go (ONNX: an initializer a pattern
  // matched as `_...`, which runtimes warn of when unused, and the shape
  // arithmetic that computed a removed Reshape's target). A graph input
  // stays (the model's interface), and so does a graph output.
  template <typename FeedsOnlyDead>
  void AddDeadProducers(const FeedsOnlyDead& feeds_only_dead,
                        absl::flat_hash_set<NodeId>* dead) {
    const Dialect& dialect = DialectOf(graph_);
    std::vector<NodeId> frontier(dead->begin(), dead->end());
    while (!frontier.empty()) {
      std::vector<NodeId> found;
      for (NodeId id : frontier) {
        const Node& n = graph_.node(id);
        for (int i = 0; i < n.num_inputs(); ++i) {
          if (!n.input(i).valid()) continue;
          const Node& c = graph_.node(n.input(i).node);
          if (c.op() == "Placeholder" || !c.alive() || dead->contains(c.id()) ||
              outputs_.contains(c.id()) || !c.control_inputs().empty() ||
              !dialect.MayDropUnreadProducer(graph_, c) || !feeds_only_dead(c))
            continue;
          dead->insert(c.id());
          found.push_back(c.id());
        }
      }
      frontier = std::move(found);
    }
  }

  // Removes what the rewrite asked for and what it left unused, checking
  // that nothing outside still needs it.
  absl::Status Finish(const MatchState& match, const RewritePlan& plan,
                      int* removed) {
    absl::flat_hash_set<NodeId> dead(plan.remove.begin(), plan.remove.end());
    absl::flat_hash_set<NodeId> erased(plan.erase.begin(), plan.erase.end());
    dead.insert(erased.begin(), erased.end());
    absl::flat_hash_map<NodeId, NodeId> heir;  // removed -> takes its name
    for (const auto& [old_id, new_id] : plan.takeover) heir[old_id] = new_id;
    auto feeds_only_dead = [&](const Node& n) {
      for (NodeId c : n.control_consumers()) {
        if (!dead.contains(c)) return false;
      }
      for (int p = 0; p < n.num_used_ports(); ++p) {
        for (InputSlot s : n.consumers(p)) {
          if (!dead.contains(s.node)) return false;
        }
      }
      return true;
    };
    // Matched nodes the rewrite left without consumers go too (transitively).
    bool grew = true;
    while (grew) {
      grew = false;
      for (NodeId id : match.nodes) {
        if (dead.contains(id) || !graph_.node(id).alive() ||
            outputs_.contains(id))
          continue;
        if (feeds_only_dead(graph_.node(id))) {
          dead.insert(id);
          grew = true;
        }
      }
    }
    // A constant the rewrite made and left unread (a `let` that only an
    // `if`'s other branch used) goes too.
    for (NodeId id : worklist_.inserted) {
      if (id >= graph_.id_limit()) continue;
      const Node& n = graph_.node(id);
      if (n.alive() && n.op() == "Const" && n.control_inputs().empty() &&
          !outputs_.contains(id) && feeds_only_dead(n))
        dead.insert(id);
    }
    AddDeadProducers(feeds_only_dead, &dead);
    std::vector<NodeId> doomed(dead.begin(), dead.end());
    std::sort(doomed.begin(), doomed.end());
    absl::Status carried = CarryControlOrder(doomed, dead, heir);
    if (!carried.ok()) return carried;
    for (NodeId id : doomed) {
      const Node& n = graph_.node(id);
      if (!n.alive()) continue;
      for (NodeId c : n.control_consumers()) {
        if (!dead.contains(c)) {
          return absl::FailedPreconditionError(absl::StrCat(
              "`", n.name(), "` would be removed but `", graph_.node(c).name(),
              "` outside the match has a control edge from it"));
        }
      }
      for (int p = 0; p < n.num_used_ports(); ++p) {
        for (InputSlot s : n.consumers(p)) {
          if (!dead.contains(s.node)) {
            return absl::FailedPreconditionError(absl::StrCat(
                "`", n.name(), "` would be removed but `",
                graph_.node(s.node).name(), "` outside the match reads ",
                graph_.TensorName({id, p})));
          }
        }
      }
      bool protected_output =
          erased.contains(id) ? declared_.contains(id) : outputs_.contains(id);
      if (protected_output && !heir.contains(id)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "`", n.name(), "` is a graph output and would be removed"));
      }
    }
    std::vector<std::pair<NodeId, std::string>> names;
    for (NodeId id : doomed) {
      if (heir.contains(id))
        names.emplace_back(heir[id], graph_.node(id).name());
    }
    absl::Status s = rewriter_.RemoveNodes(doomed);
    if (!s.ok()) return s;
    for (const auto& [new_id, name] : names) {
      s = rewriter_.Rename(new_id, name);
      if (!s.ok()) return s;
    }
    for (NodeId id : doomed) {
      if (outputs_.erase(id) > 0 && heir.contains(id))
        outputs_.insert(heir[id]);
      if (declared_.erase(id) > 0 && heir.contains(id))
        declared_.insert(heir[id]);
    }
    *removed = static_cast<int>(doomed.size());
    return absl::OkStatus();
  }

  // The consumers (data and control) each matched node had before the
  // rewrite, when a matched node carries control inputs (the only case
  // CarryControlOrder needs them).
  void SnapshotConsumers(const MatchState& match) {
    consumers_before_.clear();
    bool any_control = false;
    for (NodeId id : match.nodes)
      any_control = any_control || !graph_.node(id).control_inputs().empty();
    if (!any_control) return;
    for (NodeId id : match.nodes) {
      const Node& n = graph_.node(id);
      std::vector<NodeId>& out = consumers_before_[id];
      for (int p = 0; p < n.num_used_ports(); ++p) {
        for (InputSlot s : n.consumers(p)) out.push_back(s.node);
      }
      for (NodeId c : n.control_consumers()) out.push_back(c);
    }
  }

  // Where the orderings of removed node `id` go: its heir, else every node
  // that consumed it before the rewrite and stays (through removed
  // consumers, to their heirs or their own consumers).
  void OrderTargets(NodeId id, const absl::flat_hash_set<NodeId>& dead,
                    const absl::flat_hash_map<NodeId, NodeId>& heir,
                    absl::flat_hash_set<NodeId>* seen,
                    std::vector<NodeId>* out) const {
    if (!seen->insert(id).second) return;
    if (auto h = heir.find(id); h != heir.end()) {
      out->push_back(h->second);
      return;
    }
    auto it = consumers_before_.find(id);
    if (it == consumers_before_.end()) return;
    for (NodeId r : it->second) {
      if (!graph_.node(r).alive()) continue;
      if (dead.contains(r)) {
        OrderTargets(r, dead, heir, seen, out);
      } else if (std::find(out->begin(), out->end(), r) == out->end()) {
        out->push_back(r);
      }
    }
  }

  // A removed node's orderings are kept, never dropped: its control inputs
  // go to what takes its place (OrderTargets), and nodes that waited on it
  // through control edges wait on its heir. Without an heir, a control
  // reader outside the match makes the rewrite unsafe (Finish says so).
  absl::Status CarryControlOrder(
      const std::vector<NodeId>& doomed,
      const absl::flat_hash_set<NodeId>& dead,
      const absl::flat_hash_map<NodeId, NodeId>& heir) {
    for (NodeId id : doomed) {
      const Node& n = graph_.node(id);
      if (!n.alive()) continue;
      std::vector<NodeId> inputs;
      for (NodeId c : n.control_inputs()) {
        if (c != kNoNode && !dead.contains(c)) inputs.push_back(c);
      }
      if (!inputs.empty()) {
        if (!heir.contains(id) && !consumers_before_.contains(id) &&
            n.HasConsumers()) {
          return absl::FailedPreconditionError(
              absl::StrCat("`", n.name(),
                           "` would be removed with its control inputs, and "
                           "nothing says what takes its place"));
        }
        std::vector<NodeId> targets;
        absl::flat_hash_set<NodeId> seen;
        OrderTargets(id, dead, heir, &seen, &targets);
        for (NodeId t : targets) {
          for (NodeId c : inputs) {
            if (c == t) continue;
            absl::Status s = rewriter_.AddControlEdge(c, t);
            if (!s.ok()) return Prefixed("keeping a control dependency: ", s);
          }
        }
      }
      auto h = heir.find(id);
      if (h == heir.end()) continue;
      std::vector<NodeId> waiting(n.control_consumers().begin(),
                                  n.control_consumers().end());
      for (NodeId k : waiting) {
        if (dead.contains(k) || k == h->second) continue;
        absl::Status s = rewriter_.RemoveControlEdge(id, k);
        if (s.ok()) s = rewriter_.AddControlEdge(h->second, k);
        if (!s.ok()) return Prefixed("keeping a control dependency: ", s);
      }
    }
    return absl::OkStatus();
  }

  std::string DescribeRecent() const {
    std::map<std::string, std::vector<std::string>> by_rule;
    for (const auto& [r, node] : recent_) {
      auto& nodes = by_rule[rules_[r]->name()];
      // A runaway rule may grow names: say their ends, not all of them.
      std::string shown = node.size() <= 80
                              ? node
                              : absl::StrCat(node.substr(0, 40), "...",
                                             node.substr(node.size() - 30),
                                             " (", node.size(), " chars)");
      if (std::find(nodes.begin(), nodes.end(), shown) == nodes.end() &&
          nodes.size() < 5) {
        nodes.push_back(shown);
      }
    }
    std::vector<std::string> parts;
    for (const auto& [rule, nodes] : by_rule) {
      parts.push_back(absl::StrCat("`", rule, "` (at `",
                                   absl::StrJoin(nodes, "`, `"), "`)"));
    }
    return absl::StrCat(
        "no fixpoint after ", limit_,
        " rewrites; still firing: ", absl::StrJoin(parts, ", "));
  }

  int64_t limit_ = 0;  // the rewrite limit of this run
  int stage_ = 0;      // the rules of this stage and before run
  Graph& graph_;
  Rewriter rewriter_;
  const ApplyOptions& options_;
  Worklist worklist_;
  std::vector<const Rule*> rules_;
  std::vector<std::vector<std::string>> anchors_;  // per rule
  std::vector<size_t> order_;
  std::map<std::string, std::vector<size_t>> by_op_;
  std::vector<size_t> generic_;
  absl::flat_hash_set<NodeId> outputs_;   // declared and nodes nothing reads
  absl::flat_hash_set<NodeId> declared_;  // named by the caller
  // Matched node -> its consumers before the current rewrite.
  absl::flat_hash_map<NodeId, std::vector<NodeId>> consumers_before_;
  std::deque<std::pair<size_t, std::string>> recent_;
  report::ApplyReport report_;
};

}  // namespace

absl::Status FailRewrite(absl::string_view message) {
  absl::Status s = absl::AbortedError(message);
  s.SetPayload("graft.fail", absl::Cord("1"));
  return s;
}

bool IsFailRewrite(const absl::Status& status) {
  return status.GetPayload("graft.fail").has_value();
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  if (status.ok()) return status;
  return WithMarksOf(
      absl::Status(status.code(), absl::StrCat(prefix, status.message())),
      status);
}

int64_t RewriteLimit(const ApplyOptions& options, const Graph& graph) {
  if (options.max_rewrites > 0) return options.max_rewrites;
  return kRewritesBase + kRewritesPerNode * graph.num_nodes();
}

absl::StatusOr<report::ApplyReport> ApplyRules(
    Graph& graph, absl::Span<const Rule* const> rules,
    const ApplyOptions& options) {
  Driver driver(graph, rules, options);
  return driver.Run();
}

}  // namespace graft
