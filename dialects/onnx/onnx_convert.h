// Values between ONNX's messages and the graph IR's, for the ONNX codec
// (dialects/onnx/onnx_model.h): element types, tensors and attributes. Internal
// to the codec.
#ifndef GRAFT_DIALECTS_ONNX_ONNX_CONVERT_H_
#define GRAFT_DIALECTS_ONNX_ONNX_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/graph.pb.h"
#include "proto/onnx.pb.h"

namespace graft::onnx_internal {

// The IR's name of absent optional inputs ("" in ONNX), and its op.
inline constexpr char kAbsent[] = "_absent";
inline constexpr char kAbsentOp[] = "_Absent";

// ONNX element types (TensorProto.DataType) and TensorFlow's DataType;
// DT_INVALID and 0 for types the other lacks.
tf::DataType TfDtype(int onnx_type);
int OnnxDtype(tf::DataType type);

// An initializer (or a tensor attr) as TensorFlow's TensorProto. With
// `data_apart` (an initializer whose bytes lie in the source mapping or an
// external file) only its dtype and shape.
absl::Status ToTfTensor(const onnx::TensorProto& in, tf::TensorProto* out,
                        bool data_apart = false);

// A graph Const's value as an ONNX tensor. Its bytes are `content` when
// given (kept apart from the proto), else the proto's.
absl::Status ToOnnxTensor(const tf::TensorProto& in, absl::string_view content,
                          const std::string& name, onnx::TensorProto* out);

// Whether graft holds attributes of this kind as attr values; the others
// (graphs, sparse tensors, type protos, lists of tensors or graphs) are
// kept only in the node's original message.
bool Modelled(onnx::AttributeProto::AttributeType type);

// An ONNX attribute as an attr value; false for kinds graft keeps only in
// the node's original message.
absl::StatusOr<bool> ToAttrValue(const onnx::AttributeProto& a, tf::AttrValue* out);

// An attr value as an ONNX attribute of `type` (from the original node or
// the op's schema; UNDEFINED: from the value's kind).
absl::Status ToAttribute(const std::string& name, const tf::AttrValue& v,
                         onnx::AttributeProto::AttributeType type,
                         onnx::AttributeProto* out);

// What the op's schema says of attr `name`: its ONNX type (UNDEFINED when
// unknown), whether the op has it (an unknown op: true).
onnx::AttributeProto::AttributeType SchemaAttrType(const tf::OpDef* op,
                                                   const std::string& name);
bool SchemaHasAttr(const tf::OpDef* op, const std::string& name);

}  // namespace graft::onnx_internal

#endif  // GRAFT_DIALECTS_ONNX_ONNX_CONVERT_H_
