// The `graft` subcommands: flags into library calls (api/graft.h), results
// printed. Each returns the process exit code: 0 success, 1 bad input or
// failed work, 2 usage error. Errors go to stderr.
#ifndef GRAFT_CLI_COMMANDS_H_
#define GRAFT_CLI_COMMANDS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/graft.h"
#include "dialects/graph_io.h"
#include "engine/graph_stats.h"
#include "proto/report.pb.h"

namespace graft::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

using ::graft::HumanSize;  // engine/graph_stats.h

// Prints a library call's error and returns its exit status. With a
// `command`, a message that starts "error: " (or any, with `always`) is
// prefixed "command: ".
int Fail(const api::Error& error, const std::string& command = "",
         bool always = false);

// A model file (or SavedModel folder) named on the command line.
api::Model ModelArg(const std::string& path,
                    GraphFormat format = GraphFormat::kAuto,
                    bool allow_empty = false,
                    const api::SavedModelRead& saved_model = {});

struct StatsOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  bool allow_empty = false;  // an empty (0-byte) graph file is a graph
  std::string model;
  GraphFormat format = GraphFormat::kAuto;
  bool json = false;
};
int RunStats(const StatsOptions& options);

struct ConvertOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  bool allow_empty = false;  // an empty (0-byte) graph file is a graph
  std::string input;
  std::string output;
  GraphFormat input_format = GraphFormat::kAuto;
  GraphFormat output_format = GraphFormat::kAuto;
  bool in_place = false;
};
int RunConvert(const ConvertOptions& options);

struct ValidateCommandOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  bool allow_empty = false;  // an empty (0-byte) graph file is a graph
  std::string model;
  GraphFormat format = GraphFormat::kAuto;
  std::vector<std::string> outputs;
  bool json = false;
  std::vector<std::string> custom_ops;  // --custom-op NAME
  std::string custom_ops_file;          // --custom-ops FILE
};
int RunValidate(const ValidateCommandOptions& options);

// The custom ops the command line declares (names and a file of names);
// false (said on stderr) when the file cannot be read.
bool CustomOps(const std::vector<std::string>& names, const std::string& file,
               std::set<std::string>* ops);

struct ApplyCommandOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  bool allow_empty = false;  // an empty (0-byte) graph file is a graph
  std::vector<std::string> rule_files;
  std::string pipeline;
  std::string transforms;           // GTT's --transforms string
  std::string onnxoptimizer_passes;  // onnxoptimizer's pass names
  std::string gtt_inputs;           // GTT's --inputs (with transforms)
  std::string program;              // argv[0]: where to look for rules/tf/gtt
  std::vector<std::string> params;  // name=value
  std::vector<std::string> skip_rules;  // rule names or globs left out
  std::vector<std::string> only_rules;  // rule names or globs kept alone
  std::string input;
  std::string output;
  std::string report;  // JSON report path, or empty
  GraphFormat input_format = GraphFormat::kAuto;
  GraphFormat output_format = GraphFormat::kAuto;
  std::vector<std::string> outputs;
  std::vector<std::string> custom_ops;  // --custom-op NAME
  std::string custom_ops_file;          // --custom-ops FILE
  int64_t max_rewrites = 0;        // 0: the default, growing with the graph
  int64_t opset = 0;               // an ONNX model's opset raised to this first
  int64_t max_const_elements = 0;  // 0: the default (kDefaultMaxConstElements)
  std::string functions = "all";   // library functions rewritten too
  bool in_place = false;
  bool quiet = false;
  bool diff = false;  // print the structural diff of what the rules did
  std::string device = "h100_sxm";  // profile for the cost hooks
  // For the analysis hooks: the loss and gradient seed of a training graph
  // (found when empty) and the input shapes the graph leaves unknown.
  std::string loss, seed;
  std::vector<std::string> input_shapes;  // name=1,224,224,3
  int64_t batch = 0;                      // > 0: a dynamic batch dimension
  std::string default_device;             // of unplaced ops, for memory
  std::string cpu_kernels = "onednn";     // whose scratch the planners count
  // Batch mode (several inputs, a folder, or -o a folder): every model
  // under -o DIR.
  std::vector<std::string> inputs;
  int jobs = 0;                 // 0: the number of cores
  bool skip_unchanged = false;  // outputs newer than input and rules stay
  std::string shard;            // "i/n"
};
int RunApply(const ApplyCommandOptions& options);
// Whether `options` ask for a batch: several inputs, a folder, -o a folder
// (existing, or ending in `/`) or --shard.
bool IsBatch(const ApplyCommandOptions& options);
// The batch: `rules` (compiled once) over every model; cli/batch_apply.cc.
int RunBatchApply(const ApplyCommandOptions& options, const api::Rules& rules,
                  const api::ApplyOptions& apply);

