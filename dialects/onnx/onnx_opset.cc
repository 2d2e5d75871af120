#include "dialects/onnx/onnx_opset.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dialects/onnx/onnx_model.h"
#include "dialects/onnx/onnx_ops.h"

namespace graft {
namespace {

// Versions whose signature is the last one's, or grows it, while what the
// op computes changes: (op, the opset it changes at).
const std::set<std::pair<std::string, int64_t>>& MeaningChanges() {
  static const auto* changes = new std::set<std::pair<std::string, int64_t>>{
      // scale and bias per channel, no longer per group
      {"GroupNormalization", 21},
  };
  return *changes;
}

// The least IR version a model importing `opset` must declare.
int64_t IrVersionFor(int64_t opset) {
  constexpr std::pair<int64_t, int64_t> kLeast[] = {
      {28, 14}, {25, 13}, {24, 12}, {23, 11},
      {21, 10}, {19, 9},  {15, 8},  {13, 7}};
  for (const auto& [from, ir] : kLeast) {
    if (opset >= from) return ir;
  }
  return 3;
}

int64_t SinceOf(const tf::OpDef& def) {
  int64_t since = 0;
  absl::string_view summary = def.summary();
  return absl::ConsumePrefix(&summary, "since ") &&
                 absl::SimpleAtoi(summary, &since)
             ? since
             : 0;
}

bool HasWord(const std::string& description, absl::string_view word) {
  return description.find(std::string(word)) != std::string::npos;
}

// Why `next` may compute something else than `last` for a node setting
// `attrs`; empty when it only adds to it.
std::string Change(const tf::OpDef& last, const tf::OpDef& next,
                   const std::set<std::string>& attrs) {
  if (next.input_arg_size() < last.input_arg_size() ||
      next.output_arg_size() < last.output_arg_size())
    return "drops an input or an output";
  for (int i = 0; i < next.input_arg_size(); ++i) {
    if (i < last.input_arg_size()) {
      if (next.input_arg(i).name() != last.input_arg(i).name())
        return "renames its inputs";
    } else if (!HasWord(next.input_arg(i).description(), "optional")) {
      return absl::StrCat("adds a required input `", next.input_arg(i).name(),
                          "`");
    }
  }
  std::map<std::string, const tf::OpDef::AttrDef*> after;
  for (const tf::OpDef::AttrDef& a : next.attr()) after[a.name()] = &a;
  for (const tf::OpDef::AttrDef& a : last.attr()) {
    auto it = after.find(a.name());
    if (it == after.end()) {
      if (attrs.count(a.name()))
        return absl::StrCat("drops the attr `", a.name(), "` it sets");
      continue;
    }
    const tf::OpDef::AttrDef& b = *it->second;
    if (a.type() != b.type())
      return absl::StrCat("changes the attr `", a.name(), "`");
    if (a.type() == "type") {  // a type constraint: it may only widen
      std::set<int> allowed(b.allowed_values().list().type().begin(),
                            b.allowed_values().list().type().end());
      for (int t : a.allowed_values().list().type()) {
        if (!allowed.count(t))
          return absl::StrCat("narrows the types of `", a.name(), "`");
      }
      continue;
    }
    if (a.default_value().SerializeAsString() !=
        b.default_value().SerializeAsString())
      return absl::StrCat("changes the default of `", a.name(), "`");
  }
  for (const tf::OpDef::AttrDef& b : next.attr()) {
    bool had = false;
    for (const tf::OpDef::AttrDef& a : last.attr())
      had = had || a.name() == b.name();
    if (!had && b.type() != "type" && HasWord(b.description(), "required"))
      return absl::StrCat("adds a required attr `", b.name(), "`");
  }
  return "";
}

// The default-domain ops of a model's nodes (subgraphs' too), each with a
// node of it and the attrs its nodes set.
struct Uses {
  std::map<std::string, std::string> node;  // op -> a node's name
  std::map<std::string, std::set<std::string>> attrs;
};

void AddBodies(const onnx::NodeProto& node, Uses* uses);

void AddNode(const onnx::NodeProto& node, Uses* uses) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return;
  uses->node.emplace(node.op_type(), node.name());
  for (const onnx::AttributeProto& a : node.attribute())
    uses->attrs[node.op_type()].insert(a.name());
  AddBodies(node, uses);
}

void AddBodies(const onnx::NodeProto& node, Uses* uses) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    for (const onnx::GraphProto* body : OnnxAttrBodies(a)) {
      for (const onnx::NodeProto& inner : body->node()) AddNode(inner, uses);
    }
  }
}

}  // namespace

absl::Status RaiseOnnxOpset(Graph& graph, int64_t to) {
  const OnnxOrigin* origin = OnnxOf(graph);
  if (origin == nullptr)
    return absl::InvalidArgumentError(
        "only an ONNX model imports an opset to raise");
  const int64_t from = origin->opset;
  if (from >= to) return absl::OkStatus();
  const OpRegistry& ops = OnnxOps();
  int64_t newest = 0;
  for (const std::string& op : ops.OpNames()) {
    if (op.find('.') == std::string::npos)
      newest = std::max(newest, ops.NewestSince(op));
  }
  if (to > newest)
    return absl::InvalidArgumentError(absl::StrCat(
        "opset ", to, " is past the newest graft knows (", newest, ")"));
  Uses uses;
  graph.ForEachNode([&](const Node& n) {
    if (n.op() == "Const" || n.op() == "Placeholder" ||
        n.op().find('.') != std::string::npos)
      return;
    auto it = origin->nodes.find(n.name());
    if (it != origin->nodes.end() && it->second.op_type() == n.op()) {
      AddNode(it->second, &uses);
      return;
    }
    uses.node.emplace(n.op(), n.name());
    for (const auto& [name, value] : n.attrs()) uses.attrs[n.op()].insert(name);
  });
  for (const auto& [op, node] : uses.node) {
    const tf::OpDef* last = ops.FindAt(op, from);
    if (last == nullptr) continue;  // check says what is wrong with it
    for (const tf::OpDef* next : ops.Versions(op)) {
      const int64_t since = SinceOf(*next);
      if (since <= from || since > to) continue;
      std::string why =
          MeaningChanges().count({op, since})
              ? std::string("computes something else under the same signature")
              : Change(*last, *next, uses.attrs[op]);
      if (!why.empty())
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot raise the opset from ", from, " to ", to, ": ", op,
            " (node `", node, "`) ", why, " at opset ", since));
      last = next;
    }
  }
  auto raised = std::make_shared<OnnxOrigin>(*origin);
  raised->opset = to;
  raised->opsets[""] = to;
  for (onnx::OperatorSetIdProto& o : *raised->model.mutable_opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(to);
  }
  raised->model.set_ir_version(
      std::max(raised->model.ir_version(), IrVersionFor(to)));
  graph.set_origin(std::move(raised));
  return absl::OkStatus();
}

}  // namespace graft
