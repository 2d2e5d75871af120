#include "dsl/evaluator.h"

#include <cmath>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"

namespace graft::dsl {

using K = Expr::Kind;

// Source-like text of an expression, for explanations.
namespace {

// How tightly an expression binds, as the grammar reads it: `if` loosest,
// then `or`, `and`, `not`, comparisons, `+ -`, `* / // %`, unary minus,
// and operands (names, calls, members, indexes) tightest.
int Precedence(const Expr& e) {
  switch (e.kind) {
    case K::kIf:
      return 0;
    case K::kUnary:
      return e.text == "not" ? 3 : 7;
    case K::kBinary:
      if (e.text == "or") return 1;
      if (e.text == "and") return 2;
      if (e.text == "+" || e.text == "-") return 5;
      if (e.text == "*" || e.text == "/" || e.text == "//" || e.text == "%")
        return 6;
      return 4;  // a comparison
    default:
      return 8;
  }
}

// `e` as an operand that needs at least `least` (in parentheses otherwise).
std::string OperandText(const Expr& e, int least) {
  std::string text = ExprText(e);
  return Precedence(e) < least ? absl::StrCat("(", text, ")") : text;
}

}  // namespace

std::string ExprText(const Expr& e) {
  switch (e.kind) {
    case K::kBool:
      return e.bool_value ? "true" : "false";
    case K::kInt:
      return absl::StrCat(e.int_value);
    case K::kFloat:
      return absl::StrCat(e.float_value);
    case K::kString:
      return absl::StrCat("\"", e.text, "\"");
    case K::kName:
      return e.text;
    case K::kPort:
      return absl::StrCat(OperandText(*e.args[0], 8), ":", e.port);
    case K::kMember:
      return absl::StrCat(OperandText(*e.args[0], 8), ".", e.text);
    case K::kUnary:
      return e.text == "not" ? "not " + OperandText(*e.args[0], 3)
                             : "-" + OperandText(*e.args[0], 7);
    case K::kIndex:
      return absl::StrCat(OperandText(*e.args[0], 8), "[", ExprText(*e.args[1]), "]");
    case K::kListComp:
      return absl::StrCat("[", ExprText(*e.args[0]), " for ", e.text, " in ",
                          ExprText(*e.args[1]), "]");
    case K::kIf:
      return absl::StrCat("if ", ExprText(*e.args[0]), " then ",
                          ExprText(*e.args[1]), " else ", ExprText(*e.args[2]));
    case K::kBinary: {
      // left to right: a right operand as tight as its operator is grouped
      // (`a - (b - c)`); comparisons do not chain
      const int p = Precedence(e);
      return absl::StrCat(OperandText(*e.args[0], p == 4 ? p + 1 : p), " ",
                          e.text, " ", OperandText(*e.args[1], p + 1));
    }
    case K::kCall:
    case K::kList:
    case K::kCreate: {
      std::vector<std::string> args;
      for (const auto& a : e.args) args.push_back(ExprText(*a));
      std::string head = e.kind == K::kCall ? e.text
                         : e.kind == K::kCreate
                             ? (e.shared ? "shared " + e.text : e.text)
                             : "";
      return e.kind == K::kList
                 ? absl::StrCat("[", absl::StrJoin(args, ", "), "]")
                 : absl::StrCat(head, "(", absl::StrJoin(args, ", "), ")");
    }
  }
  return "?";
}

std::string Substitute(const std::string& text, const Graph& g,
                       const Bindings& bindings) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    size_t close = text.find('}', i);
    if (text[i] == '{' && close != std::string::npos) {
      std::string key = text.substr(i + 1, close - i - 1);
      const Value* v = bindings.Find(key);
      if (v != nullptr &&
          (v->type == ValueType::kNode || v->type == ValueType::kTensor)) {
        out += g.node(v->tensor.node).name();
      } else if (v != nullptr && v->type == ValueType::kString) {
        out += v->s;
      } else {
        out += text.substr(i, close - i + 1);
      }
      i = close;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

namespace {

// A list item as a number: ints, floats, and one-value constants (a
// computed `max(w) + 1`).
std::optional<double> NumberOf(const Value& v) {
  if (v.is_number()) return v.number();
  if (v.type == ValueType::kConst && v.constant->num_elements() == 1)
    return Materialize(*v.constant).values[0];
  return std::nullopt;
}

// A list value as the attr `name` of type `type` ("list(int)", "shape",
// ...; "" when the op is unknown: by the items' kinds). An item that cannot
// convert is an error naming it, never dropped.
absl::Status ListToAttr(const std::string& name, const std::string& type,
                        const std::vector<Value>& items, tf::AttrValue* attr) {
  // An empty type (not declared), or ATen's list of Scalars: as the items are.
  const bool inferred = type.empty() || type == "list(number)";
  bool any_float = false, all_numbers = true;
  for (const Value& v : items) {
    std::optional<double> x = NumberOf(v);
    all_numbers = all_numbers && x.has_value();
    any_float =
        any_float || (x && *x != std::floor(*x)) || v.type == ValueType::kFloat;
  }
  auto bad = [&](size_t i, const char* want) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr `", name, "`: item ", i + 1, " is ",
                     AValueType(items[i].type), ", not ", want));
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const Value& v = items[i];
    std::optional<double> x = NumberOf(v);
    if (type == "shape") {
      if (!x || *x != std::floor(*x)) return bad(i, "a dimension");
      attr->mutable_shape()->add_dim()->set_size(static_cast<int64_t>(*x));
    } else if (type == "list(type)") {
      absl::StatusOr<tf::DataType> t =
          v.type == ValueType::kString
              ? ParseDataType(v.s)
              : absl::StatusOr<tf::DataType>(bad(i, "a dtype name"));
      if (!t.ok()) return t.status();
      attr->mutable_list()->add_type(*t);
    } else if (type == "list(float)" ||
               (inferred && all_numbers && any_float)) {
      if (!x) return bad(i, "a number");
      attr->mutable_list()->add_f(static_cast<float>(*x));
    } else if (type == "list(int)" || (inferred && x)) {
      if (!x || *x != std::floor(*x)) return bad(i, "an integer");
      attr->mutable_list()->add_i(static_cast<int64_t>(*x));
    } else if (type == "list(bool)" ||
               (type.empty() && v.type == ValueType::kBool)) {
      if (v.type != ValueType::kBool) return bad(i, "a bool");
      attr->mutable_list()->add_b(v.b);
    } else if (type == "list(string)" ||
               (type.empty() && v.type == ValueType::kString)) {
      if (v.type != ValueType::kString) return bad(i, "a string");
      attr->mutable_list()->add_s(v.s);
    } else {
      return bad(i, type.empty() ? "a number, bool or string"
                                 : absl::StrCat("an item of ", type).c_str());
    }
  }
  if (type == "shape" && items.empty()) attr->mutable_shape();
  if (type != "shape" && items.empty()) attr->mutable_list();
  return absl::OkStatus();
}

