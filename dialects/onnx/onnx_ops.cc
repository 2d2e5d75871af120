#include "dialects/onnx/onnx_ops.h"

#include <utility>

#include "google/protobuf/text_format.h"

namespace graft {

extern const char kOnnxOpList[];
extern const size_t kOnnxOpListSize;
namespace {

// The graph IR's own ops an ONNX model maps onto: initializers are Consts,
// graph inputs Placeholders (dialects/onnx/onnx_model.h).
constexpr char kIrOps[] = R"pb(
  op {
    name: "Const"
    output_arg { name: "output" type_attr: "dtype" }
    attr { name: "value" type: "tensor" }
    attr { name: "dtype" type: "type" }
  }
  op {
    name: "Placeholder"
    output_arg { name: "output" type_attr: "dtype" }
    attr { name: "dtype" type: "type" }
    attr {
      name: "shape"
      type: "shape"
      default_value { shape { unknown_rank: true } }
    }
  }
)pb";

}  // namespace

const OpRegistry& OnnxOps() {
  static const OpRegistry* const registry = [] {
    tf::OpList ops;
    ops.ParseFromArray(kOnnxOpList, static_cast<int>(kOnnxOpListSize));
    tf::OpList ir;
    google::protobuf::TextFormat::ParseFromString(kIrOps, &ir);
    for (const tf::OpDef& def : ir.op()) *ops.add_op() = def;
    return new OpRegistry(std::move(ops));
  }();
  return *registry;
}

}  // namespace graft
