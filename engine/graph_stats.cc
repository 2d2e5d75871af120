#include "engine/graph_stats.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"

namespace graft {
namespace {

void AddCounts(const std::map<std::string, int64_t>& counts,
               google::protobuf::RepeatedPtrField<report::Count>* out) {
  for (const auto& [name, count] : counts) {
    report::Count* c = out->Add();
    c->set_name(name);
    c->set_count(count);
  }
}

}  // namespace

report::GraphStats ComputeGraphStats(const Graph& graph) {
  const OpRegistry& ops = OpRegistry::For(graph);
  report::GraphStats stats;
  std::map<std::string, int64_t> devices;
  std::map<std::string, int64_t> dtypes;
  int64_t data_edges = 0;
  int64_t control_edges = 0;
  graph.ForEachNode([&](const Node& node) {
    data_edges += node.num_inputs();
    control_edges += static_cast<int64_t>(node.control_inputs().size());
    ++devices[node.device()];
    std::optional<std::vector<tf::DataType>> types = ops.OutputTypes(node);
    if (types) {
      for (tf::DataType t : *types) ++dtypes[DataTypeName(t)];
    } else {
      dtypes["unknown"] += std::max(1, node.num_used_ports());
    }
    if (node.op() == "Placeholder" || node.op() == "PlaceholderV2" ||
        node.op() == "PlaceholderWithDefault") {
      stats.add_inputs(node.name());
    }
    if (!node.HasConsumers()) stats.add_outputs(node.name());
  });
  stats.set_num_nodes(graph.num_nodes());
  stats.set_num_data_edges(data_edges);
  stats.set_num_control_edges(control_edges);
  for (const auto& [op, count] : graph.OpHistogram()) {
    report::Count* c = stats.add_ops();
    c->set_name(op);
    c->set_count(count);
  }
  AddCounts(devices, stats.mutable_devices());
  AddCounts(dtypes, stats.mutable_dtypes());
  stats.set_num_functions(graph.header().library().function_size());
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    report::Count* c = stats.add_functions();
    c->set_name(f.signature().name());
    c->set_count(f.node_def_size());
  }
  return stats;
}

std::map<std::string, int64_t> CountedOps(const Graph& graph) {
  const Dialect& dialect = DialectOf(graph);
  std::map<std::string, int64_t> ops;
  graph.ForEachNode([&](const Node& node) {
    if (!dialect.IsInterfaceNode(node)) ++ops[node.op()];
  });
  return ops;
}

int64_t ConstantBytes(const Graph& graph) {
  int64_t bytes = 0;
  graph.ForEachNode([&](const Node& node) {
    if (node.op() != "Const") return;
    if (node.value_content_apart() != nullptr) {
      bytes += static_cast<int64_t>(node.value_content_apart()->size());
      return;
    }
    auto value = node.def().attr().find("value");
    if (value != node.def().attr().end() && value->second.has_tensor()) {
      bytes += static_cast<int64_t>(value->second.tensor().ByteSizeLong());
    }
  });
  return bytes;
}

std::string HumanSize(int64_t bytes) {
  if (bytes < 0) return "-" + HumanSize(-bytes);
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (1 << 20)) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  if (bytes < (1 << 30)) return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.2f GiB", bytes / 1073741824.0);
}

std::vector<std::string> ModelOutputs(const Graph& graph) {
  return DialectOf(graph).ModelOutputs(graph);
}

}  // namespace graft
