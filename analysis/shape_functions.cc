#include "analysis/shape_functions.h"

#include "analysis/shape_functions_internal.h"

namespace graft::analysis {

const TensorInfo& ShapeInputs::In(const Node& n, int i) const {
  static const TensorInfo kUnknown;
  if (i >= n.num_inputs()) return kUnknown;
  Endpoint e = n.input(i);
  if (e.node == kNoNode || e.node >= static_cast<NodeId>(outputs_.size()) ||
      e.port >= static_cast<int>(outputs_[e.node].size())) {
    return kUnknown;
  }
  return outputs_[e.node][e.port];
}

TensorInfo Shaped(Dims dims) {
  TensorInfo t;
  t.known_rank = true;
  t.dims = std::move(dims);
  return t;
}

TensorInfo FromShapeProto(const tf::TensorShapeProto& s) {
  if (s.unknown_rank()) return TensorInfo();
  Dims dims;
  for (const auto& d : s.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return Shaped(dims);
}

ShapeFn FindShapeFunction(const std::string& op) {
  static const ShapeTable* kTable = [] {
    auto* table = new ShapeTable;
    AddArrayShapeFunctions(table);
    AddNnShapeFunctions(table);
    return table;
  }();
  auto it = kTable->find(op);
  return it == kTable->end() ? nullptr : it->second;
}

}  // namespace graft::analysis
