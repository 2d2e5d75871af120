#include "dsl/compiler.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/parser.h"
#include "engine/graph_io.h"
#include "engine/op_registry.h"
#include "engine/surgery.h"

namespace graft::dsl {
namespace {

using K = Expr::Kind;
using OK = OperandPattern::Kind;

// ---- compiled patterns ----

struct POperand {
  OK kind = OK::kWildcard;
  std::string name;
  int port = 0;
  int nested = -1;  // pattern node of a nested / bound operand
  int stmt = -1;    // pattern node of the statement `name` refers to
};

struct PNode {
  std::vector<std::string> ops;  // empty: any op
  std::string binding;           // statement name, or empty
  bool has_operands = false;
  bool variadic = false;
  std::vector<POperand> data;
  std::vector<POperand> control;
};

struct Guard {
  ExprPtr expr;
  std::set<std::string> names;  // bindings it reads
};

using Env = std::map<std::string, Value>;

// A pattern node to match against a tensor; `ctx` says where it sits, for
// explanations ("operand 1 of `conv`").
struct Task {
  int first;
  Endpoint second;
  std::string ctx;
};

// Source-like text of an expression, for explanations.
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
      return absl::StrCat(ExprText(*e.args[0]), ":", e.port);
    case K::kMember:
      return absl::StrCat(ExprText(*e.args[0]), ".", e.text);
    case K::kUnary:
      return e.text == "not" ? "not " + ExprText(*e.args[0])
                             : "-" + ExprText(*e.args[0]);
    case K::kBinary:
      return absl::StrCat(ExprText(*e.args[0]), " ", e.text, " ",
                          ExprText(*e.args[1]));
    case K::kCall:
    case K::kList:
    case K::kCreate: {
      std::vector<std::string> args;
      for (const auto& a : e.args) args.push_back(ExprText(*a));
      std::string head = e.kind == K::kCall     ? e.text
                         : e.kind == K::kCreate ? e.text
                                                : "";
      return e.kind == K::kList
                 ? absl::StrCat("[", absl::StrJoin(args, ", "), "]")
                 : absl::StrCat(head, "(", absl::StrJoin(args, ", "), ")");
    }
  }
  return "?";
}

bool OpMatches(const std::vector<std::string>& ops, const std::string& op) {
  if (ops.empty()) return true;
  for (const std::string& pattern : ops) {
    if (GlobMatch(pattern, op)) return true;
  }
  return false;
}

void CollectNames(const Expr& e, std::set<std::string>* out) {
  if (e.kind == K::kName || e.kind == K::kPort) out->insert(e.text);
  if (e.kind == K::kCreate && !e.op_of.empty()) out->insert(e.op_of);
  for (const auto& a : e.args) CollectNames(*a, out);
  for (const auto& attr : e.attrs) {
    if (attr.spread) out->insert(attr.name);
    if (attr.value) CollectNames(*attr.value, out);
  }
}

// Splits `a and b and c` into its conjuncts.
void Conjuncts(const ExprPtr& e, std::vector<ExprPtr>* out) {
  if (e->kind == K::kBinary && e->text == "and") {
    Conjuncts(e->args[0], out);
    Conjuncts(e->args[1], out);
  } else {
    out->push_back(e);
  }
}

