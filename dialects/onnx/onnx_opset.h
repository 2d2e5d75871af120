// Raising an ONNX model's opset (of the default domain) where nothing its
// ops mean changes: each op it uses, in its graph and its subgraphs, keeps
// its signature from one version to the next but for what a new version
// only adds (types, optional inputs and outputs, attrs whose defaults keep
// the old behaviour), and no version between changes its meaning under the
// same signature (GroupNormalization's scale and bias at 21). Anything
// else is refused, naming the op, its node and the opset it changes at:
// graft never converts an op, it only states a newer opset where the model
// means the same there.
#ifndef GRAFT_DIALECTS_ONNX_ONNX_OPSET_H_
#define GRAFT_DIALECTS_ONNX_ONNX_OPSET_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/graph.h"

namespace graft {

// Raises `graph`'s default-domain opset to `to` (its IR version to the
// least that opset needs); nothing when it is already there or later. An
// error, the graph unchanged, when an op's meaning could change or `to` is
// past the newest opset graft knows.
absl::Status RaiseOnnxOpset(Graph& graph, int64_t to);

}  // namespace graft

#endif  // GRAFT_DIALECTS_ONNX_ONNX_OPSET_H_
