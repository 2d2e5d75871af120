#include "dialects/tf/constant_args.h"

#include <functional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dialects/tf/function_body.h"
#include "engine/dialect.h"
#include "engine/rewriter.h"

namespace graft {
namespace {

// A shown constant's attr: the `_Arg` it stands for.
constexpr char kMark[] = "_graft_constant_arg";
// Identity chains longer than this are not followed (a cycle is refused
// elsewhere; this bounds a pathological file).
constexpr int kMaxIdentities = 64;

using Held = ConstantArgs::Held;

Held Conflict() {
  Held h;
  h.kind = Held::kConflict;
  return h;
}

// Two constants hold the same value: the same node, or the same dtype,
// shape and bytes (a value stored two ways compares unequal: a conflict,
// which only shows less).
bool SameValue(const Held& a, const Held& b) {
  if (a.source == b.source) return true;
  if (a.dtype != b.dtype) return false;
  auto key = [](const Held& h) {
    std::string k = h.value.tensor().SerializeAsString();
    if (h.content != nullptr) absl::StrAppend(&k, "|apart|", h.content->bytes());
    return k;
  };
  return key(a) == key(b);
}

Held ConstantHeld(const tf::NodeDef& def, std::string source,
                  std::shared_ptr<const TensorContent> content) {
  auto dtype = def.attr().find("dtype");
  auto value = def.attr().find("value");
  if (def.op() != "Const" || dtype == def.attr().end() || value == def.attr().end() ||
      !value->second.has_tensor())
    return Conflict();
  Held h;
  h.kind = Held::kConstant;
  h.source = std::move(source);
  h.dtype = dtype->second.type();
  h.value = value->second;
  h.content = std::move(content);
  return h;
}

// What a top-level tensor holds: a Const, through Identity ops.
Held HeldByTensor(const Graph& graph, Endpoint e) {
  for (int i = 0; i < kMaxIdentities && e.valid(); ++i) {
    const Node& n = graph.node(e.node);
    if (n.op() == "Const" && e.port == 0)
      return ConstantHeld(n.def(), n.name(), n.value_content_apart());
    if (n.op() != "Identity" || n.num_inputs() < 1) break;
    e = n.input(0);
  }
  return Conflict();
}

// The node a FunctionDef input names (`node:out:0`, `node`), or its arg.
std::string NodeNameOf(const std::string& input) {
  return input.substr(0, input.find(':'));
}

// Which args a While body returns as it got them (through Identity ops):
// the inputs the loop never changes.
std::vector<bool> UnchangedArgs(const tf::FunctionDef& body) {
  const tf::OpDef& sig = body.signature();
  std::map<std::string, const tf::NodeDef*> nodes;
  for (const tf::NodeDef& n : body.node_def()) nodes[n.name()] = &n;
  std::vector<bool> out(sig.input_arg_size(), false);
  for (int index = 0; index < sig.input_arg_size() && index < sig.output_arg_size(); ++index) {
    auto ret = body.ret().find(sig.output_arg(index).name());
    if (ret == body.ret().end()) continue;
    std::string at = ret->second;
    for (int i = 0; i < kMaxIdentities && !out[index]; ++i) {
      if (at == sig.input_arg(index).name()) {
        out[index] = true;
        break;
      }
      auto n = nodes.find(NodeNameOf(at));
      if (n == nodes.end() || n->second->op() != "Identity" || n->second->input_size() < 1) break;
      at = n->second->input(0);
    }
  }
  return out;
}

const tf::FunctionDef* FunctionAttr(const tf::NodeDef& node, const std::string& attr,
                                    const FunctionsByName& library) {
  auto a = node.attr().find(attr);
  if (a == node.attr().end() || !a->second.has_func()) return nullptr;
  auto f = library.find(a->second.func().name());
  return f == library.end() ? nullptr : f->second;
}

// A call passes its data inputs to its functions' args: an If's (after
// the condition) to both branches, a While's to its cond and body (a
// loop-carried one holds nothing), a call's to its target. Any other
// function a node names holds nothing.
void ProposeCall(const tf::NodeDef& node, const std::function<Held(int)>& held_of,
                 const FunctionsByName& library, const std::set<std::string>& names,
                 const std::function<void(const std::string&, int, const Held&)>& propose) {
  std::vector<const tf::FunctionDef*> targets;
  const tf::FunctionDef* loop_body = nullptr;
  int first = 0;
  const std::string& op = node.op();
  if (op == "If" || op == "StatelessIf") {
    targets = {FunctionAttr(node, "then_branch", library),
               FunctionAttr(node, "else_branch", library)};
    first = 1;
  } else if (op == "Case" || op == "StatelessCase") {
    auto branches = node.attr().find("branches");
    if (branches != node.attr().end()) {
      for (const tf::NameAttrList& b : branches->second.list().func()) {
        auto f = library.find(b.name());
        targets.push_back(f == library.end() ? nullptr : f->second);
      }
    }
    first = 1;
  } else if (op == "While" || op == "StatelessWhile") {
    loop_body = FunctionAttr(node, "body", library);
    targets = {FunctionAttr(node, "cond", library), loop_body};
  } else if (const tf::FunctionDef* target = CallTarget(node, library)) {
    targets = {target};
  }
  std::set<const tf::FunctionDef*> called(targets.begin(), targets.end());
  for (const std::string& callee : FunctionsCalled(node, names)) {
    auto it = library.find(callee);
    if (it == library.end() || called.count(it->second)) continue;
    for (int i = 0; i < it->second->signature().input_arg_size(); ++i)
      propose(callee, i, Conflict());
  }
  if (called.count(nullptr)) targets.clear();  // a branch that is missing
  const std::vector<bool> unchanged =
      loop_body != nullptr ? UnchangedArgs(*loop_body) : std::vector<bool>();
  int k = -1;  // data input index
  for (const std::string& input : node.input()) {
    if (!input.empty() && input[0] == '^') continue;
    const int i = ++k - first;
    if (i < 0) continue;
    Held h;
    bool computed = false;
    for (const tf::FunctionDef* t : targets) {
      if (i >= t->signature().input_arg_size()) continue;
      if (!computed) {
        const bool loop_carried =
            loop_body != nullptr && (i >= static_cast<int>(unchanged.size()) || !unchanged[i]);
        h = loop_carried ? Conflict() : held_of(k);
        computed = true;
      }
      propose(t->signature().name(), i, h);
    }
  }
}

}  // namespace

ConstantArgs ConstantArgs::Of(const Graph& graph) {
  ConstantArgs out;
  if (graph.origin() != nullptr && graph.origin()->dialect() != "tensorflow") return out;
  FunctionsByName library;
  std::set<std::string> names;
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    library[f.signature().name()] = &f;
    names.insert(f.signature().name());
    out.args_[f.signature().name()].resize(f.signature().input_arg_size());
  }
  if (library.empty()) return out;
  auto propose = [&](const std::string& function, int index, const Held& h) {
    Held& held = out.args_[function][index];
    if (held.kind == Held::kUnset) {
      held = h;
    } else if (held.kind == Held::kConstant &&
               (h.kind != Held::kConstant || !SameValue(held, h))) {
      held = Conflict();
    }
  };
  auto calls = [&](const tf::NodeDef& node, const std::function<Held(int)>& held_of) {
    ProposeCall(node, held_of, library, names, propose);
  };
  graph.ForEachNode([&](const Node& n) {
    calls(n.def(), [&](int k) {
      return k < n.num_inputs() ? HeldByTensor(graph, n.input(k)) : Conflict();
    });
  });
  std::vector<const tf::FunctionDef*> order = CallOrder(library);
  if (order.empty()) {  // recursion (refused elsewhere): nothing is shown
    out.args_.clear();
    return out;
  }
  for (const tf::FunctionDef* f : order) {
    const std::string& caller = f->signature().name();
    const std::map<std::string, int> arg_index = ArgIndex(*f);
    std::map<std::string, const tf::NodeDef*> nodes;
    for (const tf::NodeDef& n : f->node_def()) nodes[n.name()] = &n;
    // What an input of a node in this body holds: a Const of the body, or
    // an arg of this function that holds one (callers came first).
    auto held_in_body = [&](std::string input) -> Held {
      for (int i = 0; i < kMaxIdentities; ++i) {
        const std::string name = NodeNameOf(input);
        if (auto arg = arg_index.find(name); arg != arg_index.end()) {
          const Held& held = out.args_[caller][arg->second];
          return held.kind == Held::kConstant ? held : Conflict();
        }
        auto n = nodes.find(name);
        if (n == nodes.end()) return Conflict();
        if (n->second->op() == "Const")
          return ConstantHeld(*n->second, absl::StrCat(caller, "/", name), nullptr);
        if (n->second->op() != "Identity" || n->second->input_size() < 1) return Conflict();
        input = n->second->input(0);
      }
      return Conflict();
    };
    for (const tf::NodeDef& node : f->node_def()) {
      std::vector<std::string> data;
      for (const std::string& input : node.input())
        if (input.empty() || input[0] != '^') data.push_back(input);
      calls(node, [&](int k) {
        return k < static_cast<int>(data.size()) ? held_in_body(data[k]) : Conflict();
      });
    }
  }
  return out;
}

