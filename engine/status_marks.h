// Marks an error carries through the layers that reword it (payloads of
// absl::Status): what a caller decides by besides the message.
#ifndef GRAFT_ENGINE_STATUS_MARKS_H_
#define GRAFT_ENGINE_STATUS_MARKS_H_

#include <string>

#include "absl/status/status.h"

namespace graft {

// `status` marked: the rules do not apply to this graph at all (a training
// plan on a graph with no gradient in it). A body of a model's library
// that fails so is skipped and reported; the model's own graph fails.
absl::Status NotApplicable(absl::Status status);
bool IsNotApplicable(const absl::Status& status);
// Why, as NotApplicable was told (its message then, before any rewording);
// empty when `status` is not so marked.
std::string NotApplicableReason(const absl::Status& status);

// `to` with every mark (payload) of `from` added.
absl::Status WithMarksOf(absl::Status to, const absl::Status& from);

}  // namespace graft

#endif  // GRAFT_ENGINE_STATUS_MARKS_H_
