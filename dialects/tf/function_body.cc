#include "dialects/tf/function_body.h"
#include "dialects/tf/tf_ops.h"

#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/op_registry.h"

namespace graft {
namespace {

using OutputArgs = std::vector<std::pair<std::string, int>>;  // name, count

absl::Status BodyError(const tf::FunctionDef& function,
                       const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(
      "function `", function.signature().name(), "`: ", message));
}

// The signature of `op`: TensorFlow's, or a library function's.
const tf::OpDef* Signature(const std::string& op,
                           const tf::FunctionDefLibrary& library) {
  if (const tf::OpDef* def = TensorflowOps().Find(op)) return def;
  for (const tf::FunctionDef& f : library.function()) {
    if (f.signature().name() == op) return &f.signature();
  }
  return nullptr;
}

// An attr of `node`, or its op's default; nullptr when neither holds a
// value (or the node leaves it to the function's own attrs).
const tf::AttrValue* Attr(const tf::NodeDef& node, const tf::OpDef& op,
                          const std::string& name) {
  auto it = node.attr().find(name);
  if (it != node.attr().end())
    return it->second.placeholder().empty() ? &it->second : nullptr;
  for (const tf::OpDef::AttrDef& attr : op.attr()) {
    if (attr.name() == name && attr.has_default_value())
      return &attr.default_value();
  }
  return nullptr;
}

// Each output arg of `node` and how many tensors it is.
absl::StatusOr<OutputArgs> OutputArgsOf(const tf::NodeDef& node,
                                        const tf::FunctionDefLibrary& library) {
  const tf::OpDef* op = Signature(node.op(), library);
  if (op == nullptr)
    return absl::NotFoundError(
        absl::StrCat("`", node.name(), "` has op `", node.op(),
                     "`, neither TensorFlow's nor a library function"));
  OutputArgs out;
  for (const tf::OpDef::ArgDef& arg : op->output_arg()) {
    int count = 1;
    const std::string& by = !arg.type_list_attr().empty() ? arg.type_list_attr()
                                                          : arg.number_attr();
    if (!by.empty()) {
      const tf::AttrValue* value = Attr(node, *op, by);
      if (value == nullptr)
        return absl::InvalidArgumentError(absl::StrCat(
            "the outputs of `", node.name(), "` (", node.op(),
            ") depend on attr `", by, "`, which it does not set"));
      count = !arg.type_list_attr().empty() ? value->list().type_size()
                                            : static_cast<int>(value->i());
    }
    out.emplace_back(arg.name(), count);
  }
  return out;
}

bool IsInternal(const std::string& op) {
  return op == "_Arg" || op == "_Retval";
}

}  // namespace

std::vector<std::string> FunctionsCalled(const tf::NodeDef& node,
                                         const std::set<std::string>& library) {
  std::vector<std::string> out;
  if (library.count(node.op())) out.push_back(node.op());
  for (const auto& [key, value] : node.attr()) {
    if (value.has_func()) out.push_back(value.func().name());
    for (const tf::NameAttrList& f : value.list().func())
      out.push_back(f.name());
  }
  return out;
}

CallGraph::CallGraph(const tf::FunctionDefLibrary& library) {
  for (const tf::FunctionDef& f : library.function()) {
    names_.insert(f.signature().name());
    functions_[f.signature().name()] = &f;
  }
}

void CallGraph::AddReached(const tf::NodeDef& node,
                           std::set<std::string>* out) const {
  std::vector<const tf::NodeDef*> todo = {&node};
  while (!todo.empty()) {
    const tf::NodeDef* n = todo.back();
    todo.pop_back();
    for (const std::string& f : FunctionsCalled(*n, names_)) {
      if (!out->insert(f).second) continue;  // its body is scanned already
      // A func attr may name a function the library lacks (the validator
      // says so): nothing to scan.
      auto it = functions_.find(f);
      if (it == functions_.end()) continue;
      for (const tf::NodeDef& m : it->second->node_def()) todo.push_back(&m);
    }
  }
}

const tf::FunctionDef* CallTarget(const tf::NodeDef& node, const FunctionsByName& library) {
  if (node.op() == "PartitionedCall" || node.op() == "StatefulPartitionedCall") {
    auto f = node.attr().find("f");
    if (f == node.attr().end() || !f->second.has_func()) return nullptr;
    auto it = library.find(f->second.func().name());
    return it == library.end() ? nullptr : it->second;
  }
  auto it = library.find(node.op());
  if (it == library.end()) return nullptr;
  for (const tf::OpDef::ArgDef& arg : it->second->signature().input_arg()) {
    if (!arg.number_attr().empty() || !arg.type_list_attr().empty()) return nullptr;
  }
  return it->second;
}