std::string Substitute(const std::string& text, const Graph& g,
                       const Env& env) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    size_t close = text.find('}', i);
    if (text[i] == '{' && close != std::string::npos) {
      std::string key = text.substr(i + 1, close - i - 1);
      auto it = env.find(key);
      if (it != env.end() && (it->second.type == ValueType::kNode ||
                              it->second.type == ValueType::kTensor)) {
        out += g.node(it->second.tensor.node).name();
      } else if (it != env.end() && it->second.type == ValueType::kString) {
        out += it->second.s;
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

absl::StatusOr<tf::DataType> ParseDtype(const std::string& name) {
  static const std::pair<const char*, tf::DataType> kNames[] = {
      {"float32", tf::DT_FLOAT},     {"float", tf::DT_FLOAT},
      {"float64", tf::DT_DOUBLE},    {"double", tf::DT_DOUBLE},
      {"float16", tf::DT_HALF},      {"half", tf::DT_HALF},
      {"bfloat16", tf::DT_BFLOAT16}, {"int8", tf::DT_INT8},
      {"int16", tf::DT_INT16},       {"int32", tf::DT_INT32},
      {"int64", tf::DT_INT64},       {"uint8", tf::DT_UINT8},
      {"uint16", tf::DT_UINT16},     {"bool", tf::DT_BOOL},
      {"string", tf::DT_STRING}};
  for (const auto& [n, t] : kNames) {
    if (name == n) return t;
  }
  tf::DataType t;
  if (tf::DataType_Parse(name, &t)) return t;
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype `", name, "`"));
}

// The AttrValue for `value` set as attr `name` of an `op` node.
absl::StatusOr<tf::AttrValue> ToAttr(const std::string& op,
                                     const std::string& name,
                                     const Value& value,
                                     const HookContext& ctx) {
  std::string type;
  if (const tf::OpDef* def = OpRegistry::Tensorflow().Find(op)) {
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
        absl::StatusOr<tf::DataType> t = ParseDtype(value.s);
        if (!t.ok()) return t.status();
        attr.set_type(*t);
      } else {
        attr.set_s(value.s);
      }
      break;
    case ValueType::kList:
      for (const Value& v : value.list) {
        if (v.type == ValueType::kInt)
          attr.mutable_list()->add_i(v.i);
        else if (v.type == ValueType::kFloat)
          attr.mutable_list()->add_f(static_cast<float>(v.f));
        else if (v.type == ValueType::kString)
          attr.mutable_list()->add_s(v.s);
        else if (v.type == ValueType::kBool)
          attr.mutable_list()->add_b(v.b);
      }
      break;
    case ValueType::kConst:
    case ValueType::kTensor:
    case ValueType::kNode: {
      absl::StatusOr<ConstTensor> c = ToConstant(ctx, value);
      if (!c.ok()) return c.status();
      *attr.mutable_tensor() = ToTensorProto(*c);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("attr `", name, "` has no value"));
  }
  return attr;
}

// ---- the compiled rule ----

struct DslMatch : MatchState {
  Env env;
};

// The graph a `splice` copies from: a file, or a `graph` param (null when
// the param was given no file).
struct SpliceSource {
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const tf::GraphDef> whole;  // the whole graph, when no `for`
  std::string what;                           // "`file`" or "param `name`"
};

// A file's `require` statement, with where it is.
struct Requirement {
  ExprPtr expr;
  std::string where;  // "file:line"
};

// What a rule set checks before it rewrites anything (its files' `require`s
// and range tables), shared by its rules; the driver prepares every rule,
// so the result is kept for the graph version it was computed on.
struct SetChecks {
  std::vector<Requirement> requirements;
  const Graph* graph = nullptr;
  uint64_t version = 0;
  absl::Status result;
};

class CompiledRule : public ::graft::Rule {
 public:
  CompiledRule(std::string name, int priority, std::vector<PNode> pnodes,
               int root, std::vector<Guard> guards, std::vector<Action> actions,
               std::map<std::string, Value> params, const HookRegistry& hooks)
      : name_(std::move(name)),
        priority_(priority),
        pnodes_(std::move(pnodes)),
        root_(root),
        guards_(std::move(guards)),
        actions_(std::move(actions)),
        params_(std::move(params)),
        hooks_(hooks) {}

  const std::string& name() const override { return name_; }
  int priority() const override { return priority_; }
  std::vector<std::string> anchor_ops() const override {
    return pnodes_[root_].ops;
  }

  // The files' `require`s hold, and every range table a param names names
  // tensors of this graph (once per set and graph version).
  absl::Status Prepare(const Graph& graph) const override {
    SetChecks& checks = *checks_;
    if (checks.graph != &graph || checks.version != graph.version()) {
      checks.result = RunSetChecks(graph);
      checks.graph = &graph;
      checks.version = graph.version();
    }
    return checks.result;
  }

  absl::Status RunSetChecks(const Graph& graph) const {
    for (const Requirement& req : checks_->requirements) {
      absl::StatusOr<Value> v = Eval(graph, params_, *req.expr, nullptr);
      if (!v.ok())
        return absl::FailedPreconditionError(
            absl::StrCat(req.where, ": ", v.status().message()));
      if (v->type != ValueType::kBool || !v->b) {
        return absl::FailedPreconditionError(absl::StrCat(
            req.where, ": `require ", ExprText(*req.expr), "` does not hold"));
      }
    }
    for (const auto& [name, v] : params_) {
      if (v.type != ValueType::kRanges || v.ranges == nullptr) continue;
      absl::Status s = CheckTensorRanges(*v.ranges, graph);
      if (!s.ok()) return Prefixed(absl::StrCat("param `", name, "`: "), s);
    }
    return absl::OkStatus();
  }

  std::unique_ptr<MatchState> Match(const Graph& graph,
                                    NodeId root) const override {
    Search s;
    s.env = params_;
    s.guard_done.assign(guards_.size(), false);
    std::vector<Task> tasks = {{root_, {root, 0}, ""}};
    auto result = std::make_unique<DslMatch>();
    if (!Solve(graph, s, tasks, result.get())) return nullptr;
    result->root = root;
    return result;
  }

  absl::Status Rewrite(const MatchState& base, Rewriter& rewriter,
                       RewritePlan* plan) const override {
    const DslMatch& match = static_cast<const DslMatch&>(base);
    Env env = match.env;
    Exec exec{rewriter, env, match, plan, {}};
    for (const Action& action : actions_) {
      absl::Status s = Run(exec, action);
      if (!s.ok()) {
        return Prefixed(absl::StrCat("line ", action.loc.line, ": "), s);
      }
    }
    return absl::OkStatus();
  }

 private:
  struct Search {
    Env env;
    std::vector<NodeId> nodes;
    std::vector<bool> guard_done;
  };

  struct Exec {
    Rewriter& rewriter;
    Env& env;
    const DslMatch& match;
    RewritePlan* plan;
    std::set<NodeId> created;
  };

  // Evaluates every guard whose names are bound; false if one fails.
  bool GuardsHold(const Graph& graph, Search& s) const {
    for (size_t i = 0; i < guards_.size(); ++i) {
      if (s.guard_done[i]) continue;
      bool ready =
          std::all_of(guards_[i].names.begin(), guards_[i].names.end(),
                      [&](const std::string& n) { return s.env.count(n) > 0; });
      if (!ready) continue;
      s.guard_done[i] = true;
      absl::StatusOr<Value> v = Eval(graph, s.env, *guards_[i].expr, nullptr);
      if (!v.ok()) {
        return Fail(s, absl::StrCat("guard `", ExprText(*guards_[i].expr),
                                    "` failed: ", v.status().message()));
      }
      if (v->type != ValueType::kBool || !v->b) {
        return Fail(s, absl::StrCat("guard `", ExprText(*guards_[i].expr),
                                    "` is false"));
      }
    }
    return true;
  }

  // Records why a branch of the search failed (the deepest reason wins) and
  // returns false. Costs nothing outside explain mode.
  bool Fail(const Search& s, std::string reason) const {
    if (why_ != nullptr && s.nodes.size() >= why_depth_) {
      why_depth_ = s.nodes.size();
      *why_ = std::move(reason);
    }
    return false;
  }

 public:
  // The match at `root`, or nullptr and in `why` the reason the search got
  // furthest with.
  std::unique_ptr<MatchState> Explain(const Graph& graph, NodeId root,
                                      std::string* why) const {
    why->clear();
    why_ = why;
    why_depth_ = 0;
    std::unique_ptr<MatchState> m =
        OpMatches(pnodes_[root_].ops, graph.node(root).op())
            ? Match(graph, root)
            : nullptr;
    if (m == nullptr && why->empty()) {
      *why = absl::StrCat("the root: expected ",
                          absl::StrJoin(pnodes_[root_].ops, " | "), ", found ",
                          graph.node(root).op(), " `", graph.node(root).name(),
                          "`");
    }
    why_ = nullptr;
    return m;
  }
  static const Env& Bindings(const MatchState& m) {
    return static_cast<const DslMatch&>(m).env;
  }

 private:
  static bool BindTensor(Search& s, const std::string& name, Endpoint e) {
    auto it = s.env.find(name);
    if (it == s.env.end()) {
      s.env[name] = Value::Tensor(e);
      return true;
    }
    return it->second.tensor == e;
  }

  bool Solve(const Graph& graph, Search s, std::vector<Task> tasks,
             DslMatch* out) const {
    if (tasks.empty()) {
      if (!GuardsHold(graph, s)) return false;
      out->env = std::move(s.env);
      out->nodes = std::move(s.nodes);
      return true;
    }
    Task task = tasks.back();
    tasks.pop_back();
    int pi = task.first;
    Endpoint e = task.second;
    const PNode& pn = pnodes_[pi];
    const Node& node = graph.node(e.node);
    std::string what = !pn.binding.empty() ? absl::StrCat("`", pn.binding, "`")
                       : !task.ctx.empty() ? task.ctx
                                           : "the root";
    if (!OpMatches(pn.ops, node.op())) {
      return Fail(
          s, absl::StrCat(what, ": expected ", absl::StrJoin(pn.ops, " | "),
                          ", found ", node.op(), " `", node.name(), "`"));
    }
    if (!pn.binding.empty()) {
      auto it = s.env.find(pn.binding);
      if (it != s.env.end()) {
        if (it->second.tensor.node != e.node) {
          return Fail(
              s, absl::StrCat(
                     what, " is `", graph.node(it->second.tensor.node).name(),
                     "` but ", task.ctx.empty() ? "this input" : task.ctx,
                     " is `", node.name(), "`"));
        }
        return Solve(graph, std::move(s), std::move(tasks), out);
      }
      s.env[pn.binding] = Value::NodeRef(e.node);
    }
    if (std::find(s.nodes.begin(), s.nodes.end(), e.node) == s.nodes.end()) {
      s.nodes.push_back(e.node);
    }
    if (!pn.has_operands) {
      if (!GuardsHold(graph, s)) return false;
      return Solve(graph, std::move(s), std::move(tasks), out);
    }
    int fixed = static_cast<int>(pn.data.size()) - (pn.variadic ? 1 : 0);
    if (pn.variadic ? node.num_inputs() < fixed : node.num_inputs() != fixed) {
      return Fail(s, absl::StrCat(what, " (`", node.name(), "`) has ",
                                  node.num_inputs(),
                                  " data input(s); the pattern lists ", fixed));
    }
    std::vector<std::vector<int>> orders = {{}};
    for (int i = 0; i < fixed; ++i) orders[0].push_back(i);
    const tf::OpDef* def = OpRegistry::Tensorflow().Find(node.op());
    if (fixed == 2 && !pn.variadic && def != nullptr && def->is_commutative()) {
      orders.push_back({1, 0});
    }
    for (const std::vector<int>& order : orders) {
      Search s2 = s;
      std::vector<Task> tasks2 = tasks;
      bool ok = true;
      for (int i = 0; i < fixed && ok; ++i) {
        const POperand& o = pn.data[i];
        Endpoint in = node.input(order[i]);
        std::string ctx = absl::StrCat("operand ", i, " of ", what);
        if (!in.valid()) {
          ok = Fail(s2, absl::StrCat(ctx, " is not in the graph"));
          break;
        }
        switch (o.kind) {
          case OK::kWildcard:
            break;
          case OK::kName:
            if (o.stmt >= 0) {
              ok = in.port == 0 ||
                   Fail(s2,
                        absl::StrCat(ctx, ": expected output 0 of `", o.name,
                                     "`, found `", graph.TensorName(in), "`"));
              if (ok) tasks2.push_back({o.stmt, in, ctx});
            } else {
              ok = BindTensor(s2, o.name, in) ||
                   Fail(s2,
                        absl::StrCat(ctx, ": `", o.name, "` is already `",
                                     graph.TensorName(s2.env[o.name].tensor),
                                     "`, found `", graph.TensorName(in), "`"));
            }
            break;
          case OK::kPort:
            ok = in.port == o.port ||
                 Fail(s2, absl::StrCat(ctx, ": expected output ", o.port,
                                       " of `", o.name, "`, found `",
                                       graph.TensorName(in), "`"));
            if (ok) tasks2.push_back({o.stmt, {in.node, 0}, ctx});
            break;
          case OK::kBound:
            ok =
                BindTensor(s2, o.name, in) ||
                Fail(s2, absl::StrCat(ctx, ": `", o.name, "` is already `",
                                      graph.TensorName(s2.env[o.name].tensor),
                                      "`, found `", graph.TensorName(in), "`"));
            if (ok) tasks2.push_back({o.nested, in, ctx});
            break;
          case OK::kNested:
            tasks2.push_back({o.nested, in, ctx});
            break;
          default:
            break;
        }
      }
      if (!ok) continue;
      if (pn.variadic) {
        std::vector<Value> rest;
        for (int i = fixed; i < node.num_inputs(); ++i)
          rest.push_back(Value::Tensor(node.input(i)));
        if (!pn.data.back().name.empty())
          s2.env[pn.data.back().name] = Value::List(std::move(rest));
      }
      if (!SolveControl(graph, std::move(s2), std::move(tasks2), pn, node, 0,
                        out))
        continue;
      return true;
    }
    return false;
  }

  // Binds control operands one by one (each may choose among the node's
  // control inputs), then goes on with the tasks.
  bool SolveControl(const Graph& graph, Search s, std::vector<Task> tasks,
                    const PNode& pn, const Node& node, size_t k,
                    DslMatch* out) const {
    const std::vector<POperand>* controls = &pn.control;
    if (k >= controls->size()) {
      if (!GuardsHold(graph, s)) return false;
      return Solve(graph, std::move(s), std::move(tasks), out);
    }
    const POperand& o = (*controls)[k];
    auto it = s.env.find(o.name);
    for (NodeId c : node.control_inputs()) {
      if (c == kNoNode) continue;
      if (it != s.env.end()) {
        if (it->second.tensor.node != c) continue;
        return SolveControl(graph, s, tasks, pn, node, k + 1, out);
      }
      Search s2 = s;
      auto tasks2 = tasks;
      if (o.stmt >= 0) {
        tasks2.push_back({o.stmt, {c, 0}, ""});
      } else {
        s2.env[o.name] = Value::NodeRef(c);
      }
      if (SolveControl(graph, std::move(s2), std::move(tasks2), pn, node, k + 1,
                       out))
        return true;
    }
    return false;
  }

  // ---- evaluation ----

  absl::StatusOr<Value> Eval(const Graph& graph, const Env& env, const Expr& e,
                             Exec* exec) const {
    HookContext ctx{graph};
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
        auto it = env.find(e.text);
        if (it == env.end())
          return absl::NotFoundError(
              absl::StrCat("`", e.text, "` is not bound"));
        return it->second;
      }
      case K::kPort: {
        absl::StatusOr<Value> base = Eval(graph, env, *e.args[0], exec);
        if (!base.ok()) return base.status();
        return Value::Tensor({base->tensor.node, e.port});
      }
      case K::kMember: {
        absl::StatusOr<Value> base = Eval(graph, env, *e.args[0], exec);
        if (!base.ok()) return base.status();
        if (base->type != ValueType::kNode &&
            base->type != ValueType::kTensor) {
          return absl::InvalidArgumentError(
              absl::StrCat("`.", e.text, "` of a non-node"));
        }
        const Node& n = graph.node(base->tensor.node);
        if (e.text == "op") return Value::String(n.op());
        if (e.text == "name") return Value::String(n.name());
        if (e.text == "device") return Value::String(n.device());
        return AttrValueOf(n, e.text);
      }
      case K::kList: {
        std::vector<Value> items;
        for (const auto& a : e.args) {
          absl::StatusOr<Value> v = Eval(graph, env, *a, exec);
          if (!v.ok()) return v.status();
          items.push_back(*std::move(v));
        }
        return Value::List(std::move(items));
      }
      case K::kCall: {
        const Hook* hook = hooks_.Find(e.text);
        if (hook == nullptr)
          return absl::NotFoundError(
              absl::StrCat("unknown function `", e.text, "`"));
        std::vector<Value> args;
        for (const auto& a : e.args) {
          absl::StatusOr<Value> v = Eval(graph, env, *a, exec);
          if (!v.ok()) return v.status();
          args.push_back(*std::move(v));
        }
        return hook->fn(ctx, args);
      }
      case K::kUnary: {
        absl::StatusOr<Value> v = Eval(graph, env, *e.args[0], exec);
        if (!v.ok()) return v.status();
        if (e.text == "not")
          return Value::Bool(!(v->type == ValueType::kBool && v->b));
        if (v->type == ValueType::kInt) return Value::Int(-v->i);
        if (v->type == ValueType::kFloat) return Value::Float(-v->f);
        absl::StatusOr<ConstTensor> c = ToConstant(ctx, *v);
        if (!c.ok()) return c.status();
        absl::StatusOr<ConstTensor> r = Unary(*c, "neg");
        if (!r.ok()) return r.status();
        return Value::Constant(*std::move(r));
      }
      case K::kBinary:
        return EvalBinary(graph, env, e, exec);
      case K::kCreate:
        if (exec == nullptr)
          return absl::InvalidArgumentError("cannot create nodes in a guard");
        return Create(e, exec);
    }
    return absl::InternalError("bad expression");
  }

  absl::StatusOr<Value> EvalBinary(const Graph& graph, const Env& env,
                                   const Expr& e, Exec* exec) const {
    const std::string& op = e.text;
    absl::StatusOr<Value> a = Eval(graph, env, *e.args[0], exec);
    if (!a.ok()) return a.status();
    if (op == "and" || op == "or") {
      bool av = a->type == ValueType::kBool && a->b;
      if (op == "and" && !av) return Value::Bool(false);
      if (op == "or" && av) return Value::Bool(true);
      absl::StatusOr<Value> b = Eval(graph, env, *e.args[1], exec);
      if (!b.ok()) return b.status();
      return Value::Bool(b->type == ValueType::kBool && b->b);
    }
    absl::StatusOr<Value> b = Eval(graph, env, *e.args[1], exec);
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
      } else if (a->type == ValueType::kString &&
                 b->type == ValueType::kString) {
        cmp = a->s.compare(b->s);
      } else if (a->type == ValueType::kBool && b->type == ValueType::kBool) {
        cmp = static_cast<int>(a->b) - static_cast<int>(b->b);
      } else if ((a->type == ValueType::kTensor ||
                  a->type == ValueType::kNode) &&
                 (b->type == ValueType::kTensor ||
                  b->type == ValueType::kNode)) {
        cmp = a->tensor == b->tensor ? 0 : 1;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot compare a ", ValueTypeName(a->type),
                         " with a ", ValueTypeName(b->type)));
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
    if (a->type == ValueType::kInt && b->type == ValueType::kInt && op != "/") {
      return Value::Int(op == "+"   ? a->i + b->i
                        : op == "-" ? a->i - b->i
                                    : a->i * b->i);
    }
    if (a->is_number() && b->is_number()) {
      double x = a->number(), y = b->number();
      return Value::Float(op == "+"   ? x + y
                          : op == "-" ? x - y
                          : op == "*" ? x * y
                                      : x / y);
    }
    HookContext ctx{graph};
    absl::StatusOr<ConstTensor> x = ToConstant(ctx, *a);
    if (!x.ok()) return x.status();
    absl::StatusOr<ConstTensor> y = ToConstant(ctx, *b);
    if (!y.ok()) return y.status();
    // A bare number takes the tensor's dtype.
    if (a->is_number()) x->dtype = y->dtype;
    if (b->is_number()) y->dtype = x->dtype;
    absl::StatusOr<ConstTensor> r = Broadcast(*x, *y, op);
    if (!r.ok()) return r.status();
    return Value::Constant(*std::move(r));
  }

  absl::StatusOr<Value> Create(const Expr& e, Exec* exec,
                               const std::string& binding = "") const {
    const Graph& g = exec->rewriter.graph();
    HookContext ctx{g};
    NodeSpec spec;
    spec.op = e.text;
    if (!e.op_of.empty()) {
      auto it = exec->env.find(e.op_of);
      if (it == exec->env.end())
        return absl::NotFoundError(
            absl::StrCat("`", e.op_of, "` is not bound"));
      spec.op = g.node(it->second.tensor.node).op();
    }
    const Node& root = g.node(exec->match.root);
    spec.device = root.device();
    bool is_const = spec.op == "Const" && e.args.size() == 1;
    std::vector<Value> args;
    for (const auto& a : e.args) {
      absl::StatusOr<Value> v = Eval(g, exec->env, *a, exec);
      if (!v.ok()) return v.status();
      args.push_back(*std::move(v));
    }
    if (is_const) {
      // A computed constant is encoded where it is, not copied first.
      bool computed = args[0].type == ValueType::kConst;
      absl::StatusOr<ConstTensor> c =
          computed ? ConstTensor() : ToConstant(ctx, args[0]);
      if (!c.ok()) return c.status();
      const ConstTensor& t = computed ? *args[0].constant : *c;
      spec.attrs["dtype"].set_type(t.dtype);
      tf::TensorProto value;
      if (t.deferred != nullptr) {
        // Its bytes are made when they are written (or read).
        value = TensorProtoWithoutContent(t);
        spec.value_content = t.deferred;
      } else {
        value = ToTensorProto(t);
      }
      spec.attrs["value"].mutable_tensor()->Swap(&value);
    } else {
      for (size_t i = 0; i < args.size(); ++i) {
        const Value& v = args[i];
        if (v.type == ValueType::kTensor || v.type == ValueType::kNode) {
          spec.inputs.push_back(v.tensor);
        } else if (v.type == ValueType::kList) {
          for (const Value& item : v.list) spec.inputs.push_back(item.tensor);
        } else {
          return absl::InvalidArgumentError(
              absl::StrCat("argument ", i + 1, " of `", spec.op, "` is a ",
                           ValueTypeName(v.type),
                           ", not a tensor; wrap constants in `Const(...)`"));
        }
      }
    }
    for (const AttrItem& item : e.attrs) {
      if (item.spread) {
        auto it = exec->env.find(item.name);
        if (it == exec->env.end())
          return absl::NotFoundError(
              absl::StrCat("`", item.name, "` is not bound"));
        const Node& from = g.node(it->second.tensor.node);
        for (const auto& [k, v] : from.attrs()) spec.attrs[k] = v;
        spec.value_content = from.value_content_apart();
        continue;
      }
      absl::StatusOr<Value> v = Eval(g, exec->env, *item.value, exec);
      if (!v.ok()) return v.status();
      absl::StatusOr<tf::AttrValue> attr = ToAttr(spec.op, item.name, *v, ctx);
      if (!attr.ok()) return attr.status();
      spec.attrs[item.name] = *std::move(attr);
      if (item.name == "value") spec.value_content = nullptr;
    }
    InferTypeAttrs(g, &spec);
    if (e.has_name_template) {
      spec.name = Substitute(e.name_template, g, exec->env);
    } else {
      spec.name =
          absl::StrCat(root.name(), "/", binding.empty() ? spec.op : binding);
    }
    absl::StatusOr<NodeId> id = exec->rewriter.AddNode(std::move(spec));
    if (!id.ok()) return id.status();
    exec->created.insert(*id);
    return Value::NodeRef(*id);
  }

  // Sets type attrs a new node's op needs from the dtypes of its inputs
  // (`BiasAdd(a, b)` gets `T` from `a`).
  static void InferTypeAttrs(const Graph& g, NodeSpec* spec) {
    const tf::OpDef* def = OpRegistry::Tensorflow().Find(spec->op);
    if (def == nullptr) return;
    size_t index = 0;
    for (const auto& arg : def->input_arg()) {
      if (index >= spec->inputs.size()) break;
      if (!arg.type_attr().empty() && spec->attrs.count(arg.type_attr()) == 0) {
        tf::DataType t = OpRegistry::Tensorflow().OutputType(
            g.node(spec->inputs[index].node), spec->inputs[index].port);
        if (t != tf::DT_INVALID)
          spec->attrs[arg.type_attr()].set_type(BaseType(t));
      }
      int count = 1;
      if (!arg.number_attr().empty()) {
        auto it = spec->attrs.find(arg.number_attr());
        if (it == spec->attrs.end()) {
          count = static_cast<int>(spec->inputs.size() - index);
          spec->attrs[arg.number_attr()].set_i(count);
        } else {
          count = static_cast<int>(it->second.i());
        }
      }
      index += count;
    }
  }

  absl::StatusOr<Endpoint> TensorArg(Exec& x, const Expr& e) const {
    absl::StatusOr<Value> v = Eval(x.rewriter.graph(), x.env, e, &x);
    if (!v.ok()) return v.status();
    if (v->type != ValueType::kTensor && v->type != ValueType::kNode) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a tensor, got a ", ValueTypeName(v->type)));
    }
    return v->tensor;
  }

  // A tensor, or each tensor of a list.
  absl::StatusOr<std::vector<Endpoint>> TensorsArg(Exec& x,
                                                   const Expr& e) const {
    absl::StatusOr<Value> v = Eval(x.rewriter.graph(), x.env, e, &x);
    if (!v.ok()) return v.status();
    std::vector<Endpoint> out;
    for (const Value& item :
         v->type == ValueType::kList ? v->list : std::vector<Value>{*v}) {
      if (item.type != ValueType::kTensor && item.type != ValueType::kNode) {
        return absl::InvalidArgumentError(absl::StrCat(
            "expected a tensor, got a ", ValueTypeName(item.type)));
      }
      out.push_back(item.tensor);
    }
    return out;
  }

  // reroute / replace of one tensor: the consumers the filter allows read
  // `to`; replace also removes `from`'s node.
  // The consumers an action's `only` / `except` set allows; `also_except`
  // are never allowed unless the set is `only`.
  absl::StatusOr<ConsumerFilter> FilterOf(
      const Exec& x, const Action& a, std::vector<NodeId> also_except) const {
    std::vector<NodeId> nodes;
    for (const auto& [name, loc] : a.filter_nodes) {
      absl::StatusOr<NodeId> n = NodeArg(x, name);
      if (!n.ok()) return n.status();
      nodes.push_back(*n);
    }
    if (a.filter == Action::Filter::kOnly) return ConsumerFilter::Only(nodes);
    nodes.insert(nodes.end(), also_except.begin(), also_except.end());
    return ConsumerFilter::Except(nodes);
  }

  absl::Status RerouteOne(Exec& x, const Action& a, Endpoint from,
                          Endpoint to) const {
    // Never the new tensor's own node: it must not read itself.
    absl::StatusOr<ConsumerFilter> filter = FilterOf(x, a, {to.node});
    if (!filter.ok()) return filter.status();
    absl::StatusOr<int> n = x.rewriter.Reroute(from, to, *filter);
    if (!n.ok()) return n.status();
    if (a.kind == Action::Kind::kReplace && from.port == 0) {
      x.plan->remove.push_back(from.node);
      if (x.created.count(to.node) > 0)
        x.plan->takeover.emplace_back(from.node, to.node);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<NodeId> NodeArg(const Exec& x, const std::string& name) const {
    auto it = x.env.find(name);
    if (it == x.env.end() || (it->second.type != ValueType::kNode &&
                              it->second.type != ValueType::kTensor)) {
      return absl::NotFoundError(absl::StrCat("`", name, "` is not a node"));
    }
    return it->second.tensor.node;
  }

  absl::Status Run(Exec& x, const Action& a) const {
    using AK = Action::Kind;
    Rewriter& r = x.rewriter;
    const Graph& g = r.graph();
    switch (a.kind) {
      case AK::kLet: {
        absl::StatusOr<Value> v = Eval(g, x.env, *a.a, &x);
        if (!v.ok()) return v.status();
        x.env[a.name] = *std::move(v);
        return absl::OkStatus();
      }
      case AK::kAssign: {
        absl::StatusOr<Value> v = a.a->kind == K::kCreate
                                      ? Create(*a.a, &x, a.name)
                                      : Eval(g, x.env, *a.a, &x);
        if (!v.ok()) return v.status();
        x.env[a.name] = *std::move(v);
        return absl::OkStatus();
      }
      case AK::kReroute:
      case AK::kSwap: {
        // Lists (from walks and views) go pairwise, as graph_editor's
        // reroute_ts.
        absl::StatusOr<std::vector<Endpoint>> from = TensorsArg(x, *a.a);
        if (!from.ok()) return from.status();
        absl::StatusOr<std::vector<Endpoint>> to = TensorsArg(x, *a.b);
        if (!to.ok()) return to.status();
        if (from->size() != to->size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot pair ", from->size(), " tensor(s) with ", to->size()));
        }
        if (a.kind == AK::kReroute) {
          for (size_t i = 0; i < from->size(); ++i) {
            absl::Status s = RerouteOne(x, a, (*from)[i], (*to)[i]);
            if (!s.ok()) return s;
          }
          return absl::OkStatus();
        }
        absl::StatusOr<ConsumerFilter> filter = FilterOf(x, a, {});
        if (!filter.ok()) return filter.status();
        return r.Swap(*from, *to, *filter).status();
      }
      case AK::kReplace: {
        absl::StatusOr<Endpoint> from = TensorArg(x, *a.a);
        if (!from.ok()) return from.status();
        absl::StatusOr<Endpoint> to = TensorArg(x, *a.b);
        if (!to.ok()) return to.status();
        return RerouteOne(x, a, *from, *to);
      }
      case AK::kErase: {
        absl::StatusOr<NodeId> n = NodeArg(x, a.name);
        if (!n.ok()) return n.status();
        x.plan->erase.push_back(*n);
        return absl::OkStatus();
      }
      case AK::kRename:
      case AK::kDevice: {
        absl::StatusOr<NodeId> n = NodeArg(x, a.name);
        if (!n.ok()) return n.status();
        absl::StatusOr<Value> v = Eval(g, x.env, *a.a, &x);
        if (!v.ok()) return v.status();
        if (v->type != ValueType::kString)
          return absl::InvalidArgumentError("expected a string");
        std::string text = Substitute(v->s, g, x.env);
        return a.kind == AK::kRename ? r.Rename(*n, text)
                                     : r.SetDevice(*n, text);
      }
      case AK::kControl:
      case AK::kUncontrol: {
        absl::StatusOr<NodeId> from = NodeArg(x, a.name);
        if (!from.ok()) return from.status();
        absl::StatusOr<NodeId> to = NodeArg(x, a.target);
        if (!to.ok()) return to.status();
        return a.kind == AK::kControl ? r.AddControlEdge(*from, *to)
                                      : r.RemoveControlEdge(*from, *to);
      }
      case AK::kClone: {
        std::vector<NodeId> nodes;
        for (const auto& [name, loc] : a.clone_from) {
          absl::StatusOr<NodeId> n = NodeArg(x, name);
          if (!n.ok()) return n.status();
          nodes.push_back(*n);
        }
        absl::flat_hash_map<Endpoint, Endpoint> replacements;
        for (const auto& [from, to] : a.replacements) {
          absl::StatusOr<Endpoint> f = TensorArg(x, *from);
          if (!f.ok()) return f.status();
          absl::StatusOr<Endpoint> t = TensorArg(x, *to);
          if (!t.ok()) return t.status();
          replacements[*f] = *t;
        }
        absl::StatusOr<CloneResult> copies = r.Clone(nodes, replacements);
        if (!copies.ok()) return copies.status();
        for (size_t i = 0; i < nodes.size(); ++i) {
          NodeId copy = copies->mapping.at(nodes[i]);
          x.created.insert(copy);
          x.env[a.clone_to[i].first] = Value::NodeRef(copy);
        }
        return absl::OkStatus();
      }
      case AK::kSplice: {
        auto it = splices_.find(&a - actions_.data());
        if (it == splices_.end())
          return absl::InternalError("splice graph not loaded");
        const SpliceSource& source = it->second;
        if (source.graph == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat(source.what, " names no graph file"));
        }
        const tf::GraphDef* def = source.whole.get();
        tf::GraphDef part;
        if (!a.splice_root.empty()) {
          absl::StatusOr<tf::GraphDef> p = surgery::AncestorsOf(
              *source.graph, {Substitute(a.splice_root, g, x.env)});
          if (!p.ok())
            return Prefixed(absl::StrCat(source.what, ": "), p.status());
          part = *std::move(p);
          def = &part;
        }
        absl::flat_hash_map<std::string, Endpoint> input_map;
        for (const auto& [name, expr] : a.splice_inputs) {
          absl::StatusOr<Endpoint> t = TensorArg(x, *expr);
          if (!t.ok()) return t.status();
          input_map[Substitute(name, g, x.env)] = *t;
        }
        absl::StatusOr<SpliceResult> spliced =
            r.Splice(*def, Substitute(a.prefix, g, x.env), input_map);
        if (!spliced.ok()) return spliced.status();
        for (NodeId id : spliced->created) x.created.insert(id);
        for (const auto& [binding, node] : a.take) {
          std::string name = Substitute(node, g, x.env);
          auto m = spliced->mapping.find(name);
          if (m == spliced->mapping.end()) {
            return absl::NotFoundError(
                absl::StrCat(source.what, " has no node `", name, "` to take"));
          }
          x.env[binding.first] = Value::NodeRef(m->second);
        }
        return absl::OkStatus();
      }
      case AK::kFail: {
        absl::StatusOr<Value> v = Eval(g, x.env, *a.a, &x);
        if (!v.ok()) return v.status();
        return FailRewrite(Substitute(v->s, g, x.env));
      }
      case AK::kSet: {
        absl::StatusOr<NodeId> n = NodeArg(x, a.name);
        if (!n.ok()) return n.status();
        absl::StatusOr<Value> v = Eval(g, x.env, *a.a, &x);
        if (!v.ok()) return v.status();
        HookContext ctx{g};
        absl::StatusOr<tf::AttrValue> attr =
            ToAttr(g.node(*n).op(), a.target, *v, ctx);
        if (!attr.ok()) return attr.status();
        return r.SetAttr(*n, a.target, *std::move(attr));
      }
    }
    return absl::OkStatus();
  }

  std::string name_;
  int priority_;
  std::vector<PNode> pnodes_;
  int root_;
  std::vector<Guard> guards_;
  std::vector<Action> actions_;
  std::map<std::string, Value> params_;
  const HookRegistry& hooks_;
  mutable std::string* why_ = nullptr;
  mutable size_t why_depth_ = 0;

 public:
  // Graphs of `splice` actions, by action index, loaded when compiling.
  std::map<std::ptrdiff_t, SpliceSource> splices_;
  std::shared_ptr<SetChecks> checks_;
};

