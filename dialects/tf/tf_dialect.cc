// The TensorFlow dialect: GraphDefs and SavedModels, TensorFlow's op
// registry, its node checks and names, and library functions as bodies the
// rules rewrite (engine/dialect.h).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dialects/tf/constant_args.h"
#include "dialects/tf/function_body.h"
#include "engine/graph_file.h"
#include "dialects/tf/saved_model.h"
#include "dialects/tf/tf_ops.h"
#include "dialects/tf/variable_reads.h"
#include "engine/dialect.h"
#include "engine/file_writer.h"
#include "engine/files.h"
#include "engine/op_registry.h"
#include "engine/status_marks.h"
#include "engine/suggest.h"
#include "engine/validate.h"

namespace graft {
namespace {

// TensorFlow's rule: [A-Za-z0-9.][A-Za-z0-9_.\-/>]*
bool IsTensorflowNodeName(absl::string_view name) {
  if (name.empty()) return false;
  auto first_ok = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.';
  };
  if (!first_ok(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!first_ok(c) && c != '_' && c != '-' && c != '/' && c != '>') return false;
  }
  return true;
}

class TensorflowChecker : public NodeChecker {
 public:
  TensorflowChecker(const Graph& graph, const ValidateOptions& options,
                    std::set<std::string> functions)
      : graph_(graph), options_(options), functions_(std::move(functions)) {}

  void CheckNode(const Node& node, bool signature_only, const Report& report) override {
    if (node.op().empty()) report(absl::StrCat("`", node.name(), "` has no op"));
    if (node.op() == "Const") CheckConstValue(node, report);
    const OpRegistry& ops = TensorflowOps();
    if (const tf::OpDef* def = ops.Find(node.op()))
      CheckAttrs(*def, node, report);
    std::optional<std::vector<tf::DataType>> expected = ops.InputTypes(node);
    if (expected && static_cast<int>(expected->size()) != node.num_inputs()) {
      report(absl::StrCat("`", node.name(), "` (", node.op(), ") has ",
                          node.num_inputs(), " data input(s); its op takes ",
                          expected->size()));
      expected.reset();
    }
    for (int i = 0; i < node.num_inputs(); ++i) {
      Endpoint e = node.input(i);
      if (!e.valid()) {
        if (signature_only) continue;
        report(absl::StrCat("input ", i, " of `", node.name(), "` names `",
                            graph_.UnresolvedInputName(node.id(), i),
                            "`, which is not in the graph"));
        continue;
      }
      const Node& producer = graph_.node(e.node);
      std::optional<std::vector<tf::DataType>> produced =
          ops.OutputTypes(producer);
      if (produced && e.port >= static_cast<int>(produced->size())) {
        report(absl::StrCat("input ", i, " of `", node.name(), "` reads `",
                            graph_.TensorName(e), "`, but `", producer.name(),
                            "` (", producer.op(), ") has ", produced->size(),
                            " output(s)"));
        continue;
      }
      if (options_.check_dtypes && !signature_only && produced && expected) {
        tf::DataType want = (*expected)[i];
        tf::DataType got = (*produced)[e.port];
        if (BaseType(want) != BaseType(got)) {
          report(absl::StrCat("input ", i, " of `", node.name(), "` (", node.op(),
                              ") expects ", DataTypeName(want), " but `",
                              graph_.TensorName(e), "` is ", DataTypeName(got)));
        }
      }
    }
    for (size_t i = 0; !signature_only && i < node.control_inputs().size();
         ++i) {
      if (node.control_inputs()[i] == kNoNode) {
        report(absl::StrCat(
            "control input `^",
            graph_.UnresolvedControlInputName(node.id(), static_cast<int>(i)),
            "` of `", node.name(), "` is not in the graph"));
      }
    }
  }

  // An op TensorFlow's importer does not know: `Op type not registered`.
  void CheckOpName(const Node& node, const Report& report) override {
    const std::string& op = node.op();
    if (op.empty() || op[0] == '_' || options_.custom_ops.count(op) || functions_.count(op) ||
        TensorflowOps().Find(op) != nullptr)
      return;
    static const std::vector<std::string>* names =
        new std::vector<std::string>(TensorflowOps().OpNames());
    std::string closest = Closest(op, *names);
    report(absl::StrCat("`", node.name(), "` has op `", op, "`, which TensorFlow does not have",
                        closest.empty() ? "" : absl::StrCat(" (did you mean `", closest, "`?)"),
                        "; a custom op is declared with --custom-op ", op));
  }

