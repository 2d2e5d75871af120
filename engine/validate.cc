#include "engine/validate.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <map>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/graph_algorithms.h"
#include "engine/files.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"
#include "engine/suggest.h"

namespace graft {

// A Const's value (when it has one) is a tensor TensorFlow accepts: its
// dtype is the node's, its dims are not negative, and its bytes or values
// fit its shape.
void CheckConstValue(const Node& node,
                     const std::function<void(std::string)>& report) {
  const tf::AttrValue* value = node.attr("value");
  if (value == nullptr || !value->has_tensor()) return;
  const tf::TensorProto& t = value->tensor();
  const tf::AttrValue* dtype = node.attr("dtype");
  if (dtype != nullptr && dtype->type() != t.dtype()) {
    report(absl::StrCat("Const `", node.name(), "` has dtype ",
                        DataTypeName(dtype->type()), " but its value is ",
                        DataTypeName(t.dtype())));
  }
  int64_t elements = 1;
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() < 0) {
      report(absl::StrCat("Const `", node.name(),
                          "` has a negative dimension (", d.size(), ")"));
      return;
    }
    elements = d.size() != 0 && elements > INT64_MAX / d.size()
                   ? INT64_MAX
                   : elements * d.size();
  }
  // The content's size only: a content kept apart (a folded filter computed
  // as it is written) is not computed to be checked.
  const size_t content_size = node.value_content_apart() != nullptr
                                  ? node.value_content_apart()->size()
                                  : node.value_content().size();
  const int64_t needed =
      elements == INT64_MAX ? -1 : TensorBytes(t.dtype(), elements);
  if (content_size != 0 && (DataTypeSize(t.dtype()) > 0 || needed >= 0) &&
      (needed < 0 || static_cast<int64_t>(content_size) != needed)) {
    report(absl::StrCat("Const `", node.name(), "` holds ", content_size,
                        " bytes of content; its shape needs ",
                        needed < 0 ? "more" : absl::StrCat(needed)));
  }
  int64_t values = t.float_val_size() + t.double_val_size() + t.int_val_size() +
                   t.int64_val_size() + t.half_val_size() + t.bool_val_size() +
                   t.string_val_size() + t.uint32_val_size() +
                   t.uint64_val_size();
  if (content_size == 0 && values > elements) {
    report(absl::StrCat("Const `", node.name(), "` lists ", values,
                        " values; its shape holds ", elements));
  }
}

// The attrs TensorFlow's importer requires of a node of op `def`: every attr
// without a default is present, each of the kind the op declares, type
// attrs among the allowed types, ints and lists at least their minimum.
// (Attrs the op does not have are accepted, as the importer accepts them.)
void CheckAttrs(const tf::OpDef& def, const Node& node,
                const std::function<void(std::string)>& report) {
  for (const auto& a : def.attr()) {
    const tf::AttrValue* v = node.attr(a.name());
    if (v == nullptr) {
      if (!a.has_default_value()) {
        report(absl::StrCat("`", node.name(), "` (", node.op(),
                            ") has no attr `", a.name(),
                            "`, which its op requires"));
      }
      continue;
    }
    const std::string& kind = a.type();
    bool list = absl::StartsWith(kind, "list(");
    auto want = [&](bool ok) {
      if (!ok) {
        report(absl::StrCat("attr `", a.name(), "` of `", node.name(), "` (",
                            node.op(), ") is not a ", kind));
      }
      return ok;
    };
    if (list) {
      if (!want(v->value_case() == tf::AttrValue::kList ||
                v->value_case() == tf::AttrValue::VALUE_NOT_SET))
        continue;
      int n = v->list().i_size() + v->list().f_size() + v->list().s_size() +
              v->list().b_size() + v->list().type_size() +
              v->list().shape_size() + v->list().tensor_size() +
              v->list().func_size();
      if (a.has_minimum() && n < a.minimum()) {
        report(absl::StrCat("attr `", a.name(), "` of `", node.name(), "` has ",
                            n, " item(s); its op wants at least ",
                            a.minimum()));
      }
      continue;
    }
    bool ok = kind == "type"     ? v->value_case() == tf::AttrValue::kType
              : kind == "int"    ? v->value_case() == tf::AttrValue::kI
              : kind == "float"  ? v->value_case() == tf::AttrValue::kF
              // an ATen Scalar: as the call gives it
              : kind == "number" ? v->value_case() == tf::AttrValue::kI ||
                                       v->value_case() == tf::AttrValue::kF ||
                                       v->value_case() == tf::AttrValue::kB
              : kind == "bool"   ? v->value_case() == tf::AttrValue::kB
              : kind == "string" ? v->value_case() == tf::AttrValue::kS
              : kind == "shape"  ? v->value_case() == tf::AttrValue::kShape
              : kind == "tensor" ? v->value_case() == tf::AttrValue::kTensor
              : kind == "func"   ? v->value_case() == tf::AttrValue::kFunc
                                 : true;
    if (!want(ok)) continue;
    if (kind == "type" && a.has_allowed_values() &&
        a.allowed_values().list().type_size() > 0) {
      const auto& allowed = a.allowed_values().list().type();
      if (std::find(allowed.begin(), allowed.end(), BaseType(v->type())) ==
          allowed.end()) {
        report(absl::StrCat("attr `", a.name(), "` of `", node.name(), "` (",
                            node.op(), ") is ", DataTypeName(v->type()),
                            ", which its op does not take"));
      }
    }
    if (kind == "string" && a.has_allowed_values() &&
        a.allowed_values().list().s_size() > 0) {
      const auto& allowed = a.allowed_values().list().s();
      if (std::find(allowed.begin(), allowed.end(), v->s()) == allowed.end()) {
        std::vector<std::string> names(allowed.begin(), allowed.end());
        std::string closest = Closest(v->s(), names);
        report(absl::StrCat(
            "attr `", a.name(), "` of `", node.name(), "` (", node.op(),
            ") is \"", absl::CEscape(v->s()), "\", not one of its op's values (",
            absl::StrJoin(names, ", "), ")",
            closest.empty() ? "" : absl::StrCat("; did you mean \"", closest,
                                               "\"?")));
      }
    }
    if (kind == "int" && a.has_minimum() && v->i() < a.minimum()) {
      report(absl::StrCat("attr `", a.name(), "` of `", node.name(), "` is ",
                          v->i(), "; its op wants at least ", a.minimum()));
    }
  }
}

