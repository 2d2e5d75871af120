// Shape functions by op: one small function per op family, found by op name
// (analysis/shape_functions.cc holds them and their table; adding an op is
// adding an entry). InferShapes (analysis/shapes.h) runs them in
// topological order.
#ifndef GRAFT_ANALYSIS_SHAPE_FUNCTIONS_H_
#define GRAFT_ANALYSIS_SHAPE_FUNCTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/shapes.h"
#include "engine/graph.h"

namespace graft::analysis {

using Dims = std::vector<int64_t>;

// What a shape function reads: the inferred outputs of a node's inputs.
class ShapeInputs {
 public:
  ShapeInputs(const Graph& graph,
              const std::vector<std::vector<TensorInfo>>& outputs)
      : graph_(graph), outputs_(outputs) {}
  // Input `i` of `n`; an unknown tensor when there is none.
  const TensorInfo& In(const Node& n, int i) const;
  // The value of input `i`, when it is a known small integer tensor.
  const std::optional<Dims>& Value(const Node& n, int i) const {
    return In(n, i).value;
  }
  const Graph& graph() const { return graph_; }

 private:
  const Graph& graph_;
  const std::vector<std::vector<TensorInfo>>& outputs_;
};

// Fills `out` (one entry per output, dtypes set later) for node `n`.
using ShapeFn = void (*)(const ShapeInputs& in, const Node& n,
                         std::vector<TensorInfo>& out);

// The shape function of `op` (of an ONNX graph's: `onnx`), or nullptr
// (its outputs stay unknown).
ShapeFn FindShapeFunction(const std::string& op, bool onnx = false);

// A tensor of the given dims; a TensorShapeProto as a TensorInfo.
TensorInfo Shaped(Dims dims);
TensorInfo FromShapeProto(const tf::TensorShapeProto& s);

}  // namespace graft::analysis

#endif  // GRAFT_ANALYSIS_SHAPE_FUNCTIONS_H_
