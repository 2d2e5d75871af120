#include "engine/tensor_ranges.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/files.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"
#include "yaml-cpp/yaml.h"

namespace graft {

std::string CanonicalTensorName(const std::string& tensor) {
  absl::string_view node;
  int port = 0;
  if (!Graph::ParseTensorName(tensor, &node, &port) || port < 0) {
    return tensor + ":0";  // not a tensor name; no graph has it
  }
  return absl::StrCat(node, ":", port);
}

const TensorRange* TensorRanges::Find(const std::string& tensor) const {
  auto it = ranges.find(CanonicalTensorName(tensor));
  return it == ranges.end() ? nullptr : &it->second;
}

namespace {

bool ToNumber(const YAML::Node& n, double* out) {
  if (!n.IsScalar()) return false;
  return absl::SimpleAtod(n.Scalar(), out);
}

}  // namespace

TensorRanges LoadTensorRanges(const std::string& path,
                              std::vector<RangeFileProblem>* problems) {
  TensorRanges table;
  table.path = path;
  absl::StatusOr<std::string> text =
      ReadFile(path, kMaxTextFileBytes, "a range file (YAML)");
  if (!text.ok()) {
    problems->push_back({0, 0,
                         absl::IsNotFound(text.status())
                             ? "cannot read the range file"
                             : absl::StrCat("cannot read the range file: ",
                                            text.status().message())});
    return table;
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    problems->push_back({e.mark.line + 1, e.mark.column + 1, e.msg});
    return table;
  }
  if (root.IsNull()) return table;
  if (!root.IsMap()) {
    problems->push_back({root.Mark().line + 1, root.Mark().column + 1,
                         "expected a mapping `tensor: [min, max]`"});
    return table;
  }
  for (const auto& entry : root) {
    const YAML::Mark key_mark = entry.first.Mark();
    int line = key_mark.line + 1, column = key_mark.column + 1;
    if (!entry.first.IsScalar()) {
      problems->push_back({line, column, "expected a tensor name"});
      continue;
    }
    std::string tensor = entry.first.Scalar();
    const YAML::Node& v = entry.second;
    TensorRange range{0, 0, line, column, tensor};
    bool ok = false;
    if (v.IsSequence() && v.size() == 2) {
      ok = ToNumber(v[0], &range.min) && ToNumber(v[1], &range.max);
    } else if (v.IsMap() && v["min"] && v["max"] && v.size() == 2) {
      ok = ToNumber(v["min"], &range.min) && ToNumber(v["max"], &range.max);
    }
    if (!ok) {
      problems->push_back(
          {line, column,
           absl::StrCat("`", tensor, "`: expected [min, max], two numbers")});
      continue;
    }
    if (range.min > range.max) {
      problems->push_back({line, column,
                           absl::StrCat("`", tensor, "`: min ", range.min,
                                        " is greater than max ", range.max)});
      continue;
    }
    std::string key = CanonicalTensorName(tensor);
    auto [it, inserted] = table.ranges.emplace(key, range);
    if (!inserted) {
      problems->push_back(
          {line, column,
           absl::StrCat("`", tensor, "` is named twice (first on line ",
                        it->second.line, ")")});
    }
  }
  return table;
}

namespace {

// A dialect that names values (ONNX): ranges name them as the file does.
absl::Status CheckValueRanges(const TensorRanges& table, const Graph& graph) {
  absl::flat_hash_set<std::string> values;
  for (NodeId id : graph.NodeIds()) {
    const Node& n = graph.node(id);
    for (int port = 0; port < std::max(n.num_used_ports(), 1); ++port) {
      std::string v = DialectOf(graph).TensorNameInFile(graph, {id, port});
      if (!v.empty()) values.insert(CanonicalTensorName(v));
    }
  }
  for (const auto& [tensor, range] : table.ranges) {
    if (!values.count(tensor))
      return absl::NotFoundError(absl::StrCat(table.path, ":", range.line, ":", range.column,
                                              ": tensor `", range.written,
                                              "` is not a value of the model"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTensorRanges(const TensorRanges& table, const Graph& graph) {
  if (DialectOf(graph).has_value_names()) return CheckValueRanges(table, graph);
  for (const auto& [tensor, range] : table.ranges) {
    absl::string_view parsed;
    int port = 0;
    (void)Graph::ParseTensorName(tensor, &parsed, &port);  // canonical keys
    std::string node_name(parsed);
    std::string where =
        absl::StrCat(table.path, ":", range.line, ":", range.column, ": ");
    const Node* node = graph.FindNode(node_name);
    if (node == nullptr) {
      return absl::NotFoundError(
          absl::StrCat(where, "tensor `", tensor,
                       "` is not in the graph (no node `", node_name, "`)"));
    }
    std::optional<std::vector<tf::DataType>> outputs =
        OpRegistry::For(graph).OutputTypes(*node);
    if (outputs && port >= static_cast<int>(outputs->size())) {
      return absl::NotFoundError(
          absl::StrCat(where, "tensor `", tensor, "` is not in the graph (`",
                       node_name, "` has ", outputs->size(), " output(s))"));
    }
  }
  return absl::OkStatus();
}

}  // namespace graft
