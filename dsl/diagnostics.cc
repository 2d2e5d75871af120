#include "dsl/diagnostics.h"

#include "engine/suggest.h"

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

std::vector<std::string> Suggest(const std::string& name,
                                 const std::vector<std::string>& known) {
  std::string best = Closest(name, known);
  if (best.empty()) return {};
  return {absl::StrCat("did you mean `", best, "`?")};
}

}  // namespace graft::dsl
