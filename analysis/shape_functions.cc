#include "analysis/shape_functions.h"

#include "analysis/shape_functions_internal.h"

namespace graft::analysis {

const TensorInfo& ShapeInputs::In(const Node& n, int i) const {
  static const TensorInfo kUnknown;
  if (i < 0 || i >= n.num_inputs()) return kUnknown;
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
  for (const auto& d : s.dim())
    dims.push_back(d.size() >= 0      ? d.size()
                   : d.name().empty() ? -1
                                      : NamedDim(d.name()));
  return Shaped(dims);
}

bool IsPrefixSlicedTo(int64_t d, int64_t length) {
  std::optional<DerivedDim> def = DerivedSymbolicDimDefinition(d);
  return def.has_value() && def->function == "slice" && def->args.size() == 4 &&
         def->args[0] > 0 && def->args[1] == 0 && def->args[2] == length &&
         def->args[3] == 1;
}

// Right-aligned broadcasting; unknown where it cannot be decided, a derived
// symbol where two symbols meet.
TensorInfo BroadcastShapes(const TensorInfo& a, const TensorInfo& b) {
  if (!a.known_rank || !b.known_rank) return UnknownRank();
  size_t rank = std::max(a.dims.size(), b.dims.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x =
        i < rank - a.dims.size() ? 1 : a.dims[i - (rank - a.dims.size())];
    int64_t y =
        i < rank - b.dims.size() ? 1 : b.dims[i - (rank - b.dims.size())];
    if (x == y)
      out[i] = x;
    else if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (IsPrefixSlicedTo(y, x))
      out[i] = x;
    else if (IsPrefixSlicedTo(x, y))
      out[i] = y;
    else if (IsSymbolicDim(x) && IsSymbolicDim(y))  // whichever is not 1: a function of both
      out[i] = DerivedSymbolicDim("broadcast", {std::min(x, y), std::max(x, y)});
    else if (x < 0)
      out[i] = y > 1 ? y : -1;
    else if (y < 0)
      out[i] = x > 1 ? x : -1;
    else
      return UnknownRank();  // incompatible: not a valid graph
  }
  return Shaped(out);
}

// Output size of a window (conv, pool) along one spatial dimension.
int64_t WindowOut(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                  const std::string& pad, int64_t pad_before,
                  int64_t pad_after) {
  if (in < 0 || k < 0 || stride <= 0 || dilation <= 0) return -1;
  int64_t eff = AddDims(MulDims(k > 0 ? k - 1 : 0, dilation), 1);
  if (eff < 0) return -1;
  if (pad == "SAME") return in / stride + (in % stride != 0);
  if (pad == "VALID") return in < eff ? 0 : (in - eff) / stride + 1;
  if (pad == "EXPLICIT") {
    int64_t padded = AddDims(in, AddDims(pad_before, pad_after));
    return padded < eff ? -1 : (padded - eff) / stride + 1;
  }
  return -1;
}

ShapeFn FindShapeFunction(const std::string& op, bool onnx) {
  static const ShapeTable* kTable = [] {
    auto* table = new ShapeTable;
    AddArrayShapeFunctions(table);
    AddNnShapeFunctions(table);
    AddSlicingShapeFunctions(table);
    return table;
  }();
  // ONNX's ops, and the IR's own Const and Placeholder (TensorFlow's).
  static const ShapeTable* kOnnxTable = [] {
    auto* table = new ShapeTable;
    AddOnnxShapeFunctions(table);
    for (const char* op : {"Const", "Placeholder"}) (*table)[op] = kTable->at(op);
    return table;
  }();
  const ShapeTable& table = onnx ? *kOnnxTable : *kTable;
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace graft::analysis
