#include "dsl/compiled_rule.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graft::dsl {
namespace {

struct DslMatch : MatchState {
  explicit DslMatch(Bindings b) : bindings(std::move(b)) {}
  Bindings bindings;
};

absl::Status RunSetChecks(const std::vector<Requirement>& requirements,
                          const Graph& graph, const Evaluator& evaluator,
                          const ParamTable& params) {
  static const SlotTable kNoSlots;
  Bindings bindings(kNoSlots, params);
  for (const Requirement& req : requirements) {
    absl::StatusOr<Value> v = evaluator.Eval(graph, bindings, *req.expr);
    if (!v.ok())
      return absl::FailedPreconditionError(
          absl::StrCat(req.where, ": ", v.status().message()));
    if (v->type != ValueType::kBool || !v->b) {
      return absl::FailedPreconditionError(absl::StrCat(
          req.where, ": `require ", ExprText(*req.expr), "` does not hold"));
    }
  }
  for (const auto& [name, v] : params) {
    if (v.type != ValueType::kRanges || v.ranges == nullptr) continue;
    absl::Status s = CheckTensorRanges(*v.ranges, graph);
    if (!s.ok()) return Prefixed(absl::StrCat("param `", name, "`: "), s);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SetChecks::CheckOnce(const Graph& graph,
                                  const Evaluator& evaluator,
                                  const ParamTable& params) {
  std::lock_guard<std::mutex> lock(mu_);
  if (version_ != graph.version() || version_ == 0) {
    result_ = RunSetChecks(requirements, graph, evaluator, params);
    version_ = graph.version();
  }
  return result_;
}

absl::Status CompiledRule::Prepare(const Graph& graph) const {
  return shared_.checks->CheckOnce(graph, *shared_.evaluator, *shared_.params);
}

std::unique_ptr<MatchState> CompiledRule::MatchAt(
    const Graph& graph, NodeId root, ExplainSink* sink,
    std::string* guard_error) const {
  Bindings bindings(slots_, *shared_.params);
  std::vector<NodeId> nodes;
  if (!MatchPattern(pattern_, *shared_.evaluator, graph, root, &bindings,
                    &nodes, sink, guard_error)) {
    return nullptr;
  }
  auto match = std::make_unique<DslMatch>(std::move(bindings));
  match->root = root;
  match->nodes = std::move(nodes);
  return match;
}

std::unique_ptr<MatchState> CompiledRule::Match(const Graph& graph,
                                                NodeId root) const {
  return MatchAt(graph, root, nullptr);
}

std::unique_ptr<MatchState> CompiledRule::MatchReporting(
    const Graph& graph, NodeId root, std::string* guard_error) const {
  std::unique_ptr<MatchState> m = MatchAt(graph, root, nullptr, guard_error);
  if (m != nullptr) guard_error->clear();  // another branch matched
  return m;
}

absl::Status CompiledRule::Rewrite(const MatchState& base, Rewriter& rewriter,
                                   RewritePlan* plan) const {
  const DslMatch& match = static_cast<const DslMatch&>(base);
  Bindings bindings = match.bindings;
  return RunRewrite(program_, *shared_.evaluator, match.root, bindings,
                    rewriter, plan);
}

std::unique_ptr<MatchState> CompiledRule::Explain(const Graph& graph,
                                                  NodeId root,
                                                  ExplainSink* sink) const {
  const PatternNode& top = pattern_.nodes[pattern_.root];
  const Node& node = graph.node(root);
  std::unique_ptr<MatchState> m =
      OpMatches(top.ops, node.op()) ? MatchAt(graph, root, sink) : nullptr;
  if (m == nullptr && !sink->any) {
    sink->reason =
        absl::StrCat("the root: expected ", absl::StrJoin(top.ops, " | "),
                     ", found ", node.op(), " `", node.name(), "`");
  }
  return m;
}

std::vector<std::pair<std::string, Value>> CompiledRule::BoundValues(
    const MatchState& match) {
  const Bindings& b = static_cast<const DslMatch&>(match).bindings;
  std::map<std::string, Value> all(b.params().begin(), b.params().end());
  for (int slot = 0; slot < b.slots().size(); ++slot) {
    if (const Value* v = b.At(slot)) all[b.slots().name(slot)] = *v;
  }
  return {all.begin(), all.end()};
}

}  // namespace graft::dsl