std::vector<const tf::FunctionDef*> CallOrder(const FunctionsByName& library) {
  std::set<std::string> names;
  for (const auto& [name, f] : library) names.insert(name);
  // A depth-first post-order with its own stack: a chain of calls as deep
  // as a file can hold never overflows the thread's stack.
  std::map<const tf::FunctionDef*, int> state;  // 1 visiting, 2 done
  std::vector<const tf::FunctionDef*> post;
  struct Frame {
    const tf::FunctionDef* f;
    std::vector<const tf::FunctionDef*> callees;
    size_t next = 0;
  };
  auto callees_of = [&](const tf::FunctionDef* f) {
    std::vector<const tf::FunctionDef*> out;
    for (const tf::NodeDef& n : f->node_def()) {
      for (const std::string& callee : FunctionsCalled(n, names)) {
        auto it = library.find(callee);  // attrs may name a missing one
        if (it != library.end()) out.push_back(it->second);
      }
    }
    return out;
  };
  for (const auto& [name, root] : library) {
    if (state[root] != 0) continue;
    std::vector<Frame> stack;
    state[root] = 1;
    stack.push_back({root, callees_of(root)});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.callees.size()) {
        state[top.f] = 2;
        post.push_back(top.f);
        stack.pop_back();
        continue;
      }
      const tf::FunctionDef* callee = top.callees[top.next++];
      int& s = state[callee];
      if (s == 1) return {};  // a function that calls itself
      if (s == 2) continue;
      s = 1;
      stack.push_back({callee, callees_of(callee)});
    }
  }
  return {post.rbegin(), post.rend()};
}

std::map<std::string, int> ArgIndex(const tf::FunctionDef& function) {
  std::map<std::string, int> out;
  for (int i = 0; i < function.signature().input_arg_size(); ++i)
    out[function.signature().input_arg(i).name()] = i;
  return out;
}

std::string RetvalNodeName(const std::string& ret) {
  return absl::StrCat(ret, "/_retval");
}

absl::StatusOr<Graph> FunctionBodyGraph(const tf::FunctionDef& function,
                                        const tf::FunctionDefLibrary& library) {
  const tf::OpDef& signature = function.signature();
  absl::flat_hash_map<std::string, const tf::NodeDef*> nodes;
  for (const tf::NodeDef& n : function.node_def()) nodes[n.name()] = &n;
  absl::flat_hash_map<std::string, OutputArgs> outputs;
  // "node:out_arg:index" -> "node:port"; args and control inputs as they are.
  auto translate = [&](const std::string& input) -> absl::StatusOr<std::string> {
    if (input.empty() || input[0] == '^') return input;
    std::vector<std::string> parts = absl::StrSplit(input, ':');
    if (parts.size() != 3) return input;
    auto node = nodes.find(parts[0]);
    int index = 0;
    if (node == nodes.end() || !absl::SimpleAtoi(parts[2], &index) || index < 0)
      return BodyError(function, absl::StrCat("input `", input,
                                              "` names no node's output"));
    auto cached = outputs.find(parts[0]);
    if (cached == outputs.end()) {
      absl::StatusOr<OutputArgs> args = OutputArgsOf(*node->second, library);
      if (!args.ok()) return BodyError(function, std::string(args.status().message()));
      cached = outputs.emplace(parts[0], *std::move(args)).first;
    }
    int port = 0;
    for (const auto& [name, count] : cached->second) {
      if (name == parts[1]) {
        if (index >= count) break;
        port += index;
        return port == 0 ? parts[0] : absl::StrCat(parts[0], ":", port);
      }
      port += count;
    }
    return BodyError(function, absl::StrCat("input `", input, "`: `", parts[0],
                                            "` has no output `", parts[1], ":",
                                            index, "`"));
  };
  tf::GraphDef def;
  for (int i = 0; i < signature.input_arg_size(); ++i) {
    const tf::OpDef::ArgDef& arg = signature.input_arg(i);
    tf::NodeDef* n = def.add_node();
    n->set_name(arg.name());
    n->set_op("_Arg");
    if (arg.type() != tf::DT_INVALID) (*n->mutable_attr())["T"].set_type(arg.type());
    (*n->mutable_attr())["index"].set_i(i);
    auto attrs = function.arg_attr().find(i);
    if (attrs != function.arg_attr().end()) {
      auto shapes = attrs->second.attr().find("_output_shapes");
      if (shapes != attrs->second.attr().end())
        (*n->mutable_attr())["_output_shapes"] = shapes->second;
    }
  }
  for (const tf::NodeDef& node : function.node_def()) {
    tf::NodeDef* n = def.add_node();
    *n = node;
    n->clear_input();
    for (const std::string& input : node.input()) {
      absl::StatusOr<std::string> name = translate(input);
      if (!name.ok()) return name.status();
      n->add_input(*name);
    }
  }
  for (int i = 0; i < signature.output_arg_size(); ++i) {
    const tf::OpDef::ArgDef& arg = signature.output_arg(i);
    auto ret = function.ret().find(arg.name());
    if (ret == function.ret().end())
      return BodyError(function, absl::StrCat("output `", arg.name(),
                                              "` has no `ret` entry"));
    tf::NodeDef* n = def.add_node();
    n->set_name(RetvalNodeName(arg.name()));
    n->set_op("_Retval");
    absl::StatusOr<std::string> input = translate(ret->second);
    if (!input.ok()) return input.status();
    n->add_input(*input);
    if (arg.type() != tf::DT_INVALID) (*n->mutable_attr())["T"].set_type(arg.type());
    (*n->mutable_attr())["index"].set_i(i);
  }
  absl::StatusOr<Graph> graph = Graph::FromGraphDef(std::move(def));
  if (!graph.ok()) return BodyError(function, std::string(graph.status().message()));
  return graph;
}

