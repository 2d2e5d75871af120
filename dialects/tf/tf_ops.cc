#include "dialects/tf/tf_ops.h"

#include <utility>

namespace graft {

extern const char kTfOpList[];
extern const size_t kTfOpListSize;

const OpRegistry& TensorflowOps() {
  static const OpRegistry* const registry = [] {
    tf::OpList ops;
    ops.ParseFromArray(kTfOpList, static_cast<int>(kTfOpListSize));
    return new OpRegistry(std::move(ops));
  }();
  return *registry;
}

}  // namespace graft
