#include "batch/review.h"

#include <algorithm>

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "draw/diff_drawing.h"
#include "engine/graph_diff.h"
#include "engine/graph_stats.h"

namespace graft::batch {
namespace {

// The model after `steps`, and the rewrites per rule.
absl::StatusOr<Graph> Apply(const std::string& path,
                            const std::vector<dsl::CompiledStep>& steps,
                            const ReviewOptions& options,
                            std::map<std::string, int64_t>* rewrites) {
  absl::StatusOr<Graph> graph = LoadGraph(path, options.input_format);
  if (!graph.ok()) return graph.status();
  report::ApplyReport report;
  absl::Status s = dsl::RunPipeline(*graph, steps, options.run, &report);
  if (!s.ok()) return s;
  for (const report::RuleStats& r : report.rules()) {
    if (r.applied() > 0) (*rewrites)[r.name()] += r.applied();
  }
  return graph;
}

// `text` up to `max` lines, then how many more there were.
std::string CutLines(const std::string& text, int max) {
  if (max <= 0) return text;
  size_t at = 0;
  for (int i = 0; i < max && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos || at >= text.size()) return text;
  int64_t rest = std::count(text.begin() + at, text.end(), '\n');
  return absl::StrCat(text.substr(0, at), "... ", rest,
                      " more line(s) of this diff (--full shows all)\n");
}

// What a reviewer decides on, of one side's output.
void Summarize(const Graph& g, std::map<std::string, int64_t>* ops, int64_t* nodes,
               int64_t* constant_bytes, std::vector<std::string>* outputs) {
  *ops = CountedOps(g);
  *nodes = 0;
  for (const auto& [op, n] : *ops) *nodes += n;
  *constant_bytes = ConstantBytes(g);
  *outputs = ModelOutputs(g);
  std::sort(outputs->begin(), outputs->end());
}

ModelReview ReviewOne(size_t index, const std::string& path,
                      const std::vector<dsl::CompiledStep>& base,
                      const std::vector<dsl::CompiledStep>& head,
                      const ReviewOptions& options) {
  ModelReview r;
  r.input = path;
  absl::StatusOr<Graph> b = Apply(path, base, options, &r.base_rewrites);
  absl::StatusOr<Graph> h = Apply(path, head, options, &r.head_rewrites);
  if (!b.ok() || !h.ok()) {
    r.error = absl::StrCat(!b.ok() ? "base: " : "head: ",
                           (!b.ok() ? b.status() : h.status()).message());
    r.differs = b.ok() != h.ok();
    return r;
  }
  Summarize(*b, &r.ops_base, &r.nodes_base, &r.constant_bytes_base, &r.outputs_base);
  Summarize(*h, &r.ops_head, &r.nodes_head, &r.constant_bytes_head, &r.outputs_head);
  GraphDiff diff = DiffGraphs(*b, *h);
  r.differs = !diff.empty() || r.base_rewrites != r.head_rewrites;
  if (!diff.empty()) {
    DiffTextOptions text;
    text.group_constants = true;
    r.diff_text = CutLines(FormatDiffText(diff, text), options.max_diff_lines);
    r.diff_summary = DiffSummary(diff);
    if (options.drawings) {
      draw::DrawingOptions drawing;
      drawing.context = options.context;
      drawing.id_prefix = absl::StrCat("m", index, "n");
      absl::StatusOr<draw::DiffDrawing> d =
          draw::DrawDiff(*b, *h, diff, drawing);
      r.drawing =
          d.ok() ? draw::DrawingSection(*d)
                 : absl::StrCat("<p>No drawing: ",
                                HtmlEscape(std::string(d.status().message())),
                                "</p>\n");
    }
  }
  return r;
}

// fn(i) for i in [0, n), on up to `jobs` threads.
template <typename Fn>
void ParallelFor(size_t n, int jobs, const Fn& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(n)));
  std::vector<std::thread> workers;
  for (int j = 1; j < jobs; ++j) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
}

int Changed(const std::vector<ModelReview>& reviews) {
  int n = 0;
  for (const ModelReview& r : reviews) n += r.differs ? 1 : 0;
  return n;
}

// "fold_bn: 3 -> 2" for each rule whose count changed.
std::string RuleChanges(const ModelReview& r) {
  std::set<std::string> rules;
  for (const auto& [k, v] : r.base_rewrites) rules.insert(k);
  for (const auto& [k, v] : r.head_rewrites) rules.insert(k);
  std::string out;
  for (const std::string& rule : rules) {
    auto count = [&](const std::map<std::string, int64_t>& m) {
      auto it = m.find(rule);
      return it == m.end() ? int64_t{0} : it->second;
    };
    int64_t b = count(r.base_rewrites), h = count(r.head_rewrites);
    if (b == h) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", rule, ": ", b, " -> ", h);
  }
  return out;
}