// A constant's values in order (flattened): ints for an integer dtype,
// floats otherwise.
std::vector<Value> ValuesOf(const ConstTensor& c) {
  ConstTensor decoded = Materialize(c);
  tf::DataType t = decoded.dtype;
  bool integers = t != tf::DT_FLOAT && t != tf::DT_DOUBLE &&
                  t != tf::DT_HALF && t != tf::DT_BFLOAT16;
  std::vector<Value> items;
  items.reserve(decoded.values.size());
  for (double v : decoded.values) {
    items.push_back(integers ? Value::Int(static_cast<int64_t>(v))
                             : Value::Float(v));
  }
  return items;
}

}  // namespace

// The AttrValue for `value` set as attr `name` of an `op` node.
absl::StatusOr<tf::AttrValue> ToAttr(const std::string& op,
                                     const std::string& name,
                                     const Value& value, const Graph& graph) {
  if (value.attr != nullptr)
    return *value.attr;  // read from an attr, as it was
  std::string type;
  if (const tf::OpDef* def = OpRegistry::For(graph).Find(op)) {
    for (const auto& a : def->attr()) {
      if (a.name() == name) type = a.type();
    }
  }
  tf::AttrValue attr;
  switch (value.type) {
    case ValueType::kBool:
      attr.set_b(value.b);
      break;
    case ValueType::kInt:
      if (type == "float")
        attr.set_f(static_cast<float>(value.i));
      else
        attr.set_i(value.i);
      break;
    case ValueType::kFloat:
      attr.set_f(static_cast<float>(value.f));
      break;
    case ValueType::kString:
      if (type == "type") {
        absl::StatusOr<tf::DataType> t = ParseDataType(value.s);
        if (!t.ok()) return t.status();
        attr.set_type(*t);
      } else {
        attr.set_s(value.s);
      }
      break;
    case ValueType::kList: {
      absl::Status s = ListToAttr(name, type, value.list, &attr);
      if (!s.ok()) return s;
      break;
    }
    case ValueType::kConst:
    case ValueType::kTensor:
    case ValueType::kNode: {
      absl::StatusOr<ConstTensor> c = ToConstant(graph, value);
      if (!c.ok()) return c.status();
      if (absl::StartsWith(type, "list(") || type == "shape") {
        // A constant where a list is wanted: its values, in order.
        absl::Status s = ListToAttr(name, type, ValuesOf(*c), &attr);
        if (!s.ok()) return s;
        break;
      }
      if (type == "float" || type == "int" || type == "number") {
        // A one-value constant where a number is wanted (an epsilon
        // initializer as LayerNormalization's `epsilon`): its value (an
        // ATen Scalar, `number`, keeps the constant's kind).
        if (c->num_elements() != 1)
          return absl::InvalidArgumentError(
              absl::StrCat("attr `", name, "` takes a number, not a constant of ",
                           c->num_elements(), " values"));
        Value v = ValuesOf(*c)[0];
        if (type == "float" || (type == "number" && v.type != ValueType::kInt))
          attr.set_f(static_cast<float>(v.number()));
        else if (v.type == ValueType::kInt) attr.set_i(v.i);
        else return absl::InvalidArgumentError(
            absl::StrCat("attr `", name, "` takes an int, not ", v.f));
        break;
      }
      *attr.mutable_tensor() = ToTensorProto(*c);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("attr `", name, "` has no value"));
  }
  return attr;
}

