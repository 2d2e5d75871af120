#include "cli/commands.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/graph_stats.h"
#include "engine/op_registry.h"
#include "engine/validate.h"
#include "google/protobuf/util/json_util.h"

namespace graft::cli {
namespace {

std::string FormatName(GraphFormat format) {
  return format == GraphFormat::kText ? "pbtxt" : "pb";
}

std::string HumanSize(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (1 << 20)) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  if (bytes < (1 << 30)) return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.2f GiB", bytes / 1073741824.0);
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

void PrintCounts(const char* title,
                 const google::protobuf::RepeatedPtrField<report::Count>& counts,
                 const char* empty_name) {
  std::cout << title << " (" << counts.size() << "):\n";
  size_t width = 0;
  for (const report::Count& c : counts) {
    width = std::max(width, (c.name().empty() ? std::string(empty_name)
                                              : c.name()).size());
  }
  for (const report::Count& c : counts) {
    std::string name = c.name().empty() ? empty_name : c.name();
    std::cout << "  " << name << std::string(width - name.size() + 2, ' ')
              << c.count() << "\n";
  }
}

bool SamePath(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::string VersionString() {
  return absl::StrCat("graft 0.1.0 (TensorFlow op signatures: ",
                      OpRegistry::Tensorflow().size(), " ops)");
}

int RunStats(const StatsOptions& options) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(options.model);
  if (!bytes.ok()) {
    std::cerr << bytes.status().message() << "\n";
    return kExitFailure;
  }
  int64_t size = static_cast<int64_t>(bytes->size());
  GraphFormat format = ResolveGraphFormat(options.model, options.format);
  absl::StatusOr<Graph> graph =
      ParseGraph(std::move(*bytes), format, options.model);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  report::GraphStats stats = ComputeGraphStats(*graph);
  stats.set_path(options.model);
  stats.set_format(FormatName(format));
  stats.set_size_bytes(size);
  if (options.json) {
    std::cout << ToJson(stats);
    return kExitOk;
  }
  std::cout << stats.path() << " (" << stats.format() << ", "
            << HumanSize(stats.size_bytes()) << ")\n"
            << "nodes: " << stats.num_nodes() << "\n"
            << "edges: " << stats.num_data_edges() << " data, "
            << stats.num_control_edges() << " control\n";
  if (stats.num_functions() > 0) {
    std::cout << "functions: " << stats.num_functions() << "\n";
  }
  auto join = [](const google::protobuf::RepeatedPtrField<std::string>& names) {
    std::string out;
    for (const std::string& n : names) absl::StrAppend(&out, out.empty() ? "" : ", ", n);
    return out.empty() ? std::string("(none)") : out;
  };
  std::cout << "inputs: " << join(stats.inputs()) << "\n"
            << "outputs: " << join(stats.outputs()) << "\n";
  PrintCounts("ops", stats.ops(), "");
  PrintCounts("devices", stats.devices(), "(unplaced)");
  PrintCounts("tensor dtypes", stats.dtypes(), "");
  return kExitOk;
}

int RunConvert(const ConvertOptions& options) {
  if (!options.in_place && SamePath(options.input, options.output)) {
    std::cerr << options.output
              << ": error: refusing to overwrite the input; pass --in-place "
                 "to replace it\n";
    return kExitUsage;
  }
  absl::StatusOr<Graph> graph = LoadGraph(options.input, options.input_format);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  GraphFormat out_format =
      ResolveGraphFormat(options.output, options.output_format);
  absl::Status saved = SaveGraph(*graph, options.output, out_format);
  if (!saved.ok()) {
    std::cerr << saved.message() << "\n";
    return kExitFailure;
  }
  std::cerr << "wrote " << options.output << " (" << FormatName(out_format)
            << ", " << graph->num_nodes() << " nodes)\n";
  return kExitOk;
}

int RunValidate(const ValidateCommandOptions& options) {
  absl::StatusOr<Graph> graph = LoadGraph(options.model, options.format);
  report::Validation result;
  result.set_path(options.model);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return kExitFailure;
  }
  ValidateOptions validate;
  validate.outputs = options.outputs;
  std::vector<ValidationIssue> issues = Validate(*graph, validate);
  result.set_valid(issues.empty());
  for (const ValidationIssue& issue : issues) {
    result.add_problems(issue.message);
    std::cerr << options.model << ": error: " << issue.message << "\n";
  }
  if (options.json) {
    std::cout << ToJson(result);
  } else if (issues.empty()) {
    std::cout << options.model << ": valid (" << graph->num_nodes()
              << " nodes)\n";
  } else {
    std::cerr << options.model << ": " << issues.size() << " problem(s)\n";
  }
  return issues.empty() ? kExitOk : kExitFailure;
}

}  // namespace graft::cli
