#include "dsl/diagnostics.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace graft::dsl {

void Diagnostics::Error(const std::string& path, Loc loc, std::string message,
                        std::vector<std::string> notes) {
  errors_.push_back({path, loc, std::move(message), std::move(notes)});
}

void Diagnostics::Warning(const std::string& path, Loc loc, std::string message,
                          std::vector<std::string> notes) {
  Diagnostic d{path, loc, std::move(message), std::move(notes)};
  d.warning = true;
  warnings_.push_back(std::move(d));
}

void Diagnostics::AddSource(const std::string& path, const std::string& text) {
  sources_.emplace_back(path, text);
}

std::string Diagnostics::Render() const {
  std::string out;
  // In source order within each file; files in the order they were read.
  std::vector<Diagnostic> sorted = errors_;
  sorted.insert(sorted.end(), warnings_.begin(), warnings_.end());
  auto file_rank = [&](const std::string& path) {
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (sources_[i].first == path) return static_cast<int>(i);
    }
    return -1;
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const Diagnostic& a, const Diagnostic& b) {
                     int fa = file_rank(a.path), fb = file_rank(b.path);
                     if (fa != fb) return fa < fb;
                     if (a.loc.line != b.loc.line)
                       return a.loc.line < b.loc.line;
                     return a.loc.col < b.loc.col;
                   });
  for (const Diagnostic& d : sorted) {
    if (d.loc.line > 0) {
      absl::StrAppend(&out, d.path, ":", d.loc.line, ":", d.loc.col,
                      d.warning ? ": warning: " : ": error: ", d.message, "\n");
      for (const auto& [path, text] : sources_) {
        if (path != d.path) continue;
        std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
        if (d.loc.line <= static_cast<int>(lines.size())) {
          absl::StrAppend(&out, "    ", lines[d.loc.line - 1], "\n    ",
                          std::string(std::max(0, d.loc.col - 1), ' '), "^\n");
        }
        break;
      }
    } else {
      absl::StrAppend(&out, d.path,
                      d.warning ? ": warning: " : ": error: ", d.message, "\n");
    }
    for (const std::string& note : d.notes) {
      absl::StrAppend(&out, "note: ", note, "\n");
    }
  }
  return out;
}

namespace {

// The case-insensitive edit distance of `a` and `b`, or `limit` as soon as
// it is sure to be at least that (a row's minimum never decreases).
int EditDistance(const std::string& a, const std::string& b, int limit) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    int row_min = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub =
          prev[j - 1] +
          (absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]) ? 0
                                                                          : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min >= limit) return limit;
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::vector<std::string> Suggest(const std::string& name,
                                 const std::vector<std::string>& known) {
  // A suggestion is at most two edits away, so only names of about the same
  // length are compared, and absurdly long names (which would make each
  // comparison costly) get none.
  constexpr size_t kMaxSuggestedLength = 128;
  if (name.size() > kMaxSuggestedLength) return {};
  std::string best;
  int best_d = 3;
  for (const std::string& k : known) {
    size_t diff = k.size() > name.size() ? k.size() - name.size()
                                         : name.size() - k.size();
    if (diff >= static_cast<size_t>(best_d)) continue;
    int d = EditDistance(name, k, best_d);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best.empty()) return {};
  return {absl::StrCat("did you mean `", best, "`?")};
}

}  // namespace graft::dsl
