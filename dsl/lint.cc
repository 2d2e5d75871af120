// Lint: findings that do not stop rules from compiling (params never used,
// rules that can never fire).
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/checker.h"

namespace graft::dsl {
namespace {

// Canonical text of a rule's patterns, to find rules that match alike.
std::string PatternKey(const Rule& rule) {
  std::string key;
  std::function<void(const NodePattern&)> walk = [&](const NodePattern& p) {
    absl::StrAppend(&key, absl::StrJoin(p.ops, "|"), p.ref,
                    p.ref_call ? "(" : "");
    for (const auto& [arg, loc] : p.ref_args) absl::StrAppend(&key, arg, ",");
    absl::StrAppend(&key, p.ref_call ? ")" : "", p.has_operands ? "(" : "");
    for (const OperandPattern& o : p.operands) {
      absl::StrAppend(&key, static_cast<int>(o.kind), ":", o.name, ":", o.port,
                      ",");
      if (o.nested) walk(*o.nested);
    }
    absl::StrAppend(&key, p.has_operands ? ")" : "", ";");
  };
  for (const PatternStmt& s : rule.patterns) {
    absl::StrAppend(&key, s.name, "=");
    walk(s.pattern);
  }
  return key;
}

}  // namespace

// Findings that do not stop the rules from compiling.
void Checker::Lint() {
  for (const auto& file : set_->asts_) {
    for (const Param& p : file->params) {
      if (param_uses_[p.name] == 0) {
        d_->Warning(file->path, p.loc,
                    absl::StrCat("param `", p.name, "` is never used"));
      }
    }
  }
  // A rule whose pattern equals that of a rule tried before it (higher
  // priority, or the same and earlier) with no guard can never fire.
  struct Entry {
    const RuleFile* file;
    const Rule* rule;
    int priority;
    std::string key;
  };
  std::vector<Entry> entries;
  for (const auto& file : set_->asts_) {
    for (const Rule& r : file->rules) {
      if (!r.has_match) continue;
      entries.push_back(
          {file.get(), &r,
           r.has_priority ? r.priority : static_cast<int>(r.patterns.size()),
           PatternKey(r)});
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    for (size_t j = 0; j < entries.size(); ++j) {
      if (i == j) continue;
      const Entry& first = entries[j];
      const Entry& later = entries[i];
      bool tried_first = first.priority > later.priority ||
                         (first.priority == later.priority && j < i);
      if (tried_first && first.key == later.key && first.rule->guards.empty()) {
        d_->Warning(
            later.file->path, later.rule->loc,
            absl::StrCat(
                "rule `", later.rule->name, "` can never fire: `",
                first.rule->name,
                "` has the same pattern, no guard, and is tried first"));
        break;
      }
    }
  }
}

}  // namespace graft::dsl