const ConstantArgs::Held* ConstantArgs::ConstantOf(const std::string& function,
                                                   int index) const {
  auto it = args_.find(function);
  if (it == args_.end() || index < 0 || index >= static_cast<int>(it->second.size()))
    return nullptr;
  const Held& h = it->second[index];
  return h.kind == Held::kConstant ? &h : nullptr;
}

absl::StatusOr<int> ConstantArgs::Expose(const std::string& function,
                                         Graph& body) const {
  std::vector<std::pair<NodeId, const Held*>> shown;
  body.ForEachNode([&](const Node& arg) {
    if (arg.op() != "_Arg" || arg.num_used_ports() == 0 || arg.consumers(0).empty())
      return;
    const tf::AttrValue* index = arg.attr("index");
    const tf::AttrValue* type = arg.attr("T");
    const Held* h = ConstantOf(function, index != nullptr ? static_cast<int>(index->i()) : -1);
    if (h != nullptr && type != nullptr && type->type() == h->dtype)
      shown.emplace_back(arg.id(), h);
  });
  Rewriter rewriter(body);
  rewriter.SetProvenance("constant argument");
  for (const auto& [id, h] : shown) {
    const Node& arg = body.node(id);
    NodeSpec constant;
    constant.name = arg.name() + "/constant";
    constant.op = "Const";
    constant.device = arg.device();
    constant.attrs["dtype"].set_type(h->dtype);
    constant.attrs["value"] = h->value;
    constant.attrs[kMark].set_s(arg.name());
    constant.value_content = h->content;
    absl::StatusOr<NodeId> made = rewriter.AddNode(std::move(constant));
    if (!made.ok()) return made.status();
    absl::StatusOr<int> moved = rewriter.Reroute({id, 0}, {*made, 0});
    if (!moved.ok()) return moved.status();
  }
  return static_cast<int>(shown.size());
}

