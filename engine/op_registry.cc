#include "engine/op_registry.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/dialect.h"
#include "google/protobuf/text_format.h"

namespace graft {
namespace {

using AttrMap = google::protobuf::Map<std::string, tf::AttrValue>;

// The attr `name` of a node's attrs, or the signature's default for it.
const tf::AttrValue* AttrOrDefault(const AttrMap& attrs, const tf::OpDef& op,
                                   const std::string& name) {
  if (auto it = attrs.find(name); it != attrs.end()) return &it->second;
  for (const tf::OpDef::AttrDef& attr : op.attr()) {
    if (attr.name() == name && attr.has_default_value()) {
      return &attr.default_value();
    }
  }
  return nullptr;
}

// Appends the dtypes of one argument; false when they cannot be known.
bool ExpandArg(const AttrMap& node, const tf::OpDef& op,
               const tf::OpDef::ArgDef& arg, std::vector<tf::DataType>* out) {
  auto with_ref = [&](tf::DataType type) {
    return arg.is_ref() && type < 100 ? static_cast<tf::DataType>(type + 100)
                                      : type;
  };
  if (!arg.type_list_attr().empty()) {
    const tf::AttrValue* list = AttrOrDefault(node, op, arg.type_list_attr());
    if (list == nullptr) return false;
    for (int type : list->list().type()) {
      out->push_back(with_ref(static_cast<tf::DataType>(type)));
    }
    return true;
  }
  int count = 1;
  if (!arg.number_attr().empty()) {
    const tf::AttrValue* number = AttrOrDefault(node, op, arg.number_attr());
    // A count no node can have (negative, or past any graph's inputs) says
    // nothing of its types: the validator reports the attr.
    if (number == nullptr || number->i() < 0 || number->i() > (int64_t{1} << 24)) return false;
    count = static_cast<int>(number->i());
  }
  tf::DataType type = arg.type();
  if (type == tf::DT_INVALID) {
    if (arg.type_attr().empty()) return false;
    const tf::AttrValue* value = AttrOrDefault(node, op, arg.type_attr());
    if (value == nullptr || value->type() == tf::DT_INVALID) return false;
    type = value->type();
  }
  out->insert(out->end(), count, with_ref(type));
  return true;
}

std::optional<std::vector<tf::DataType>> ExpandArgs(
    const AttrMap& node, const tf::OpDef& op,
    const google::protobuf::RepeatedPtrField<tf::OpDef::ArgDef>& args) {
  std::vector<tf::DataType> types;
  for (const tf::OpDef::ArgDef& arg : args) {
    if (!ExpandArg(node, op, arg, &types)) return std::nullopt;
  }
  return types;
}

}  // namespace

const OpRegistry& OpRegistry::For(const Graph& graph) { return DialectOf(graph).Ops(); }

namespace {

// The graph IR's own ops (TensorFlow's signatures of them).
constexpr char kIrOps[] = R"pb(
  op {
    name: "Const"
    output_arg { name: "output" type_attr: "dtype" }
    attr { name: "value" type: "tensor" }
    attr { name: "dtype" type: "type" }
  }
  op {
    name: "Placeholder"
    output_arg { name: "output" type_attr: "dtype" }
    attr { name: "dtype" type: "type" }
    attr {
      name: "shape"
      type: "shape"
      default_value { shape { unknown_rank: true } }
    }
  }
)pb";


}  // namespace

void AddIrOps(tf::OpList* ops) {
  tf::OpList ir;
  google::protobuf::TextFormat::ParseFromString(kIrOps, &ir);
  for (const tf::OpDef& def : ir.op()) *ops->add_op() = def;
}


const tf::OpDef* OpRegistry::FindAt(absl::string_view op, int64_t opset) const {
  // The newest version since at most `opset`.
  auto it = versions_.find(op);
  if (it == versions_.end()) return nullptr;
  const tf::OpDef* found = nullptr;
  for (const auto& [since, def] : it->second) {
    if (since <= opset) found = def;
  }
  return found;
}

int64_t OpRegistry::NewestSince(absl::string_view op) const {
  auto it = versions_.find(op);
  return it == versions_.end() || it->second.empty() ? 0 : it->second.back().first;
}

