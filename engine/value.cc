#include "engine/value.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "engine/name_regex.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"

namespace graft {

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kNone:
      return "nothing";
    case ValueType::kBool:
      return "bool";
    case ValueType::kInt:
      return "int";
    case ValueType::kFloat:
      return "float";
    case ValueType::kString:
      return "string";
    case ValueType::kTensor:
      return "tensor";
    case ValueType::kNode:
      return "node";
    case ValueType::kConst:
      return "constant";
    case ValueType::kList:
      return "list";
    case ValueType::kRanges:
      return "ranges";
    case ValueType::kGraph:
      return "graph";
    case ValueType::kRegex:
      return "regex";
    case ValueType::kOpList:
      return "op list";
    case ValueType::kCopies:
      return "set of copies";
    case ValueType::kAny:
      return "any";
  }
  return "?";
}

std::string WithArticle(const std::string& noun) {
  bool vowel =
      !noun.empty() && std::string("aeiou").find(noun[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + noun;
}

std::string AValueType(ValueType type) {
  if (type == ValueType::kNone) return "nothing";
  return WithArticle(ValueTypeName(type));
}

std::vector<NodeId> NodesOf(const Value& v) {
  std::vector<NodeId> out;
  if (v.type == ValueType::kList) {
    for (const Value& item : v.list) out.push_back(item.tensor.node);
  } else {
    out.push_back(v.tensor.node);
  }
  return out;
}

Value NodeList(const std::vector<NodeId>& ids) {
  std::vector<Value> items;
  for (NodeId id : ids) items.push_back(Value::NodeRef(id));
  return Value::List(std::move(items));
}

Value TensorList(const std::vector<Endpoint>& ts) {
  std::vector<Value> items;
  for (Endpoint t : ts) items.push_back(Value::Tensor(t));
  return Value::List(std::move(items));
}

bool Accepts(ValueType want, ValueType have) {
  if (want == have || want == ValueType::kAny || have == ValueType::kAny)
    return true;
  switch (want) {
    case ValueType::kFloat:
      return have == ValueType::kInt;
    case ValueType::kTensor:
      return have == ValueType::kNode;
    case ValueType::kRegex:
    case ValueType::kOpList:
      return have == ValueType::kString;
    case ValueType::kNode:
      return have == ValueType::kTensor;
    case ValueType::kConst:
      return have == ValueType::kInt || have == ValueType::kFloat ||
             have == ValueType::kTensor || have == ValueType::kNode;
    default:
      return false;
  }
}

absl::StatusOr<ConstTensor> ConstantOf(const Graph& graph, Endpoint tensor,
                                       bool deferred_ok) {
  // Through Identity and non-truncating Cast ops (frozen variable reads,
  // mixed-precision casts), as many as kMaxHops.
  constexpr int kMaxHops = 8;
  std::vector<tf::DataType> casts;
  Endpoint t = tensor;
  for (int hops = 0; hops < kMaxHops; ++hops) {
    const Node& n = graph.node(t.node);
    bool cast = n.op() == "Cast";
    if ((n.op() != "Identity" && !cast) || t.port != 0 || n.num_inputs() != 1 ||
        !n.input(0).valid())
      break;
    if (cast) {
      const tf::AttrValue* truncate = n.attr("Truncate");
      const tf::AttrValue* dst = n.attr("DstT");
      if ((truncate != nullptr && truncate->b()) || dst == nullptr) break;
      casts.push_back(dst->type());
    }
    t = n.input(0);
  }
  const Node& node = graph.node(t.node);
  if (node.op() != "Const" || t.port != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("`", graph.TensorName(tensor), "` is not a constant (",
                     graph.node(tensor.node).op(), ")"));
  }
  const tf::AttrValue* value = node.attr("value");
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("Const `", node.name(), "` has no value"));
  }
  if (deferred_ok && casts.empty()) {
    std::optional<ConstTensor> deferred =
        DeferredTensor(value->tensor(), node.value_content_apart());
    if (deferred) return *std::move(deferred);
  }
  absl::StatusOr<ConstTensor> c =
      FromTensorProto(value->tensor(), node.value_content());
  for (auto it = casts.rbegin(); c.ok() && it != casts.rend(); ++it)
    c = CastTo(*c, *it);
  return c;
}