absl::StatusOr<int> ConstantArgs::Restore(Graph& body) {
  int computed_with = 0;
  absl::StatusOr<int> restored =
      RestoreMarkedConstants(body, kMark, "_Arg", "constant argument", &computed_with);
  if (!restored.ok()) return restored.status();
  return computed_with;
}

absl::StatusOr<int> RestoreMarkedConstants(Graph& body, const std::string& mark,
                                           const std::string& op,
                                           const std::string& provenance,
                                           int* computed_with) {
  std::vector<NodeId> marked;
  body.ForEachNode([&](const Node& n) {
    if (n.op() == "Const" && n.attr(mark) != nullptr) marked.push_back(n.id());
  });
  Rewriter rewriter(body);
  rewriter.SetProvenance(provenance);
  int restored = 0;
  std::vector<NodeId> doomed;
  for (NodeId id : marked) {
    const Node* source = body.FindNode(body.node(id).attr(mark)->s());
    if (source == nullptr || source->op() != op) {
      // The source is gone (a rule removed it): the value stays a constant.
      absl::Status s = rewriter.RemoveAttr(id, mark);
      if (!s.ok()) return s;
      continue;
    }
    const Node& constant = body.node(id);
    if (computed_with != nullptr && constant.num_used_ports() > 0) {
      // A While body returning its loop-invariant arg passes it on.
      const tf::AttrValue* index = source->attr("index");
      auto passed_on = [&](const Node& reader) {
        const tf::AttrValue* out = reader.attr("index");
        return reader.op() == "_Retval" && index != nullptr && out != nullptr &&
               out->i() == index->i();
      };
      bool computing = false;
      for (const InputSlot& s : constant.consumers(0)) {
        const Node& reader = body.node(s.node);
        if (passed_on(reader)) continue;
        computing = computing || reader.op() != "Identity" ||
                    (reader.num_used_ports() > 0 && !reader.consumers(0).empty());
      }
      if (computing) ++*computed_with;
    }
    if (constant.num_used_ports() > 0 && !constant.consumers(0).empty()) {
      absl::StatusOr<int> moved = rewriter.Reroute({id, 0}, {source->id(), 0});
      if (!moved.ok()) return moved.status();
      ++restored;
    }
    if (!body.node(id).control_consumers().empty()) {
      absl::Status s = rewriter.RemoveAttr(id, mark);  // something waits on it
      if (!s.ok()) return s;
      continue;
    }
    doomed.push_back(id);
  }
  if (absl::Status s = rewriter.RemoveNodes(doomed); !s.ok()) return s;
  return restored;
}

}  // namespace graft
