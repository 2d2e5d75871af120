#include "dsl/compiled_rule.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/status_marks.h"

namespace graft::dsl {
namespace {

struct DslMatch : MatchState {
  explicit DslMatch(Bindings b) : bindings(std::move(b)) {}
  Bindings bindings;
  const CompiledRule* variant =
      nullptr;  // the variant that matched (MatchAt sets it)
  std::shared_ptr<const PlanValues> plans;  // what `bindings` reads plans from
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

absl::StatusOr<std::shared_ptr<const PlanValues>> SetChecks::PlansFor(
    const Graph& graph, const Evaluator& evaluator, const ParamTable& params,
    bool fresh, int stage) {
  if (plans.empty()) return std::shared_ptr<const PlanValues>();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_of_.find(&graph);
  if (it != plans_of_.end()) {
    const GraphPlans& e = it->second;
    if (fresh ? e.version == graph.version() && e.stage == stage
              : e.stage >= stage)
      return e.values;
  }
  // The earlier stages' plans, where this apply computed them.
  std::shared_ptr<const PlanValues> earlier;
  int computed = -1;  // the last stage `earlier` holds
  if (it != plans_of_.end() && it->second.stage < stage &&
      it->second.values.ok()) {
    earlier = *it->second.values;
    computed = it->second.stage;
  }
  // One entry per graph worked on at once; a freed graph's address is
  // reused by the next, whose `fresh` call replaces the entry.
  if (plans_of_.size() > 64) plans_of_.clear();
  GraphPlans& entry = plans_of_[&graph];
  entry.version = graph.version();
  entry.stage = stage;
  entry.values =
      ComputePlans(graph, evaluator, params, stage, earlier.get(), computed);
  return entry.values;
}

absl::StatusOr<std::shared_ptr<const PlanValues>> SetChecks::ComputePlans(
    const Graph& graph, const Evaluator& evaluator, const ParamTable& params,
    int stage, const PlanValues* earlier, int computed) {
  auto out = std::make_shared<PlanValues>();
  static const SlotTable kNoSlots;
  Bindings bindings(kNoSlots, params);
  bindings.SetPlans(&out->values, nullptr);
  for (const PlanDef& plan : plans) {
    if (plan.stage > stage) continue;
    if (plan.stage <= computed && earlier != nullptr) {
      if (auto v = earlier->values.find(plan.name); v != earlier->values.end())
        out->values[plan.name] = v->second;
      if (auto items = earlier->items.find(plan.name);
          items != earlier->items.end())
        out->items[plan.name] = items->second;
      continue;
    }
    absl::StatusOr<Value> v = evaluator.Eval(graph, bindings, *plan.expr);
    if (!v.ok()) {
      return WithMarksOf(
          absl::FailedPreconditionError(absl::StrCat(
              plan.where, ": plan `", plan.name, "`: ", v.status().message())),
          v.status());
    }
    if (iterated.count(plan.name) > 0) {
      if (v->type != ValueType::kList) {
        return absl::FailedPreconditionError(absl::StrCat(
            plan.where, ": plan `", plan.name, "` is iterated by `for` but is ",
            AValueType(v->type), ", not a list"));
      }
      PlanValues::Items& items = out->items[plan.name];
      for (const Value& item : v->list) {
        // A list item (a set: a segment, say) is anchored at its first node.
        const Value* anchor = &item;
        if (item.type == ValueType::kList && !item.list.empty())
          anchor = &item.list.front();
        if (anchor->type != ValueType::kNode &&
            anchor->type != ValueType::kTensor) {
          return absl::FailedPreconditionError(absl::StrCat(
              plan.where, ": plan `", plan.name, "` holds ",
              AValueType(item.type),
              "; `for` iterates nodes, tensors or non-empty lists of them"));
        }
        if (&item != anchor) {
          items.at_node[anchor->tensor.node].push_back(item);
        } else if (items.keys.insert(item.tensor).second) {
          items.at_node[item.tensor.node].push_back(item);
        }
      }
    }
    out->values[plan.name] = *std::move(v);
  }
  return std::shared_ptr<const PlanValues>(std::move(out));
}

absl::Status CompiledRule::Prepare(const Graph& graph) const {
  absl::Status s =
      shared_.checks->CheckOnce(graph, *shared_.evaluator, *shared_.params);
  if (!s.ok()) return s;
  return shared_.checks
      ->PlansFor(graph, *shared_.evaluator, *shared_.params, /*fresh=*/true,
                 stage_)
      .status();
}

std::unique_ptr<MatchState> CompiledRule::MatchAt(
    const Graph& graph, NodeId root, ExplainSink* sink,
    std::string* guard_error) const {
  absl::StatusOr<std::shared_ptr<const PlanValues>> plans =
      shared_.checks->PlansFor(graph, *shared_.evaluator, *shared_.params,
                               /*fresh=*/false, stage_);
  if (!plans.ok()) {
    if (guard_error != nullptr && guard_error->empty())
      *guard_error = std::string(plans.status().message());
    if (sink != nullptr) {
      sink->reason = std::string(plans.status().message());
      sink->any = true;
    }
    return nullptr;
  }
  const PlanValues::Items* items = nullptr;
  if (!for_.plan.empty()) items = &(*plans)->items.at(for_.plan);
  Bindings bindings(slots_, *shared_.params);
  if (*plans != nullptr)
    bindings.SetPlans(&(*plans)->values, items ? &items->keys : nullptr);
  std::vector<NodeId> nodes;
  auto found = [&] {
    auto match = std::make_unique<DslMatch>(std::move(bindings));
    match->variant = this;
    match->plans = *plans;
    match->root = root;
    match->nodes = std::move(nodes);
    return match;
  };
  if (items != nullptr && pattern_.root < 0) {
    // A `for` rule without patterns: the items at this node, in turn.
    auto at = items->at_node.find(root);
    if (at == items->at_node.end()) {
      if (sink != nullptr && !sink->any) {
        sink->reason = absl::StrCat("not an item of plan `", for_.plan, "`");
        sink->any = true;
      }
      return nullptr;
    }
    for (const Value& item : at->second) {
      size_t mark = bindings.Mark();
      bindings.Bind(for_.slot, item);
      if (MatchPattern(pattern_, *shared_.evaluator, graph, root, &bindings,
                       &nodes, sink, guard_error)) {
        return found();
      }
      bindings.UndoTo(mark);
    }
    return nullptr;
  }
  if (!MatchPattern(pattern_, *shared_.evaluator, graph, root, &bindings,
                    &nodes, sink, guard_error)) {
    return nullptr;
  }
  return found();
}

std::vector<std::string> CompiledRule::anchor_ops() const {
  if (pattern_.root < 0) return {};
  std::vector<std::string> ops = pattern_.nodes[pattern_.root].ops;
  for (const auto& v : variants_) {
    std::vector<std::string> more = v->anchor_ops();
    if (more.empty()) return {};
    for (std::string& op : more) {
      if (std::find(ops.begin(), ops.end(), op) == ops.end())
        ops.push_back(std::move(op));
    }
  }
  return ops;
}

std::unique_ptr<MatchState> CompiledRule::Match(const Graph& graph,
                                                NodeId root) const {
  std::unique_ptr<MatchState> m = MatchAt(graph, root, nullptr);
  for (size_t i = 0; m == nullptr && i < variants_.size(); ++i)
    m = variants_[i]->MatchAt(graph, root, nullptr);
  return m;
}

std::unique_ptr<MatchState> CompiledRule::MatchReporting(
    const Graph& graph, NodeId root, std::string* guard_error) const {
  std::unique_ptr<MatchState> m = MatchAt(graph, root, nullptr, guard_error);
  for (size_t i = 0; m == nullptr && i < variants_.size(); ++i)
    m = variants_[i]->MatchAt(graph, root, nullptr, guard_error);
  if (m != nullptr) guard_error->clear();  // another branch matched
  return m;
}

absl::Status CompiledRule::Rewrite(const MatchState& base, Rewriter& rewriter,
                                   RewritePlan* plan) const {
  const DslMatch& match = static_cast<const DslMatch&>(base);
  if (match.variant != this)
    return match.variant->Rewrite(base, rewriter, plan);
  Bindings bindings = match.bindings;  // its plans live in match.plans
  return RunRewrite(program_, *shared_.evaluator, match.root, bindings,
                    rewriter, plan);
}

std::unique_ptr<MatchState> CompiledRule::Explain(const Graph& graph,
                                                  NodeId root,
                                                  ExplainSink* sink) const {
  std::unique_ptr<MatchState> m = ExplainVariant(graph, root, sink);
  if (m != nullptr || variants_.empty()) return m;
  // Each variant's reason, said once for variants failing alike.
  std::vector<std::string> reasons = {sink->reason};
  for (const auto& v : variants_) {
    ExplainSink own;
    m = v->ExplainVariant(graph, root, &own);
    if (m != nullptr) {
      *sink = std::move(own);
      return m;
    }
    if (std::find(reasons.begin(), reasons.end(), own.reason) == reasons.end())
      reasons.push_back(std::move(own.reason));
  }
  if (reasons.size() > 1) {
    for (size_t i = 0; i < reasons.size(); ++i)
      reasons[i] = absl::StrCat("(", i + 1, ") ", reasons[i]);
    sink->reason = absl::StrCat("no variant of the rule matches: ",
                                absl::StrJoin(reasons, "; "));
  }
  return nullptr;
}

std::unique_ptr<MatchState> CompiledRule::ExplainVariant(
    const Graph& graph, NodeId root, ExplainSink* sink) const {
  if (pattern_.root < 0) return MatchAt(graph, root, sink);
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
