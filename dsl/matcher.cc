#include "dsl/matcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"

namespace graft::dsl {
namespace {

using OK = OperandPattern::Kind;

// A pattern node to match against a tensor; `parent` and `operand` say
// where it sits, for explanations ("operand 1 of `conv`").
struct Task {
  int pnode;
  Endpoint tensor;
  int parent = -1;
  int operand = -1;
};

class Search {
 public:
  Search(const CompiledPattern& pattern, const Evaluator& evaluator,
         const Graph& graph, Bindings* bindings, std::vector<NodeId>* nodes,
         ExplainSink* sink, std::string* guard_error)
      : pattern_(pattern),
        evaluator_(evaluator),
        graph_(graph),
        bindings_(*bindings),
        nodes_(*nodes),
        sink_(sink),
        guard_error_(guard_error),
        guard_done_(pattern.guards.size(), 0) {}

  bool Run(NodeId root) {
    if (pattern_.root < 0) return GuardsHold(true);  // a `for` rule's item
    Mark start = Here();
    tasks_.push_back({pattern_.root, {root, 0}});
    if (Solve()) return true;
    Undo(start);
    return false;
  }

 private:
  // What the search has done so far; Undo goes back to it.
  struct Mark {
    size_t trail, nodes, tasks, guards;
  };
  Mark Here() const {
    return {bindings_.Mark(), nodes_.size(), tasks_.size(),
            guard_trail_.size()};
  }
  void Undo(const Mark& m) {
    bindings_.UndoTo(m.trail);
    nodes_.resize(m.nodes);
    tasks_.resize(m.tasks);
    while (guard_trail_.size() > m.guards) {
      guard_done_[guard_trail_.back()] = 0;
      guard_trail_.pop_back();
    }
  }

  // Records why a branch failed (the deepest reason wins) and returns
  // false; the message is built only when someone listens.
  // The failure that got furthest is reported; of equals, the latest,
  // except that a false guard is not hidden by a mismatch as far in (a
  // commutative op's other order failing where the first met the guard).
  template <typename Reason>
  bool Fail(Reason reason, bool guard = false) {
    if (sink_ != nullptr &&
        (nodes_.size() > sink_->depth || !sink_->any ||
         (nodes_.size() == sink_->depth && (guard || !sink_->guard)))) {
      sink_->depth = nodes_.size();
      sink_->reason = reason();
      sink_->any = true;
      sink_->guard = guard;
    }
    return false;
  }

  std::string Context(const Task& t) const {
    if (t.parent < 0) return "this input";
    return absl::StrCat("operand ", t.operand, " of ",
                        pattern_.nodes[t.parent].what);
  }

  // Every function below leaves the search as it found it when it fails.
  bool Solve() {
    if (tasks_.empty()) return GuardsHold(true);
    Task task = tasks_.back();
    tasks_.pop_back();
    Mark m = Here();
    if (SolveTask(task)) return true;
    Undo(m);
    tasks_.push_back(task);
    return false;
  }

  // An optional node (`BiasAdd?(conv, b)`) is tried present, then absent.
  bool SolveTask(const Task& task) {
    const PatternNode& pn = pattern_.nodes[task.pnode];
    if (!pn.optional) return SolvePresent(task);
    Mark m = Here();
    if (SolvePresent(task)) return true;
    Undo(m);
    return SolveAbsent(task, pn);
  }

