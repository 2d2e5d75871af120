#include "engine/dialect.h"

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/op_registry.h"

namespace graft {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<const Dialect*> dialects;  // in registration order
  const Dialect* fallback = nullptr;
};

Registry& TheRegistry() {
  static Registry* const registry = new Registry;
  return *registry;
}

// Up to ten names, then how many more.
std::string Listed(const std::set<std::string>& names) {
  std::string out;
  int shown = 0;
  for (const std::string& name : names) {
    if (shown == 10) return absl::StrCat(out, " and ", names.size() - 10, " more");
    absl::StrAppend(&out, shown++ > 0 ? ", " : "", name);
  }
  return out;
}

}  // namespace

absl::Status Dialect::RaiseOpset(Graph& /*graph*/, int64_t /*opset*/) const {
  return absl::InvalidArgumentError(absl::StrCat(
      graph_noun(), " imports no opset to raise (ONNX models do)"));
}

const tf::OpDef* Dialect::OpDefIn(const Graph& /*graph*/, absl::string_view op) const {
  return Ops().Find(op);
}

std::optional<std::vector<tf::DataType>> Dialect::OutputTypes(
    const Graph& /*graph*/, const Node& node,
    const std::function<tf::DataType(Endpoint)>& /*type_of*/) const {
  return Ops().OutputTypes(node);
}

std::string Dialect::TensorNameInFile(const Graph& graph, Endpoint tensor) const {
  return graph.TensorName(tensor);
}

bool ModelDialect::IsValidNodeName(absl::string_view name) const {
  return !name.empty() && name[0] != '^' && name.find(':') == absl::string_view::npos;
}

std::optional<AbsentInputNode> ModelDialect::AbsentInput() const {
  return AbsentInputNode{"_absent", "_Absent"};
}

std::vector<std::string> ModelDialect::ModelOutputs(const Graph& graph) const {
  std::vector<std::string> out;
  graph.ForEachNode([&](const Node& node) {
    if (node.op() == "_Retval") out.push_back(node.name());
  });
  return out;
}

bool ModelDialect::IsInterfaceOp(absl::string_view op) const {
  return op == "Const" || op == "Placeholder" || op == "_Retval" || op == "_Absent";
}

void RegisterDialect(const Dialect* dialect, bool is_default) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.dialects.push_back(dialect);
  if (is_default) r.fallback = dialect;
}

const Dialect* FindDialect(absl::string_view name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Dialect* d : r.dialects) {
    if (d->name() == name) return d;
  }
  return nullptr;
}

std::vector<const Dialect*> Dialects() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const Dialect*> out;
  for (const Dialect* d : r.dialects) {
    if (d != r.fallback) out.push_back(d);
  }
  if (r.fallback != nullptr) out.push_back(r.fallback);
  return out;
}

namespace {

[[noreturn]] void NotLinked(absl::string_view name) {  // a build error, not a user's
  std::cerr << "graft: internal error: the dialect `" << name << "` is not linked in\n";
  std::abort();
}

}  // namespace

const Dialect& DefaultDialect() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.fallback == nullptr) NotLinked("default");
  return *r.fallback;
}

const Dialect& DialectOf(const Graph& graph) {
  if (graph.origin() == nullptr) return DefaultDialect();
  const Dialect* found = FindDialect(graph.origin()->dialect());
  if (found == nullptr) NotLinked(graph.origin()->dialect());
  return *found;
}

absl::StatusOr<Graph> LoadGraphFile(const std::string& path) {
  for (const Dialect* d : Dialects()) {
    if (d->Claims(path)) return d->Load(path, "", /*allow_empty=*/false);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": error: no dialect reads this file"));
}

std::set<std::string> SelectedNames(const std::string& functions) {
  std::set<std::string> out;
  for (absl::string_view name : absl::StrSplit(functions, ',', absl::SkipEmpty()))
    out.insert(std::string(name));
  return out;
}

absl::Status CheckSelection(const std::set<std::string>& known, const std::string& functions,
                            absl::string_view what) {
  if (functions == "all" || functions == "none") return absl::OkStatus();
  for (const std::string& name : SelectedNames(functions)) {
    if (known.count(name) == 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "--functions names `", name, "`, which the graph does not hold; ", what, ": ",
          known.empty() ? "none" : Listed(known)));
  }
  return absl::OkStatus();
}

}  // namespace graft
