// PyTorch's ATen op schemas (dialects/aten/ops/aten_ops.pbtxt, captured
// from the installed torch by ops/gen_aten_ops.py and compiled in).
#ifndef GRAFT_DIALECTS_ATEN_ATEN_OPS_H_
#define GRAFT_DIALECTS_ATEN_ATEN_OPS_H_

#include "engine/op_registry.h"

namespace graft {

// Parsed once, on first use; graph inputs and parameters (Placeholder,
// Const) are the IR's own ops.
const OpRegistry& AtenOps();

}  // namespace graft

#endif  // GRAFT_DIALECTS_ATEN_ATEN_OPS_H_
