// Reviewing a rule change: the base and the head rule sets applied to every
// model, their outputs compared. The library behind `graft review`.
#ifndef GRAFT_BATCH_REVIEW_H_
#define GRAFT_BATCH_REVIEW_H_

#include <map>
#include <string>
#include <vector>

#include "dsl/runner.h"
#include "dialects/graph_io.h"

namespace graft::batch {

struct ModelReview {
  std::string input;
  std::string error;  // the model could not be read, or a side failed
  bool differs = false;
  // Nodes as the model's own tools count them (an ONNX graph's without its
  // initializers, inputs and outputs: engine/graph_stats.h), per op and in
  // all, the bytes of its constants, and its outputs, on each side.
  int64_t nodes_base = 0, nodes_head = 0;
  std::map<std::string, int64_t> ops_base, ops_head;
  int64_t constant_bytes_base = 0, constant_bytes_head = 0;
  std::vector<std::string> outputs_base, outputs_head;
  // Rewrites per rule on each side (rules of either).
  std::map<std::string, int64_t> base_rewrites, head_rewrites;
  std::string diff_text;     // base output -> head output
  std::string diff_summary;  // "11 added, 3 removed, 2 changed"
  std::string drawing;    // the drawing's HTML section, when asked for
};

struct ReviewOptions {
  int jobs = 1;
  dsl::RunOptions run;
  GraphFormat input_format = GraphFormat::kAuto;
  bool drawings = false;  // fill `drawing` (for the HTML page)
  int context = 1;        // the drawings' hops of unchanged context
  // A model's text diff past this many lines is cut, with a count of what
  // was left out (0: never).
  int max_diff_lines = 200;
};

// Applies `base` and `head` to each model (in parallel) and compares the two
// outputs, nodes matched by name.
std::vector<ModelReview> ReviewChange(
    const std::vector<std::string>& models,
    const std::vector<dsl::CompiledStep>& base,
    const std::vector<dsl::CompiledStep>& head, const ReviewOptions& options);

// The models that could not be read or rewritten on either side.
int Failed(const std::vector<ModelReview>& reviews);

// Exporter drift: the same rules over two exports of the same models (before
// and after a torch or transformers upgrade), paired by name.
struct ExportDrift {
  std::string name;           // the model's path within both folders
  std::string before, after;  // its two files; one empty: only on that side
  std::string error;          // a side could not be read or rewritten
  // Rewrites per rule over each export.
  std::map<std::string, int64_t> before_rewrites, after_rewrites;
};

// Applies `steps` to both exports of each pair (in parallel), filling the
// counts and errors.
void ReviewDrift(const std::vector<dsl::CompiledStep>& steps, const ReviewOptions& options,
                 std::vector<ExportDrift>* pairs);

// Per model, the rules that stopped matching first, then those matching
// less, those that started and those matching more, with their counts
// before and after (models that lost a fusion first); the rules that
// match as before on one line; models on one side only; a summary last.
std::string DriftText(const std::vector<ExportDrift>& pairs);
int DriftFailed(const std::vector<ExportDrift>& pairs);

// The summary table (text), a pull-request comment (markdown), and one
// self-contained page with each changed model's drawing and diff (html).
// Each changed model leads with what a reviewer decides on: its op counts'
// change ("BatchNormalization -49"), the rewrites per rule, its constants'
// size and whether its outputs changed; then its node-level diff (in
// markdown only with `full`, folded). Every format lists the models that
// failed, with their errors; the text ends with a summary. A change that
// alters no model (and with no failures) says so in one line.
std::string ReviewText(const std::vector<ModelReview>& reviews);
std::string ReviewMarkdown(const std::vector<ModelReview>& reviews, bool full = false);
std::string ReviewHtml(const std::vector<ModelReview>& reviews);

}  // namespace graft::batch

#endif  // GRAFT_BATCH_REVIEW_H_