// "BatchNormalization -49, Add +2": the ops whose counts changed, the
// largest changes first.
std::string OpChanges(const ModelReview& r) {
  std::map<std::string, int64_t> delta;
  for (const auto& [op, n] : r.ops_head) delta[op] += n;
  for (const auto& [op, n] : r.ops_base) delta[op] -= n;
  std::vector<std::pair<std::string, int64_t>> changed;
  for (const auto& [op, d] : delta) {
    if (d != 0) changed.push_back({op, d});
  }
  std::stable_sort(changed.begin(), changed.end(), [](const auto& x, const auto& y) {
    return std::abs(x.second) > std::abs(y.second);
  });
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < changed.size() && i < kShown; ++i) {
    absl::StrAppend(&out, i ? ", " : "", changed[i].first, " ",
                    changed[i].second > 0 ? "+" : "", changed[i].second);
  }
  if (changed.size() > kShown)
    absl::StrAppend(&out, " and ", changed.size() - kShown, " more op(s)");
  return out.empty() ? "none" : out;
}

// "44.7 MiB -> 44.6 MiB (-96.0 KiB)", or "44.7 MiB, same".
std::string ConstantsChange(const ModelReview& r) {
  if (r.constant_bytes_base == r.constant_bytes_head)
    return absl::StrCat(HumanSize(r.constant_bytes_base), ", same");
  const int64_t d = r.constant_bytes_head - r.constant_bytes_base;
  return absl::StrCat(HumanSize(r.constant_bytes_base), " -> ",
                      HumanSize(r.constant_bytes_head), " (", d > 0 ? "+" : "",
                      HumanSize(d), ")");
}

// "same", or the outputs only one side has ("-logits, +probs").
std::string OutputsChange(const ModelReview& r) {
  std::vector<std::string> gone, added;
  std::set_difference(r.outputs_base.begin(), r.outputs_base.end(), r.outputs_head.begin(),
                      r.outputs_head.end(), std::back_inserter(gone));
  std::set_difference(r.outputs_head.begin(), r.outputs_head.end(), r.outputs_base.begin(),
                      r.outputs_base.end(), std::back_inserter(added));
  if (gone.empty() && added.empty()) return "same";
  std::string out = "changed:";
  for (const std::string& o : gone) absl::StrAppend(&out, " -", o);
  for (const std::string& o : added) absl::StrAppend(&out, " +", o);
  return out;
}

std::string Unchanged(const std::vector<ModelReview>& reviews) {
  return absl::StrCat("The change alters none of the ", reviews.size(),
                      " model(s).\n");
}

// "2 model(s) failed:" and each with its error, one a line.
std::string FailedLines(const std::vector<ModelReview>& reviews,
                        const std::string& bullet) {
  if (Failed(reviews) == 0) return "";
  std::string out = absl::StrCat(Failed(reviews), " model(s) failed:\n");
  for (const ModelReview& r : reviews) {
    if (!r.error.empty()) absl::StrAppend(&out, bullet, r.input, ": ", r.error, "\n");
  }
  return out;
}

// The rules whose rewrite counts changed, over every model.
std::string TotalRuleChanges(const std::vector<ModelReview>& reviews) {
  ModelReview total;
  for (const ModelReview& r : reviews) {
    for (const auto& [k, v] : r.base_rewrites) total.base_rewrites[k] += v;
    for (const auto& [k, v] : r.head_rewrites) total.head_rewrites[k] += v;
  }
  return RuleChanges(total);
}

}  // namespace

int Failed(const std::vector<ModelReview>& reviews) {
  int n = 0;
  for (const ModelReview& r : reviews) n += r.error.empty() ? 0 : 1;
  return n;
}

std::vector<ModelReview> ReviewChange(
    const std::vector<std::string>& models,
    const std::vector<dsl::CompiledStep>& base,
    const std::vector<dsl::CompiledStep>& head, const ReviewOptions& options) {
  std::vector<ModelReview> out(models.size());
  ParallelFor(models.size(), options.jobs,
              [&](size_t i) { out[i] = ReviewOne(i, models[i], base, head, options); });
  return out;
}

void ReviewDrift(const std::vector<dsl::CompiledStep>& steps, const ReviewOptions& options,
                 std::vector<ExportDrift>* pairs) {
  ParallelFor(pairs->size(), options.jobs, [&](size_t i) {
    ExportDrift& d = (*pairs)[i];
    if (d.before.empty() || d.after.empty()) return;
    absl::StatusOr<Graph> b = Apply(d.before, steps, options, &d.before_rewrites);
    absl::StatusOr<Graph> a = Apply(d.after, steps, options, &d.after_rewrites);
    if (!b.ok() || !a.ok()) {
      d.error = absl::StrCat(!b.ok() ? d.before : d.after, ": ",
                             (!b.ok() ? b.status() : a.status()).message());
    }
  });
}

