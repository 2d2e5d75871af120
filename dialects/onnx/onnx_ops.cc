#include "dialects/onnx/onnx_ops.h"

#include <utility>

namespace graft {

extern const char kOnnxOpList[];
extern const size_t kOnnxOpListSize;

const OpRegistry& OnnxOps() {
  static const OpRegistry* const registry = [] {
    tf::OpList ops;
    ops.ParseFromArray(kOnnxOpList, static_cast<int>(kOnnxOpListSize));
    // Initializers are Consts, graph inputs Placeholders (onnx_model.h).
    AddIrOps(&ops);
    return new OpRegistry(std::move(ops));
  }();
  return *registry;
}

}  // namespace graft
