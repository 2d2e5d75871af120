// The ONNX dialect: `.onnx` models onto the graph IR, ONNX's op registry at
// each model's opset, its type checks, its value names, and node subgraphs
// as bodies the rules rewrite (engine/dialect.h).
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dialects/onnx/onnx_bodies.h"
#include "dialects/onnx/onnx_convert.h"
#include "dialects/onnx/onnx_model.h"
#include "dialects/onnx/onnx_ops.h"
#include "dialects/onnx/onnx_opset.h"
#include "dialects/onnx/validate_onnx.h"
#include "engine/dialect.h"
#include "engine/file_writer.h"
#include "engine/files.h"
#include "engine/op_registry.h"
#include "engine/status_marks.h"
#include "engine/validate.h"

namespace graft {
namespace {

class OnnxChecker : public NodeChecker {
 public:
  OnnxChecker(const Graph& graph, const ValidateOptions& options)
      : graph_(graph), options_(options) {}

  void CheckNode(const Node& node, bool signature_only, const Report& report) override {
    if (node.op() == "Const") CheckConstValue(node, report);
    const bool check_types = options_.check_dtypes && !signature_only;
    if (check_types && !types_.has_value()) types_.emplace(graph_);  // inferred as asked
    validate_onnx::CheckNode(graph_, node, signature_only,
                             check_types ? &types_->types() : nullptr, report);
  }

  // An op defined at the model's opset.
  void CheckOpName(const Node& node, const Report& report) override {
    const std::string& op = node.op();
    const int64_t opset = OnnxOf(graph_)->OpsetOf(op);
    // Another domain's op: its name checked in ai.onnx.ml (onnx.checker
    // lets unknown ops of the preview domains pass, as of custom domains).
    const size_t dot = op.rfind('.');
    const bool other_domain = dot != std::string::npos;
    static const std::set<std::string> kSchemaDomains = {"ai.onnx.ml"};
    if (op.empty() || op[0] == '_' || op == "Const" || op == "Placeholder" ||
        options_.custom_ops.count(op) ||
        (other_domain && (opset <= 0 || !kSchemaDomains.count(op.substr(0, dot)))) ||
        OnnxOps().FindAt(op, opset) != nullptr)
      return;
    if (opset <= 0) {
      report(absl::StrCat("`", node.name(), "` has op `", op,
                          "` of the default domain (ai.onnx), which the model imports no opset of"));
      return;
    }
    report(absl::StrCat("`", node.name(), "` has op `", op, "`, which ONNX ",
                        OnnxOps().Find(op) != nullptr
                            ? absl::StrCat("defines only after opset ", opset)
                            : "does not have",
                        " (the model imports opset ", opset, ")"));
  }

 private:
  const Graph& graph_;
  ValidateOptions options_;
  std::optional<validate_onnx::HeldTypes> types_;
};

class OnnxDialect : public ModelDialect {
 public:
  absl::string_view name() const override { return "onnx"; }
  absl::string_view graph_noun() const override { return "an onnx graph"; }
  absl::string_view rules_folder() const override { return "rules/onnx"; }
  absl::string_view bodies_noun() const override { return "its subgraphs (node/attr)"; }

  bool Claims(absl::string_view path) const override { return IsOnnxPath(path); }

