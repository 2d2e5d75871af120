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
#include "engine/function_body.h"
#include "engine/onnx_model.h"
#include "engine/op_registry.h"
#include "engine/suggest.h"
#include "engine/validate_onnx.h"

namespace graft {
namespace {

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
  int64_t width = DataTypeSize(t.dtype());
  if (content_size != 0 && width > 0 &&
      (elements == INT64_MAX ||
       static_cast<int64_t>(content_size) != elements * width)) {
    report(absl::StrCat(
        "Const `", node.name(), "` holds ", content_size,
        " bytes of content; its shape needs ",
        elements == INT64_MAX ? "more" : absl::StrCat(elements * width)));
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

// With `signature_only`, what makes a node disagree with its op signature
// alone (attrs, a Const's value, its data input count, ports its inputs
// read): the checks per-op analyses rely on. Otherwise dtypes, unresolved
// inputs and control inputs too.
void CheckNode(const Graph& graph, const Node& node,
               const ValidateOptions& options,
               std::vector<ValidationIssue>* issues,
               bool signature_only = false,
               validate_onnx::Types* onnx_types = nullptr) {
  if (graph.onnx() != nullptr) {
    auto report = [&](std::string message) {
      issues->push_back({node.id(), std::move(message)});
    };
    if (node.op() == "Const") CheckConstValue(node, report);
    validate_onnx::CheckNode(graph, node, signature_only,
                             options.check_dtypes ? onnx_types : nullptr, report);
    return;
  }
  const OpRegistry& ops = OpRegistry::Tensorflow();
  auto report = [&](std::string message) {
    issues->push_back({node.id(), std::move(message)});
  };
  if (node.op().empty()) report(absl::StrCat("`", node.name(), "` has no op"));
  if (node.op() == "Const") CheckConstValue(node, report);
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
                          graph.UnresolvedInputName(node.id(), i),
                          "`, which is not in the graph"));
      continue;
    }
    const Node& producer = graph.node(e.node);
    std::optional<std::vector<tf::DataType>> produced =
        ops.OutputTypes(producer);
    if (produced && e.port >= static_cast<int>(produced->size())) {
      report(absl::StrCat("input ", i, " of `", node.name(), "` reads `",
                          graph.TensorName(e), "`, but `", producer.name(),
                          "` (", producer.op(), ") has ", produced->size(),
                          " output(s)"));
      continue;
    }
    if (options.check_dtypes && !signature_only && produced && expected) {
      tf::DataType want = (*expected)[i];
      tf::DataType got = (*produced)[e.port];
      if (BaseType(want) != BaseType(got)) {
        report(absl::StrCat("input ", i, " of `", node.name(), "` (", node.op(),
                            ") expects ", DataTypeName(want), " but `",
                            graph.TensorName(e), "` is ", DataTypeName(got)));
      }
    }
  }
  for (size_t i = 0; !signature_only && i < node.control_inputs().size();
       ++i) {
    if (node.control_inputs()[i] == kNoNode) {
      report(absl::StrCat(
          "control input `^",
          graph.UnresolvedControlInputName(node.id(), static_cast<int>(i)),
          "` of `", node.name(), "` is not in the graph"));
    }
  }
}

// An op TensorFlow's importer does not know: `Op type not registered`.
void CheckOpName(const Graph& graph, const Node& node,
                 const ValidateOptions& options,
                 const std::set<std::string>& functions,
                 std::vector<ValidationIssue>* issues) {
  const std::string& op = node.op();
  if (graph.onnx() != nullptr) {  // ONNX: defined at the model's opset
    const int64_t opset = graph.onnx()->OpsetOf(op);
    // Another domain's op: its name checked in ai.onnx.ml (onnx.checker
    // lets unknown ops of the preview domains pass, as of custom domains).
    const size_t dot = op.rfind('.');
    const bool other_domain = dot != std::string::npos;
    static const std::set<std::string> kSchemaDomains = {"ai.onnx.ml"};
    if (op.empty() || op[0] == '_' || op == "Const" || op == "Placeholder" ||
        options.custom_ops.count(op) ||
        (other_domain && (opset <= 0 || !kSchemaDomains.count(op.substr(0, dot)))) ||
        OpRegistry::Onnx().FindAt(op, opset) != nullptr)
      return;
    if (opset <= 0) {
      issues->push_back({node.id(), absl::StrCat("`", node.name(), "` has op `", op,
                                                 "` of the default domain (ai.onnx), "
                                                 "which the model imports no opset of")});
      return;
    }
    issues->push_back(
        {node.id(),
         absl::StrCat("`", node.name(), "` has op `", op, "`, which ONNX ",
                      OpRegistry::Onnx().Find(op) != nullptr
                          ? absl::StrCat("defines only after opset ", opset)
                          : "does not have",
                      " (the model imports opset ", opset, ")")});
    return;
  }
  if (op.empty() || op[0] == '_' || options.custom_ops.count(op) ||
      functions.count(op) || OpRegistry::Tensorflow().Find(op) != nullptr)
    return;
  static const std::vector<std::string>* names =
      new std::vector<std::string>(OpRegistry::Tensorflow().OpNames());
  std::string closest = Closest(op, *names);
  issues->push_back(
      {node.id(),
       absl::StrCat("`", node.name(), "` has op `", op,
                    "`, which TensorFlow does not have",
                    closest.empty()
                        ? ""
                        : absl::StrCat(" (did you mean `", closest, "`?)"),
                    "; a custom op is declared with --custom-op ", op)});
}

