// The aten dialect: torch.fx graphs of ATen ops (dialects/aten/aten_graph.h)
// behind engine/dialect.h.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dialects/aten/aten_graph.h"
#include "dialects/aten/aten_ops.h"
#include "engine/dialect.h"
#include "engine/files.h"
#include "engine/graph_file.h"
#include "engine/op_registry.h"
#include "engine/validate.h"

namespace graft {
namespace {

// ATen's checks: the op is one of the installed torch's schemas, its data
// inputs as many as the schema's Tensor arguments, its attrs of the
// schema's types, its inputs in the graph. (Dtypes are torch's to check:
// the schemas leave them open.)
class AtenChecker : public NodeChecker {
 public:
  AtenChecker(const Graph& graph, const ValidateOptions& options)
      : graph_(graph), options_(options) {}

  void CheckNode(const Node& node, bool signature_only, const Report& report) override {
    if (node.op() == "Const") CheckConstValue(node, report);
    const tf::OpDef* def = AtenOps().Find(node.op());
    if (def != nullptr) {
      CheckAttrs(*def, node, report);
      auto [least, most] = OpRegistry::InputCounts(*def);
      if (node.num_inputs() < least || (most >= 0 && node.num_inputs() > most))
        report(absl::StrCat("`", node.name(), "` (", node.op(), ") has ", node.num_inputs(),
                            " data input(s); its schema takes ", least,
                            most == least ? "" : absl::StrCat(" to ", most < 0 ? "any" : absl::StrCat(most))));
    }
    if (signature_only) return;
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (!node.input(i).valid())
        report(absl::StrCat("input ", i, " of `", node.name(), "` names `",
                            graph_.UnresolvedInputName(node.id(), i),
                            "`, which is not in the graph"));
    }
  }

  void CheckOpName(const Node& node, const Report& report) override {
    const std::string& op = node.op();
    if (op.empty() || op[0] == '_' || options_.custom_ops.count(op) ||
        AtenOps().Find(op) != nullptr)
      return;
    report(absl::StrCat("`", node.name(), "` has op `", op,
                        "`, which the installed torch's ATen schemas do not have",
                        absl::StartsWith(op, "aten.") ? "" : " (ATen ops are named `aten.NAME.OVERLOAD`)",
                        "; a custom op is declared with --custom-op ", op));
  }

 private:
  const Graph& graph_;
  ValidateOptions options_;
};

class AtenDialect : public ModelDialect {
 public:
  absl::string_view name() const override { return "aten"; }
  absl::string_view graph_noun() const override { return "an aten graph"; }
  absl::string_view rules_folder() const override { return "rules/aten"; }
  absl::string_view bodies_noun() const override { return "its subgraphs"; }

  bool Claims(absl::string_view path) const override { return IsAtenPath(path); }
  absl::StatusOr<Graph> Load(const std::string& path, absl::string_view /*format*/,
                             bool allow_empty) const override {
    return LoadAtenGraph(path, allow_empty);
  }

  const OpRegistry& Ops() const override { return AtenOps(); }
  bool has_type_attrs() const override { return false; }
  std::unique_ptr<NodeChecker> Checker(const Graph& graph, const ValidateOptions& options,
                                       const std::set<std::string>& /*functions*/) const override {
    return std::make_unique<AtenChecker>(graph, options);
  }

  // A parameter no op reads any more (a folded batch norm's) goes with the
  // op; ATen ops compute their outputs alone, save the mutating ones.
  bool MayDropUnreadProducer(const Graph& /*graph*/, const Node& node) const override {
    const tf::OpDef* def = AtenOps().Find(node.op());
    return def == nullptr || def->summary() != "mutates";
  }
};

const bool kRegistered = [] {
  static const AtenDialect* const dialect = new AtenDialect;
  RegisterDialect(dialect);
  return true;
}();

}  // namespace

bool IsAtenPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  return absl::EndsWith(lower, ".aten.pb") || absl::EndsWith(lower, ".aten.pbtxt");
}

absl::StatusOr<Graph> LoadAtenGraph(const std::string& path, bool allow_empty) {
  absl::StatusOr<Graph> graph =
      ReadGraphFile(path, absl::EndsWith(absl::AsciiStrToLower(path), ".pbtxt"),
                    allow_empty, "an ATen graph");
  if (!graph.ok()) return graph.status();
  graph->set_origin(std::make_shared<AtenOrigin>());
  return graph;
}

}  // namespace graft