// ---- loading and checking ----

int EditDistance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub =
          prev[j - 1] +
          (absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]) ? 0
                                                                          : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> Suggest(const std::string& name,
                                 const std::vector<std::string>& known) {
  std::string best;
  int best_d = 3;
  for (const std::string& k : known) {
    int d = EditDistance(name, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best.empty()) return {};
  return {absl::StrCat("did you mean `", best, "`?")};
}

struct NameInfo {
  enum class Kind {
    kPattern,
    kTensor,
    kList,
    kLet,
    kCreated,
    kParam,
    kControl
  };
  Kind kind;
  ValueType type;
  Loc loc;
  int uses = 0;
};

}  // namespace

class Compiler {
 public:
  Compiler(const CompileOptions& options, const HookRegistry& hooks,
           Diagnostics* d)
      : options_(options), hooks_(hooks), d_(d) {}

  void Load(const std::string& path, const std::string* text,
            const std::string& from, Loc from_loc) {
    if (std::find(set_->files_.begin(), set_->files_.end(), path) !=
        set_->files_.end())
      return;
    std::string source;
    if (text != nullptr) {
      source = *text;
    } else {
      std::ifstream in(path);
      if (!in) {
        if (from.empty()) {
          d_->Error(path, {}, "cannot read the rule file");
        } else {
          d_->Error(from, from_loc,
                    absl::StrCat("cannot import `", path, "`: no such file"));
        }
        return;
      }
      std::stringstream buf;
      buf << in.rdbuf();
      source = buf.str();
    }
    set_->files_.push_back(path);
    auto file = std::make_shared<RuleFile>(ParseRuleFile(path, source, d_));
    set_->asts_.push_back(file);
    for (const Import& imp : file->imports) {
      Load(PathRelativeTo(path, imp.path), nullptr, path, imp.loc);
    }
  }