// The library: every function a node or a body calls exists (or is an
// op), and no function calls itself, directly or through others
// (TensorFlow cannot instantiate a recursive function).
void CheckLibrary(const Graph& graph, const std::set<std::string>& functions,
                  const std::set<std::string>& custom_ops,
                  std::vector<ValidationIssue>* issues) {
  auto known = [&](const std::string& name) {
    return functions.count(name) > 0 || custom_ops.count(name) > 0 ||
           OpRegistry::Tensorflow().Find(name) != nullptr;
  };
  graph.ForEachNode([&](const Node& n) {
    for (const std::string& f : FunctionsCalled(n.def(), functions)) {
      if (!known(f)) {
        issues->push_back(
            {n.id(), absl::StrCat("`", n.name(), "` calls function `", f,
                                  "`, which the library does not hold")});
      }
    }
  });
  std::map<std::string, std::vector<std::string>> calls;
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    std::vector<std::string>& out = calls[f.signature().name()];
    for (const tf::NodeDef& n : f.node_def()) {
      for (const std::string& g : FunctionsCalled(n, functions)) {
        if (!known(g)) {
          issues->push_back(
              {kNoNode, absl::StrCat("function `", f.signature().name(),
                                     "`: `", n.name(), "` calls function `", g,
                                     "`, which the library does not hold")});
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
        issues->push_back(
            {kNoNode, absl::StrCat("function `", g, "` calls itself: ",
                                   absl::StrJoin(cycle, " -> "))});
        return;  // one cycle is enough to say
      }
      if (state[g] == 0) {
        state[g] = 1;
        path.emplace_back(g, 0);
      }
    }
  }
}

}  // namespace

std::vector<ValidationIssue> LibraryIssues(const Graph& graph) {
  std::set<std::string> functions;
  for (const tf::FunctionDef& f : graph.header().library().function())
    functions.insert(f.signature().name());
  std::vector<ValidationIssue> issues;
  CheckLibrary(graph, functions, {}, &issues);
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
  std::optional<validate_onnx::Types> types;
  if (graph.onnx() != nullptr) types.emplace(graph);
  for (NodeId id : ids) {
    if (id < 0 || id >= graph.id_limit() || !graph.node(id).alive()) continue;
    CheckNode(graph, graph.node(id), options, &issues, false,
              types.has_value() ? &*types : nullptr);
  }
  return issues;
}

std::vector<ValidationIssue> SignatureIssues(const Graph& graph,
                                             const Node& node) {
  std::vector<ValidationIssue> issues;
  CheckNode(graph, node, ValidateOptions(), &issues, /*signature_only=*/true);
  return issues;
}

std::vector<ValidationIssue> Validate(const Graph& graph,
                                      const ValidateOptions& options) {
  std::vector<ValidationIssue> issues;
  std::set<std::string> functions;
  for (const tf::FunctionDef& f : graph.header().library().function())
    functions.insert(f.signature().name());
  absl::flat_hash_set<absl::string_view> names;
  std::optional<validate_onnx::Types> types;
  if (graph.onnx() != nullptr) types.emplace(graph);
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
    CheckNode(graph, node, options, &issues, false,
              types.has_value() ? &*types : nullptr);
    CheckOpName(graph, node, options, functions, &issues);
  });
  CheckLibrary(graph, functions, options.custom_ops, &issues);
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
