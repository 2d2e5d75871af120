#include "batch/review.h"

#include <algorithm>

#include <atomic>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "draw/diff_drawing.h"
#include "engine/graph_diff.h"

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
  r.nodes_base = b->num_nodes();
  r.nodes_head = h->num_nodes();
  GraphDiff diff = DiffGraphs(*b, *h);
  r.differs = !diff.empty() || r.base_rewrites != r.head_rewrites;
  if (!diff.empty()) {
    r.diff_text = CutLines(FormatDiffText(diff), options.max_diff_lines);
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
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < models.size(); i = next++)
      out[i] = ReviewOne(i, models[i], base, head, options);
  };
  int jobs = std::max(1, std::min<int>(options.jobs, models.size()));
  std::vector<std::thread> workers;
  for (int j = 1; j < jobs; ++j) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
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
    absl::StrAppend(&out, "\n", r.diff_text);
  }
  // The summary, last, where a reader of a long review looks.
  absl::StrAppend(&out, "\nSummary: the change alters ", Changed(reviews),
                  " of ", reviews.size(), " model(s)");
  std::string rules = TotalRuleChanges(reviews);
  if (!rules.empty()) absl::StrAppend(&out, "; rewrites ", rules);
  absl::StrAppend(&out, ".\n", FailedLines(reviews, "  "));
  return out;
}

std::string ReviewMarkdown(const std::vector<ModelReview>& reviews) {
  if (Changed(reviews) == 0 && Failed(reviews) == 0) return Unchanged(reviews);
  std::string out = absl::StrCat("**graft review**: the change alters ",
                                 Changed(reviews), " of ", reviews.size(),
                                 " model(s).\n\n| model | nodes | rewrites "
                                 "| diff |\n|---|---:|---|---|\n");
  for (const ModelReview& r : reviews) {
    if (!r.differs && r.error.empty()) continue;
    std::string last;
    if (!r.diff_text.empty()) {
      size_t end = r.diff_text.find_last_not_of('\n');
      size_t start = r.diff_text.rfind('\n', end);
      last = r.diff_text.substr(
          start == std::string::npos ? 0 : start + 1,
          end - (start == std::string::npos ? 0 : start + 1) + 1);
    }
    absl::StrAppend(&out, "| `", r.input, "` | ", r.nodes_base, " -> ",
                    r.nodes_head, " | ", RuleChanges(r), " | ",
                    r.error.empty() ? last : "failed: " + r.error, " |\n");
  }
  std::string failed = FailedLines(reviews, "- ");
  if (!failed.empty()) absl::StrAppend(&out, "\n**", failed.substr(0, failed.find('\n')), "**\n", failed.substr(failed.find('\n') + 1));
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