std::vector<const tf::OpDef*> OpRegistry::Versions(absl::string_view op) const {
  std::vector<const tf::OpDef*> defs;
  auto it = versions_.find(op);
  if (it == versions_.end()) return defs;
  for (const auto& [since, def] : it->second) defs.push_back(def);
  return defs;
}

bool OpRegistry::IsRuntimeContrib(const tf::OpDef& def) {
  return def.description() == "onnxruntime contrib op";
}

std::pair<int, int> OpRegistry::InputCounts(const tf::OpDef& def) {
  int fixed = 0;
  bool open = false;
  int extra = 0;
  int optional = 0;  // trailing optional inputs (ONNX's)
  for (const auto& arg : def.input_arg()) {
    if (arg.number_attr().empty() && arg.type_list_attr().empty()) {
      ++fixed;
      optional = arg.description() == "optional" ? optional + 1 : 0;
      continue;
    }
    open = true;
    for (const auto& a : def.attr()) {
      if (a.name() == arg.number_attr() && a.has_minimum())
        extra += static_cast<int>(a.minimum());
    }
  }
  return {fixed - optional + extra, open ? -1 : fixed};
}

OpRegistry::OpRegistry(tf::OpList ops) : ops_(std::move(ops)) {
  by_name_.reserve(ops_.op_size());
  for (const tf::OpDef& op : ops_.op()) {
    by_name_.emplace(op.name(), &op);
    // `Name@V`: op Name's version since opset V, listed in increasing V.
    size_t at = op.name().rfind('@');
    int64_t since = 0;
    if (at != std::string::npos && absl::SimpleAtoi(op.name().substr(at + 1), &since))
      versions_[op.name().substr(0, at)].emplace_back(since, &op);
  }
  for (auto& [name, list] : versions_) std::sort(list.begin(), list.end());
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const tf::OpDef& op : ops_.op()) names.push_back(op.name());
  std::sort(names.begin(), names.end());
  return names;
}

const tf::OpDef* OpRegistry::Find(absl::string_view op) const {
  auto it = by_name_.find(op);
  return it == by_name_.end() ? nullptr : it->second;
}

std::optional<std::vector<tf::DataType>> OpRegistry::OutputTypes(
    const Node& node) const {
  const tf::OpDef* op = Find(node.op());
  if (op == nullptr) return std::nullopt;
  return ExpandArgs(node.attrs(), *op, op->output_arg());
}

std::optional<std::vector<tf::DataType>> OpRegistry::InputTypes(
    const Node& node) const {
  return InputTypes(node.op(), node.attrs());
}

std::optional<std::vector<tf::DataType>> OpRegistry::InputTypes(
    absl::string_view op_name, const AttrMap& attrs) const {
  const tf::OpDef* op = Find(op_name);
  if (op == nullptr) return std::nullopt;
  return ExpandArgs(attrs, *op, op->input_arg());
}

tf::DataType OpRegistry::OutputType(const Node& node, int port) const {
  std::optional<std::vector<tf::DataType>> types = OutputTypes(node);
  if (!types || port < 0 || port >= static_cast<int>(types->size())) {
    return tf::DT_INVALID;
  }
  return (*types)[port];
}

tf::DataType BaseType(tf::DataType type) {
  return type > 100 ? static_cast<tf::DataType>(type - 100) : type;
}

std::string DataTypeName(tf::DataType type) {
  if (type > 100) return DataTypeName(BaseType(type)) + "_ref";
  switch (type) {
    case tf::DT_FLOAT:
      return "float32";
    case tf::DT_DOUBLE:
      return "float64";
    case tf::DT_HALF:
      return "float16";
    case tf::DT_BFLOAT16:
      return "bfloat16";
    case tf::DT_INT8:
      return "int8";
    case tf::DT_INT16:
      return "int16";
    case tf::DT_INT32:
      return "int32";
    case tf::DT_INT64:
      return "int64";
    case tf::DT_UINT8:
      return "uint8";
    case tf::DT_UINT16:
      return "uint16";
    case tf::DT_UINT32:
      return "uint32";
    case tf::DT_UINT64:
      return "uint64";
    case tf::DT_BOOL:
      return "bool";
    case tf::DT_STRING:
      return "string";
    default: {
      // DT_COMPLEX64 -> complex64, DT_QINT8 -> qint8, ...
      std::string name = tf::DataType_Name(BaseType(type));
      if (absl::StartsWith(name, "DT_")) name = name.substr(3);
      return absl::AsciiStrToLower(name);
    }
  }
}

