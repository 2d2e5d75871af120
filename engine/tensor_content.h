// The bytes of a tensor's tensor_content kept apart from its NodeDef:
// left in the mapping of the file they were read from, or computed from
// other bytes only when they are needed (a folded filter is scaled while it
// is written out, never held whole unless something reads it).
#ifndef GRAFT_ENGINE_TENSOR_CONTENT_H_
#define GRAFT_ENGINE_TENSOR_CONTENT_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/strings/string_view.h"

namespace graft {

class TensorContent {
 public:
  virtual ~TensorContent() = default;
  virtual size_t size() const = 0;
  // All the bytes; a computed content computes and keeps them on the first
  // call (safe from several threads).
  virtual absl::string_view bytes() const = 0;
  // Passes the bytes to `sink` in order, in pieces, without keeping them.
  virtual void Emit(const std::function<void(absl::string_view)>& sink) const {
    sink(bytes());
  }
  // A hint that bytes [offset, offset + length) are not read again soon:
  // content mapped from a file gives their pages back (a later read maps
  // them again from the page cache); other content keeps them.
  virtual void Release(size_t /*offset*/, size_t /*length*/) const {}
};

// Bytes that already exist; `owner` keeps them alive.
std::shared_ptr<const TensorContent> ViewContent(
    absl::string_view bytes, std::shared_ptr<const void> owner);

// Bytes of a read-only file mapping that `mapping` keeps alive: the same,
// and Release gives their pages back, so a large model's weights read once
// (scaled as they are written) do not all stay resident.
std::shared_ptr<const TensorContent> MappedContent(
    absl::string_view bytes, std::shared_ptr<const void> mapping);

// Gives back the whole pages inside `bytes`, which lie in a read-only file
// mapping (a page shared with bytes outside them stays): the process stops
// holding them; a later read maps them again.
void ReleaseMappedPages(absl::string_view bytes);

}  // namespace graft

#endif  // GRAFT_ENGINE_TENSOR_CONTENT_H_