  std::unique_ptr<RuleSet> Compile(const std::vector<std::string>& paths,
                                   const std::string* text) {
    set_ = std::make_unique<RuleSet>();
    for (const std::string& p : paths) Load(p, text, "", {});
    CollectParams();
    for (const auto& file : set_->asts_) {
      for (const Require& req : file->requirements) {
        std::map<std::string, NameInfo> names;  // params only
        ValueType t = CheckExpr(*file, *req.expr, &names, true);
        if (t != ValueType::kBool && t != ValueType::kAny) {
          Error(
              *file, req.expr->loc,
              absl::StrCat("`require` needs a bool, not a ", ValueTypeName(t)));
        }
        checks_->requirements.push_back(
            {req.expr, absl::StrCat(file->path, ":", req.loc.line)});
      }
    }
    std::map<std::string, std::pair<std::string, Loc>> seen;
    for (const auto& file : set_->asts_) {
      for (const Rule& rule : file->rules) {
        auto [it, fresh] =
            seen.emplace(rule.name, std::make_pair(file->path, rule.loc));
        if (!fresh) {
          d_->Error(file->path, rule.loc,
                    absl::StrCat("duplicate rule `", rule.name, "`"),
                    {absl::StrCat("first defined at ", it->second.first, ":",
                                  it->second.second.line, ":",
                                  it->second.second.col)});
          continue;
        }
        CompileRule(*file, rule);
      }
    }
    Lint();
    if (d_->has_errors()) return nullptr;
    return std::move(set_);
  }

