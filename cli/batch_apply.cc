// graft apply over many models (batch mode) and graft report merge.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/str_format.h"
#include "batch/batch.h"
#include "batch/review.h"
#include "cli/commands.h"
#include "dsl/pipeline.h"
#include "engine/files.h"
#include "google/protobuf/util/json_util.h"

namespace graft::cli {
namespace {

namespace fs = std::filesystem;

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

void PrintBatchSummary(const report::BatchReport& r) {
  std::cerr << "graft apply: " << r.models_size() << " model(s): " << r.ok()
            << " rewritten, " << r.unchanged() << " unchanged, " << r.skipped()
            << " up to date, " << r.failed() << " failed; " << r.rewrites()
            << " rewrite(s); "
            << absl::StrFormat("%.2f s on %d job(s)", r.seconds(), r.jobs())
            << "\n";
  for (const report::Count& c : r.rewrites_per_rule())
    std::cerr << "  " << c.name() << ": " << c.count() << " applied\n";
  std::vector<const report::BatchModel*> slowest;
  for (const report::BatchModel& m : r.models()) {
    if (m.status() == "failed")
      std::cerr << "  failed " << m.input() << ": " << m.error() << "\n";
    if (m.status() != "skipped") slowest.push_back(&m);
  }
  std::sort(slowest.begin(), slowest.end(),
            [](auto* a, auto* b) { return a->ms() > b->ms(); });
  for (size_t i = 0; i < slowest.size() && i < 3; ++i) {
    std::cerr << absl::StrFormat("  slowest: %s (%.1f ms)\n",
                                 slowest[i]->input(), slowest[i]->ms());
  }
}

}  // namespace

bool IsBatch(const ApplyCommandOptions& options) {
  std::error_code ec;
  return options.inputs.size() > 1 || !options.shard.empty() ||
         (!options.inputs.empty() && fs::is_directory(options.inputs[0], ec)) ||
         fs::is_directory(options.output, ec) ||
         (!options.output.empty() && options.output.back() == '/');
}

int RunBatchApply(const ApplyCommandOptions& options,
                  const std::vector<dsl::CompiledStep>& steps,
                  const std::set<std::string>& custom_ops) {
  absl::StatusOr<std::vector<batch::BatchInput>> inputs =
      batch::ExpandInputs(options.inputs, options.output);
  if (!inputs.ok()) {
    std::cerr << "apply: error: " << inputs.status().message() << "\n";
    return kExitFailure;
  }
  std::string shard;
  if (!options.shard.empty()) {
    absl::StatusOr<std::pair<int, int>> s = batch::ParseShard(options.shard);
    if (!s.ok()) {
      std::cerr << "apply: error: " << s.status().message() << "\n";
      return kExitUsage;
    }
    *inputs = batch::Shard(*inputs, s->first, s->second);
    shard = options.shard;
  }
  batch::BatchOptions b;
  b.jobs = options.jobs > 0 ? options.jobs
                            : std::max(1u, std::thread::hardware_concurrency());
  b.skip_unchanged = options.skip_unchanged;
  b.rule_files = options.rule_files;
  if (!options.pipeline.empty()) b.rule_files.push_back(options.pipeline);
  b.run.outputs = options.outputs;
  b.run.custom_ops = custom_ops;
  b.run.max_rewrites = options.max_rewrites;
  b.input_format = options.input_format;
  b.output_format = options.output_format;
  bool terminal = isatty(2) != 0;
  auto start = std::chrono::steady_clock::now();
  if (!options.quiet) {
    b.progress = [&](const report::BatchModel& m, int done, int total) {
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (terminal) {
        double left = done > 0 ? elapsed / done * (total - done) : 0;
        std::cerr << absl::StrFormat(
            "\r[%d/%d] %s  %.1f s, about %.1f s left\033[K", done, total,
            m.input(), elapsed, left);
        if (done == total) std::cerr << "\n";
      } else {
        std::cerr << absl::StrFormat("[%d/%d] %s %s (%.1f ms)\n", done, total,
                                     m.status(), m.input(), m.ms());
      }
    };
  }
  report::BatchReport r = batch::RunBatch(*inputs, steps, b);
  r.set_shard(shard);
  if (!options.report.empty()) {
    absl::Status s = WriteFileAtomically(options.report, ToJson(r));
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return kExitFailure;
    }
  }
  if (!options.quiet) PrintBatchSummary(r);
  return r.failed() > 0 ? kExitFailure : kExitOk;
}

int RunReportMerge(const ReportMergeOptions& options) {
  std::vector<report::BatchReport> parts;
  for (const std::string& path : options.reports) {
    absl::StatusOr<std::string> text =
        ReadFileBytes(path, kMaxTextFileBytes, "a batch report");
    if (!text.ok()) {
      std::cerr << text.status().message() << "\n";
      return kExitFailure;
    }
    report::BatchReport r;
    google::protobuf::util::JsonParseOptions parse;
    if (!google::protobuf::util::JsonStringToMessage(*text, &r, parse).ok()) {
      std::cerr << path
                << ": error: not a batch report (graft apply --report "
                   "of a batch)\n";
      return kExitFailure;
    }
    parts.push_back(std::move(r));
  }
  report::BatchReport merged = batch::MergeReports(parts);
  absl::Status s = WriteFileAtomically(options.output, ToJson(merged));
  if (!s.ok()) {
    std::cerr << s.message() << "\n";
    return kExitFailure;
  }
  PrintBatchSummary(merged);
  return merged.failed() > 0 ? kExitFailure : kExitOk;
}

