#include "dsl/compiler.h"

#include <fnmatch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/checker.h"
#include "dsl/compiled_rule.h"
#include "engine/dialect.h"

namespace graft::dsl {
namespace {

// A bound value as `graft explain` shows it: nodes and tensors by name,
// numbers and strings as written, a list of up to 16 numbers or strings
// item by item (a shape: `[2, -1, 4]`), a longer or other list by its size.
std::string BindingText(const Graph& graph, const Value& v) {
  switch (v.type) {
    case ValueType::kNode:
      return absl::StrCat("`", graph.node(v.tensor.node).name(), "`");
    case ValueType::kTensor:
      return absl::StrCat("`", graph.TensorName(v.tensor), "`");
    case ValueType::kList: {
      bool scalars = v.list.size() <= 16;
      for (const Value& item : v.list) {
        scalars &= item.type == ValueType::kInt ||
                   item.type == ValueType::kFloat ||
                   item.type == ValueType::kBool ||
                   item.type == ValueType::kString;
      }
      if (!scalars) return absl::StrCat(v.list.size(), " item(s)");
      std::string text = "[";
      for (const Value& item : v.list) {
        absl::StrAppend(&text, text.size() > 1 ? ", " : "",
                        BindingText(graph, item));
      }
      return text + "]";
    }
    case ValueType::kGraph:
      return v.graph ? absl::StrCat("`", v.s, "`") : "none";
    case ValueType::kRanges:
      return v.ranges ? absl::StrCat(v.ranges->ranges.size(),
                                     " range(s) from `", v.ranges->path, "`")
                      : "none";
    case ValueType::kInt:
      return absl::StrCat(v.i);
    case ValueType::kFloat:
      return absl::StrCat(v.f);
    case ValueType::kBool:
      return v.b ? "true" : "false";
    case ValueType::kString:
      return absl::StrCat("\"", v.s, "\"");
    default:
      return ValueTypeName(v.type);
  }
}

}  // namespace

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

std::vector<std::string> RuleSet::Drop(const std::vector<std::string>& patterns,
                                       std::vector<bool>* matched, bool keep) {
  std::vector<std::string> dropped;
  auto drops = [&](const std::unique_ptr<::graft::Rule>& rule) {
    bool any = false;
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (fnmatch(patterns[i].c_str(), rule->name().c_str(), 0) != 0) continue;
      (*matched)[i] = true;
      any = true;
    }
    if (any != keep) dropped.push_back(rule->name());
    return any != keep;
  };
  rules_.erase(std::remove_if(rules_.begin(), rules_.end(), drops),
               rules_.end());
  return dropped;
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
    std::string text = BindingText(graph, v);
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
