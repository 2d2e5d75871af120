#include "engine/tensor_content.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

namespace graft {
namespace {

class View : public TensorContent {
 public:
  View(absl::string_view bytes, std::shared_ptr<const void> owner)
      : bytes_(bytes), owner_(std::move(owner)) {}
  size_t size() const override { return bytes_.size(); }
  absl::string_view bytes() const override { return bytes_; }

 private:
  absl::string_view bytes_;
  std::shared_ptr<const void> owner_;
};

class Mapped : public View {
 public:
  using View::View;
  void Release(size_t offset, size_t length) const override {
    absl::string_view all = bytes();
    if (offset < all.size()) ReleaseMappedPages(all.substr(offset, length));
  }
};

}  // namespace

std::shared_ptr<const TensorContent> MappedContent(
    absl::string_view bytes, std::shared_ptr<const void> mapping) {
  return std::make_shared<Mapped>(bytes, std::move(mapping));
}

void ReleaseMappedPages(absl::string_view bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(bytes.data());
  uintptr_t end = begin + bytes.size();
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::shared_ptr<const TensorContent> ViewContent(
    absl::string_view bytes, std::shared_ptr<const void> owner) {
  return std::make_shared<View>(bytes, std::move(owner));
}

}  // namespace graft