absl::StatusOr<Value> Evaluator::Eval(const Graph& graph, const Bindings& b,
                                      const Expr& e,
                                      NodeFactory* factory) const {
  switch (e.kind) {
    case K::kBool:
      return Value::Bool(e.bool_value);
    case K::kInt:
      return Value::Int(e.int_value);
    case K::kFloat:
      return Value::Float(e.float_value);
    case K::kString:
      return Value::String(e.text);
    case K::kName: {
      const Value* v = b.Find(e.text);
      if (v == nullptr)
        return absl::NotFoundError(absl::StrCat("`", e.text, "` is not bound"));
      return *v;
    }
    case K::kPort: {
      absl::StatusOr<Value> base = Eval(graph, b, *e.args[0], factory);
      if (!base.ok()) return base.status();
      return Value::Tensor({base->tensor.node, e.port});
    }
    case K::kMember:
      return EvalMember(graph, b, e, factory);
    case K::kList: {
      std::vector<Value> items;
      for (const auto& a : e.args) {
        absl::StatusOr<Value> v = Eval(graph, b, *a, factory);
        if (!v.ok()) return v.status();
        items.push_back(*std::move(v));
      }
      return Value::List(std::move(items));
    }
    case K::kCall:
      return EvalCall(graph, b, e, factory);
    case K::kUnary:
      return EvalUnary(graph, b, e, factory);
    case K::kBinary:
      return EvalBinary(graph, b, e, factory);
    case K::kCreate:
      if (factory == nullptr)
        return absl::InvalidArgumentError("cannot create nodes in a guard");
      return factory->Create(e, "");
    case K::kIndex:
      return EvalIndex(graph, b, e, factory);
    case K::kListComp: {
      if (factory == nullptr) {
        return absl::InvalidArgumentError(
            "`[... for x in xs]` is for rewrites");
      }
      absl::StatusOr<Value> source = Eval(graph, b, *e.args[1], factory);
      if (!source.ok()) return source.status();
      bool constant =
          source->type == ValueType::kConst ||
          ((source->type == ValueType::kTensor ||
            source->type == ValueType::kNode) &&
           source->tensor.valid() &&
           graph.node(source->tensor.node).op() == "Const");
      if (constant) {
        // A constant's values, in order (flattened), as numbers.
        absl::StatusOr<ConstTensor> c = ToConstant(graph, *source);
        if (!c.ok()) return c.status();
        source = Value::List(ValuesOf(*c));
      }
      if (source->type != ValueType::kList) {
        return absl::InvalidArgumentError(absl::StrCat(
            "`for` iterates a list, not ", AValueType(source->type)));
      }
      std::vector<Value> out;
      for (const Value& item : source->list) {
        absl::Status bound = factory->BindItem(e.text, item);
        if (!bound.ok()) return bound;
        absl::StatusOr<Value> v = Eval(graph, b, *e.args[0], factory);
        if (!v.ok()) return v.status();
        out.push_back(*std::move(v));
      }
      return Value::List(std::move(out));
    }
    case K::kIf: {
      absl::StatusOr<Value> c = Eval(graph, b, *e.args[0], factory);
      if (!c.ok()) return c.status();
      if (c->type != ValueType::kBool) {
        return absl::InvalidArgumentError(
            absl::StrCat("`if` needs a bool, not ", AValueType(c->type)));
      }
      return Eval(graph, b, *e.args[c->b ? 1 : 2], factory);
    }
  }
  return absl::InternalError("bad expression");
}

