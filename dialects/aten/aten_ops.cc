#include "dialects/aten/aten_ops.h"

#include <utility>

namespace graft {

extern const char kAtenOpList[];
extern const size_t kAtenOpListSize;

const OpRegistry& AtenOps() {
  static const OpRegistry* const registry = [] {
    tf::OpList ops;
    ops.ParseFromArray(kAtenOpList, static_cast<int>(kAtenOpListSize));
    AddIrOps(&ops);  // parameters and buffers are Consts, inputs Placeholders
    // What a `Tensor?` argument left out reads (aten_graph.h).
    tf::OpDef* absent = ops.add_op();
    absent->set_name("_Absent");
    absent->add_output_arg()->set_name("none");
    return new OpRegistry(std::move(ops));
  }();
  return *registry;
}

}  // namespace graft
