#include "dsl/compiler.h"

#include "absl/strings/str_cat.h"
#include "dsl/checker.h"
#include "dsl/compiled_rule.h"
#include "engine/dialect.h"

namespace graft::dsl {

std::string RuleSet::dialect() const {
  if (asts_.empty() || asts_.front()->dialect.empty())
    return std::string(DefaultDialect().name());
  return asts_.front()->dialect;
}

const ::graft::Rule* RuleSet::Find(const std::string& name) const {
  for (const auto& r : rules_) {
    if (r->name() == name) return r.get();
  }
  return nullptr;
}

absl::Status RuleSet::OrderOutput(Graph& graph) const {
  if (!orders_output()) return absl::OkStatus();
  static const SlotTable kNoSlots;
  Bindings bindings(kNoSlots, *output_order_.shared.params);
  absl::StatusOr<Value> v = output_order_.shared.evaluator->Eval(
      graph, bindings, *output_order_.expr);
  if (!v.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        output_order_.where, ": output order: ", v.status().message()));
  }
  std::vector<NodeId> order;
  for (const Value& item : v->list) {
    if (item.type != ValueType::kNode && item.type != ValueType::kTensor) {
      return absl::FailedPreconditionError(
          absl::StrCat(output_order_.where, ": output order: an item is ",
                       AValueType(item.type), ", not a node"));
    }
    order.push_back(item.tensor.node);
  }
  graph.SetOutputOrder(std::move(order));
  return absl::OkStatus();
}

std::vector<const ::graft::Rule*> RuleSet::rules() const {
  std::vector<const ::graft::Rule*> out;
  for (const auto& r : rules_) out.push_back(r.get());
  return out;
}

Explanation ExplainAt(const RuleSet& set, const std::string& rule,
                      const Graph& graph, NodeId node) {
  Explanation out;
  const auto* compiled = static_cast<const CompiledRule*>(set.Find(rule));
  if (compiled == nullptr) {
    out.reason = absl::StrCat("no rule `", rule, "`");
    return out;
  }
  ExplainSink sink;
  std::unique_ptr<MatchState> m = compiled->Explain(graph, node, &sink);
  out.reason = std::move(sink.reason);
  if (m == nullptr) return out;
  out.matched = true;
  for (const auto& [name, v] : CompiledRule::BoundValues(*m)) {
    std::string text;
    switch (v.type) {
      case ValueType::kNode:
        text = absl::StrCat("`", graph.node(v.tensor.node).name(), "`");
        break;
      case ValueType::kTensor:
        text = absl::StrCat("`", graph.TensorName(v.tensor), "`");
        break;
      case ValueType::kList:
        text = absl::StrCat(v.list.size(), " tensor(s)");
        break;
      case ValueType::kGraph:
        text = v.graph ? absl::StrCat("`", v.s, "`") : "none";
        break;
      case ValueType::kRanges:
        text = v.ranges ? absl::StrCat(v.ranges->ranges.size(),
                                       " range(s) from `", v.ranges->path, "`")
                        : "none";
        break;
      case ValueType::kInt:
        text = absl::StrCat(v.i);
        break;
      case ValueType::kFloat:
        text = absl::StrCat(v.f);
        break;
      case ValueType::kBool:
        text = v.b ? "true" : "false";
        break;
      case ValueType::kString:
        text = absl::StrCat("\"", v.s, "\"");
        break;
      default:
        text = ValueTypeName(v.type);
        break;
    }
    out.bindings.emplace_back(name, text);
  }
  return out;
}

std::unique_ptr<RuleSet> CompileRuleFiles(const std::vector<std::string>& paths,
                                          const CompileOptions& options,
                                          const HookRegistry& hooks,
                                          Diagnostics* diagnostics) {
  Checker checker(options, hooks, diagnostics);
  return checker.Compile(paths, nullptr);
}

std::unique_ptr<RuleSet> CompileRuleText(const std::string& path,
                                         const std::string& text,
                                         const CompileOptions& options,
                                         const HookRegistry& hooks,
                                         Diagnostics* diagnostics) {
  Checker checker(options, hooks, diagnostics);
  return checker.Compile({path}, &text);
}

}  // namespace graft::dsl