namespace {

// The copy of tensor `t` in a set clone's copies: output `k` of the copy of
// `t`'s node.
absl::StatusOr<Value> CopyOf(const Graph& graph, const Value& copies,
                             const Value& t) {
  if (t.type != ValueType::kTensor && t.type != ValueType::kNode) {
    return absl::InvalidArgumentError(absl::StrCat(
        "copies are looked up by a tensor, not ", AValueType(t.type)));
  }
  auto it = copies.copies->find(t.tensor.node);
  if (it == copies.copies->end()) {
    return absl::NotFoundError(absl::StrCat(
        "`", graph.node(t.tensor.node).name(), "` was not copied"));
  }
  return t.type == ValueType::kNode
             ? Value::NodeRef(it->second)
             : Value::Tensor({it->second, t.tensor.port});
}

}  // namespace

absl::StatusOr<Value> Evaluator::EvalIndex(const Graph& graph,
                                           const Bindings& b, const Expr& e,
                                           NodeFactory* factory) const {
  absl::StatusOr<Value> base = Eval(graph, b, *e.args[0], factory);
  if (!base.ok()) return base.status();
  absl::StatusOr<Value> index = Eval(graph, b, *e.args[1], factory);
  if (!index.ok()) return index.status();
  if (base->type == ValueType::kCopies) {
    if (index->type != ValueType::kList) return CopyOf(graph, *base, *index);
    std::vector<Value> out;
    for (const Value& t : index->list) {
      absl::StatusOr<Value> c = CopyOf(graph, *base, t);
      if (!c.ok()) return c.status();
      out.push_back(*std::move(c));
    }
    return Value::List(std::move(out));
  }
  if (base->type != ValueType::kList) {
    return absl::InvalidArgumentError(
        absl::StrCat("`[...]` needs a list, not ", AValueType(base->type)));
  }
  if (index->type != ValueType::kInt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a list's index is an int, not ", AValueType(index->type)));
  }
  int64_t n = static_cast<int64_t>(base->list.size());
  int64_t i = index->i < 0 ? index->i + n : index->i;
  if (i < 0 || i >= n) {
    return absl::OutOfRangeError(absl::StrCat(
        "index ", index->i, " is out of range for a list of ", n, " item(s)"));
  }
  return base->list[i];
}

absl::StatusOr<Value> Evaluator::EvalMember(const Graph& graph,
                                            const Bindings& b, const Expr& e,
                                            NodeFactory* factory) const {
  absl::StatusOr<Value> base = Eval(graph, b, *e.args[0], factory);
  if (!base.ok()) return base.status();
  if (base->type != ValueType::kNode && base->type != ValueType::kTensor) {
    return absl::InvalidArgumentError(
        absl::StrCat("`.", e.text, "` of a non-node"));
  }
  const Node& n = graph.node(base->tensor.node);
  if (e.text == "op") return Value::String(n.op());
  if (e.text == "name") return Value::String(n.name());
  if (e.text == "device") return Value::String(n.device());
  return AttrValueOf(graph, n, e.text);
}

absl::StatusOr<Value> Evaluator::EvalCall(const Graph& graph, const Bindings& b,
                                          const Expr& e,
                                          NodeFactory* factory) const {
  if (e.text == "bound" && e.args.size() == 1)
    return Value::Bool(b.Find(e.args[0]->text) != nullptr);
  const Hook* hook = hooks_.Find(e.text);
  if (hook == nullptr)
    return absl::NotFoundError(absl::StrCat("unknown function `", e.text, "`"));
  const std::vector<ValueType>& params = hook->signature.params;
  std::vector<Value> args;
  args.reserve(e.args.size());
  for (size_t i = 0; i < e.args.size(); ++i) {
    absl::StatusOr<Value> v = Eval(graph, b, *e.args[i], factory);
    if (!v.ok()) return v.status();
    if (!params.empty() &&
        params[std::min(i, params.size() - 1)] == ValueType::kRegex &&
        v->regex == nullptr) {
      // Compiled with the rules when the argument is a literal or a param;
      // a computed string is compiled now.
      auto it = regexes_.find(e.args[i].get());
      absl::StatusOr<std::shared_ptr<const NameRegex>> re =
          it != regexes_.end() ? it->second : RegexOf(*v);
      if (!re.ok()) return re.status();
      v->regex = *std::move(re);
    }
    args.push_back(*std::move(v));
  }
  HookContext ctx{graph};
  return hook->fn(ctx, args);
}

