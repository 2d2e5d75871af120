// Batch apply: one compiled pipeline over many models, in parallel, each
// model's failure reported and the batch going on. The library behind
// `graft apply IN... -o DIR` and `graft report merge`.
#ifndef GRAFT_BATCH_BATCH_H_
#define GRAFT_BATCH_BATCH_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/runner.h"
#include "dialects/tf/freeze.h"
#include "dialects/graph_io.h"
#include "proto/report.pb.h"

namespace graft::batch {

struct BatchInput {
  std::string input;
  std::string output;
  std::string out_dir;  // the output folder `output` lies in
  // Why the model is not read: found in a folder, it is a link out of that
  // folder (docs/security.md). Reported as a failed model.
  std::string refused;
};

// The models `inputs` name: files, and the `.pb`/`.pbtxt` files of folders
// (searched recursively), each with its output under `out_dir` (a folder's
// layout mirrored below it; a file by its name). Sorted by input path;
// duplicates once. Errors: an input that does not exist, a folder with no
// models, a SavedModel folder, two inputs with one output. Nothing under
// `out_dir` is an input.
absl::StatusOr<std::vector<BatchInput>> ExpandInputs(
    const std::vector<std::string>& inputs, const std::string& out_dir);

// Share `index` of `count` ("i/n", 0-based): every count-th model from
// `index` on, so that the shares cover every model exactly once.
std::vector<BatchInput> Shard(const std::vector<BatchInput>& inputs, int index,
                              int count);
// Parses "i/n" (0 <= i < n).
absl::StatusOr<std::pair<int, int>> ParseShard(const std::string& text);

struct BatchOptions {
  int jobs = 1;
  // Skip a model whose output is newer than its input and every rule file.
  bool skip_unchanged = false;
  std::vector<std::string> rule_files;  // for skip_unchanged
  dsl::RunOptions run;
  GraphFormat input_format = GraphFormat::kAuto;
  GraphFormat output_format = GraphFormat::kAuto;
  // How a SavedModel folder among the inputs is read (frozen by default).
  SavedModelReading saved_model = {"serve", {}, true};
  // Called (from the worker that finished it, under a lock) after each
  // model, with the number done and the total.
  std::function<void(const report::BatchModel&, int done, int total)> progress;
};

// Applies `steps` to every model (the rule sets are shared by the workers)
// and writes each output atomically; a model that cannot be read, does not
// validate or fails a rewrite is reported, its output not written, and the
// batch goes on. The report lists the models in input order.
report::BatchReport RunBatch(const std::vector<BatchInput>& inputs,
                             const std::vector<dsl::CompiledStep>& steps,
                             const BatchOptions& options);

// Several batch reports (shards of one batch) as one: models in input
// order (a model in more than one report: the last), totals recounted.
// One model of a batch, as RunBatch reports it (for other executors).
report::BatchModel ApplyOne(const BatchInput& in,
                            const std::vector<dsl::CompiledStep>& steps,
                            const BatchOptions& options);

report::BatchReport MergeReports(const std::vector<report::BatchReport>& parts);

}  // namespace graft::batch

#endif  // GRAFT_BATCH_BATCH_H_