struct ReportMergeOptions {
  std::vector<std::string> reports;  // batch reports (JSON)
  std::string output;
};
int RunReportMerge(const ReportMergeOptions& options);

// `graft review`: a rule change (base and head rule files or pipelines)
// applied to every model, the outputs compared.
struct ReviewOptions {
  std::vector<std::string> base_rules, head_rules;
  std::string base_pipeline, head_pipeline;
  // Rules left out of each side (names or globs): the same pipeline with
  // and without a rule shows what that rule does.
  std::vector<std::string> base_skip_rules, head_skip_rules;
  // Exporter drift: one rule set over two folders of exports.
  std::vector<std::string> rules;
  std::string pipeline, before, after;
  std::string program;  // argv[0]: where to look for shipped pipelines
  std::vector<std::string> params;  // name=value, both sides
  std::vector<std::string> models;  // files or folders
  std::string format = "text";      // text, markdown or html
  std::string report;               // JSON report path, or empty
  int jobs = 0;                     // 0: the cores
  int context = 1;                  // html drawings: hops of context
  bool full = false;                // every line of each model's diff
};
int RunReview(const ReviewOptions& options);

// `name=value` items into `out`; false (said on stderr) on a bad one.
bool ParseCliParams(const std::vector<std::string>& items,
                    std::map<std::string, std::string>* out);

struct CheckOptions {
  std::vector<std::string> rule_files;
  std::vector<std::string> params;
};
int RunCheck(const CheckOptions& options);

struct TestCommandOptions {
  std::vector<std::string> paths;  // rule files or folders of them
};
// Runs the `test` blocks of rule files; ends with `N passed, N failed`.
int RunTests(const TestCommandOptions& options);

struct PipelineCommandOptions {
  std::string transforms, inputs, outputs, output;
  std::string program;  // argv[0]: where to look for rules/tf/gtt
};
// A GTT --transforms string written as a pipeline file.
int RunPipelineFromTransforms(const PipelineCommandOptions& options);

struct DiffOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  std::string before;
  std::string after;
  std::string format = "text";  // text, dot or html
  bool exit_code = false;       // exit 1 when the graphs differ
  bool full = false;  // added nodes in full, tensors with values; html: all
  int context = 1;    // html: hops of unchanged nodes around the changes
};
int RunDiff(const DiffOptions& options);

struct ExplainOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  std::vector<std::string> rule_files;
  std::string pipeline;  // or a pipeline: each step explained after the ones before it ran
  std::string program;   // argv[0]: where to look for shipped pipelines
  std::vector<std::string> params;
  std::string model;
  std::string rule;  // only this rule
  std::string node;  // only at this node: says why a rule does not match
  std::vector<std::string> input_shapes;  // --input-shape name=dims, as apply's
  int64_t batch = 0;
};
int RunExplain(const ExplainOptions& options);

struct FmtOptions {
  std::vector<std::string> paths;  // rule files or folders
  bool check = false;              // report, do not rewrite
};
int RunFmt(const FmtOptions& options);

std::string VersionString();

// `graft mem`: shapes, regions, schedule and peak memory (cli/analyze.cc).
struct MemOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  std::string model;
  std::string loss, seed;            // training graphs; found when empty
  std::vector<std::string> outputs;  // fetched, live to the end
  int top = 10;                      // tensors listed at each peak
  bool json = false;
  std::vector<std::string> input_shapes;  // name=1,224,224,3
  int64_t batch = 0;                      // > 0: a dynamic batch dimension
  std::string default_device;             // of unplaced ops ("": none)
  // Nodes that do not match their op: refused (false) or left unknown and
  // listed (true).
  bool skip_invalid_nodes = false;
  std::string cpu_kernels = "onednn";  // whose scratch counts: onednn, eigen
  int threads = 0;                     // their intra-op threads (0: this machine's)
};
int RunMem(const MemOptions& options);

// `graft cost`: per-op and total roofline estimates for a device.
struct CostOptions {
  api::SavedModelRead saved_model;  // --tag, --signature, --saved-model
  std::string model;
  std::string device = "h100_sxm";  // a shipped profile or a YAML file
  int top = 20;                     // ops listed, most expensive first
  bool json = false;
  std::vector<std::string> input_shapes;  // name=1,224,224,3
  int64_t batch = 0;                      // > 0: a dynamic batch dimension
  std::string default_device;             // of unplaced ops ("": none)
  // Nodes that do not match their op: refused (false) or left unknown and
  // listed (true).
  bool skip_invalid_nodes = false;
};
int RunCost(const CostOptions& options);

}  // namespace graft::cli

#endif  // GRAFT_CLI_COMMANDS_H_