absl::StatusOr<Value> Evaluator::EvalUnary(const Graph& graph,
                                           const Bindings& b, const Expr& e,
                                           NodeFactory* factory) const {
  absl::StatusOr<Value> v = Eval(graph, b, *e.args[0], factory);
  if (!v.ok()) return v.status();
  if (e.text == "not")
    return Value::Bool(!(v->type == ValueType::kBool && v->b));
  if (v->type == ValueType::kInt) return Value::Int(-v->i);
  if (v->type == ValueType::kFloat) return Value::Float(-v->f);
  absl::StatusOr<ConstTensor> c = ToConstant(graph, *v);
  if (!c.ok()) return c.status();
  absl::StatusOr<ConstTensor> r = Unary(*std::move(c), "neg");
  if (!r.ok()) return r.status();
  return Value::Constant(*std::move(r));
}

namespace {

// Whether two lists hold equal items (numbers by value, strings, bools,
// nested lists); an error for items that cannot be compared.
absl::StatusOr<bool> SameList(const std::vector<Value>& a,
                              const std::vector<Value>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Value &x = a[i], &y = b[i];
    if (x.is_number() && y.is_number()) {
      if (x.number() != y.number()) return false;
    } else if (x.type == ValueType::kString && y.type == ValueType::kString) {
      if (x.s != y.s) return false;
    } else if (x.type == ValueType::kBool && y.type == ValueType::kBool) {
      if (x.b != y.b) return false;
    } else if (x.type == ValueType::kList && y.type == ValueType::kList) {
      absl::StatusOr<bool> same = SameList(x.list, y.list);
      if (!same.ok() || !*same) return same;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot compare list items: ", AValueType(x.type),
                       " with ", AValueType(y.type)));
    }
  }
  return true;
}

}  // namespace

namespace {

// `a % b` and `a // b`: on ints, floored (Python's: -7 // 2 == -4, -7 % 2
// == 1); on floats, `%` is the floored remainder and `//` the floor of the
// quotient, as an int.
absl::StatusOr<Value> IntegerDivision(const std::string& op, const Value& a,
                                      const Value& b) {
  if (!a.is_number() || !b.is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("`", op, "` needs numbers, not ",
                     AValueType(a.is_number() ? b.type : a.type)));
  }
  if (b.number() == 0)
    return absl::InvalidArgumentError(absl::StrCat("`", op, "` by zero"));
  if (a.type == ValueType::kInt && b.type == ValueType::kInt) {
    if (a.i == INT64_MIN && b.i == -1)
      return absl::OutOfRangeError("the division overflows a 64-bit int");
    int64_t q = a.i / b.i, r = a.i % b.i;
    if (r != 0 && ((r < 0) != (b.i < 0))) {
      --q;
      r += b.i;
    }
    return Value::Int(op == "//" ? q : r);
  }
  double q = std::floor(a.number() / b.number());
  if (op == "%") return Value::Float(a.number() - q * b.number());
  if (!(std::fabs(q) < 9.2e18))
    return absl::OutOfRangeError("the quotient does not fit a 64-bit int");
  return Value::Int(static_cast<int64_t>(q));
}

}  // namespace