 private:
  // Params named in `{...}` of a name template or a string count as used.
  void CountTemplateParams(const std::string& text) {
    for (size_t open = text.find('{'); open != std::string::npos;
         open = text.find('{', open + 1)) {
      size_t close = text.find('}', open);
      if (close == std::string::npos) break;
      std::string name = text.substr(open + 1, close - open - 1);
      if (param_types_.count(name) != 0) ++param_uses_[name];
    }
  }

  // Canonical text of a rule's patterns, to find rules that match alike.
  static std::string PatternKey(const Rule& rule) {
    std::string key;
    std::function<void(const NodePattern&)> walk = [&](const NodePattern& p) {
      absl::StrAppend(&key, absl::StrJoin(p.ops, "|"),
                      p.has_operands ? "(" : "");
      for (const OperandPattern& o : p.operands) {
        absl::StrAppend(&key, static_cast<int>(o.kind), ":", o.name, ":",
                        o.port, ",");
        if (o.nested) walk(*o.nested);
      }
      absl::StrAppend(&key, p.has_operands ? ")" : "", ";");
    };
    for (const PatternStmt& s : rule.patterns) {
      absl::StrAppend(&key, s.name, "=");
      walk(s.pattern);
    }
    return key;
  }

  // Findings that do not stop the rules from compiling.
  void Lint() {
    for (const auto& file : set_->asts_) {
      for (const Param& p : file->params) {
        if (param_uses_[p.name] == 0) {
          d_->Warning(file->path, p.loc,
                      absl::StrCat("param `", p.name, "` is never used"));
        }
      }
    }
    // A rule whose pattern equals that of a rule tried before it (higher
    // priority, or the same and earlier) with no guard can never fire.
    struct Entry {
      const RuleFile* file;
      const Rule* rule;
      int priority;
      std::string key;
    };
    std::vector<Entry> entries;
    for (const auto& file : set_->asts_) {
      for (const Rule& r : file->rules) {
        if (!r.has_match) continue;
        entries.push_back(
            {file.get(), &r,
             r.has_priority ? r.priority : static_cast<int>(r.patterns.size()),
             PatternKey(r)});
      }
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      for (size_t j = 0; j < entries.size(); ++j) {
        if (i == j) continue;
        const Entry& first = entries[j];
        const Entry& later = entries[i];
        bool tried_first = first.priority > later.priority ||
                           (first.priority == later.priority && j < i);
        if (tried_first && first.key == later.key &&
            first.rule->guards.empty()) {
          d_->Warning(
              later.file->path, later.rule->loc,
              absl::StrCat(
                  "rule `", later.rule->name, "` can never fire: `",
                  first.rule->name,
                  "` has the same pattern, no guard, and is tried first"));
          break;
        }
      }
    }
  }

  void Error(const RuleFile& f, Loc loc, std::string msg,
             std::vector<std::string> notes = {}) {
    d_->Error(f.path, loc, std::move(msg), std::move(notes));
  }

  static ValueType ParamType(const std::string& type) {
    if (type == "int") return ValueType::kInt;
    if (type == "float") return ValueType::kFloat;
    if (type == "bool") return ValueType::kBool;
    if (type == "ranges") return ValueType::kRanges;
    if (type == "graph") return ValueType::kGraph;
    return ValueType::kString;
  }

