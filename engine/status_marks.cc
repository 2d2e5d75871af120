#include "engine/status_marks.h"

#include "absl/strings/cord.h"

namespace graft {
namespace {
constexpr char kNotApplicable[] = "graft.not_applicable";
}  // namespace

absl::Status NotApplicable(absl::Status status) {
  if (!status.ok())
    status.SetPayload(kNotApplicable, absl::Cord(status.message()));
  return status;
}

bool IsNotApplicable(const absl::Status& status) {
  return status.GetPayload(kNotApplicable).has_value();
}

std::string NotApplicableReason(const absl::Status& status) {
  auto why = status.GetPayload(kNotApplicable);
  return why ? std::string(*why) : std::string();
}

absl::Status WithMarksOf(absl::Status to, const absl::Status& from) {
  if (to.ok()) return to;
  from.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    to.SetPayload(url, payload);
  });
  return to;
}

}  // namespace graft