absl::StatusOr<Value> Evaluator::EvalBinary(const Graph& graph,
                                            const Bindings& bindings,
                                            const Expr& e,
                                            NodeFactory* factory) const {
  const std::string& op = e.text;
  absl::StatusOr<Value> a = Eval(graph, bindings, *e.args[0], factory);
  if (!a.ok()) return a.status();
  if (op == "and" || op == "or") {
    bool av = a->type == ValueType::kBool && a->b;
    if (op == "and" && !av) return Value::Bool(false);
    if (op == "or" && av) return Value::Bool(true);
    absl::StatusOr<Value> b = Eval(graph, bindings, *e.args[1], factory);
    if (!b.ok()) return b.status();
    return Value::Bool(b->type == ValueType::kBool && b->b);
  }
  absl::StatusOr<Value> b = Eval(graph, bindings, *e.args[1], factory);
  if (!b.ok()) return b.status();
  if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" ||
      op == ">=") {
    // A one-value constant compares as a number.
    for (absl::StatusOr<Value>* v : {&a, &b}) {
      if ((*v)->type == ValueType::kConst &&
          (*v)->constant->num_elements() == 1) {
        **v = Value::Float(Materialize(*(*v)->constant).values[0]);
      }
    }
    int cmp = 0;
    if (a->is_number() && b->is_number()) {
      double x = a->number(), y = b->number();
      cmp = x < y ? -1 : x > y ? 1 : 0;
    } else if (a->type == ValueType::kString && b->type == ValueType::kString) {
      cmp = a->s.compare(b->s);
    } else if (a->type == ValueType::kBool && b->type == ValueType::kBool) {
      cmp = static_cast<int>(a->b) - static_cast<int>(b->b);
    } else if ((a->type == ValueType::kTensor || a->type == ValueType::kNode) &&
               (b->type == ValueType::kTensor || b->type == ValueType::kNode)) {
      // Two constants compare by value (shape and values); other tensors by
      // identity (`same_node(a, b)` says identity for constants too).
      bool consts = graph.node(a->tensor.node).op() == "Const" &&
                    graph.node(b->tensor.node).op() == "Const" &&
                    a->tensor.port == 0 && b->tensor.port == 0;
      if (consts && (op == "==" || op == "!=")) {
        absl::StatusOr<ConstTensor> x = ConstantOf(graph, a->tensor);
        if (!x.ok()) return x.status();
        absl::StatusOr<ConstTensor> y = ConstantOf(graph, b->tensor);
        if (!y.ok()) return y.status();
        cmp = x->shape == y->shape && x->values == y->values ? 0 : 1;
      } else {
        cmp = a->tensor == b->tensor ? 0 : 1;
      }
    } else if (a->type == ValueType::kList && b->type == ValueType::kList &&
               (op == "==" || op == "!=")) {
      // Lists compare by value, item by item (`c.strides == [1, 1, 1, 1]`).
      absl::StatusOr<bool> same = SameList(a->list, b->list);
      if (!same.ok()) return same.status();
      cmp = *same ? 0 : 1;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot compare ", AValueType(a->type), " with ",
                       AValueType(b->type)));
    }
    bool r = op == "=="   ? cmp == 0
             : op == "!=" ? cmp != 0
             : op == "<"  ? cmp < 0
             : op == ">"  ? cmp > 0
             : op == "<=" ? cmp <= 0
                          : cmp >= 0;
    return Value::Bool(r);
  }
  if (op == "+" && a->type == ValueType::kString &&
      b->type == ValueType::kString) {
    return Value::String(a->s + b->s);
  }
  if (op == "%" || op == "//") return IntegerDivision(op, *a, *b);
  if (a->type == ValueType::kInt && b->type == ValueType::kInt && op != "/") {
    int64_t r = 0;
    bool overflow = op == "+"   ? __builtin_add_overflow(a->i, b->i, &r)
                    : op == "-" ? __builtin_sub_overflow(a->i, b->i, &r)
                                : __builtin_mul_overflow(a->i, b->i, &r);
    if (overflow) {
      return absl::OutOfRangeError(
          absl::StrCat(a->i, " ", op, " ", b->i, " overflows a 64-bit int"));
    }
    return Value::Int(r);
  }
  if (a->is_number() && b->is_number()) {
    double x = a->number(), y = b->number();
    return Value::Float(op == "+"   ? x + y
                        : op == "-" ? x - y
                        : op == "*" ? x * y
                                    : x / y);
  }
  absl::StatusOr<ConstTensor> x = ToConstant(graph, *a);
  if (!x.ok()) return x.status();
  absl::StatusOr<ConstTensor> y = ToConstant(graph, *b);
  if (!y.ok()) return y.status();
  // A bare number takes the tensor's dtype.
  if (a->is_number()) x->dtype = y->dtype;
  if (b->is_number()) y->dtype = x->dtype;
  absl::StatusOr<ConstTensor> r = Broadcast(*x, *y, op);
  if (!r.ok()) return r.status();
  return Value::Constant(*std::move(r));
}

}  // namespace graft::dsl