  // A binary model read from a mapping of the file (its weights' pages
  // read only when written back), or its text form parsed once.
  absl::StatusOr<Graph> Load(const std::string& path, absl::string_view /*format*/,
                             bool /*allow_empty*/) const override {
    const std::string folder = FolderOf(path);
    if (IsOnnxTextPath(path)) {
      absl::StatusOr<std::string> text =
          ReadFileBytes(path, kMaxGraphFileBytes, "an ONNX model in text form");
      if (!text.ok()) return text.status();
      absl::StatusOr<std::string> bytes = OnnxTextToBinary(*text, path);
      if (!bytes.ok()) return bytes.status();
      return ParseOnnx(*bytes, path, nullptr, folder);
    }
    std::optional<FileMapping> mapping = MapFile(path, /*populate=*/false);
    if (mapping.has_value())
      return ParseOnnx(mapping->bytes, path, std::move(mapping->owner), folder);
    // Anything unusual (a directory, an empty or huge file, no mmap): the
    // plain path says what is wrong.
    absl::StatusOr<std::string> bytes = ReadFileBytes(path, kMaxGraphFileBytes, "an ONNX model");
    if (!bytes.ok()) return bytes.status();
    if (bytes->empty()) return Located(path, "is empty (0 bytes), not an ONNX model");
    return ParseOnnx(*bytes, path, nullptr, folder);
  }

  const OpRegistry& Ops() const override { return OnnxOps(); }
  absl::Status RaiseOpset(Graph& graph, int64_t opset) const override {
    return RaiseOnnxOpset(graph, opset);
  }
  const tf::OpDef* OpDefIn(const Graph& graph, absl::string_view op) const override {
    const OnnxOrigin* origin = OnnxOf(graph);
    return origin != nullptr ? OnnxOps().FindAt(op, origin->OpsetOf(std::string(op)))
                             : OnnxOps().Find(op);
  }
  bool has_type_attrs() const override { return false; }

