// graft's library API: one call per subcommand, each with an options struct
// and a result. The faces (cli/: flags and printing; python/: `import
// graft`) only translate arguments and print or return. Models cross this
// boundary as paths or bytes, never as protobuf objects.
#ifndef GRAFT_API_GRAFT_H_
#define GRAFT_API_GRAFT_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/analyses.h"
#include "api/result.h"
#include "dialects/graph_io.h"
#include "dialects/tf/saved_model.h"
#include "proto/report.pb.h"

namespace graft::api {

// A model: a file, or bytes already in memory (`path` then only names
// them in errors). In-memory bytes are shared, not copied: `owner` keeps
// `bytes` alive as long as any graph read from them.
// How a SavedModel folder is read. kAuto: frozen (the signatures inlined,
// variables as constants: dialects/tf/freeze.h) by apply, explain, mem and
// cost; in place (functions and variables as they are) by the rest.
enum class SavedModelMode { kAuto, kFreeze, kInPlace };
struct SavedModelRead {
  std::string tag = "serve";            // the MetaGraph
  std::vector<std::string> signatures;  // frozen: those kept (empty: all)
  SavedModelMode mode = SavedModelMode::kAuto;
  // Whether a SavedModel read with these settings by a command that
  // freezes by default (`freeze_by_default`) is frozen.
  bool Freezes(bool freeze_by_default) const {
    return mode == SavedModelMode::kFreeze ||
           (mode == SavedModelMode::kAuto && freeze_by_default);
  }
};

struct Model {
  std::string path;
  std::shared_ptr<const void> owner;
  absl::string_view bytes;
  bool in_memory = false;
  GraphFormat format = GraphFormat::kAuto;  // auto: by extension
  bool allow_empty = false;  // an empty (0-byte) graph is a graph
  SavedModelRead saved_model;  // when `path` is a SavedModel folder
  static Model File(std::string path, GraphFormat format = GraphFormat::kAuto);
  static Model Bytes(std::string bytes, GraphFormat format = GraphFormat::kAuto,
                     std::string name = "<bytes>");
  static Model View(std::shared_ptr<const void> owner, absl::string_view bytes,
                    GraphFormat format = GraphFormat::kAuto,
                    std::string name = "<bytes>");
};
// The model as a graph; a SavedModel is frozen when model.saved_model says
// so or (kAuto) when `freeze_by_default`, what it did told in `frozen`.
Result<Graph> Load(const Model& model, bool freeze_by_default = false,
                   report::FreezeReport* frozen = nullptr);
// Where a result goes: a file (written atomically; `-` is stdout) or, with
// an empty path, bytes returned in the result.
struct Output {
  std::string path;
  GraphFormat format = GraphFormat::kAuto;  // of the file; bytes: binary
};

// A usage error when writing `out` would replace the model's own file and
// `in_place` was not given; an error with an empty message otherwise.
Error RefuseOverwrite(const Model& model, const Output& out, bool in_place);

// ---- models -------------------------------------------------------------
Result<report::GraphStats> Stats(const Model& model);
// The model in another format; refuses to overwrite the input unless
// `in_place`.
struct Converted {
  std::string bytes;  // when `out.path` is empty
  int64_t nodes = 0;
  std::string format;  // written as: pb, pbtxt or saved_model
};
Result<Converted> Convert(const Model& model, const Output& out,
                          bool in_place = false);
// A SavedModel frozen (model.saved_model: tag, signatures) to GraphDef
// bytes, with its signatures' tensors.
struct Frozen {
  std::string bytes;  // binary GraphDef
  std::vector<SignatureTensors> signatures;  // sorted by key
  report::FreezeReport report;
};
Result<Frozen> Freeze(const Model& model);

// A frozen graph (no variables) written as a new SavedModel folder with
// one signature over its tensors (dtypes and shapes from the graph), for
// tf.saved_model.load and TF Serving.
using SignatureTensors = graft::SignatureTensors;
Result<std::string> SaveAsSavedModel(const Model& model, const std::string& dir,
                                     const SignatureTensors& signature);
struct ValidateOptions {
  std::vector<std::string> outputs;    // fetch nodes besides the sinks
  std::set<std::string> custom_ops;    // ops outside TensorFlow's registry
};
// Problems TensorFlow's importer would refuse (`valid` false) or none.
Result<report::Validation> Validate(const Model& model,
                                    const ValidateOptions& options);
struct DiffOptions {
  std::string format = "text";  // text, dot or html
  bool full = false;  // added nodes in full, tensors with values; html: all
  int context = 1;    // html: hops of unchanged nodes around the changes
};
struct Diffed {
  bool differs = false;
  std::string text;  // in the format asked for
};
Result<Diffed> Diff(const Model& before, const Model& after,
                    const DiffOptions& options);

// ---- rules --------------------------------------------------------------
// What to apply: exactly one of rule files, rule text, a pipeline or a GTT
// transforms string; params override the files' defaults.
struct RulesSpec {
  std::vector<std::string> rule_files;
  std::string rule_text, rule_text_name = "<rules>";
  std::string pipeline;
  std::string transforms, gtt_inputs;  // GTT's --transforms and --inputs
  // onnxoptimizer's pass names, comma-separated (rules/onnx/onnxoptimizer).
  std::string onnxoptimizer_passes;
  std::string program;                 // argv[0]: where to find rules/tf/gtt
  std::map<std::string, std::string> params;
  // Rules left out of every step: names or globs (`rotary_*`), each of
  // which must name a rule.
  std::vector<std::string> skip_rules;
  // The rules kept in every step, the others left out: names or globs,
  // each of which must name a rule (then `skip_rules` leaves some of them
  // out).
  std::vector<std::string> only_rules;
  // Fetch nodes: GTT's outputs, and live to the end for the analyses.
  std::vector<std::string> outputs;
  AnalysisSettings analysis;  // for the analysis hooks rules may call
};
// Rules compiled once, applied to any number of models (from any number
// of threads at once).
class Rules {
 public:
  struct Impl;
  explicit Rules(std::unique_ptr<Impl> impl);
  ~Rules();
  int num_rules() const;
  std::vector<std::string> files() const;        // every file compiled
  const std::vector<std::string>& notes() const;  // e.g. GTT params dropped
  std::string warnings() const;                   // lints, rendered
  int num_warnings() const;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};
Result<std::shared_ptr<const Rules>> CompileRules(const RulesSpec& spec);
// A GTT --transforms string as a pipeline file's YAML (rule paths relative
// to `yaml_dir`).
struct PipelineYaml {
  std::string yaml;
  int steps = 0;
  std::vector<std::string> notes;  // GTT params graft does not need
};
Result<PipelineYaml> PipelineFromTransforms(const RulesSpec& spec,
                                            const std::string& yaml_dir);

// The `test` blocks of rule files (files or folders of `.graft` files).
struct RuleTest {
  std::string name;     // "file:line: rule / test", or the file
  std::string failure;  // empty: passed
};
Result<std::vector<RuleTest>> TestRules(const std::vector<std::string>& paths);
// Each rule file in its canonical format (with `write`, written back
// atomically where it differs).
struct Formatted {
  std::string path, text, diff;  // diff: a line diff; empty: already so
};
Result<std::vector<Formatted>> FormatRules(
    const std::vector<std::string>& paths, bool write);

struct Explanation {
  std::string node;
  std::string function;  // the library function whose body holds it ("": the graph)
  bool matched = false;
  std::string reason;  // why not
  std::vector<std::pair<std::string, std::string>> bindings;  // name, value
};
struct ExplainedRule {
  std::string rule;
  std::vector<Explanation> at;  // where it matches (or `node`), node order
};
// A library function body the rules were explained in, and what it shows
// them as constants (a frozen graph's constant arguments, a SavedModel's
// variable reads).
struct ExplainedFunction {
  std::string name;
  int constant_args = 0;
  int variable_reads = 0;
};
// Where the rules (or only `rule`) match, or why not at `node` (in the
// graph, else in the first function body that has a node of that name),
// in the graph and then in each library function's body as the rules see
// it (TensorFlow); `functions`, when given, gets those bodies.
Result<std::vector<ExplainedRule>> Explain(
    const Model& model, const Rules& rules, const std::string& rule = "",
    const std::string& node = "",
    std::vector<ExplainedFunction>* functions = nullptr);

// ---- applying -----------------------------------------------------------
struct ApplyOptions {
  std::vector<std::string> outputs;  // fetch nodes besides the sinks
  std::set<std::string> custom_ops;
  int64_t max_rewrites = 0;  // 0: the default, growing with the graph
  // Library functions whose bodies the rules rewrite too: "all", "none",
  // or names separated by commas.
  std::string functions = "all";
  bool diff = false;  // the structural diff, as text
  // An ONNX model's opset raised to this first, where its ops mean the
  // same there (else an error); 0: as it is.
  int64_t opset = 0;
};
struct Applied {
  report::ApplyReport report;
  std::string bytes;      // the rewritten model when `out.path` is empty
  std::string diff_text;  // with options.diff
};
// Rewrites one model; writes nothing unless every step converged and the
// result validates.
Result<Applied> Apply(const Model& model, const Rules& rules,
                      const ApplyOptions& options, const Output& out = {});

struct BatchOptions {
  std::vector<std::string> inputs;  // files and folders of them
  std::string out_dir;
  int jobs = 0;  // 0: the cores
  bool skip_unchanged = false;
  std::string shard;  // "i/n"
  GraphFormat input_format = GraphFormat::kAuto;
  GraphFormat output_format = GraphFormat::kAuto;
  SavedModelRead saved_model;  // for the SavedModel folders among the inputs
  ApplyOptions apply;
  std::function<void(const report::BatchModel&, int done, int total)> progress;
};
// The models of a batch, sharded: input, output, and why a model is not
// read (a link out of the folder it was found in; docs/security.md). An
// error names the bad input or collision.
struct PlannedModel {
  std::string input, output, refused;
};
Result<std::vector<PlannedModel>> BatchPlan(const BatchOptions& options);
// Every model of the plan on `jobs` threads; a failing model is reported
// and the rest go on.
Result<report::BatchReport> ApplyBatch(const BatchOptions& options,
                                       const Rules& rules);
// One model of a batch, as ApplyBatch reports it (for other executors).
report::BatchModel ApplyBatchModel(const PlannedModel& model, const Rules& rules,
                                   const BatchOptions& options);
// Per-model reports (from batches, shards or executors) as one report.
report::BatchReport MergeBatchReports(
    const std::vector<report::BatchReport>& parts);
// Reads batch reports (JSON files) and merges them.
Result<report::BatchReport> MergeBatchReportFiles(
    const std::vector<std::string>& paths);

struct ReviewOptions {
  RulesSpec base, head;
  std::vector<std::string> models;  // files or folders
  // Exporter drift instead: `rules` over the models of `before` and of
  // `after` (two folders of exports), paired by their paths within them.
  RulesSpec rules;
  std::string before, after;
  std::string format = "text";      // text, markdown or html
  int jobs = 0;                     // 0: the cores
  int context = 1;                  // html drawings: hops of context
  bool full = false;                // every line of each model's diff
};
struct Reviewed {
  std::string text;  // the review, in the format asked for
  std::string json;  // per model: differs, error, counts, diff
  int failed = 0;    // models that could not be reviewed
};
Result<Reviewed> Review(const ReviewOptions& options);

// ---- reports as JSON ----------------------------------------------------
// Field names as in the .proto; `all_fields`: zeros and empties too.
std::string ToJson(const google::protobuf::Message& message,
                   bool all_fields = true);
std::string QuoteJson(const std::string& text);  // a JSON string literal
std::string ExplainedJson(const std::vector<ExplainedRule>& explained);
std::string RuleTestsJson(const std::vector<RuleTest>& tests);

std::string Version();

}  // namespace graft::api

#endif  // GRAFT_API_GRAFT_H_
