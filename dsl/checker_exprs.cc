// The checker's expressions: names, member access, hook calls (with their
// typed signatures and regexes compiled now), operators and node creation.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/checker.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"

namespace graft::dsl {

using K = Expr::Kind;

ValueType Checker::CheckExpr(const RuleFile& f, const Expr& e, Names* names,
                             bool in_guard) {
  switch (e.kind) {
    case K::kBool:
      return ValueType::kBool;
    case K::kInt:
      return ValueType::kInt;
    case K::kFloat:
      return ValueType::kFloat;
    case K::kString:
      CountTemplateParams(e.text);
      return ValueType::kString;
    case K::kName:
      return CheckName(f, e, names);
    case K::kPort: {  // n:1, or any node's port: qs[0]:1
      if (e.args[0]->kind == K::kName) return CheckName(f, e, names);
      const ValueType base = CheckExpr(f, *e.args[0], names, in_guard);
      if (base != ValueType::kNode && base != ValueType::kTensor && base != ValueType::kAny)
        Error(f, e.loc, absl::StrCat("`:", e.port, "` takes a node's output, not of ",
                                     AValueType(base)));
      return ValueType::kTensor;
    }
    case K::kMember: {
      ValueType base = CheckExpr(f, *e.args[0], names, in_guard);
      if (base != ValueType::kNode && base != ValueType::kTensor &&
          base != ValueType::kAny) {
        Error(f, e.loc,
              absl::StrCat("`.", e.text, "` needs a node, not ",
                           AValueType(base)));
      }
      if (e.text == "op" || e.text == "name" || e.text == "device")
        return ValueType::kString;
      if (e.args[0]->kind == K::kName) {
        auto it = names->find(e.args[0]->text);
        // At the attr's name, after `n.`.
        Loc at = e.args[0]->loc;
        at.col += static_cast<int>(e.args[0]->text.size()) + 1;
        if (it != names->end())
          CheckAttrName(f, it->first, it->second.ops, e.text, at);
      }
      return ValueType::kAny;
    }
    case K::kList:
      for (const auto& a : e.args) CheckExpr(f, *a, names, in_guard);
      return ValueType::kList;
    case K::kCall:
      return CheckCall(f, e, names, in_guard);
    case K::kUnary: {
      ValueType t = CheckExpr(f, *e.args[0], names, in_guard);
      return e.text == "not" ? ValueType::kBool : t;
    }
    case K::kBinary:
      return CheckBinary(f, e, names, in_guard);
    case K::kCreate:
      return CheckCreate(f, e, names, in_guard);
    case K::kIndex:
      return CheckIndex(f, e, names, in_guard);
    case K::kListComp: {
      if (in_guard) Error(f, e.loc, "`[... for x in xs]` is for rewrites");
      ValueType t = CheckExpr(f, *e.args[1], names, in_guard);
      // A constant's values: a computed constant, or a Const's tensor.
      if (t != ValueType::kList && t != ValueType::kAny &&
          t != ValueType::kConst && t != ValueType::kTensor) {
        Error(f, e.args[1]->loc,
              absl::StrCat("`for` iterates a list or a constant's values, "
                           "not ", AValueType(t)));
      }
      BindItem(f, e.text, e.loc, names);
      CheckExpr(f, *e.args[0], names, in_guard);
      return ValueType::kList;
    }
    case K::kIf: {
      ValueType c = CheckExpr(f, *e.args[0], names, in_guard);
      if (c != ValueType::kBool && c != ValueType::kAny) {
        Error(f, e.args[0]->loc,
              absl::StrCat("`if` needs a bool, not ", AValueType(c)));
      }
      ValueType a = CheckExpr(f, *e.args[1], names, in_guard);
      ValueType b = CheckExpr(f, *e.args[2], names, in_guard);
      if (a == b) return a;
      if (Accepts(ValueType::kFloat, a) && Accepts(ValueType::kFloat, b))
        return ValueType::kFloat;
      if (Accepts(ValueType::kTensor, a) && Accepts(ValueType::kTensor, b))
        return ValueType::kTensor;
      return ValueType::kAny;
    }
  }
  return ValueType::kAny;
}

// `xs[i]`: an item of a list (an int index, negative from the end), or the
// copy of a tensor (or of each tensor of a list) in a set clone's copies.
ValueType Checker::CheckIndex(const RuleFile& f, const Expr& e, Names* names,
                              bool in_guard) {
  ValueType base = CheckExpr(f, *e.args[0], names, in_guard);
  ValueType index = CheckExpr(f, *e.args[1], names, in_guard);
  if (base == ValueType::kList) {
    if (index != ValueType::kInt && index != ValueType::kAny) {
      Error(f, e.args[1]->loc,
            absl::StrCat("a list's index is an int, not ", AValueType(index)));
    }
    // A written list with a written index: out of range is known now.
    const Expr& list = *e.args[0];
    const Expr& at = *e.args[1];
    bool negative =
        at.kind == K::kUnary && at.text == "-" && at.args[0]->kind == K::kInt;
    if (list.kind == K::kList && (at.kind == K::kInt || negative)) {
      int64_t i = negative ? -at.args[0]->int_value : at.int_value;
      int64_t n = static_cast<int64_t>(list.args.size());
      if (i >= n || i < -n) {
        Error(f, at.loc,
              absl::StrCat("index ", i, " is out of range for a list of ", n,
                           " item(s)"));
      }
    }
    return ValueType::kAny;
  }
  if (base == ValueType::kCopies) {
    if (!Accepts(ValueType::kTensor, index) && index != ValueType::kList) {
      Error(f, e.args[1]->loc,
            absl::StrCat("copies are looked up by a tensor or a list of "
                         "them, not ",
                         AValueType(index)));
    }
    return index == ValueType::kList ? ValueType::kList : ValueType::kTensor;
  }
  if (base != ValueType::kAny) {
    Error(f, e.loc,
          absl::StrCat("`[...]` needs a list or a set clone's copies, not ",
                       AValueType(base)));
  }
  return ValueType::kAny;
}

ValueType Checker::CheckName(const RuleFile& f, const Expr& e, Names* names) {
  auto it = names->find(e.text);
  if (it == names->end()) {
    auto p = param_types_.find(e.text);
    if (p != param_types_.end() && e.kind == K::kName) {
      ++param_uses_[e.text];
      return ParamType(p->second);
    }
    auto plan = plan_types_.find(e.text);
    if (plan != plan_types_.end()) {
      ++plan_uses_[e.text];
      return e.kind == K::kPort ? ValueType::kTensor : plan->second;
    }
    std::vector<std::string> known;
    for (const auto& [k, v] : *names) known.push_back(k);
    for (const auto& [k, v] : plan_types_) known.push_back(k);
    Error(f, e.loc, absl::StrCat("unknown name `", e.text, "`"),
          Suggest(e.text, known));
    return ValueType::kAny;
  }
  it->second.uses++;
  if (e.kind == K::kPort) return ValueType::kTensor;
  return it->second.type;
}

// A regex argument known now (a literal, or a string param) is compiled
// once, here; a bad one is an error at the argument.
const std::string* Checker::TextKnownNow(const Expr& arg) const {
  if (arg.kind == K::kString) return &arg.text;
  if (arg.kind != K::kName) return nullptr;
  auto p = params_->find(arg.text);
  return p != params_->end() && p->second.type == ValueType::kString
             ? &p->second.s
             : nullptr;
}

void Checker::CompileRegexArg(const RuleFile& f, const Expr& arg) {
  const std::string* text = TextKnownNow(arg);
  if (text == nullptr) return;  // computed when the rule runs
  absl::StatusOr<std::shared_ptr<const NameRegex>> re =
      NameRegex::Compile(*text);
  if (!re.ok()) {
    Error(f, arg.loc, std::string(re.status().message()));
    return;
  }
  evaluator_->AddRegex(&arg, *std::move(re));
}

void Checker::CheckOpListArg(const RuleFile& f, const Expr& arg) {
  const std::string* text = TextKnownNow(arg);
  if (text == nullptr) return;  // computed when the rule runs
  const std::string from =
      arg.kind == K::kName ? absl::StrCat(" (param `", arg.text, "`)") : "";
  const Dialect& dialect = DialectOf(f);
  const OpRegistry& ops = dialect.Ops();
  std::vector<std::string> names;  // the registry's, when first needed
  auto all_names = [&]() -> const std::vector<std::string>& {
    if (names.empty()) names = ops.OpNames();
    return names;
  };
  for (const std::string& glob : SplitGlobs(*text)) {
    if (glob.back() != '*') {
      if (ops.Find(glob) == nullptr && !dialect.IsInterfaceOp(glob)) {
        Error(f, arg.loc, absl::StrCat("unknown op `", glob, "`", from),
              Suggest(glob, all_names()));
      }
      continue;
    }
    if (std::none_of(
            all_names().begin(), all_names().end(),
            [&](const std::string& op) { return GlobMatch(glob, op); })) {
      Error(f, arg.loc,
            absl::StrCat("`", glob, "`", from, " matches no op of the ",
                         dialect.name(), " registry"));
    }
  }
}

ValueType Checker::CheckCall(const RuleFile& f, const Expr& e, Names* names,
                             bool in_guard) {
  if (e.text == "bound") {
    // bound(b): whether a name of an optional part is bound in this match.
    auto it = e.args.size() == 1 && e.args[0]->kind == K::kName
                  ? names->find(e.args[0]->text)
                  : names->end();
    if (it == names->end()) {
      Error(f, e.loc,
            "`bound` takes one name the rule's pattern binds (as in "
            "`bound(b)`)");
    } else {
      it->second.uses++;
    }
    return ValueType::kBool;
  }
  const Hook* hook = hooks_.Find(e.text);
  std::vector<ValueType> types;
  for (const auto& a : e.args)
    types.push_back(CheckExpr(f, *a, names, in_guard));
  if (hook == nullptr) {
    std::vector<std::string> known;
    for (const Hook* h : hooks_.All()) known.push_back(h->name);
    Error(f, e.loc, absl::StrCat("unknown function `", e.text, "`"),
          Suggest(e.text, known));
    return ValueType::kAny;
  }
  const HookSignature& sig = hook->signature;
  size_t n = e.args.size();
  size_t least = sig.params.size() - sig.optional;
  bool count_ok = sig.variadic ? n >= sig.params.size()
                               : n >= least && n <= sig.params.size();
  if (!count_ok) {
    std::string takes =
        sig.variadic       ? absl::StrCat("at least ", sig.params.size())
        : sig.optional > 0 ? absl::StrCat(least, " to ", sig.params.size())
                           : absl::StrCat(sig.params.size());
    Error(
        f, e.loc,
        absl::StrCat("`", e.text, "` takes ", takes, " argument(s), got ", n));
    return sig.result;
  }
  for (size_t i = 0; i < n; ++i) {
    ValueType want = sig.params[std::min(i, sig.params.size() - 1)];
    if (!Accepts(want, types[i])) {
      Error(f, e.args[i]->loc,
            absl::StrCat("argument ", i + 1, " of `", e.text, "` must be ",
                         AValueType(want), ", not ", AValueType(types[i])));
    } else if (want == ValueType::kRegex) {
      CompileRegexArg(f, *e.args[i]);
    } else if (want == ValueType::kOpList) {
      CheckOpListArg(f, *e.args[i]);
    }
  }
  return sig.result;
}

// Comparisons the evaluator cannot make are errors now, not a guard that
// fails at every node: a list with a number, a string with a bool, lists
// ordered with `<`, a node with a number...
void Checker::CheckComparison(const RuleFile& f, const Expr& e, ValueType a,
                              ValueType b) {
  if (a == ValueType::kAny || b == ValueType::kAny) return;
  auto group = [](ValueType t) {
    switch (t) {
      case ValueType::kInt:
      case ValueType::kFloat:
      case ValueType::kConst:
        return 0;  // numbers and constants
      case ValueType::kString:
        return 1;
      case ValueType::kBool:
        return 2;
      case ValueType::kTensor:
      case ValueType::kNode:
        return 3;
      case ValueType::kList:
        return 4;
      default:
        return 5;
    }
  };
  bool ordered = e.text != "==" && e.text != "!=";
  bool ok = group(a) == group(b) && group(a) != 5 &&
            !(ordered && (group(a) == 3 || group(a) == 4));
  // A computed constant against a Const tensor: compared by value at run
  // time only when it holds one value; let it through.
  if ((group(a) == 0 && group(b) == 3) || (group(a) == 3 && group(b) == 0))
    ok = a == ValueType::kConst || b == ValueType::kConst;
  if (!ok) {
    Error(f, e.loc,
          absl::StrCat("cannot ", ordered ? "order" : "compare", " ",
                       AValueType(a), " with ", AValueType(b)));
  }
}

ValueType Checker::CheckBinary(const RuleFile& f, const Expr& e, Names* names,
                               bool in_guard) {
  ValueType a = CheckExpr(f, *e.args[0], names, in_guard);
  ValueType b = CheckExpr(f, *e.args[1], names, in_guard);
  const std::string& op = e.text;
  if (op == "and" || op == "or") return ValueType::kBool;
  if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" ||
      op == ">=") {
    CheckComparison(f, e, a, b);
    return ValueType::kBool;
  }
  if (op == "%" || op == "//") {
    for (ValueType t : {a, b}) {
      if (t != ValueType::kInt && t != ValueType::kFloat &&
          t != ValueType::kAny) {
        Error(f, e.loc,
              absl::StrCat("`", op, "` needs numbers, not ", AValueType(t)));
      }
    }
    return a == ValueType::kInt && b == ValueType::kInt ? ValueType::kInt
           : op == "//"                                 ? ValueType::kInt
                                                        : ValueType::kFloat;
  }
  bool text = a == ValueType::kString || b == ValueType::kString;
  if (op == "+" && text && (a == ValueType::kString || a == ValueType::kAny) &&
      (b == ValueType::kString || b == ValueType::kAny)) {
    return ValueType::kString;  // joins strings
  }
  for (ValueType t : {a, b}) {
    if (t == ValueType::kString || t == ValueType::kBool) {
      Error(f, e.loc,
            absl::StrCat("`", op, "` needs numbers or constants, not ",
                         AValueType(t)));
    }
  }
  if (a == ValueType::kInt && b == ValueType::kInt) return ValueType::kInt;
  if ((a == ValueType::kInt || a == ValueType::kFloat) &&
      (b == ValueType::kInt || b == ValueType::kFloat)) {
    return ValueType::kFloat;
  }
  return ValueType::kConst;
}

