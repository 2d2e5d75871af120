// Applying rules as library calls: one model, a batch, and reviewing a
// rule change over many models.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "batch/batch.h"
#include "batch/review.h"
#include "api/graft.h"
#include "api/internal.h"
#include "engine/files.h"
#include "engine/graph_diff.h"
#include "dialects/tf/saved_model.h"
#include "google/protobuf/util/json_util.h"

namespace graft::api {

// models.cc
Result<std::string> Save(const Graph& graph, const Output& out);

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

int Jobs(int jobs) {
  return jobs > 0 ? jobs
                  : static_cast<int>(
                        std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

Result<Applied> Apply(const Model& model, const Rules& rules,
                      const ApplyOptions& options, const Output& out) {
  const Rules::Impl& r = rules.impl();
  if (!out.path.empty() && !IsSavedModelDir(out.path)) {
    absl::Status writable = CheckWritable(out.path);
    if (!writable.ok()) return Error::From(writable);
  }
  auto start = std::chrono::steady_clock::now();
  report::FreezeReport frozen;
  Result<Graph> graph = Load(model, /*freeze_by_default=*/true, &frozen);
  if (!graph.ok()) return graph.error();
  if (SavedModelOf(*graph) != nullptr && out.path.empty() &&
      RestoresVariables(*SavedModelOf(*graph)))
    return Error::Usage(absl::StrCat(
        model.path, ": error: a SavedModel with variables is written as a "
                    "folder: give an output path (or freeze it)"));
  for (const std::string* name : {&r.analysis.loss, &r.analysis.seed}) {
    if (!name->empty() && !graph->Contains(*name)) {
      return Error::Input(absl::StrCat(
          model.path, ": error: no node `", *name, "` (given by ",
          name == &r.analysis.loss ? "--loss" : "--seed",
          ")\nnothing written"));
    }
  }
  if (absl::Status s = analysis::CheckInputShapes(*graph, r.analysis.shapes);
      !s.ok()) {
    return Error::Input(
        absl::StrCat(model.path, ": error: ", s.message(), "\nnothing written"));
  }
  Applied applied;
  report::ApplyReport& total = applied.report;
  if (std::string hint = analysis::SharedSizesHint(*graph, r.analysis.shapes); !hint.empty())
    total.add_notes(std::move(hint));
  total.set_input(model.path);
  total.set_output(out.path);
  total.set_load_ms(MsSince(start));
  if (frozen.signatures_size() > 0) *total.mutable_freeze() = frozen;
  start = std::chrono::steady_clock::now();
  dsl::RunOptions run;
  run.outputs = options.outputs;
  run.custom_ops = options.custom_ops;
  run.max_rewrites = options.max_rewrites;
  run.functions = options.functions;
  run.opset = options.opset;
  absl::Status ran = dsl::RunPipeline(*graph, r.steps, run, &total);
  total.set_apply_ms(MsSince(start));
  if (!ran.ok()) {
    Error e = Error::Input(absl::StrCat(model.path, ": error: ", ran.message()));
    if (total.steps_size() > 1) {
      for (const report::StepReport& s : total.steps())
        e.notes.push_back(absl::StrCat(s.name(), ": ", s.outcome()));
    }
    return e;
  }
  // The input as it was (a file is untouched until the output is saved):
  // for the diff, and for what copies (recomputation) changed.
  bool copies = false;
  graph->ForEachNode(
      [&](const Node& n) { copies = copies || Recomputes(*graph, n); });
  const std::string& default_device = r.analysis.default_device;
  bool transfers = CopiesBetweenDevices(*graph, default_device);
  Result<Graph> original =
      options.diff || copies || transfers ? Load(model, /*freeze_by_default=*/true)
                                          : Result<Graph>(Graph());
  if (copies && original.ok()) {
    analysis::MemoryOptions memory;
    memory.outputs = options.outputs;
    memory.default_device = default_device;
    memory.cpu_kernels = r.analysis.cpu_kernels;
    memory.threads = 1;  // the schedule the plans are made for, on any machine
    AddRecomputation(*original, *graph, r.analysis.shapes, memory,
                     r.analysis.device, total.mutable_recomputation());
  }
  if (transfers && original.ok() &&
      !AddStepTimes(*original, *graph, r.analysis.shapes, default_device,
                    r.analysis.device, total.mutable_step_time())) {
    total.clear_step_time();
  }
  start = std::chrono::steady_clock::now();
  Result<std::string> saved = Save(*graph, out);
  if (!saved.ok()) return saved.error();
  applied.bytes = *std::move(saved);
  total.set_save_ms(MsSince(start));
  if (options.diff && original.ok())
    applied.diff_text = FormatDiffText(DiffGraphs(*original, *graph));
  return applied;
}

namespace {

batch::BatchOptions ForBatch(const BatchOptions& options, const Rules& rules) {
  batch::BatchOptions b;
  b.jobs = Jobs(options.jobs);
  b.skip_unchanged = options.skip_unchanged;
  b.rule_files = rules.impl().sources;
  b.run.outputs = options.apply.outputs;
  b.run.custom_ops = options.apply.custom_ops;
  b.run.max_rewrites = options.apply.max_rewrites;
  b.run.opset = options.apply.opset;
  b.run.functions = options.apply.functions;
  b.input_format = options.input_format;
  b.output_format = options.output_format;
  b.saved_model.tag = options.saved_model.tag;
  b.saved_model.signatures = options.saved_model.signatures;
  b.saved_model.freeze = options.saved_model.Freezes(/*freeze_by_default=*/true);
  b.progress = options.progress;
  return b;
}

Result<std::vector<batch::BatchInput>> Plan(const BatchOptions& options) {
  absl::StatusOr<std::vector<batch::BatchInput>> inputs =
      batch::ExpandInputs(options.inputs, options.out_dir);
  if (!inputs.ok())
    return Error::Input(absl::StrCat("error: ", inputs.status().message()));
  if (options.shard.empty()) return *std::move(inputs);
  absl::StatusOr<std::pair<int, int>> s = batch::ParseShard(options.shard);
  if (!s.ok()) return Error::Usage(absl::StrCat("error: ", s.status().message()));
  return batch::Shard(*inputs, s->first, s->second);
}

}  // namespace

Result<std::vector<PlannedModel>> BatchPlan(const BatchOptions& options) {
  Result<std::vector<batch::BatchInput>> inputs = Plan(options);
  if (!inputs.ok()) return inputs.error();
  std::vector<PlannedModel> out;
  for (const batch::BatchInput& in : *inputs) out.push_back({in.input, in.output, in.refused});
  return out;
}

Result<report::BatchReport> ApplyBatch(const BatchOptions& options,
                                       const Rules& rules) {
  Result<std::vector<batch::BatchInput>> inputs = Plan(options);
  if (!inputs.ok()) return inputs.error();
  report::BatchReport r =
      batch::RunBatch(*inputs, rules.impl().steps, ForBatch(options, rules));
  r.set_shard(options.shard);
  return r;
}

report::BatchModel ApplyBatchModel(const PlannedModel& model, const Rules& rules,
                                   const BatchOptions& options) {
  return batch::ApplyOne({model.input, model.output, options.out_dir, model.refused},
                         rules.impl().steps, ForBatch(options, rules));
}

report::BatchReport MergeBatchReports(
    const std::vector<report::BatchReport>& parts) {
  return batch::MergeReports(parts);
}

Result<report::BatchReport> MergeBatchReportFiles(
    const std::vector<std::string>& paths) {
  std::vector<report::BatchReport> parts;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text =
        ReadFileBytes(path, kMaxTextFileBytes, "a batch report");
    if (!text.ok()) return Error::From(text.status());
    report::BatchReport r;
    google::protobuf::util::JsonParseOptions parse;
    if (!google::protobuf::util::JsonStringToMessage(*text, &r, parse).ok()) {
      return Error::Input(absl::StrCat(
          path, ": error: not a batch report (graft apply --report of a "
                "batch)"));
    }
    parts.push_back(std::move(r));
  }
  return batch::MergeReports(parts);
}

namespace {

// One side of a review: rule files or a pipeline, compiled.
Result<std::shared_ptr<const Rules>> CompileSide(const char* side,
                                                 const RulesSpec& spec) {
  if (spec.rule_files.empty() == spec.pipeline.empty()) {
    return Error::Usage(absl::StrCat(
        "error: give --", side, " rule files or --", side, "-pipeline",
        spec.rule_files.empty() ? " (neither was given)" : ", not both"));
  }
  Result<std::shared_ptr<const Rules>> rules = CompileRules(spec);
  if (!rules.ok()) {
    Error e = rules.error();
    e.message = absl::StrCat(
        spec.pipeline.empty() || !e.diagnostics.empty()
            ? absl::StrCat("the --", side,
                           " rules do not compile:\n")
            : absl::StrCat("--", side, "-pipeline: "),
        e.message);
    return e;
  }
  return rules;
}

std::string ReviewJson(const std::vector<batch::ModelReview>& reviews) {
  auto counts = [&](const std::map<std::string, int64_t>& m) {
    std::string out = "{";
    for (const auto& [k, v] : m)
      out += (out.size() > 1 ? ", " : "") + QuoteJson(k) + ": " +
             std::to_string(v);
    return out + "}";
  };
  std::string out = "{\"models\": [";
  for (size_t i = 0; i < reviews.size(); ++i) {
    const batch::ModelReview& r = reviews[i];
    out += (i ? ",\n  " : "\n  ") +
           absl::StrFormat(
               "{\"input\": %s, \"differs\": %s, \"error\": %s, "
               "\"nodes_base\": %d, \"nodes_head\": %d, \"ops_base\": %s, "
               "\"ops_head\": %s, \"constant_bytes_base\": %d, "
               "\"constant_bytes_head\": %d, \"base_rewrites\": "
               "%s, \"head_rewrites\": %s, \"diff\": %s}",
               QuoteJson(r.input), r.differs ? "true" : "false",
               QuoteJson(r.error), r.nodes_base, r.nodes_head, counts(r.ops_base),
               counts(r.ops_head), r.constant_bytes_base, r.constant_bytes_head,
               counts(r.base_rewrites), counts(r.head_rewrites),
               QuoteJson(r.diff_text));
  }
  return out + "\n]}\n";
}

}  // namespace

namespace {

std::string DriftJson(const std::vector<batch::ExportDrift>& pairs) {
  auto counts = [&](const std::map<std::string, int64_t>& m) {
    std::string out = "{";
    for (const auto& [k, v] : m)
      out += (out.size() > 1 ? ", " : "") + QuoteJson(k) + ": " + std::to_string(v);
    return out + "}";
  };
  std::string out = "{\"models\": [";
  for (size_t i = 0; i < pairs.size(); ++i) {
    const batch::ExportDrift& d = pairs[i];
    out += (i ? ",\n  " : "\n  ") +
           absl::StrFormat("{\"name\": %s, \"before\": %s, \"after\": %s, \"error\": %s, "
                           "\"before_rewrites\": %s, \"after_rewrites\": %s}",
                           QuoteJson(d.name), QuoteJson(d.before), QuoteJson(d.after),
                           QuoteJson(d.error), counts(d.before_rewrites),
                           counts(d.after_rewrites));
  }
  return out + "\n]}\n";
}

// The models of two folders, paired by their paths within them.
Result<std::vector<batch::ExportDrift>> PairExports(const std::string& before,
                                                   const std::string& after) {
  std::map<std::string, batch::ExportDrift> by_name;
  for (const auto& [dir, is_before] : {std::pair{before, true}, std::pair{after, false}}) {
    absl::StatusOr<std::vector<batch::BatchInput>> inputs = batch::ExpandInputs({dir}, "");
    if (!inputs.ok())
      return Error::Input(absl::StrCat("error: ", inputs.status().message()));
    for (const batch::BatchInput& in : *inputs) {
      std::string name = in.input;
      if (absl::StartsWith(name, dir)) name = std::string(absl::StripPrefix(name.substr(dir.size()), "/"));
      batch::ExportDrift& d = by_name[name];
      d.name = name;
      (is_before ? d.before : d.after) = in.input;
    }
  }
  std::vector<batch::ExportDrift> out;
  for (auto& [name, d] : by_name) out.push_back(std::move(d));
  return out;
}

Result<Reviewed> ReviewExportDrift(const ReviewOptions& options) {
  if (options.before.empty() || options.after.empty())
    return Error::Usage("error: give both --before and --after (folders of exports)");
  if (!options.base.rule_files.empty() || !options.base.pipeline.empty() ||
      !options.head.rule_files.empty() || !options.head.pipeline.empty() ||
      !options.models.empty())
    return Error::Usage("error: --before/--after review one rule set (-r or --pipeline) over "
                        "two folders of exports; --base/--head and models are for a rule change");
  Result<std::shared_ptr<const Rules>> rules = CompileRules(options.rules);
  if (!rules.ok()) return rules.error();
  Result<std::vector<batch::ExportDrift>> pairs = PairExports(options.before, options.after);
  if (!pairs.ok()) return pairs.error();
  batch::ReviewOptions r;
  r.jobs = Jobs(options.jobs);
  batch::ReviewDrift((*rules)->impl().steps, r, &*pairs);
  Reviewed out;
  out.json = DriftJson(*pairs);
  out.text = batch::DriftText(*pairs);
  out.failed = batch::DriftFailed(*pairs);
  return out;
}

}  // namespace

Result<Reviewed> Review(const ReviewOptions& options) {
  if (!options.before.empty() || !options.after.empty()) return ReviewExportDrift(options);
  Result<std::shared_ptr<const Rules>> base = CompileSide("base", options.base);
  if (!base.ok()) return base.error();
  Result<std::shared_ptr<const Rules>> head = CompileSide("head", options.head);
  if (!head.ok()) return head.error();
  absl::StatusOr<std::vector<batch::BatchInput>> inputs =
      batch::ExpandInputs(options.models, "");
  if (!inputs.ok())
    return Error::Input(absl::StrCat("error: ", inputs.status().message()));
  std::vector<std::string> models;
  std::vector<batch::ModelReview> refused;  // links out of their folders
  for (const batch::BatchInput& in : *inputs) {
    if (in.refused.empty()) {
      models.push_back(in.input);
    } else {
      batch::ModelReview& m = refused.emplace_back();
      m.input = in.input;
      m.error = in.refused;
    }
  }
  batch::ReviewOptions r;
  r.jobs = Jobs(options.jobs);
  r.drawings = options.format == "html";
  if (options.full) r.max_diff_lines = 0;
  r.context = options.context;
  std::vector<batch::ModelReview> reviews = batch::ReviewChange(
      models, (*base)->impl().steps, (*head)->impl().steps, r);
  for (batch::ModelReview& m : refused) reviews.push_back(std::move(m));
  std::sort(reviews.begin(), reviews.end(),
            [](const batch::ModelReview& a, const batch::ModelReview& b) { return a.input < b.input; });
  Reviewed out;
  out.json = ReviewJson(reviews);
  out.text = options.format == "markdown" ? batch::ReviewMarkdown(reviews, options.full)
             : options.format == "html"   ? batch::ReviewHtml(reviews)
                                          : batch::ReviewText(reviews);
  out.failed = batch::Failed(reviews);
  return out;
}

}  // namespace graft::api
