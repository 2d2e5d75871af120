#include "dialects/onnx/onnx_convert.h"

#include "absl/strings/str_cat.h"
#include "engine/const_tensor.h"
#include "engine/op_registry.h"

namespace graft::onnx_internal {

using onnx::AttributeProto;


// ONNX element types (TensorProto.DataType) and TensorFlow's DataType.
constexpr std::pair<int, tf::DataType> kDtypes[] = {
    {1, tf::DT_FLOAT},
    {2, tf::DT_UINT8},
    {3, tf::DT_INT8},
    {4, tf::DT_UINT16},
    {5, tf::DT_INT16},
    {6, tf::DT_INT32},
    {7, tf::DT_INT64},
    {8, tf::DT_STRING},
    {9, tf::DT_BOOL},
    {10, tf::DT_HALF},
    {11, tf::DT_DOUBLE},
    {12, tf::DT_UINT32},
    {13, tf::DT_UINT64},
    {14, tf::DT_COMPLEX64},
    {15, tf::DT_COMPLEX128},
    {16, tf::DT_BFLOAT16},
    // Held as their bytes only (nothing is computed on them): float8 one
    // byte a value, int4 and uint4 two values a byte, the low nibble first.
    {17, tf::DT_FLOAT8_E4M3FN},
    {18, tf::DT_FLOAT8_E4M3FNUZ},
    {19, tf::DT_FLOAT8_E5M2},
    {20, tf::DT_FLOAT8_E5M2FNUZ},
    {21, tf::DT_UINT4},
    {22, tf::DT_INT4},
};

// Whether graft holds a tensor of this dtype as its bytes only: ONNX keeps
// such values in int32_data one byte (a float8 value, or two 4-bit ones)
// per element when not in raw_data.
bool HeldAsBytes(tf::DataType dtype) {
  switch (dtype) {
    case tf::DT_FLOAT8_E4M3FN:
    case tf::DT_FLOAT8_E4M3FNUZ:
    case tf::DT_FLOAT8_E5M2:
    case tf::DT_FLOAT8_E5M2FNUZ:
    case tf::DT_UINT4:
    case tf::DT_INT4:
      return true;
    default:
      return false;
  }
}

tf::DataType TfDtype(int onnx_type) {
  for (const auto& [o, t] : kDtypes) {
    if (o == onnx_type) return t;
  }
  return tf::DT_INVALID;
}

int OnnxDtype(tf::DataType type) {
  for (const auto& [o, t] : kDtypes) {
    if (t == type) return o;
  }
  return 0;
}

// An initializer (or a tensor attr) as TensorFlow's TensorProto. With
// `data_apart` (an initializer whose bytes lie in the source mapping or an
// external file) only its dtype and shape.
absl::Status ToTfTensor(const onnx::TensorProto& in, tf::TensorProto* out,
                        bool data_apart) {
  tf::DataType dtype = TfDtype(in.data_type());
  if (dtype == tf::DT_INVALID)
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor `", in.name(), "` has element type ", in.data_type(),
        ", which graft does not read"));
  if (in.data_location() == onnx::TensorProto::EXTERNAL && !data_apart)
    return absl::UnimplementedError(absl::StrCat(
        "tensor `", in.name(), "` keeps its data in an external file, which "
        "graft reads for initializers only"));
  if (in.has_segment())
    return absl::UnimplementedError(
        absl::StrCat("tensor `", in.name(), "` is a segment"));
  out->set_dtype(dtype);
  for (int64_t d : in.dims()) {
    if (d < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("tensor `", in.name(), "` has a negative dimension"));
    out->mutable_tensor_shape()->add_dim()->set_size(d);
  }
  if (data_apart) {
    if (dtype == tf::DT_STRING)
      return absl::InvalidArgumentError(absl::StrCat(
          "string tensor `", in.name(), "` keeps its data apart"));
    return absl::OkStatus();
  }
  if (in.has_raw_data()) {
    if (dtype == tf::DT_STRING)
      return absl::InvalidArgumentError(
          absl::StrCat("string tensor `", in.name(), "` has raw_data"));
    out->set_tensor_content(in.raw_data());
    return absl::OkStatus();
  }
  if (HeldAsBytes(dtype)) {
    int64_t elements = 1;
    for (int64_t d : in.dims())
      elements = d > 0 && elements > INT64_MAX / d ? INT64_MAX : elements * d;
    if (in.int32_data_size() != TensorBytes(dtype, elements))
      return absl::InvalidArgumentError(
          absl::StrCat("tensor `", in.name(), "` lists ", in.int32_data_size(),
                       " bytes in int32_data; its shape needs ",
                       TensorBytes(dtype, elements)));
    std::string bytes;
    bytes.reserve(static_cast<size_t>(in.int32_data_size()));
    for (int32_t v : in.int32_data()) {
      if (v < 0 || v > 255)
        return absl::InvalidArgumentError(
            absl::StrCat("tensor `", in.name(), "` has ", v,
                         " in int32_data, which is not a byte"));
      bytes.push_back(static_cast<char>(v));
    }
    out->set_tensor_content(std::move(bytes));
    return absl::OkStatus();
  }
  switch (dtype) {
    case tf::DT_FLOAT:
    case tf::DT_COMPLEX64:
      for (float v : in.float_data())
        (dtype == tf::DT_FLOAT ? out->add_float_val(v) : out->add_scomplex_val(v));
      break;
    case tf::DT_DOUBLE:
    case tf::DT_COMPLEX128:
      for (double v : in.double_data())
        (dtype == tf::DT_DOUBLE ? out->add_double_val(v) : out->add_dcomplex_val(v));
      break;
    case tf::DT_INT64:
      for (int64_t v : in.int64_data()) out->add_int64_val(v);
      break;
    case tf::DT_UINT32:
      for (uint64_t v : in.uint64_data()) out->add_uint32_val(static_cast<uint32_t>(v));
      break;
    case tf::DT_UINT64:
      for (uint64_t v : in.uint64_data()) out->add_uint64_val(v);
      break;
    case tf::DT_BOOL:
      for (int32_t v : in.int32_data()) out->add_bool_val(v != 0);
      break;
    case tf::DT_HALF:
    case tf::DT_BFLOAT16:
      for (int32_t v : in.int32_data()) out->add_half_val(v);
      break;
    case tf::DT_STRING:
      for (const std::string& s : in.string_data()) out->add_string_val(s);
      break;
    default:  // int32, int16, int8, uint16, uint8
      for (int32_t v : in.int32_data()) out->add_int_val(v);
  }
  return absl::OkStatus();
}