absl::StatusOr<tf::FunctionDef> FunctionFromBody(
    const Graph& body, const tf::FunctionDef& function,
    const tf::FunctionDefLibrary& library) {
  const tf::OpDef& signature = function.signature();
  tf::FunctionDef out = function;
  out.clear_node_def();
  out.clear_ret();
  out.clear_control_ret();
  absl::flat_hash_map<std::string, OutputArgs> outputs;
  // "node:port" -> "node:out_arg:index"; an arg by its name.
  auto translate = [&](const std::string& input) -> absl::StatusOr<std::string> {
    if (input.empty() || input[0] == '^') return input;
    absl::string_view name;
    int port = 0;
    if (!Graph::ParseTensorName(input, &name, &port) || port < 0)
      return BodyError(function, absl::StrCat("cannot read input `", input, "`"));
    const Node* producer = body.FindNode(name);
    if (producer == nullptr)
      return BodyError(function, absl::StrCat("no node `", name, "`"));
    if (producer->op() == "_Arg") return std::string(name);
    auto cached = outputs.find(producer->name());
    if (cached == outputs.end()) {
      absl::StatusOr<OutputArgs> args =
          OutputArgsOf(body.ExportNodeDef(producer->id()), library);
      if (!args.ok()) return BodyError(function, std::string(args.status().message()));
      cached = outputs.emplace(producer->name(), *std::move(args)).first;
    }
    int offset = 0;
    for (const auto& [arg, count] : cached->second) {
      if (port < offset + count)
        return absl::StrCat(name, ":", arg, ":", port - offset);
      offset += count;
    }
    return BodyError(function, absl::StrCat("`", name, "` has no output ", port));
  };
  std::vector<const Node*> args(signature.input_arg_size(), nullptr);
  std::vector<const Node*> rets(signature.output_arg_size(), nullptr);
  absl::Status problem;
  body.ForEachNode([&](const Node& n) {
    if (!problem.ok()) return;
    if (IsInternal(n.op())) {
      auto index = n.attrs().find("index");
      int64_t i = index == n.attrs().end() ? -1 : index->second.i();
      std::vector<const Node*>& slots = n.op() == "_Arg" ? args : rets;
      if (i < 0 || i >= static_cast<int64_t>(slots.size()) || slots[i] != nullptr) {
        problem = BodyError(function, absl::StrCat("`", n.name(), "` (", n.op(),
                                                   ") has a bad index"));
        return;
      }
      slots[i] = &n;
      return;
    }
    tf::NodeDef node = body.ExportNodeDef(n.id());
    for (std::string& input : *node.mutable_input()) {
      absl::StatusOr<std::string> name = translate(input);
      if (!name.ok()) {
        problem = name.status();
        return;
      }
      input = *name;
    }
    *out.add_node_def() = std::move(node);
  });
  if (!problem.ok()) return problem;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr || args[i]->name() != signature.input_arg(i).name())
      return BodyError(function, absl::StrCat("the rewrite removed input `",
                                              signature.input_arg(i).name(), "`"));
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    if (rets[i] == nullptr || rets[i]->num_inputs() != 1)
      return BodyError(function, absl::StrCat("the rewrite removed output `",
                                              signature.output_arg(i).name(), "`"));
    absl::StatusOr<std::string> input =
        translate(body.ExportInputs(rets[i]->id()).Get(0));
    if (!input.ok()) return input.status();
    (*out.mutable_ret())[signature.output_arg(i).name()] = *input;
  }
  for (const auto& [name, node] : function.control_ret()) {
    if (body.FindNode(node) == nullptr)
      return BodyError(function, absl::StrCat("the rewrite removed `", node,
                                              "`, a control output"));
    (*out.mutable_control_ret())[name] = node;
  }
  return out;
}

}  // namespace graft