namespace {

std::set<std::string> LibraryFunctions(const Graph& graph) {
  std::set<std::string> functions;
  for (const tf::FunctionDef& f : graph.header().library().function())
    functions.insert(f.signature().name());
  return functions;
}

}  // namespace

std::vector<ValidationIssue> LibraryIssues(const Graph& graph) {
  std::vector<ValidationIssue> issues;
  DialectOf(graph).CheckLibrary(graph, {}, [&](NodeId id, std::string message) {
    issues.push_back({id, std::move(message)});
  });
  return issues;
}

absl::Status ReadCustomOps(const std::string& path,
                           std::set<std::string>* ops) {
  absl::StatusOr<std::string> text =
      ReadFileBytes(path, kMaxTextFileBytes, "a list of op names");
  if (!text.ok()) return text.status();
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (line.find_first_of(" \t,") != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": error: expected one op name a line, got `",
          line, "`"));
    }
    ops->insert(std::string(line));
  }
  return absl::OkStatus();
}

std::vector<ValidationIssue> ValidateNodes(const Graph& graph,
                                           std::vector<NodeId> ids,
                                           const ValidateOptions& options) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<ValidationIssue> issues;
  std::unique_ptr<NodeChecker> checker =
      DialectOf(graph).Checker(graph, options, LibraryFunctions(graph));
  for (NodeId id : ids) {
    if (id < 0 || id >= graph.id_limit() || !graph.node(id).alive()) continue;
    checker->CheckNode(graph.node(id), /*signature_only=*/false,
                       [&](std::string message) { issues.push_back({id, std::move(message)}); });
  }
  return issues;
}

std::vector<ValidationIssue> SignatureIssues(const Graph& graph,
                                             const Node& node) {
  std::vector<ValidationIssue> issues;
  std::unique_ptr<NodeChecker> checker = DialectOf(graph).Checker(graph, ValidateOptions(), {});
  checker->CheckNode(node, /*signature_only=*/true,
                     [&](std::string message) { issues.push_back({node.id(), std::move(message)}); });
  return issues;
}

std::vector<ValidationIssue> Validate(const Graph& graph,
                                      const ValidateOptions& options) {
  std::vector<ValidationIssue> issues;
  const Dialect& dialect = DialectOf(graph);
  std::unique_ptr<NodeChecker> checker = dialect.Checker(graph, options, LibraryFunctions(graph));
  absl::flat_hash_set<absl::string_view> names;
  graph.ForEachNode([&](const Node& node) {
    if (!names.insert(node.name()).second) {
      issues.push_back(
          {node.id(), absl::StrCat("duplicate node name `", node.name(), "`")});
    }
    if (!node.modified() && node.def().input_size() > 0) {
      // A node whose source listed a data input after a control input.
      bool seen_control = false;
      for (const std::string& in : node.def().input()) {
        if (!in.empty() && in[0] == '^') {
          seen_control = true;
        } else if (seen_control) {
          issues.push_back(
              {node.id(), absl::StrCat("`", node.name(), "` lists data input `",
                                       in, "` after a control input")});
          break;
        }
      }
    }
    auto report = [&](std::string message) { issues.push_back({node.id(), std::move(message)}); };
    checker->CheckNode(node, /*signature_only=*/false, report);
    checker->CheckOpName(node, report);
  });
  dialect.CheckLibrary(graph, options.custom_ops, [&](NodeId id, std::string message) {
    issues.push_back({id, std::move(message)});
  });
  if (std::optional<std::vector<NodeId>> cycle = FindCycle(graph)) {
    std::vector<std::string> path;
    for (NodeId id : *cycle) path.push_back(graph.node(id).name());
    path.push_back(path.front());
    issues.push_back(
        {cycle->front(),
         absl::StrCat("the graph has a cycle: ", absl::StrJoin(path, " -> "))});
  }
  for (const std::string& output : options.outputs) {
    absl::string_view name;
    int port = 0;
    if (!Graph::ParseTensorName(output, &name, &port)) name = output;
    if (!graph.Contains(name)) {
      issues.push_back(
          {kNoNode, absl::StrCat("output `", output, "` is not in the graph")});
    }
  }
  return issues;
}

absl::Status CheckValid(const Graph& graph, const ValidateOptions& options) {
  std::vector<ValidationIssue> issues = Validate(graph, options);
  if (issues.empty()) return absl::OkStatus();
  constexpr size_t kShown = 10;
  std::vector<std::string> lines;
  for (size_t i = 0; i < issues.size() && i < kShown; ++i) {
    lines.push_back(issues[i].message);
  }
  if (issues.size() > kShown) {
    lines.push_back(absl::StrCat("... and ", issues.size() - kShown, " more"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("invalid graph (", issues.size(),
                   " problem(s)): ", absl::StrJoin(lines, "; ")));
}

}  // namespace graft