// A graph Const's value (its content kept apart or in the proto) as an
// ONNX tensor.
absl::Status ToOnnxTensor(const tf::TensorProto& in, absl::string_view content,
                          const std::string& name, onnx::TensorProto* out) {
  out->set_name(name);
  out->set_data_type(OnnxDtype(in.dtype()));
  if (out->data_type() == 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "constant `", name, "` has a dtype ONNX has no element type for"));
  for (const auto& d : in.tensor_shape().dim()) out->add_dims(d.size());
  if (in.dtype() == tf::DT_STRING) {
    for (const std::string& s : in.string_val()) out->add_string_data(s);
    return absl::OkStatus();
  }
  if (!content.empty() || in.tensor_content().size() > 0 ||
      HeldAsBytes(in.dtype())) {
    out->set_raw_data(std::string(content.empty() ? in.tensor_content() : content));
    return absl::OkStatus();
  }
  // Typed values (possibly one value filling the shape): decoded, encoded.
  absl::StatusOr<ConstTensor> t = FromTensorProto(in);
  if (!t.ok()) return t.status();
  out->set_raw_data(ToTensorProto(*t).tensor_content());
  return absl::OkStatus();
}

// Whether graft holds attributes of this kind as attr values; the others
// (graphs, sparse tensors, type protos, lists of tensors or graphs) are
// kept only in the node's original message.
bool Modelled(AttributeProto::AttributeType type) {
  switch (type) {
    case AttributeProto::FLOAT: case AttributeProto::INT:
    case AttributeProto::STRING: case AttributeProto::FLOATS:
    case AttributeProto::INTS: case AttributeProto::STRINGS:
    case AttributeProto::TENSOR:
      return true;
    default:
      return false;
  }
}