ValueType Checker::CheckCreate(const RuleFile& f, const Expr& e, Names* names,
                               bool in_guard) {
  if (e.has_name_template) CountTemplateParams(e.name_template);
  if (in_guard) Error(f, e.loc, "a guard cannot create nodes");
  if (!e.text.empty()) CheckOp(f, e.text, e.loc);
  if (e.op_expr) {
    ValueType t = CheckExpr(f, *e.op_expr, names, in_guard);
    if (t != ValueType::kString && t != ValueType::kAny) {
      Error(f, e.op_expr->loc,
            absl::StrCat("expected the op's name, a string, not ",
                         AValueType(t)));
    }
  }
  if (!e.op_of.empty()) {
    auto it = names->find(e.op_of);
    if (it == names->end()) {
      Error(f, e.loc, absl::StrCat("unknown name `", e.op_of, "`"));
    } else {
      it->second.uses++;
    }
  }
  for (const auto& a : e.args) {
    ValueType t = CheckExpr(f, *a, names, in_guard);
    bool is_const_op = e.text == "Const" && e.args.size() == 1;
    if (!is_const_op && (t == ValueType::kConst || t == ValueType::kInt ||
                         t == ValueType::kFloat)) {
      Error(f, a->loc, "a constant is not a tensor; wrap it in `Const(...)`");
    }
  }
  const tf::OpDef* def =
      e.text.empty() ? nullptr : OpsOf(f).Find(e.text);
  // `m.op(...) { attr: v }`: m's ops, when its pattern names them.
  std::vector<std::string> copied_ops;
  if (!e.op_of.empty()) {
    auto it = names->find(e.op_of);
    if (it != names->end()) copied_ops = it->second.ops;
  }
  for (const AttrItem& item : e.attrs) {
    if (!item.spread && def != nullptr && !absl::StartsWith(item.name, "_")) {
      // An attr of any of the op's versions (ONNX's ReduceMax has `axes`
      // below opset 18): a rule may write the form a model's opset takes.
      bool known = false;
      for (const auto& a : def->attr()) known = known || a.name() == item.name;
      for (const tf::OpDef* version : OpsOf(f).Versions(e.text))
        for (const auto& a : version->attr()) known = known || a.name() == item.name;
      if (!known) {
        std::vector<std::string> attrs;
        for (const auto& a : def->attr()) attrs.push_back(a.name());
        Error(f, item.loc,
              absl::StrCat("`", e.text, "` has no attr `", item.name, "`"),
              Suggest(item.name, attrs));
      }
    }
    if (!item.spread && def == nullptr)
      CheckAttrName(f, e.op_of, copied_ops, item.name, item.loc);
    if (item.spread) {
      auto it = names->find(item.name);
      if (it == names->end()) {
        Error(f, item.loc, absl::StrCat("unknown name `", item.name, "`"));
      } else {
        it->second.uses++;
      }
    } else {
      CheckExpr(f, *item.value, names, in_guard);
    }
  }
  return ValueType::kNode;
}

void Checker::CheckAttrName(const RuleFile& f, const std::string& node,
                            const std::vector<std::string>& ops,
                            const std::string& attr, Loc loc) {
  if (ops.empty() || absl::StartsWith(attr, "_")) return;
  std::vector<std::string> attrs;
  for (const std::string& op : ops) {
    const tf::OpDef* def = OpsOf(f).Find(op);
    if (def == nullptr) return;
    for (const auto& a : def->attr()) {
      if (a.name() == attr) return;
      attrs.push_back(a.name());
    }
  }
  Error(f, loc,
        absl::StrCat("`", node, "` (", absl::StrJoin(ops, " | "),
                     ") has no attr `", attr, "`"),
        Suggest(attr, attrs));
}

}  // namespace graft::dsl
