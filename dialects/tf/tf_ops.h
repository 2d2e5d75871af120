// TensorFlow's op signatures (dialects/tf/ops/tf_ops.pbtxt, captured from
// the installed TensorFlow by ops/gen_tf_ops.py and compiled in).
#ifndef GRAFT_DIALECTS_TF_TF_OPS_H_
#define GRAFT_DIALECTS_TF_TF_OPS_H_

#include "engine/op_registry.h"

namespace graft {

// Parsed once, on first use.
const OpRegistry& TensorflowOps();

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_TF_OPS_H_