  // Element types from the inputs' by ONNX's type constraints, one per
  // output read (at least one; optional ones left out are not outputs).
  std::optional<std::vector<tf::DataType>> OutputTypes(
      const Graph& graph, const Node& node,
      const std::function<tf::DataType(Endpoint)>& type_of) const override {
    if (node.op() == "_Retval" || node.op() == "_Absent") return std::vector<tf::DataType>();
    std::vector<tf::DataType> types = validate_onnx::OutputTypes(graph, node, type_of);
    types.resize(std::max(node.num_used_ports(), 1), tf::DT_INVALID);
    return types;
  }
  // The model's value_info (a symbolic dimension by its name).
  std::optional<tf::TensorShapeProto> DeclaredShape(const Graph& graph,
                                                    Endpoint tensor) const override {
    const std::string name = OnnxValueName(graph, tensor);
    if (name.empty()) return std::nullopt;
    auto it = OnnxOf(graph)->value_info.find(name);
    if (it == OnnxOf(graph)->value_info.end()) return std::nullopt;
    const auto& type = it->second.type().tensor_type();
    if (!type.has_shape()) return std::nullopt;
    tf::TensorShapeProto shape;
    for (const auto& d : type.shape().dim()) {
      tf::TensorShapeProto::Dim* dim = shape.add_dim();
      dim->set_size(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
      if (!d.has_dim_value() && !d.dim_param().empty()) dim->set_name(d.dim_param());
    }
    return shape;
  }
  std::unique_ptr<NodeChecker> Checker(const Graph& graph, const ValidateOptions& options,
                                       const std::set<std::string>& /*functions*/) const override {
    return std::make_unique<OnnxChecker>(graph, options);
  }

  // ONNX ops compute their outputs alone, so an unread one can go; an
  // initializer that is also a graph input stays.
  bool MayDropUnreadProducer(const Graph& graph, const Node& node) const override {
    if (node.op() != "Const") return true;
    const OnnxOrigin& origin = *OnnxOf(graph);
    const std::string& value = origin.ValueOf(node.name());
    return std::none_of(origin.inputs.begin(), origin.inputs.end(),
                        [&](const auto& input) { return input.name() == value; });
  }
  bool AttrsWhole(const Graph& graph, const Node& node) const override {
    const OnnxOrigin& origin = *OnnxOf(graph);
    auto it = origin.nodes.find(node.name());
    if (it == origin.nodes.end()) return true;  // made by a rewrite: attrs only
    return std::all_of(it->second.attribute().begin(),
                       it->second.attribute().end(),
                       [](const onnx::AttributeProto& a) {
                         return onnx_internal::Modelled(a.type());
                       });
  }
  bool has_value_names() const override { return true; }
  std::string TensorNameInFile(const Graph& graph, Endpoint tensor) const override {
    return OnnxValueName(graph, tensor);
  }

  std::vector<NestedBody> NestedBodies(const Graph& graph) const override {
    std::vector<NestedBody> out;  // opened while `graph` lives
    for (const OnnxBody& body : OnnxBodies(graph)) {
      out.push_back({body.Label(), "subgraph",
                     SerializeDeterministic(*OnnxBodyProto(graph, body)),
                     [&graph, body]() { return OnnxBodyGraph(graph, body); }, ""});
    }
    return out;
  }

  absl::Status RewriteBodies(Graph& graph, const BodyRun& run,
                             report::ApplyReport* report) const override {
    if (run.functions == "none") return absl::OkStatus();
    std::set<std::string> known;
    for (const OnnxBody& body : OnnxBodies(graph)) known.insert(body.Label());
    absl::Status selection = CheckSelection(known, run.functions, bodies_noun());
    if (!selection.ok()) return selection;
    return RewriteIn(graph, "", run, report);
  }

 private:
  // The subgraphs (If/Loop/Scan bodies; nested ones inside them) that
  // `run.functions` selects, each rewritten as a graph and put back.
  // `prefix` names the enclosing subgraphs in reports.
  absl::Status RewriteIn(Graph& graph, const std::string& prefix, const BodyRun& run,
                         report::ApplyReport* report) const {
    const bool all = run.functions == "all";
    std::set<std::string> named = SelectedNames(run.functions);
    ValidateOptions validate;
    validate.custom_ops = run.custom_ops;
    BodyRun nested = run;
    nested.functions = "all";  // inside a chosen body: everything in it
    for (const OnnxBody& body : OnnxBodies(graph)) {
      const std::string label = prefix + body.Label();
      if (!all && named.count(label) == 0) continue;
      absl::StatusOr<Graph> sub = OnnxBodyGraph(graph, body);
      report::FunctionReport* out = report->add_functions();
      out->set_name(label);
      out->set_subgraph(true);
      if (!sub.ok()) {  // said, and left as it is, unless named
        if (!all) return sub.status();
        out->set_skipped(std::string(sub.status().message()));
        continue;
      }
      out->set_nodes_before(sub->num_nodes());
      absl::StatusOr<int> rewrites = run.run(*sub, absl::StrCat("subgraph `", label, "`"), {});
      if (!rewrites.ok() && all && IsNotApplicable(rewrites.status())) {
        out->set_skipped(absl::StrCat("the rules do not apply: ",
                                      NotApplicableReason(rewrites.status())));
        continue;  // the rules do not apply to it: left as it is, and said
      }
      if (!rewrites.ok()) return rewrites.status();
      const int inner_before = report->functions_size();
      absl::Status inner = RewriteIn(*sub, label + "/", nested, report);
      if (!inner.ok()) return inner;
      bool inner_changed = false;
      for (int i = inner_before; i < report->functions_size(); ++i)
        inner_changed = inner_changed || report->functions(i).rewrites() > 0;
      out->set_rewrites(*rewrites);
      out->set_nodes_after(sub->num_nodes());
      if (*rewrites == 0 && !inner_changed) continue;
      absl::Status valid = CheckValid(*sub, validate);
      if (!valid.ok())
        return absl::FailedPreconditionError(absl::StrCat(
            "the rewritten subgraph `", label, "` is invalid, nothing written: ",
            valid.message()));
      if (absl::Status s = SetOnnxBody(graph, body, *sub); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
};

const bool kRegistered = [] {
  static const OnnxDialect* const dialect = new OnnxDialect;
  RegisterDialect(dialect);
  return true;
}();

}  // namespace
}  // namespace graft