  absl::StatusOr<Value> ParseParam(const std::string& type,
                                   const std::string& text) {
    if (type == "int") {
      int64_t v;
      if (absl::SimpleAtoi(text, &v)) return Value::Int(v);
    } else if (type == "float") {
      double v;
      if (absl::SimpleAtod(text, &v)) return Value::Float(v);
    } else if (type == "bool") {
      if (text == "true") return Value::Bool(true);
      if (text == "false") return Value::Bool(false);
    } else if (type == "ranges") {
      return LoadRanges(text);
    } else if (type == "graph") {
      return LoadGraphParam(text);
    } else {
      return Value::String(text);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("`", text, "` is not a ", type));
  }

  // A `ranges` param: the table in the YAML file `path` ("" for none).
  // Problems in the file are reported at their lines; the value is then
  // kAny, so nothing else is reported about it.
  Value LoadRanges(const std::string& path) {
    if (path.empty()) return Value::Ranges(nullptr);
    std::vector<RangeFileProblem> problems;
    auto table =
        std::make_shared<TensorRanges>(LoadTensorRanges(path, &problems));
    for (const RangeFileProblem& p : problems) {
      d_->Error(path, {p.line, p.column}, p.message);
    }
    if (!problems.empty()) {
      Value bad;
      bad.type = ValueType::kAny;
      return bad;
    }
    return Value::Ranges(std::move(table));
  }

  // A `graph` param: the graph in file `path` ("" for none).
  Value LoadGraphParam(const std::string& path) {
    if (path.empty()) return Value::GraphRef(nullptr, "");
    absl::StatusOr<Graph> graph = LoadGraph(path);
    if (!graph.ok()) {
      d_->Error(
          path, {},
          absl::StrCat("cannot load the graph: ", graph.status().message()));
      Value bad;
      bad.type = ValueType::kAny;
      return bad;
    }
    return Value::GraphRef(std::make_shared<const Graph>(*std::move(graph)),
                           path);
  }

  void CollectParams() {
    for (const auto& file : set_->asts_) {
      for (const Param& p : file->params) {
        if (params_.count(p.name) != 0) {
          Error(*file, p.loc,
                absl::StrCat("param `", p.name, "` is declared twice"));
          continue;
        }
        Value v;
        v.type = ValueType::kNone;
        if (p.default_value) {
          const Expr& e = *p.default_value;
          ValueType want = ParamType(p.type);
          bool neg = e.kind == K::kUnary && e.text == "-" && !e.args.empty();
          const Expr& lit = neg ? *e.args[0] : e;
          if (lit.kind == K::kInt &&
              (want == ValueType::kInt || want == ValueType::kFloat)) {
            v = want == ValueType::kInt
                    ? Value::Int(neg ? -lit.int_value : lit.int_value)
                    : Value::Float(neg ? -lit.int_value : lit.int_value);
          } else if (lit.kind == K::kFloat && want == ValueType::kFloat) {
            v = Value::Float(neg ? -lit.float_value : lit.float_value);
          } else if (lit.kind == K::kBool && want == ValueType::kBool && !neg) {
            v = Value::Bool(lit.bool_value);
          } else if (lit.kind == K::kString && want == ValueType::kString &&
                     !neg) {
            v = Value::String(lit.text);
          } else if (lit.kind == K::kString && want == ValueType::kRanges &&
                     !neg) {
            v = LoadRanges(
                lit.text.empty() ? "" : PathRelativeTo(file->path, lit.text));
          } else if (lit.kind == K::kString && want == ValueType::kGraph &&
                     !neg) {
            v = LoadGraphParam(
                lit.text.empty() ? "" : PathRelativeTo(file->path, lit.text));
          } else {
            Error(*file, e.loc,
                  absl::StrCat("the default of `", p.name, "` is not a ",
                               p.type));
            v.type = ValueType::kAny;  // reported; no second error below
          }
        }
        param_types_[p.name] = p.type;
        params_[p.name] = v;
        set_->params_.push_back(p.name);
      }
    }
    for (const auto& [name, text] : options_.params) {
      auto it = param_types_.find(name);
      if (it == param_types_.end() && options_.ignore_unknown_params) continue;
      if (it == param_types_.end()) {
        std::vector<std::string> known;
        for (const auto& [k, t] : param_types_) known.push_back(k);
        d_->Error("--param", {}, absl::StrCat("unknown param `", name, "`"),
                  Suggest(name, known));
        continue;
      }
      absl::StatusOr<Value> v = ParseParam(it->second, text);
      if (!v.ok()) {
        d_->Error("--param", {},
                  absl::StrCat("param `", name, "`: ", v.status().message()));
        continue;
      }
      params_[name] = *v;
    }
    for (const auto& file : set_->asts_) {
      for (const Param& p : file->params) {
        if (params_.count(p.name) && params_[p.name].type == ValueType::kNone) {
          Error(*file, p.loc,
                absl::StrCat("param `", p.name,
                             "` has no default and no value given"));
        }
        const Value& v = params_[p.name];
        if (p.has_range && v.is_number() &&
            (v.number() < p.range_min || v.number() > p.range_max)) {
          std::string where =
              options_.params.count(p.name) ? "--param" : file->path;
          std::string range = absl::StrCat(p.range_min, "..", p.range_max);
          d_->Error(where, options_.params.count(p.name) ? Loc{} : p.loc,
                    absl::StrCat("param `", p.name, "`: ", v.number(),
                                 " is outside ", range));
        }
        if (p.has_range && p.type != "int" && p.type != "float") {
          Error(*file, p.range_loc,
                absl::StrCat("only int and float params have a range"));
        }
      }
    }
  }

  void CheckOp(const RuleFile& f, const std::string& op, Loc loc) {
    const OpRegistry& ops = OpRegistry::Tensorflow();
    if (op.find('*') != std::string::npos || ops.Find(op) != nullptr) return;
    Error(f, loc, absl::StrCat("unknown op `", op, "`"),
          Suggest(op, ops.OpNames()));
  }

  // Registers the names a pattern binds; returns the pattern node index.
  int AddPattern(const RuleFile& f, const NodePattern& p,
                 const std::string& binding, std::vector<PNode>* pnodes,
                 std::map<std::string, NameInfo>* names,
                 const std::map<std::string, int>& stmts, int slot = -1) {
    int index = slot;
    if (index < 0) {
      index = static_cast<int>(pnodes->size());
      pnodes->emplace_back();
    }
    PNode pn;
    pn.ops = p.ops;
    pn.binding = binding;
    pn.has_operands = p.has_operands;
    for (const std::string& op : p.ops) CheckOp(f, op, p.loc);
    for (size_t i = 0; i < p.operands.size(); ++i) {
      const OperandPattern& o = p.operands[i];
      POperand po;
      po.kind = o.kind;
      po.name = o.name;
      po.port = o.port;
      auto stmt = stmts.find(o.name);
      switch (o.kind) {
        case OK::kName:
          if (stmt != stmts.end()) {
            po.stmt = stmt->second;
            (*names)[o.name].uses++;
          } else {
            Bind(f, o.name, NameInfo::Kind::kTensor, ValueType::kTensor, o.loc,
                 names);
          }
          break;
        case OK::kPort:
          if (stmt == stmts.end()) {
            Error(f, o.loc,
                  absl::StrCat("`", o.name, ":", o.port, "` needs `", o.name,
                               "` to be a pattern of this match"));
          } else {
            po.stmt = stmt->second;
            (*names)[o.name].uses++;
          }
          break;
        case OK::kBound:
          if (stmt != stmts.end()) {
            Error(f, o.loc,
                  absl::StrCat("`", o.name, "` is already a pattern; use `",
                               o.name, "` alone to refer to it"));
          }
          Bind(f, o.name, NameInfo::Kind::kTensor, ValueType::kTensor, o.loc,
               names);
          po.nested = AddPattern(f, *o.nested, "", pnodes, names, stmts);
          break;
        case OK::kNested:
          po.nested = AddPattern(f, *o.nested, "", pnodes, names, stmts);
          break;
        case OK::kVariadic: {
          bool last = true;
          for (size_t j = i + 1; j < p.operands.size(); ++j) {
            if (p.operands[j].kind != OK::kControl) last = false;
          }
          if (!last) {
            Error(f, o.loc,
                  absl::StrCat("`", o.name.empty() ? "_" : o.name,
                               "...` must be the last data operand"));
          }
          pn.variadic = true;
          if (!o.name.empty())
            Bind(f, o.name, NameInfo::Kind::kList, ValueType::kList, o.loc,
                 names);
          break;
        }
        case OK::kControl:
          if (stmt != stmts.end()) {
            po.stmt = stmt->second;
            (*names)[o.name].uses++;
          } else {
            Bind(f, o.name, NameInfo::Kind::kControl, ValueType::kNode, o.loc,
                 names);
          }
          pn.control.push_back(po);
          continue;
        case OK::kWildcard:
          break;
      }
      pn.data.push_back(po);
    }
    (*pnodes)[index] = std::move(pn);
    return index;
  }

