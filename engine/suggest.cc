#include "engine/suggest.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace graft {

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

std::string Closest(const std::string& name,
                    const std::vector<std::string>& known) {
  // A suggestion is at most two edits away, so only names of about the same
  // length are compared, and absurdly long names (which would make each
  // comparison costly) get none.
  constexpr size_t kMaxSuggestedLength = 128;
  if (name.size() > kMaxSuggestedLength) return "";
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
  return best;
}

}  // namespace graft