// An ONNX attribute as an attr value; false for kinds graft keeps only in
// the node's original message (graphs, sparse tensors, type protos).
absl::StatusOr<bool> ToAttrValue(const AttributeProto& a, tf::AttrValue* out) {
  switch (a.type()) {
    case AttributeProto::FLOAT:
      out->set_f(a.f());
      return true;
    case AttributeProto::INT:
      out->set_i(a.i());
      return true;
    case AttributeProto::STRING:
      out->set_s(a.s());
      return true;
    case AttributeProto::FLOATS:
      out->mutable_list();
      for (float f : a.floats()) out->mutable_list()->add_f(f);
      return true;
    case AttributeProto::INTS:
      out->mutable_list();
      for (int64_t i : a.ints()) out->mutable_list()->add_i(i);
      return true;
    case AttributeProto::STRINGS:
      out->mutable_list();
      for (const std::string& s : a.strings()) out->mutable_list()->add_s(s);
      return true;
    case AttributeProto::TENSOR: {
      absl::Status s = ToTfTensor(a.t(), out->mutable_tensor());
      if (!s.ok()) return s;
      return true;
    }
    default:
      return false;
  }
}

// An attr value as an ONNX attribute of `type` (from the original node or
// the op's schema; UNDEFINED: from the value's kind).
absl::Status ToAttribute(const std::string& name, const tf::AttrValue& v,
                         AttributeProto::AttributeType type,
                         AttributeProto* out) {
  out->set_name(name);
  if (type == AttributeProto::UNDEFINED) {
    switch (v.value_case()) {
      case tf::AttrValue::kF: type = AttributeProto::FLOAT; break;
      case tf::AttrValue::kI:
      case tf::AttrValue::kB: type = AttributeProto::INT; break;
      case tf::AttrValue::kS: type = AttributeProto::STRING; break;
      case tf::AttrValue::kTensor: type = AttributeProto::TENSOR; break;
      case tf::AttrValue::kList:
        type = v.list().f_size() > 0   ? AttributeProto::FLOATS
               : v.list().s_size() > 0 ? AttributeProto::STRINGS
                                       : AttributeProto::INTS;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "attr `", name, "` has a kind ONNX attributes do not hold"));
    }
  }
  out->set_type(type);
  switch (type) {
    case AttributeProto::FLOAT: out->set_f(v.f()); break;
    case AttributeProto::INT:
      out->set_i(v.value_case() == tf::AttrValue::kB ? v.b() : v.i());
      break;
    case AttributeProto::STRING: out->set_s(v.s()); break;
    case AttributeProto::FLOATS:
      for (float f : v.list().f()) out->add_floats(f);
      break;
    case AttributeProto::INTS:
      for (int64_t i : v.list().i()) out->add_ints(i);
      break;
    case AttributeProto::STRINGS:
      for (const std::string& s : v.list().s()) out->add_strings(s);
      break;
    case AttributeProto::TENSOR:
      return ToOnnxTensor(v.tensor(), "", "", out->mutable_t());
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("attr `", name, "` of an ONNX type graft does not write"));
  }
  return absl::OkStatus();
}

AttributeProto::AttributeType SchemaAttrType(const tf::OpDef* op,
                                             const std::string& name) {
  if (op == nullptr) return AttributeProto::UNDEFINED;
  for (const auto& a : op->attr()) {
    if (a.name() != name) continue;
    const std::string& t = a.type();
    if (t == "float") return AttributeProto::FLOAT;
    if (t == "int") return AttributeProto::INT;
    if (t == "string") return AttributeProto::STRING;
    if (t == "tensor") return AttributeProto::TENSOR;
    if (t == "list(float)") return AttributeProto::FLOATS;
    if (t == "list(int)") return AttributeProto::INTS;
    if (t == "list(string)") return AttributeProto::STRINGS;
  }
  return AttributeProto::UNDEFINED;
}

bool SchemaHasAttr(const tf::OpDef* op, const std::string& name) {
  if (op == nullptr) return true;  // unknown op: keep what it has
  for (const auto& a : op->attr()) {
    if (a.name() == name && a.type() != "type") return true;
  }
  return false;
}

}  // namespace graft::onnx_internal