  void Bind(const RuleFile& f, const std::string& name, NameInfo::Kind kind,
            ValueType type, Loc loc, std::map<std::string, NameInfo>* names) {
    auto it = names->find(name);
    if (it != names->end()) {
      if (it->second.kind == kind && kind == NameInfo::Kind::kTensor) {
        it->second.uses++;  // the same tensor twice: a DAG pattern
        return;
      }
      Error(f, loc, absl::StrCat("`", name, "` is already bound"));
      return;
    }
    if (params_.count(name) != 0) {
      Error(f, loc, absl::StrCat("`", name, "` hides the param of that name"));
    }
    (*names)[name] = {kind, type, loc, 0};
  }

  ValueType CheckExpr(const RuleFile& f, const Expr& e,
                      std::map<std::string, NameInfo>* names, bool in_guard) {
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
      case K::kPort: {
        auto it = names->find(e.text);
        if (it == names->end()) {
          auto p = param_types_.find(e.text);
          if (p != param_types_.end() && e.kind == K::kName) {
            ++param_uses_[e.text];
            return ParamType(p->second);
          }
          std::vector<std::string> known;
          for (const auto& [k, v] : *names) known.push_back(k);
          Error(f, e.loc, absl::StrCat("unknown name `", e.text, "`"),
                Suggest(e.text, known));
          return ValueType::kAny;
        }
        it->second.uses++;
        if (e.kind == K::kPort) return ValueType::kTensor;
        return it->second.type;
      }
      case K::kMember: {
        ValueType base = CheckExpr(f, *e.args[0], names, in_guard);
        if (base != ValueType::kNode && base != ValueType::kTensor &&
            base != ValueType::kAny) {
          Error(f, e.loc,
                absl::StrCat("`.", e.text, "` needs a node, not a ",
                             ValueTypeName(base)));
        }
        if (e.text == "op" || e.text == "name" || e.text == "device")
          return ValueType::kString;
        return ValueType::kAny;
      }
      case K::kList:
        for (const auto& a : e.args) CheckExpr(f, *a, names, in_guard);
        return ValueType::kList;
      case K::kCall: {
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
              sig.variadic ? absl::StrCat("at least ", sig.params.size())
              : sig.optional > 0
                  ? absl::StrCat(least, " to ", sig.params.size())
                  : absl::StrCat(sig.params.size());
          Error(f, e.loc,
                absl::StrCat("`", e.text, "` takes ", takes,
                             " argument(s), got ", n));
          return sig.result;
        }
        for (size_t i = 0; i < n; ++i) {
          ValueType want = sig.params[std::min(i, sig.params.size() - 1)];
          if (!Accepts(want, types[i])) {
            Error(f, e.args[i]->loc,
                  absl::StrCat("argument ", i + 1, " of `", e.text,
                               "` must be a ", ValueTypeName(want), ", not a ",
                               ValueTypeName(types[i])));
          }
        }
        return sig.result;
      }
      case K::kUnary: {
        ValueType t = CheckExpr(f, *e.args[0], names, in_guard);
        return e.text == "not" ? ValueType::kBool : t;
      }
      case K::kBinary: {
        ValueType a = CheckExpr(f, *e.args[0], names, in_guard);
        ValueType b = CheckExpr(f, *e.args[1], names, in_guard);
        const std::string& op = e.text;
        if (op == "and" || op == "or" || op == "==" || op == "!=" ||
            op == "<" || op == ">" || op == "<=" || op == ">=") {
          return ValueType::kBool;
        }
        bool text = a == ValueType::kString || b == ValueType::kString;
        if (op == "+" && text &&
            (a == ValueType::kString || a == ValueType::kAny) &&
            (b == ValueType::kString || b == ValueType::kAny)) {
          return ValueType::kString;  // joins strings
        }
        for (ValueType t : {a, b}) {
          if (t == ValueType::kString || t == ValueType::kBool) {
            Error(f, e.loc,
                  absl::StrCat("`", op, "` needs numbers or constants, not a ",
                               ValueTypeName(t)));
          }
        }
        if (a == ValueType::kInt && b == ValueType::kInt)
          return ValueType::kInt;
        if ((a == ValueType::kInt || a == ValueType::kFloat) &&
            (b == ValueType::kInt || b == ValueType::kFloat)) {
          return ValueType::kFloat;
        }
        return ValueType::kConst;
      }
      case K::kCreate: {
        if (e.has_name_template) CountTemplateParams(e.name_template);
        if (in_guard) Error(f, e.loc, "a guard cannot create nodes");
        if (!e.text.empty()) CheckOp(f, e.text, e.loc);
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
            Error(f, a->loc,
                  "a constant is not a tensor; wrap it in `Const(...)`");
          }
        }
        for (const AttrItem& item : e.attrs) {
          if (item.spread) {
            auto it = names->find(item.name);
            if (it == names->end()) {
              Error(f, item.loc,
                    absl::StrCat("unknown name `", item.name, "`"));
            } else {
              it->second.uses++;
            }
          } else {
            CheckExpr(f, *item.value, names, in_guard);
          }
        }
        return ValueType::kNode;
      }
    }
    return ValueType::kAny;
  }

  // A name a rewrite action binds (let, a new node, a copy, a spliced node).
  void BindAction(const RuleFile& f, const std::string& name,
                  NameInfo::Kind kind, ValueType type, Loc loc,
                  std::map<std::string, NameInfo>* names) {
    if (names->count(name)) {
      Error(f, loc, absl::StrCat("`", name, "` is already bound"));
    } else {
      (*names)[name] = {kind, type, loc, 0};
    }
  }

  void RequireNode(const RuleFile& f, const std::string& name, Loc loc,
                   std::map<std::string, NameInfo>* names) {
    auto it = names->find(name);
    if (it == names->end()) {
      Error(f, loc, absl::StrCat("unknown name `", name, "`"));
      return;
    }
    it->second.uses++;
    bool let_node = it->second.kind == NameInfo::Kind::kLet &&
                    (it->second.type == ValueType::kNode ||
                     it->second.type == ValueType::kTensor);
    if ((it->second.kind == NameInfo::Kind::kLet && !let_node) ||
        it->second.kind == NameInfo::Kind::kList) {
      Error(f, loc, absl::StrCat("`", name, "` is not a node"));
    }
  }

  void CompileRule(const RuleFile& f, const Rule& rule) {
    size_t errors_before = d_->errors().size();
    splice_graphs_.clear();
    if (!rule.has_match)
      Error(f, rule.loc,
            absl::StrCat("rule `", rule.name, "` has no `match` block"));
    if (!rule.has_rewrite)
      Error(f, rule.loc,
            absl::StrCat("rule `", rule.name, "` has no `rewrite` block"));
    if (rule.has_match && rule.patterns.empty()) {
      Error(f, rule.match_loc, "the match block has no pattern");
    }
    if (!rule.has_match || rule.patterns.empty()) return;

    std::map<std::string, int> stmts;
    std::map<std::string, NameInfo> names;
    for (size_t i = 0; i < rule.patterns.size(); ++i) {
      const PatternStmt& s = rule.patterns[i];
      if (!stmts.emplace(s.name, static_cast<int>(i)).second) {
        Error(f, s.loc, absl::StrCat("`", s.name, "` is already a pattern"));
      }
      names[s.name] = {NameInfo::Kind::kPattern, ValueType::kNode, s.loc, 0};
    }
    // Statement patterns occupy the first slots; nested ones follow.
    std::vector<PNode> all(rule.patterns.size());
    for (size_t i = 0; i < rule.patterns.size(); ++i) {
      AddPattern(f, rule.patterns[i].pattern, rule.patterns[i].name, &all,
                 &names, stmts, static_cast<int>(i));
    }
    // The root: the one statement no other pattern refers to.
    std::vector<int> roots;
    for (size_t i = 0; i < rule.patterns.size(); ++i) {
      if (names[rule.patterns[i].name].uses == 0)
        roots.push_back(static_cast<int>(i));
    }
    int root = -1;
    if (roots.size() == 1) {
      root = roots[0];
    } else if (roots.empty()) {
      Error(f, rule.match_loc,
            "the patterns refer to each other in a cycle: no root");
    } else {
      std::vector<std::string> list;
      for (int r : roots)
        list.push_back(absl::StrCat("`", rule.patterns[r].name, "`"));
      Error(f, rule.match_loc,
            absl::StrCat("the pattern has ", roots.size(), " roots (",
                         absl::StrJoin(list, ", "),
                         "); connect them, or split the rule"));
    }
    // Guards.
    std::vector<Guard> guards;
    for (const ExprPtr& g : rule.guards) {
      ValueType t = CheckExpr(f, *g, &names, true);
      if (t != ValueType::kBool && t != ValueType::kAny) {
        Error(f, g->loc,
              absl::StrCat("`where` needs a bool, not a ", ValueTypeName(t)));
      }
      std::vector<ExprPtr> parts;
      Conjuncts(g, &parts);
      for (const ExprPtr& p : parts) {
        Guard guard;
        guard.expr = p;
        std::set<std::string> all_names;
        CollectNames(*p, &all_names);
        for (const std::string& n : all_names) {
          if (names.count(n)) guard.names.insert(n);
        }
        guards.push_back(std::move(guard));
      }
    }
    // Actions.
    using AK = Action::Kind;
    for (const Action& a : rule.actions) {
      switch (a.kind) {
        case AK::kLet:
        case AK::kAssign: {
          ValueType t = CheckExpr(f, *a.a, &names, false);
          BindAction(f, a.name,
                     a.kind == AK::kLet ? NameInfo::Kind::kLet
                                        : NameInfo::Kind::kCreated,
                     t, a.name_loc, &names);
          break;
        }
        case AK::kReplace:
        case AK::kReroute:
        case AK::kSwap:
          for (const ExprPtr& x : {a.a, a.b}) {
            ValueType t = CheckExpr(f, *x, &names, false);
            bool list_ok = a.kind != AK::kReplace && t == ValueType::kList;
            if (t != ValueType::kTensor && t != ValueType::kNode &&
                t != ValueType::kAny && !list_ok) {
              Error(
                  f, x->loc,
                  absl::StrCat("expected a tensor, not a ", ValueTypeName(t)));
            }
          }
          for (const auto& [n, loc] : a.filter_nodes)
            RequireNode(f, n, loc, &names);
          break;
        case AK::kErase:
          RequireNode(f, a.name, a.name_loc, &names);
          break;
        case AK::kRename:
        case AK::kDevice:
        case AK::kSet: {
          RequireNode(f, a.name, a.name_loc, &names);
          ValueType t = CheckExpr(f, *a.a, &names, false);
          if (a.kind != AK::kSet && t != ValueType::kString &&
              t != ValueType::kAny) {
            Error(f, a.a->loc,
                  absl::StrCat("expected a string, not a ", ValueTypeName(t)));
          }
          break;
        }
        case AK::kControl:
        case AK::kUncontrol:
          RequireNode(f, a.name, a.name_loc, &names);
          RequireNode(f, a.target, a.target_loc, &names);
          break;
        case AK::kFail: {
          ValueType t = CheckExpr(f, *a.a, &names, false);
          if (t != ValueType::kString && t != ValueType::kAny) {
            Error(f, a.a->loc,
                  absl::StrCat("expected the message, a string, not a ",
                               ValueTypeName(t)));
          }
          break;
        }
        case AK::kClone: {
          for (const auto& [n, loc] : a.clone_from)
            RequireNode(f, n, loc, &names);
          if (a.clone_from.size() != a.clone_to.size()) {
            Error(f, a.loc,
                  absl::StrCat("`clone` copies ", a.clone_from.size(),
                               " node(s) but names ", a.clone_to.size(),
                               " copies"));
          }
          for (const auto& [from, to] : a.replacements) {
            CheckExpr(f, *from, &names, false);
            CheckExpr(f, *to, &names, false);
          }
          for (const auto& [n, loc] : a.clone_to) {
            BindAction(f, n, NameInfo::Kind::kCreated, ValueType::kNode, loc,
                       &names);
          }
          break;
        }
        case AK::kSplice: {
          SpliceSource source;
          bool known =
              true;  // the graph is known now (a file, or a param given a file)
          if (!a.path_param.empty()) {
            source.what = absl::StrCat("param `", a.path_param, "`");
            auto p = param_types_.find(a.path_param);
            if (p == param_types_.end() || p->second != "graph") {
              Error(
                  f, a.path_loc,
                  absl::StrCat("`", a.path_param, "` is not a `graph` param"));
              break;
            }
            ++param_uses_[a.path_param];
            source.graph = params_[a.path_param].graph;
            known = source.graph != nullptr;
          } else {
            source.what = absl::StrCat("`", a.path, "`");
            absl::StatusOr<Graph> graph =
                LoadGraph(PathRelativeTo(f.path, a.path));
            if (!graph.ok()) {
              Error(f, a.path_loc,
                    absl::StrCat("cannot splice `", a.path,
                                 "`: ", graph.status().message()));
              break;
            }
            source.graph = std::make_shared<const Graph>(*std::move(graph));
          }
          if (known && a.splice_root.empty()) {
            source.whole = std::make_shared<const tf::GraphDef>(
                source.graph->ToGraphDef());
          }
          // Names with `{...}` templates are looked up when the rule runs.
          auto check_name = [&](const std::string& name, Loc loc) {
            if (known && name.find('{') == std::string::npos &&
                !source.graph->Contains(name.substr(0, name.find(':')))) {
              Error(f, loc,
                    absl::StrCat(source.what, " has no node `", name, "`"));
            }
          };
          if (!a.splice_root.empty()) check_name(a.splice_root, a.path_loc);
          for (const auto& [name, expr] : a.splice_inputs) {
            CheckExpr(f, *expr, &names, false);
            check_name(name, expr->loc);
          }
          for (const auto& [binding, node] : a.take) {
            check_name(node, binding.second);
            BindAction(f, binding.first, NameInfo::Kind::kCreated,
                       ValueType::kNode, binding.second, &names);
          }
          splice_graphs_[&a - rule.actions.data()] = std::move(source);
          break;
        }
      }
    }
    // Unused names.
    for (const auto& [n, info] : names) {
      if (info.uses > 0 || info.kind == NameInfo::Kind::kPattern) continue;
      if (info.kind == NameInfo::Kind::kTensor ||
          info.kind == NameInfo::Kind::kList ||
          info.kind == NameInfo::Kind::kControl) {
        Error(f, info.loc,
              absl::StrCat(
                  "`", n,
                  "` is bound but never used; write `_` to match any input"));
      } else {
        Error(f, info.loc, absl::StrCat("`", n, "` is never used"));
      }
    }
    if (d_->errors().size() != errors_before || root < 0) return;
    int priority =
        rule.has_priority ? rule.priority : static_cast<int>(all.size());
    auto compiled = std::make_unique<CompiledRule>(
        rule.name, priority, std::move(all), root, std::move(guards),
        rule.actions, params_, hooks_);
    compiled->splices_ = std::move(splice_graphs_);
    compiled->checks_ = checks_;
    splice_graphs_.clear();
    set_->rules_.push_back(std::move(compiled));
  }

  const CompileOptions& options_;
  const HookRegistry& hooks_;
  Diagnostics* d_;
  std::unique_ptr<RuleSet> set_;
  std::map<std::string, Value> params_;
  std::map<std::string, std::string> param_types_;
  std::map<std::ptrdiff_t, SpliceSource> splice_graphs_;
  std::shared_ptr<SetChecks> checks_ = std::make_shared<SetChecks>();
  std::map<std::string, int> param_uses_;
};

