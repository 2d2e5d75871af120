#include "engine/tensor_content.h"

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

}  // namespace

std::shared_ptr<const TensorContent> ViewContent(
    absl::string_view bytes, std::shared_ptr<const void> owner) {
  return std::make_shared<View>(bytes, std::move(owner));
}

}  // namespace graft
