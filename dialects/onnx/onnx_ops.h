// ONNX's op signatures with every version (dialects/onnx/ops/onnx_ops.pbtxt,
// captured from the onnx wheel by ops/gen_onnx_ops.py and compiled in);
// `FindAt(op, opset)` gives the one a model's opset means.
#ifndef GRAFT_DIALECTS_ONNX_ONNX_OPS_H_
#define GRAFT_DIALECTS_ONNX_ONNX_OPS_H_

#include "engine/op_registry.h"

namespace graft {

// Parsed once, on first use.
const OpRegistry& OnnxOps();

}  // namespace graft

#endif  // GRAFT_DIALECTS_ONNX_ONNX_OPS_H_