  // Absent: its name stands for the tensor's producer, and its first
  // operand's pattern is matched against the same tensor; the other
  // operands bind nothing.
  bool SolveAbsent(const Task& task, const PatternNode& pn) {
    Endpoint t = task.tensor;
    auto mismatch = [&](const char* why) {
      return Fail([&] {
        return absl::StrCat(pn.what,
                            " (optional): neither there nor absent: ", why,
                            " `", graph_.TensorName(t), "`");
      });
    };
    if (pn.slot >= 0) {
      const Value* bound = bindings_.At(pn.slot);
      if (bound != nullptr && bound->tensor.node != t.node)
        return mismatch("it is bound elsewhere, not to");
      if (bound == nullptr) bindings_.Bind(pn.slot, Value::NodeRef(t.node));
    }
    const PatternOperand& o = pn.data[pn.stand_in];
    switch (o.kind) {
      case OK::kName:
        if (o.stmt < 0) {
          if (!BindTensor(o.slot, t))
            return mismatch("its stand-in is bound elsewhere, not to");
        } else {
          if (t.port != 0)
            return mismatch("its stand-in is output 0, not");
          tasks_.push_back({o.stmt, t, task.parent, task.operand});
        }
        break;
      case OK::kPort:
        if (t.port != o.port)
          return mismatch("its stand-in is another output than");
        tasks_.push_back({o.stmt, {t.node, 0}, task.parent, task.operand});
        break;
      case OK::kBound:
        if (!BindTensor(o.slot, t))
          return mismatch("its stand-in is bound elsewhere, not to");
        tasks_.push_back({o.nested, t, task.parent, task.operand});
        break;
      case OK::kNested:
        tasks_.push_back({o.nested, t, task.parent, task.operand});
        break;
      default:
        break;
    }
    return GuardsHold() && Solve();
  }

  bool SolvePresent(const Task& task) {
    const PatternNode& pn = pattern_.nodes[task.pnode];
    const Node& node = graph_.node(task.tensor.node);
    if (!OpMatches(pn.ops, node.op())) {
      return Fail([&] {
        return absl::StrCat(pn.what, ": expected ",
                            absl::StrJoin(pn.ops, " | "), ", found ", node.op(),
                            " `", node.name(), "`");
      });
    }
    if (pn.slot >= 0) {
      if (const Value* bound = bindings_.At(pn.slot)) {
        if (bound->tensor.node != task.tensor.node) {
          return Fail([&] {
            return absl::StrCat(
                pn.what, " is `", graph_.node(bound->tensor.node).name(),
                "` but ", Context(task), " is `", node.name(), "`");
          });
        }
        return Solve();
      }
      bindings_.Bind(pn.slot, Value::NodeRef(task.tensor.node));
    }
    if (std::find(nodes_.begin(), nodes_.end(), node.id()) == nodes_.end()) {
      nodes_.push_back(node.id());
    }
    if (!pn.has_operands) return GuardsHold() && Solve();
    if (pn.anywhere) return SolveAnywhere(task, pn, node);
    int fixed = static_cast<int>(pn.data.size()) - (pn.variadic ? 1 : 0);
    if (pn.variadic ? node.num_inputs() < fixed : node.num_inputs() != fixed) {
      return Fail([&] {
        return absl::StrCat(pn.what, " (`", node.name(), "`) has ",
                            node.num_inputs(),
                            " data input(s); the pattern lists ", fixed);
      });
    }
    const tf::OpDef* def = OpRegistry::For(graph_).Find(node.op());
    bool commutative =
        fixed == 2 && !pn.variadic && def != nullptr && def->is_commutative();
    for (int swapped = 0; swapped <= (commutative ? 1 : 0); ++swapped) {
      Mark m = Here();
      if (BindOperands(task, pn, node, fixed, swapped == 1) &&
          SolveControl(pn, node, 0)) {
        return true;
      }
      Undo(m);
    }
    return false;
  }

  // `Op(.., t, ..)`: tries each input position in turn.
  bool SolveAnywhere(const Task& task, const PatternNode& pn,
                     const Node& node) {
    for (int i = 0; i < node.num_inputs(); ++i) {
      Mark m = Here();
      if (BindOperands(task, pn, node, 1, false, i) &&
          SolveControl(pn, node, 0)) {
        return true;
      }
      Undo(m);
    }
    return Fail([&] {
      return absl::StrCat(pn.what, " (`", node.name(),
                          "`) reads no input the pattern asks for");
    });
  }

  // Binds a tensor name, or checks it is bound to `e` already.
  bool BindTensor(int slot, Endpoint e) {
    if (const Value* bound = bindings_.At(slot)) return bound->tensor == e;
    bindings_.Bind(slot, Value::Tensor(e));
    return true;
  }