int DriftFailed(const std::vector<ExportDrift>& pairs) {
  int n = 0;
  for (const ExportDrift& d : pairs) n += d.error.empty() ? 0 : 1;
  return n;
}

namespace {

int64_t CountOf(const std::map<std::string, int64_t>& m, const std::string& rule) {
  auto it = m.find(rule);
  return it == m.end() ? 0 : it->second;
}

// The model's lines: changed rules by kind (stopped first), then the same.
// Counts the rules that stopped matching into `stopped`.
std::string DriftLines(const ExportDrift& d, std::map<std::string, int>* stopped) {
  std::set<std::string> rules;
  for (const auto& [k, v] : d.before_rewrites) rules.insert(k);
  for (const auto& [k, v] : d.after_rewrites) rules.insert(k);
  const char* kinds[] = {"stopped matching", "matching less", "started matching",
                         "matching more"};
  std::string by_kind[4], same;
  for (const std::string& rule : rules) {
    const int64_t b = CountOf(d.before_rewrites, rule), a = CountOf(d.after_rewrites, rule);
    const std::string item = absl::StrCat(rule, " ", b, " -> ", a);
    if (a == b) {
      absl::StrAppend(&same, same.empty() ? "" : ", ", rule, " ", b);
      continue;
    }
    const int kind = a == 0 ? 0 : a < b ? 1 : b == 0 ? 2 : 3;
    if (kind == 0) ++(*stopped)[rule];
    absl::StrAppend(&by_kind[kind], by_kind[kind].empty() ? "" : ", ", item);
  }
  std::string out;
  for (int k = 0; k < 4; ++k) {
    if (!by_kind[k].empty()) absl::StrAppend(&out, "  ", kinds[k], ": ", by_kind[k], "\n");
  }
  if (!same.empty()) absl::StrAppend(&out, "  as before: ", same, "\n");
  return out;
}

}  // namespace