namespace {

// Whether one side of a review names rule files or a pipeline (one of them).
bool SideGiven(const char* side, const std::vector<std::string>& rules,
               const std::string& pipeline) {
  if (rules.empty() != pipeline.empty()) return true;
  std::cerr << "review: error: give --" << side << " rule files or --" << side
            << "-pipeline"
            << (rules.empty() ? " (neither was given)\n" : ", not both\n");
  return false;
}

// One side of a review: rule files or a pipeline, compiled.
bool CompileSide(const char* side, const std::vector<std::string>& rules,
                 const std::string& pipeline,
                 const std::map<std::string, std::string>& params,
                 const HookRegistry& hooks,
                 std::vector<dsl::CompiledStep>* out) {
  std::vector<dsl::PipelineStep> steps;
  if (!pipeline.empty()) {
    absl::StatusOr<dsl::Pipeline> p = dsl::LoadPipeline(pipeline);
    if (!p.ok()) {
      std::cerr << "review: --" << side << "-pipeline: " << p.status().message()
                << "\n";
      return false;
    }
    steps = p->steps;
  } else {
    dsl::PipelineStep step;
    step.rule_files = rules;
    steps.push_back(std::move(step));
  }
  dsl::Diagnostics diagnostics;
  if (!dsl::CompileSteps(steps, params, !pipeline.empty(), hooks, &diagnostics,
                         out)) {
    std::cerr << "review: the --" << side << " rules do not compile:\n"
              << diagnostics.Render();
    return false;
  }
  return true;
}

std::string ReviewJson(const std::vector<batch::ModelReview>& reviews) {
  auto quote = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out + "\"";
  };
  auto counts = [&](const std::map<std::string, int64_t>& m) {
    std::string out = "{";
    for (const auto& [k, v] : m)
      out += (out.size() > 1 ? ", " : "") + quote(k) + ": " + std::to_string(v);
    return out + "}";
  };
  std::string out = "{\"models\": [";
  for (size_t i = 0; i < reviews.size(); ++i) {
    const batch::ModelReview& r = reviews[i];
    out += (i ? ",\n  " : "\n  ") +
           absl::StrFormat(
               "{\"input\": %s, \"differs\": %s, \"error\": %s, "
               "\"nodes_base\": %d, \"nodes_head\": %d, \"base_rewrites\": "
               "%s, \"head_rewrites\": %s, \"diff\": %s}",
               quote(r.input), r.differs ? "true" : "false", quote(r.error),
               r.nodes_base, r.nodes_head, counts(r.base_rewrites),
               counts(r.head_rewrites), quote(r.diff_text));
  }
  return out + "\n]}\n";
}

}  // namespace

int RunReview(const ReviewOptions& options) {
  std::map<std::string, std::string> params;
  if (!ParseCliParams(options.params, &params) ||
      !SideGiven("base", options.base_rules, options.base_pipeline) ||
      !SideGiven("head", options.head_rules, options.head_pipeline))
    return kExitUsage;
  absl::StatusOr<HookRegistry> hooks = CommandHooks();
  if (!hooks.ok()) {
    std::cerr << "review: error: " << hooks.status().message() << "\n";
    return kExitFailure;
  }
  std::vector<dsl::CompiledStep> base, head;
  if (!CompileSide("base", options.base_rules, options.base_pipeline, params,
                   *hooks, &base) ||
      !CompileSide("head", options.head_rules, options.head_pipeline, params,
                   *hooks, &head))
    return kExitFailure;
  absl::StatusOr<std::vector<batch::BatchInput>> inputs =
      batch::ExpandInputs(options.models, "");
  if (!inputs.ok()) {
    std::cerr << "review: error: " << inputs.status().message() << "\n";
    return kExitFailure;
  }
  std::vector<std::string> models;
  for (const batch::BatchInput& in : *inputs) models.push_back(in.input);
  batch::ReviewOptions r;
  r.jobs = options.jobs > 0 ? options.jobs
                            : std::max(1u, std::thread::hardware_concurrency());
  r.drawings = options.format == "html";
  if (options.full) r.max_diff_lines = 0;
  r.context = options.context;
  std::vector<batch::ModelReview> reviews =
      batch::ReviewChange(models, base, head, r);
  if (!options.report.empty()) {
    absl::Status s = WriteFileAtomically(options.report, ReviewJson(reviews));
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return kExitFailure;
    }
  }
  std::cout << (options.format == "markdown" ? batch::ReviewMarkdown(reviews)
                : options.format == "html"   ? batch::ReviewHtml(reviews)
                                             : batch::ReviewText(reviews));
  // A model that could not be reviewed is a failure, in every format.
  int failed = batch::Failed(reviews);
  if (failed > 0) {
    std::cerr << "review: " << failed << " model(s) failed\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace graft::cli