  // Checks and binds the data operands (swapped: a commutative op's two
  // operands in the other order) and queues their producers' patterns.
  // `at` >= 0: the one operand is matched against input `at`.
  bool BindOperands(const Task& task, const PatternNode& pn, const Node& node,
                    int fixed, bool swapped, int at = -1) {
    for (int i = 0; i < fixed; ++i) {
      const PatternOperand& o = pn.data[i];
      Endpoint in = node.input(at >= 0 ? at : swapped ? 1 - i : i);
      auto ctx = [&] { return absl::StrCat("operand ", i, " of ", pn.what); };
      auto already = [&] {
        return absl::StrCat(ctx(), ": `", o.name, "` is already `",
                            graph_.TensorName(bindings_.At(o.slot)->tensor),
                            "`, found `", graph_.TensorName(in), "`");
      };
      if (!in.valid()) {
        return Fail(
            [&] { return absl::StrCat(ctx(), " is not in the graph"); });
      }
      switch (o.kind) {
        case OK::kName:
          if (o.stmt < 0) {
            if (!BindTensor(o.slot, in)) return Fail(already);
            break;
          }
          if (in.port != 0) {
            return Fail([&] {
              return absl::StrCat(ctx(), ": expected output 0 of `", o.name,
                                  "`, found `", graph_.TensorName(in), "`");
            });
          }
          tasks_.push_back({o.stmt, in, task.pnode, i});
          break;
        case OK::kPort:
          if (in.port != o.port) {
            return Fail([&] {
              return absl::StrCat(ctx(), ": expected output ", o.port, " of `",
                                  o.name, "`, found `", graph_.TensorName(in),
                                  "`");
            });
          }
          tasks_.push_back({o.stmt, {in.node, 0}, task.pnode, i});
          break;
        case OK::kBound: {
          // `w: Const`: the producer's op is checked now, before a guard
          // reads `w` (a commutative op's other order binds it to anything).
          const PatternNode& producer = pattern_.nodes[o.nested];
          if (!producer.optional && !producer.has_operands && !producer.ops.empty() &&
              !OpMatches(producer.ops, graph_.node(in.node).op()))
            return Fail([&] {
              return absl::StrCat(ctx(), ": expected ", absl::StrJoin(producer.ops, " | "),
                                  ", found ", graph_.node(in.node).op(), " `",
                                  graph_.node(in.node).name(), "`");
            });
          if (!BindTensor(o.slot, in)) return Fail(already);
          tasks_.push_back({o.nested, in, task.pnode, i});
          break;
        }
        case OK::kNested:
          tasks_.push_back({o.nested, in, task.pnode, i});
          break;
        default:
          break;
      }
    }
    if (pn.variadic && pn.data.back().slot >= 0) {
      std::vector<Value> rest;
      for (int i = fixed; i < node.num_inputs(); ++i) {
        if (!node.input(i).valid()) {
          return Fail([&] {
            return absl::StrCat("input ", i, " of ", pn.what,
                                " is not in the graph");
          });
        }
        rest.push_back(Value::Tensor(node.input(i)));
      }
      bindings_.Bind(pn.data.back().slot, Value::List(std::move(rest)));
    }
    return true;
  }

  // Binds control operands one by one (each may choose among the node's
  // control inputs), then goes on with the tasks.
  bool SolveControl(const PatternNode& pn, const Node& node, size_t k) {
    if (k >= pn.control.size()) return GuardsHold() && Solve();
    const PatternOperand& o = pn.control[k];
    const Value* bound = bindings_.At(o.slot);
    for (NodeId c : node.control_inputs()) {
      if (c == kNoNode) continue;
      if (bound != nullptr) {
        if (bound->tensor.node != c) continue;
        return SolveControl(pn, node, k + 1);
      }
      Mark m = Here();
      if (o.stmt >= 0) {
        tasks_.push_back({o.stmt, {c, 0}});
      } else {
        bindings_.Bind(o.slot, Value::NodeRef(c));
      }
      if (SolveControl(pn, node, k + 1)) return true;
      Undo(m);
    }
    return false;
  }