std::string DriftText(const std::vector<ExportDrift>& pairs) {
  std::map<std::string, int> stopped;  // rule -> models
  std::vector<std::pair<bool, std::string>> sections;  // (lost a fusion, text)
  int changed = 0, paired = 0;
  std::string one_side, failed;
  for (const ExportDrift& d : pairs) {
    if (d.before.empty() || d.after.empty()) {
      absl::StrAppend(&one_side, "  ", d.name, ": only ", d.before.empty() ? "after" : "before",
                      "\n");
      continue;
    }
    ++paired;
    if (!d.error.empty()) {
      absl::StrAppend(&failed, "  ", d.name, ": ", d.error, "\n");
      continue;
    }
    std::map<std::string, int> lost;
    std::string lines = DriftLines(d, &lost);
    for (const auto& [rule, n] : lost) stopped[rule] += n;
    changed += d.before_rewrites != d.after_rewrites ? 1 : 0;
    sections.push_back({!lost.empty(), absl::StrCat("== ", d.name, "\n", lines)});
  }
  std::stable_sort(sections.begin(), sections.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string out = absl::StrCat("Exporter drift: ", changed, " of ", paired,
                                 " model(s) in both folders match differently.\n");
  for (const auto& [lost, text] : sections) absl::StrAppend(&out, "\n", text);
  if (!one_side.empty()) absl::StrAppend(&out, "\nModels in one folder only:\n", one_side);
  if (!failed.empty()) absl::StrAppend(&out, "\nModels that failed:\n", failed);
  absl::StrAppend(&out, "\nSummary: ", changed, " of ", paired,
                  " model(s) match differently");
  if (!stopped.empty()) {
    std::string names;
    for (const auto& [rule, n] : stopped)
      absl::StrAppend(&names, names.empty() ? "" : ", ", rule, " (", n, " model(s))");
    absl::StrAppend(&out, "; stopped matching: ", names);
  }
  absl::StrAppend(&out, ".\n");
  return out;
}

std::string ReviewText(const std::vector<ModelReview>& reviews) {
  if (Changed(reviews) == 0 && Failed(reviews) == 0) return Unchanged(reviews);
  std::string out = absl::StrCat("The change alters ", Changed(reviews), " of ",
                                 reviews.size(), " model(s):\n");
  for (const ModelReview& r : reviews) {
    if (!r.differs && r.error.empty()) continue;
    absl::StrAppend(&out, "\n== ", r.input, "\n");
    if (!r.error.empty()) {
      absl::StrAppend(&out, "  failed: ", r.error, "\n");
      continue;
    }
    absl::StrAppend(&out, "  nodes ", r.nodes_base, " -> ", r.nodes_head);
    std::string rules = RuleChanges(r);
    if (!rules.empty()) absl::StrAppend(&out, "; rewrites ", rules);
    absl::StrAppend(&out, "\n  ops: ", OpChanges(r), "\n  constants: ", ConstantsChange(r),
                    "\n  outputs: ", OutputsChange(r), "\n", r.diff_text);
  }
  // The summary, last, where a reader of a long review looks.
  absl::StrAppend(&out, "\nSummary: the change alters ", Changed(reviews),
                  " of ", reviews.size(), " model(s)");
  std::string rules = TotalRuleChanges(reviews);
  if (!rules.empty()) absl::StrAppend(&out, "; rewrites ", rules);
  absl::StrAppend(&out, ".\n", FailedLines(reviews, "  "));
  return out;
}

std::string ReviewMarkdown(const std::vector<ModelReview>& reviews, bool full) {
  if (Changed(reviews) == 0 && Failed(reviews) == 0) return Unchanged(reviews);
  std::string out = absl::StrCat("**graft review**: the change alters ", Changed(reviews),
                                 " of ", reviews.size(), " model(s)");
  std::string total = TotalRuleChanges(reviews);
  if (!total.empty()) absl::StrAppend(&out, "; rewrites ", total);
  absl::StrAppend(&out,
                  ".\n\n| model | nodes | ops | rewrites | constants | outputs |\n"
                  "|---|---:|---|---|---|---|\n");
  bool diffs = false;
  for (const ModelReview& r : reviews) {
    if (!r.differs && r.error.empty()) continue;
    if (!r.error.empty()) {
      absl::StrAppend(&out, "| `", r.input, "` | | failed: ", r.error, " | | | |\n");
      continue;
    }
    const std::string rules = RuleChanges(r);
    absl::StrAppend(&out, "| `", r.input, "` | ", r.nodes_base, " -> ", r.nodes_head, " | ",
                    OpChanges(r), " | ", rules.empty() ? "as before" : rules, " | ",
                    ConstantsChange(r), " | ", OutputsChange(r), " |\n");
    diffs = diffs || !r.diff_text.empty();
  }
  std::string failed = FailedLines(reviews, "- ");
  if (!failed.empty()) absl::StrAppend(&out, "\n**", failed.substr(0, failed.find('\n')), "**\n", failed.substr(failed.find('\n') + 1));
  if (!diffs) return out;
  if (!full) {
    absl::StrAppend(&out, "\nNode-level diffs: `graft review ... --full`.\n");
    return out;
  }
  for (const ModelReview& r : reviews) {
    if (r.diff_text.empty() || !r.error.empty()) continue;
    absl::StrAppend(&out, "\n<details><summary><code>", HtmlEscape(r.input), "</code>: ",
                    r.diff_summary, "</summary>\n\n```diff\n", r.diff_text,
                    "```\n</details>\n");
  }
  return out;
}

std::string ReviewHtml(const std::vector<ModelReview>& reviews) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>graft "
      "review</title>\n<style>body{font-family:sans-serif;margin:16px}"
      "pre{background:#f6f6f6;padding:8px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px}</style>\n",
      draw::DrawingHead(),
      "</head><body>\n<div id=\"graft-panel\"></div>\n"
      "<h2>graft review</h2>\n<p>",
      HtmlEscape(absl::StrCat(
          Changed(reviews) == 0
              ? Unchanged(reviews)
              : absl::StrCat("The change alters ", Changed(reviews), " of ",
                             reviews.size(), " model(s)."),
          Failed(reviews) == 0
              ? ""
              : absl::StrCat(" ", Failed(reviews), " model(s) failed."))),
      "</p>\n<table><tr><th>model</th><th>nodes</th><th>rewrites</th></tr>\n");
  for (const ModelReview& r : reviews) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(r.input), "</td><td>",
                    r.nodes_base, " -&gt; ", r.nodes_head, "</td><td>",
                    HtmlEscape(!r.error.empty() ? "failed: " + r.error
                               : r.differs        ? RuleChanges(r)
                                                  : "unchanged"),
                    "</td></tr>\n");
  }
  out += "</table>\n";
  for (const ModelReview& r : reviews) {
    if (!r.differs && r.error.empty()) continue;
    absl::StrAppend(&out, "<h3>", HtmlEscape(r.input), "</h3>\n",
                    r.error.empty() ? "" : "<p>" + HtmlEscape(r.error) + "</p>",
                    r.drawing, "<pre>", HtmlEscape(r.diff_text), "</pre>\n");
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace graft::batch
