// A regular expression over node names, compiled once (when the rules that
// hold it compile) and matched many times. Keeps <regex> out of headers.
#ifndef GRAFT_ENGINE_NAME_REGEX_H_
#define GRAFT_ENGINE_NAME_REGEX_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

class NameRegex {
 public:
  // Fails with "bad regex `...`" when `pattern` is not an ECMAScript regex.
  static absl::StatusOr<std::shared_ptr<const NameRegex>> Compile(
      const std::string& pattern);
  ~NameRegex();

  // The whole of `text` matches.
  bool FullMatch(const std::string& text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  NameRegex(std::string pattern, std::unique_ptr<Impl> impl);
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace graft

#endif  // GRAFT_ENGINE_NAME_REGEX_H_