  // Evaluates every guard whose slots are bound, and binds every `let`
  // whose slots are bound once the guards before it hold, in the order
  // written (a guard or let that reads a name of an optional part waits for
  // the end: `final`); false if a guard fails or a let cannot be evaluated.
  // A let stays bound on failure: the caller's Undo unbinds it.
  bool GuardsHold(bool final = false) {
    size_t mark = guard_trail_.size();
    auto fail = [&](auto reason) {
      Fail(reason, /*guard=*/true);
      while (guard_trail_.size() > mark) {
        guard_done_[guard_trail_.back()] = 0;
        guard_trail_.pop_back();
      }
      return false;
    };
    const std::vector<Guard>& guards = pattern_.guards;
    size_t next_let = 0;
    for (size_t i = 0; i <= guards.size(); ++i) {
      for (; next_let < pattern_.lets.size() &&
             pattern_.lets[next_let].guards_before <= i;
           ++next_let) {
        const MatchLet& let = pattern_.lets[next_let];
        if (!LetReady(let, final)) continue;
        absl::StatusOr<Value> v =
            evaluator_.Eval(graph_, bindings_, *let.expr);
        if (v.ok()) {
          bindings_.Bind(let.slot, *std::move(v));
          continue;
        }
        std::string reason = absl::StrCat(
            "`let ", bindings_.slots().name(let.slot), " = ",
            ExprText(*let.expr), "` failed: ", v.status().message());
        if (guard_error_ != nullptr && guard_error_->empty())
          *guard_error_ = reason;
        return fail([&] { return reason; });
      }
      if (i == guards.size()) break;
      if (guard_done_[i] || (guards[i].at_end && !final)) continue;
      bool ready = std::all_of(guards[i].slots.begin(), guards[i].slots.end(),
                               [&](int s) { return bindings_.IsBound(s); });
      if (!ready) continue;
      guard_done_[i] = 1;
      guard_trail_.push_back(i);
      if (guards[i].for_member) {
        const Value* item = bindings_.At(guards[i].slots[0]);
        if (bindings_.for_items() != nullptr &&
            bindings_.for_items()->contains(item->tensor))
          continue;
        return fail([&] { return std::string("not an item of the `for` plan"); });
      }
      absl::StatusOr<Value> v =
          evaluator_.Eval(graph_, bindings_, *guards[i].expr);
      if (v.ok() && v->type == ValueType::kBool && v->b) continue;
      if (!v.ok() && guard_error_ != nullptr && guard_error_->empty()) {
        *guard_error_ = absl::StrCat("guard `", ExprText(*guards[i].expr),
                                     "` failed: ", v.status().message());
      }
      return fail([&] {
        return v.ok() ? absl::StrCat("guard `", ExprText(*guards[i].expr),
                                     "` is false")
                      : absl::StrCat("guard `", ExprText(*guards[i].expr),
                                     "` failed: ", v.status().message());
      });
    }
    return true;
  }

  // A let not yet bound whose slots are, after the guards written before it.
  bool LetReady(const MatchLet& let, bool final) const {
    if (bindings_.IsBound(let.slot) || (let.at_end && !final)) return false;
    auto bound = [&](int s) { return bindings_.IsBound(s); };
    return std::all_of(let.slots.begin(), let.slots.end(), bound) &&
           std::all_of(guard_done_.begin(),
                       guard_done_.begin() + let.guards_before,
                       [](char done) { return done != 0; });
  }

  const CompiledPattern& pattern_;
  const Evaluator& evaluator_;
  const Graph& graph_;
  Bindings& bindings_;
  std::vector<NodeId>& nodes_;
  ExplainSink* sink_;
  std::string* guard_error_;
  std::vector<Task> tasks_;
  std::vector<char> guard_done_;
  std::vector<size_t> guard_trail_;
};

}  // namespace

bool OpMatches(const std::vector<std::string>& ops, const std::string& op) {
  return ops.empty() || GlobsMatch(ops, op);
}

bool MatchPattern(const CompiledPattern& pattern, const Evaluator& evaluator,
                  const Graph& graph, NodeId root, Bindings* bindings,
                  std::vector<NodeId>* nodes, ExplainSink* sink,
                  std::string* guard_error) {
  Search search(pattern, evaluator, graph, bindings, nodes, sink, guard_error);
  return search.Run(root);
}

}  // namespace graft::dsl
