// graft apply over many models (batch mode), graft report merge and graft
// review: flags into library calls (api/graft.h), results printed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "dialects/graph_io.h"
#include "dialects/tf/saved_model.h"

namespace graft::cli {
namespace {

namespace fs = std::filesystem;

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

int WriteReport(const std::string& path, const std::string& json) {
  absl::Status s = WriteFileAtomically(path, json);
  if (s.ok()) return kExitOk;
  std::cerr << s.message() << "\n";
  return kExitFailure;
}

}  // namespace

bool IsBatch(const ApplyCommandOptions& options) {
  std::error_code ec;
  // One SavedModel is one model, written over an older one at -o; a
  // folder of models is a batch.
  bool one_saved_model =
      options.inputs.size() == 1 && IsSavedModelDir(options.inputs[0]);
  bool folder = !options.inputs.empty() && !one_saved_model &&
                fs::is_directory(options.inputs[0], ec);
  bool output_folder = fs::is_directory(options.output, ec) &&
                       !(one_saved_model && IsSavedModelDir(options.output));
  return options.inputs.size() > 1 || !options.shard.empty() || folder ||
         output_folder ||
         (!options.output.empty() && options.output.back() == '/');
}

int RunBatchApply(const ApplyCommandOptions& options, const api::Rules& rules,
                  const api::ApplyOptions& apply) {
  api::BatchOptions b;
  b.inputs = options.inputs;
  b.out_dir = options.output;
  b.jobs = options.jobs;
  b.skip_unchanged = options.skip_unchanged;
  b.shard = options.shard;
  b.input_format = options.input_format;
  b.output_format = options.output_format;
  b.saved_model = options.saved_model;
  b.apply = apply;
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
  api::Result<report::BatchReport> r = api::ApplyBatch(b, rules);
  if (!r.ok()) return Fail(r.error(), "apply");
  if (!options.report.empty() &&
      WriteReport(options.report, api::ToJson(*r, false)) != kExitOk)
    return kExitFailure;
  if (!options.quiet) PrintBatchSummary(*r);
  return r->failed() > 0 ? kExitFailure : kExitOk;
}

int RunReportMerge(const ReportMergeOptions& options) {
  api::Result<report::BatchReport> merged =
      api::MergeBatchReportFiles(options.reports);
  if (!merged.ok()) return Fail(merged.error());
  if (WriteReport(options.output, api::ToJson(*merged, false)) != kExitOk)
    return kExitFailure;
  PrintBatchSummary(*merged);
  return merged->failed() > 0 ? kExitFailure : kExitOk;
}

int RunReview(const ReviewOptions& options) {
  api::ReviewOptions review;
  std::map<std::string, std::string> params;
  if (!ParseCliParams(options.params, &params)) return kExitUsage;
  review.base.rule_files = options.base_rules;
  review.base.pipeline = options.base_pipeline;
  review.base.skip_rules = options.base_skip_rules;
  review.base.params = params;
  review.base.program = options.program;
  review.head.rule_files = options.head_rules;
  review.head.pipeline = options.head_pipeline;
  review.head.skip_rules = options.head_skip_rules;
  review.head.params = params;
  review.head.program = options.program;
  review.rules.rule_files = options.rules;
  review.rules.pipeline = options.pipeline;
  review.rules.params = params;
  review.rules.program = options.program;
  review.before = options.before;
  review.after = options.after;
  review.models = options.models;
  review.format = options.format;
  review.jobs = options.jobs;
  review.context = options.context;
  review.full = options.full;
  api::Result<api::Reviewed> r = api::Review(review);
  if (!r.ok()) return Fail(r.error(), "review", true);
  if (!options.report.empty() &&
      WriteReport(options.report, r->json) != kExitOk)
    return kExitFailure;
  std::cout << r->text;
  // A model that could not be reviewed is a failure, in every format.
  if (r->failed > 0) {
    std::cerr << "review: " << r->failed << " model(s) failed\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace graft::cli
