#include "engine/name_regex.h"

#include <regex>

#include "absl/strings/str_cat.h"

namespace graft {

struct NameRegex::Impl {
  std::regex re;
};

NameRegex::NameRegex(std::string pattern, std::unique_ptr<Impl> impl)
    : pattern_(std::move(pattern)), impl_(std::move(impl)) {}

NameRegex::~NameRegex() = default;

absl::StatusOr<std::shared_ptr<const NameRegex>> NameRegex::Compile(
    const std::string& pattern) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->re = std::regex(pattern);
  } catch (const std::regex_error&) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad regex `", pattern, "`"));
  }
  return std::shared_ptr<const NameRegex>(
      new NameRegex(pattern, std::move(impl)));
}

bool NameRegex::FullMatch(const std::string& text) const {
  return std::regex_match(text, impl_->re);
}

}  // namespace graft