std::optional<std::vector<int64_t>> StaticShape(const Graph& graph,
                                                Endpoint t) {
  const Node& n = graph.node(t.node);
  if (n.op() == "Const" && t.port == 0) {
    if (const tf::AttrValue* v = n.attr("value")) {
      std::vector<int64_t> dims;
      for (const auto& d : v->tensor().tensor_shape().dim())
        dims.push_back(d.size());
      return dims;
    }
  }
  const tf::TensorShapeProto* shape = nullptr;
  if (const tf::AttrValue* v = n.attr("_output_shapes");
      v != nullptr && t.port < v->list().shape_size()) {
    shape = &v->list().shape(t.port);
  } else if (const tf::AttrValue* s = n.attr("shape");
             s != nullptr && n.op() == "Placeholder" && s->has_shape()) {
    shape = &s->shape();
  }
  if (shape == nullptr || shape->unknown_rank()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : shape->dim()) dims.push_back(d.size());
  return dims;
}

bool ShapesCompatible(const std::vector<int64_t>& a,
                      const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "",
                    shape[i] < 0 ? "?" : absl::StrCat(shape[i]));
  }
  return out + "]";
}

bool OpRegistry::SameInputsSameOutputs(const tf::OpDef* op) {
  if (op == nullptr || op->is_stateful() || op->summary() == "mutates")
    return false;
  for (const tf::OpDef::AttrDef& a : op->attr()) {
    if (a.type() == "graph" || a.type() == "list(graph)") return false;
  }
  return true;
}

bool GlobMatch(absl::string_view pattern, absl::string_view text) {
  if (absl::EndsWith(pattern, "*")) {
    return absl::StartsWith(text, pattern.substr(0, pattern.size() - 1));
  }
  return pattern == text;
}

std::vector<std::string> SplitGlobs(absl::string_view alternatives) {
  return absl::StrSplit(alternatives, '|', absl::SkipEmpty());
}

bool GlobsMatch(absl::Span<const std::string> globs, absl::string_view op) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return GlobMatch(g, op); });
}

int64_t DataTypeSize(tf::DataType dtype) {
  switch (dtype) {
    case tf::DT_FLOAT:
    case tf::DT_INT32:
    case tf::DT_UINT32:
      return 4;
    case tf::DT_DOUBLE:
    case tf::DT_INT64:
    case tf::DT_UINT64:
    case tf::DT_COMPLEX64:
      return 8;
    case tf::DT_COMPLEX128:
      return 16;
    case tf::DT_HALF:
    case tf::DT_BFLOAT16:
    case tf::DT_INT16:
    case tf::DT_UINT16:
      return 2;
    case tf::DT_INT8:
    case tf::DT_UINT8:
    case tf::DT_BOOL:
    case tf::DT_QINT8:
    case tf::DT_QUINT8:
    case tf::DT_FLOAT8_E5M2:
    case tf::DT_FLOAT8_E4M3FN:
    case tf::DT_FLOAT8_E4M3FNUZ:
    case tf::DT_FLOAT8_E5M2FNUZ:
      return 1;
    default:
      return 0;
  }
}

int64_t TensorBytes(tf::DataType dtype, int64_t elements) {
  if (elements < 0) return -1;
  if (dtype == tf::DT_INT4 || dtype == tf::DT_UINT4)
    return elements / 2 + elements % 2;
  const int64_t width = DataTypeSize(dtype);
  int64_t bytes = 0;
  if (width == 0 || __builtin_mul_overflow(elements, width, &bytes)) return -1;
  return bytes;
}

absl::StatusOr<tf::DataType> ParseDataType(absl::string_view name) {
  if (name == "float") return tf::DT_FLOAT;
  if (name == "double") return tf::DT_DOUBLE;
  if (name == "half") return tf::DT_HALF;
  const google::protobuf::EnumDescriptor* types = tf::DataType_descriptor();
  for (int i = 0; i < types->value_count(); ++i) {
    auto type = static_cast<tf::DataType>(types->value(i)->number());
    if (type == tf::DT_INVALID) continue;
    if (types->value(i)->name() == name || DataTypeName(type) == name)
      return type;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype `", name, "`"));
}

}  // namespace graft