 private:
  const Graph& graph_;
  ValidateOptions options_;
  std::set<std::string> functions_;
};

// The library: every function a node or a body calls exists (or is an
// op), and no function calls itself, directly or through others
// (TensorFlow cannot instantiate a recursive function).
void CheckLibraryOf(const Graph& graph, const std::set<std::string>& functions,
                    const std::set<std::string>& custom_ops, const Dialect::IssueReport& report) {
  auto known = [&](const std::string& name) {
    return functions.count(name) > 0 || custom_ops.count(name) > 0 ||
           TensorflowOps().Find(name) != nullptr;
  };
  graph.ForEachNode([&](const Node& n) {
    for (const std::string& f : FunctionsCalled(n.def(), functions)) {
      if (!known(f)) {
        report(n.id(), absl::StrCat("`", n.name(), "` calls function `", f,
                                  "`, which the library does not hold"));
      }
    }
  });
  std::map<std::string, std::vector<std::string>> calls;
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    std::vector<std::string>& out = calls[f.signature().name()];
    for (const tf::NodeDef& n : f.node_def()) {
      for (const std::string& g : FunctionsCalled(n, functions)) {
        if (!known(g)) {
          report(kNoNode, absl::StrCat("function `", f.signature().name(),
                                     "`: `", n.name(), "` calls function `", g,
                                     "`, which the library does not hold"));
        } else if (functions.count(g) > 0) {
          out.push_back(g);
        }
      }
    }
  }
  // Depth first, without recursion (a library may chain thousands).
  std::map<std::string, int> state;  // 1: on the path, 2: done
  for (const auto& root : calls) {
    if (state[root.first] != 0) continue;
    std::vector<std::pair<std::string, size_t>> path = {{root.first, 0}};
    state[root.first] = 1;
    while (!path.empty()) {
      auto& [f, next] = path.back();
      const std::vector<std::string>& out = calls[f];
      if (next == out.size()) {
        state[f] = 2;
        path.pop_back();
        continue;
      }
      const std::string g = out[next++];
      if (state[g] == 1) {
        std::vector<std::string> cycle;
        bool on = false;
        for (const auto& step : path) {
          on = on || step.first == g;
          if (on) cycle.push_back(step.first);
        }
        cycle.push_back(g);
        report(kNoNode, absl::StrCat("function `", g, "` calls itself: ",
                                   absl::StrJoin(cycle, " -> ")));
        return;  // one cycle is enough to say
      }
      if (state[g] == 0) {
        state[g] = 1;
        path.emplace_back(g, 0);
      }
    }
  }
}


class TensorflowDialect : public Dialect {
 public:
  absl::string_view name() const override { return "tensorflow"; }
  absl::string_view graph_noun() const override { return "a tensorflow graph"; }
  absl::string_view rules_folder() const override { return "rules/tf"; }
  absl::string_view bodies_noun() const override { return "its library functions"; }

  bool Claims(absl::string_view /*path*/) const override { return true; }

  // A SavedModel folder, or a GraphDef, text by extension or `format`.
  absl::StatusOr<Graph> Load(const std::string& path, absl::string_view format,
                             bool allow_empty) const override {
    if (IsSavedModelDir(path)) return LoadSavedModel(path);
    const bool text = format.empty() ? IsTextGraphPath(path) : format == "pbtxt";
    return ReadGraphFile(path, text, allow_empty, "a graph");
  }

  const OpRegistry& Ops() const override { return TensorflowOps(); }
  bool has_type_attrs() const override { return true; }
  bool IsValidNodeName(absl::string_view name) const override {
    return IsTensorflowNodeName(name);
  }

  std::unique_ptr<NodeChecker> Checker(const Graph& graph, const ValidateOptions& options,
                                       const std::set<std::string>& functions) const override {
    return std::make_unique<TensorflowChecker>(graph, options, functions);
  }
  void CheckLibrary(const Graph& graph, const std::set<std::string>& custom_ops,
                    const IssueReport& report) const override {
    std::set<std::string> functions;
    for (const tf::FunctionDef& f : graph.header().library().function())
      functions.insert(f.signature().name());
    CheckLibraryOf(graph, functions, custom_ops, report);
  }

  // A TensorFlow graph's outputs: the nodes nothing reads.
  std::vector<std::string> ModelOutputs(const Graph& graph) const override {
    std::vector<std::string> out;
    graph.ForEachNode([&](const Node& node) {
      if (!node.HasConsumers()) out.push_back(node.name());
    });
    return out;
  }

  std::vector<NestedBody> NestedBodies(const Graph& graph) const override {
    auto library = std::make_shared<const tf::FunctionDefLibrary>(graph.header().library());
    std::vector<NestedBody> out;
    for (int i = 0; i < library->function_size(); ++i) {
      const tf::FunctionDef& f = library->function(i);
      out.push_back({f.signature().name(), "function", SerializeDeterministic(f),
                     [library, i]() { return FunctionBodyGraph(library->function(i), *library); },
                     "signature or attrs changed"});
    }
    return out;
  }

  absl::Status RewriteBodies(Graph& graph, const BodyRun& run,
                             report::ApplyReport* report) const override;
  absl::Status ForEachShownBody(const Graph& graph,
                                const std::function<void(const ShownBody&)>& fn) const override;
};