const ::graft::Rule* RuleSet::Find(const std::string& name) const {
  for (const auto& r : rules_) {
    if (r->name() == name) return r.get();
  }
  return nullptr;
}

std::vector<const ::graft::Rule*> RuleSet::rules() const {
  std::vector<const ::graft::Rule*> out;
  for (const auto& r : rules_) out.push_back(r.get());
  return out;
}

Explanation ExplainAt(const RuleSet& set, const std::string& rule,
                      const Graph& graph, NodeId node) {
  Explanation out;
  const CompiledRule* compiled =
      static_cast<const CompiledRule*>(set.Find(rule));
  if (compiled == nullptr) {
    out.reason = absl::StrCat("no rule `", rule, "`");
    return out;
  }
  std::unique_ptr<MatchState> m = compiled->Explain(graph, node, &out.reason);
  if (m == nullptr) return out;
  out.matched = true;
  for (const auto& [name, v] : CompiledRule::Bindings(*m)) {
    std::string text;
    switch (v.type) {
      case ValueType::kNode:
        text = absl::StrCat("`", graph.node(v.tensor.node).name(), "`");
        break;
      case ValueType::kTensor:
        text = absl::StrCat("`", graph.TensorName(v.tensor), "`");
        break;
      case ValueType::kList:
        text = absl::StrCat(v.list.size(), " tensor(s)");
        break;
      case ValueType::kGraph:
        text = v.graph ? absl::StrCat("`", v.s, "`") : "none";
        break;
      case ValueType::kRanges:
        text = v.ranges ? absl::StrCat(v.ranges->ranges.size(),
                                       " range(s) from `", v.ranges->path, "`")
                        : "none";
        break;
      case ValueType::kInt:
        text = absl::StrCat(v.i);
        break;
      case ValueType::kFloat:
        text = absl::StrCat(v.f);
        break;
      case ValueType::kBool:
        text = v.b ? "true" : "false";
        break;
      case ValueType::kString:
        text = absl::StrCat("\"", v.s, "\"");
        break;
      default:
        text = ValueTypeName(v.type);
        break;
    }
    out.bindings.emplace_back(name, text);
  }
  return out;
}

std::unique_ptr<RuleSet> CompileRuleFiles(const std::vector<std::string>& paths,
                                          const CompileOptions& options,
                                          const HookRegistry& hooks,
                                          Diagnostics* diagnostics) {
  Compiler compiler(options, hooks, diagnostics);
  return compiler.Compile(paths, nullptr);
}

std::unique_ptr<RuleSet> CompileRuleText(const std::string& path,
                                         const std::string& text,
                                         const CompileOptions& options,
                                         const HookRegistry& hooks,
                                         Diagnostics* diagnostics) {
  Compiler compiler(options, hooks, diagnostics);
  return compiler.Compile({path}, &text);
}

}  // namespace graft::dsl