namespace {

// `content`: the tensor's bytes when they are kept apart from `attr`
// (Node::value_content()).
Value FromAttrValue(const tf::AttrValue& attr, absl::string_view content) {
  switch (attr.value_case()) {
    case tf::AttrValue::kB:
      return Value::Bool(attr.b());
    case tf::AttrValue::kI:
      return Value::Int(attr.i());
    case tf::AttrValue::kF:
      return Value::Float(attr.f());
    case tf::AttrValue::kS:
      return Value::String(attr.s());
    case tf::AttrValue::kType:
      return Value::String(DataTypeName(attr.type()));
    case tf::AttrValue::kShape: {
      std::vector<Value> dims;
      for (const auto& d : attr.shape().dim())
        dims.push_back(Value::Int(d.size()));
      return Value::List(std::move(dims));
    }
    case tf::AttrValue::kTensor: {
      absl::StatusOr<ConstTensor> t =
          content.empty() ? FromTensorProto(attr.tensor())
                          : FromTensorProto(attr.tensor(), content);
      return t.ok() ? Value::Constant(*t) : Value();
    }
    case tf::AttrValue::kList: {
      std::vector<Value> items;
      for (int64_t i : attr.list().i()) items.push_back(Value::Int(i));
      for (float f : attr.list().f()) items.push_back(Value::Float(f));
      for (const std::string& s : attr.list().s())
        items.push_back(Value::String(s));
      for (bool b : attr.list().b()) items.push_back(Value::Bool(b));
      for (int t : attr.list().type()) {
        items.push_back(
            Value::String(DataTypeName(static_cast<tf::DataType>(t))));
      }
      return Value::List(std::move(items));
    }
    default:
      return Value();
  }
}

// An attr as a value; shapes, lists and values graft has no type for keep
// the attr itself (Value::attr) so it is written back exactly.
Value FromAttr(const tf::AttrValue& attr, absl::string_view content = {}) {
  Value v = FromAttrValue(attr, content);
  switch (attr.value_case()) {
    case tf::AttrValue::kB:
    case tf::AttrValue::kI:
    case tf::AttrValue::kF:
    case tf::AttrValue::kS:
    case tf::AttrValue::kType:
    case tf::AttrValue::kTensor:
      break;
    default:
      v.attr = std::make_shared<const tf::AttrValue>(attr);
  }
  return v;
}

}  // namespace

absl::StatusOr<ConstTensor> ToConstant(const Graph& graph, const Value& v,
                                       bool deferred_ok) {
  switch (v.type) {
    case ValueType::kConst:
      return deferred_ok ? *v.constant : Materialize(*v.constant);
    case ValueType::kInt:
      return ConstTensor::Scalar(static_cast<double>(v.i), tf::DT_INT32);
    case ValueType::kFloat:
      return ConstTensor::Scalar(v.f);
    case ValueType::kTensor:
    case ValueType::kNode:
      return ConstantOf(graph, v.tensor, deferred_ok);
    case ValueType::kList: {
      // A nested list of numbers: [[1, 2], [3, 4]] has shape [2, 2].
      ConstTensor t;
      std::vector<double> flat;
      std::function<bool(const Value&, size_t)> walk = [&](const Value& x,
                                                           size_t depth) {
        if (x.is_number()) {
          flat.push_back(x.number());
          return depth == t.shape.size();
        }
        if (x.type != ValueType::kList) return false;
        if (depth == t.shape.size())
          t.shape.push_back(static_cast<int64_t>(x.list.size()));
        if (t.shape[depth] != static_cast<int64_t>(x.list.size())) return false;
        for (const Value& item : x.list) {
          if (!walk(item, depth + 1)) return false;
        }
        return true;
      };
      if (!walk(v, 0)) {
        return absl::InvalidArgumentError(
            "a constant list must be numbers, in a regular shape");
      }
      t.values = std::move(flat);
      return t;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("expected a constant, got ", AValueType(v.type)));
  }
}

absl::StatusOr<Value> AttrValueOf(const Graph& graph, const Node& node,
                                  const std::string& name) {
  const tf::OpDef* op = DialectOf(graph).OpDefIn(graph, node.op());
  if (const tf::AttrValue* v = node.attr(name)) {
    return FromAttr(
        *v, name == "value" ? node.value_content() : absl::string_view());
  }
  if (op != nullptr) {
    for (const auto& attr : op->attr()) {
      if (attr.name() == name && attr.has_default_value()) {
        return FromAttr(attr.default_value());
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("`", node.name(), "` (", node.op(),
                                          ") has no attr `", name, "`"));
}

absl::StatusOr<std::shared_ptr<const NameRegex>> RegexOf(const Value& v) {
  if (v.regex != nullptr) return v.regex;
  if (v.type != ValueType::kString) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a regex, got ", AValueType(v.type)));
  }
  return NameRegex::Compile(v.s);
}

bool TransposedFilter(const Node& op) {
  const tf::AttrValue* tb = op.attr("transpose_b");
  const tf::AttrValue* trans_b = op.attr("transB");
  const tf::AttrValue* transposed = op.attr("transposed");  // aten.convolution
  return (tb != nullptr && tb->b()) || (trans_b != nullptr && trans_b->i() != 0) ||
         (transposed != nullptr && transposed->b());
}

}  // namespace graft