absl::Status TensorflowDialect::RewriteBodies(Graph& graph, const BodyRun& run,
                                              report::ApplyReport* report) const {
  if (run.functions == "none" || graph.header().library().function_size() == 0)
    return absl::OkStatus();
  std::set<std::string> known;
  for (const tf::FunctionDef& f : graph.header().library().function())
    known.insert(f.signature().name());
  absl::Status selection = CheckSelection(known, run.functions, bodies_noun());
  if (!selection.ok()) return selection;
  const bool all = run.functions == "all";
  std::set<std::string> named = SelectedNames(run.functions);
  // A SavedModel's save and restore functions: only when named.
  std::set<std::string> checkpoint = CheckpointFunctions(graph);
  tf::FunctionDefLibrary library = graph.header().library();
  // Calls to library functions are ops of the bodies (and of the graph).
  ValidateOptions validate;
  validate.custom_ops = run.custom_ops;
  for (const tf::FunctionDef& f : library.function())
    validate.custom_ops.insert(f.signature().name());
  // In place, a SavedModel's variable reads are the checkpoint's values
  // for the rules.
  VariableReads variables = VariableReads::Of(graph);
  // In a frozen graph, the weights passed into control flow are constants
  // for the rules.
  ConstantArgs constants = ConstantArgs::Of(graph);
  bool changed = false;
  for (int i = 0; i < library.function_size(); ++i) {
    const tf::FunctionDef& function = library.function(i);
    const std::string& name = function.signature().name();
    if (!all && named.count(name) == 0) continue;
    report::FunctionReport* out = report->add_functions();
    out->set_name(name);
    out->set_nodes_before(function.node_def_size());
    if (all && checkpoint.count(name)) {
      out->set_skipped(
          "the SavedModel's checkpoint save/restore (name it in --functions "
          "to rewrite it)");
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    absl::StatusOr<Graph> body = FunctionBodyGraph(function, library);
    if (!body.ok()) {
      if (!all) return body.status();
      out->set_skipped(std::string(body.status().message()));
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    absl::StatusOr<int> exposed = variables.Expose(name, *body);
    if (!exposed.ok()) return exposed.status();
    absl::StatusOr<int> shown = constants.Expose(name, *body);
    if (!shown.ok()) return shown.status();
    std::vector<std::string> keep;
    for (const auto& [ret, node] : function.control_ret()) keep.push_back(node);
    absl::StatusOr<int> rewrites = run.run(*body, absl::StrCat("function `", name, "`"), keep);
    if (!rewrites.ok() && all && IsNotApplicable(rewrites.status())) {
      // A training plan in a body with no gradient (a batch norm's moving
      // average update under `tf.cond`): left as it is, and said.
      out->set_skipped(absl::StrCat("the rules do not apply: ",
                                    NotApplicableReason(rewrites.status())));
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    if (!rewrites.ok()) return rewrites.status();
    absl::StatusOr<int> restored = VariableReads::Restore(*body);
    if (!restored.ok()) return restored.status();
    absl::StatusOr<int> args_back = ConstantArgs::Restore(*body);
    if (!args_back.ok()) return args_back.status();
    out->set_rewrites(*rewrites);
    out->set_variable_reads_folded(*exposed - *restored);
    out->set_constant_args(*shown);
    out->set_constant_args_folded(*shown - *args_back);
    if (out->rewrites() == 0) {
      out->set_nodes_after(function.node_def_size());
      continue;
    }
    absl::Status valid = CheckValid(*body, validate);
    if (!valid.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          "the rewritten body of function `", name,
          "` is invalid, nothing written: ", valid.message()));
    absl::StatusOr<tf::FunctionDef> rewritten = FunctionFromBody(*body, function, library);
    if (!rewritten.ok()) return rewritten.status();
    out->set_nodes_after(rewritten->node_def_size());
    *library.mutable_function(i) = *std::move(rewritten);
    changed = true;
  }
  if (changed) graph.SetLibrary(std::move(library));
  return absl::OkStatus();
}

absl::Status TensorflowDialect::ForEachShownBody(
    const Graph& graph, const std::function<void(const ShownBody&)>& fn) const {
  const tf::FunctionDefLibrary& library = graph.header().library();
  std::set<std::string> checkpoint = CheckpointFunctions(graph);
  VariableReads variables = VariableReads::Of(graph);
  ConstantArgs constants = ConstantArgs::Of(graph);
  for (const tf::FunctionDef& function : library.function()) {
    const std::string& name = function.signature().name();
    if (checkpoint.count(name)) continue;
    absl::StatusOr<Graph> body = FunctionBodyGraph(function, library);
    if (!body.ok()) continue;
    absl::StatusOr<int> reads = variables.Expose(name, *body);
    if (!reads.ok()) return reads.status();
    absl::StatusOr<int> shown = constants.Expose(name, *body);
    if (!shown.ok()) return shown.status();
    fn(ShownBody{name, *std::move(body), *reads, *shown});
  }
  return absl::OkStatus();
}

const bool kRegistered = [] {
  static const TensorflowDialect* const dialect = new TensorflowDialect;
  RegisterDialect(dialect, /*is_default=*/true);
  return true;
}();

}  // namespace

}  // namespace graft
