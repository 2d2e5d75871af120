#include "dialects/onnx/validate_onnx.h"
#include "dialects/onnx/onnx_ops.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/op_registry.h"

namespace graft::validate_onnx {
namespace {

bool IsSpecial(const std::string& op) {
  return op.empty() || op[0] == '_' || op == "Const" || op == "Placeholder";
}

// The schema arg input or output `i` belongs to: its position, or the
// variadic arg that takes all from its position on; -1 past the last.
int ArgOf(const google::protobuf::RepeatedPtrField<tf::OpDef::ArgDef>& args,
          int i) {
  for (int a = 0; a < args.size(); ++a) {
    if (absl::StartsWith(args[a].description(), "variadic") && i >= a) return a;
    if (a == i) return a;
  }
  return -1;
}

const tf::OpDef::AttrDef* AttrDefOf(const tf::OpDef& def, const std::string& name) {
  for (const auto& a : def.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

// Whether an attr value is of the schema's attr type (empty lists: any list).
bool OfType(const tf::AttrValue& v, const std::string& type) {
  using K = tf::AttrValue;
  if (type == "float") return v.value_case() == K::kF;
  if (type == "int") return v.value_case() == K::kI;
  if (type == "string") return v.value_case() == K::kS;
  if (type == "tensor") return v.value_case() == K::kTensor;
  if (v.value_case() != K::kList) return false;
  const auto& l = v.list();
  const int kinds = (l.f_size() > 0) + (l.i_size() > 0) + (l.s_size() > 0);
  if (kinds == 0) return true;
  if (type == "list(float)") return l.f_size() > 0;
  if (type == "list(int)") return l.i_size() > 0;
  if (type == "list(string)") return l.s_size() > 0;
  return false;
}

std::string ElemName(tf::DataType t) { return DataTypeName(t); }

// A Constant node's element type, from the attr that holds its value.
tf::DataType ConstantType(const graft::Node& n) {
  if (const tf::AttrValue* v = n.attr("value"); v != nullptr && v->has_tensor())
    return v->tensor().dtype();
  if (n.attr("value_float") || n.attr("value_floats")) return tf::DT_FLOAT;
  if (n.attr("value_int") || n.attr("value_ints")) return tf::DT_INT64;
  if (n.attr("value_string") || n.attr("value_strings")) return tf::DT_STRING;
  return tf::DT_INVALID;
}

}  // namespace

Types::Types(const Graph& graph) : graph_(graph) {
  const OnnxOrigin& origin = *OnnxOf(graph);
  for (const auto& [name, info] : origin.value_info)
    declared_[name] = OnnxElemType(info.type().tensor_type().elem_type());
  for (const onnx::ValueInfoProto& out : origin.outputs)
    declared_[out.name()] = OnnxElemType(out.type().tensor_type().elem_type());
  for (const onnx::ValueInfoProto& in : origin.inputs)  // also initializers'
    declared_[in.name()] = OnnxElemType(in.type().tensor_type().elem_type());
}

tf::DataType Types::Of(Endpoint e) {
  if (!e.valid()) return tf::DT_INVALID;
  Compute(e.node);
  const std::vector<tf::DataType>& out = outputs_[e.node];
  return e.port < static_cast<int>(out.size()) ? out[e.port] : tf::DT_INVALID;
}

const std::vector<std::string>& Types::Problems(NodeId id) {
  Compute(id);
  return problems_[id];
}

// Producers first, without recursion (graphs are deep); a producer on a
// cycle counts as unknown.
void Types::Compute(NodeId id) {
  if (outputs_.count(id)) return;
  std::vector<NodeId> stack{id};
  absl::flat_hash_map<NodeId, bool> visiting;
  while (!stack.empty()) {
    NodeId top = stack.back();
    if (outputs_.count(top)) {
      stack.pop_back();
      continue;
    }
    if (!visiting[top]) {
      visiting[top] = true;
      bool waiting = false;
      for (const Endpoint& e : graph_.node(top).inputs()) {
        if (e.valid() && !outputs_.count(e.node) && !visiting[e.node]) {
          stack.push_back(e.node);
          waiting = true;
        }
      }
      if (waiting) continue;
    }
    Infer(top);
    stack.pop_back();
  }
}

void Types::Forget(const std::vector<NodeId>& touched) {
  // What each node to infer again had, to tell whether its readers' stay.
  std::vector<std::pair<NodeId, std::vector<tf::DataType>>> before;
  auto drop = [&](NodeId id) {
    auto it = outputs_.find(id);
    if (it == outputs_.end()) return;
    before.emplace_back(id, std::move(it->second));
    outputs_.erase(it);
    problems_.erase(id);
  };
  for (NodeId id : touched) drop(id);
  while (!before.empty()) {
    auto [id, old] = std::move(before.back());
    before.pop_back();
    if (id < 0 || id >= graph_.id_limit() || !graph_.node(id).alive()) continue;
    Compute(id);
    if (outputs_[id] == old) continue;
    const Node& n = graph_.node(id);
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (InputSlot s : n.consumers(p)) drop(s.node);
    }
  }
}

HeldTypes::HeldTypes(const Graph& graph) {
  // The graphs worked on at once (a batch's threads).
  static auto* kept = new KeptPerGraph<Types>(16);
  entry_ = kept->For(
      graph, &lock_, [&] { return std::make_unique<Types>(graph); },
      [](Types& types, const std::vector<NodeId>& touched) { types.Forget(touched); });
}

Types& HeldTypes::types() { return *entry_->value; }

void Types::Infer(NodeId id) {
  auto of = [&](Endpoint e) {
    auto it = e.valid() ? outputs_.find(e.node) : outputs_.end();
    if (it == outputs_.end()) return tf::DT_INVALID;
    return e.port < static_cast<int>(it->second.size()) ? it->second[e.port]
                                                        : tf::DT_INVALID;
  };
  std::vector<std::string> problems;
  std::vector<tf::DataType> out =
      OutputTypes(graph_, graph_.node(id), of, &declared_, &problems);
  outputs_[id] = std::move(out);
  problems_[id] = std::move(problems);
}

std::vector<tf::DataType> OutputTypes(
    const Graph& graph, const graft::Node& n,
    const std::function<tf::DataType(Endpoint)>& of,
    const std::map<std::string, tf::DataType>* declared_types,
    std::vector<std::string>* problem_list) {
  static const std::map<std::string, tf::DataType> kNone;
  const std::map<std::string, tf::DataType>& declared =
      declared_types != nullptr ? *declared_types : kNone;
  std::vector<std::string> ignored;
  std::vector<std::string>& problems = problem_list != nullptr ? *problem_list : ignored;
  std::vector<tf::DataType> out;
  if (n.op() == "Const" || n.op() == "Placeholder") {
    const tf::AttrValue* dtype = n.attr("dtype");
    out.push_back(dtype != nullptr ? dtype->type() : tf::DT_INVALID);
    const std::string& value = OnnxOf(graph)->ValueOf(n.name());
    auto d = n.modified() ? declared.end() : declared.find(value);
    if (d != declared.end() && d->second != tf::DT_INVALID &&
        out[0] != tf::DT_INVALID && d->second != out[0])
      problems.push_back(absl::StrCat("graph input `", value, "` is declared ",
                                      ElemName(d->second), ", but its initializer is ",
                                      ElemName(out[0])));
    return out;
  }
  const OnnxOrigin& origin = *OnnxOf(graph);
  // (an op of a domain the model does not import yet, a rewrite's
  // onnxruntime op: at the opset the writer will import)
  const tf::OpDef* def =
      IsSpecial(n.op()) ? nullptr
                        : OnnxOps().FindAt(n.op(), origin.OpsetWritten(n.op()));
  if (def == nullptr) return out;
  std::map<std::string, tf::DataType> bound;
  for (int i = 0; i < n.num_inputs() - OnnxCaptureCount(n); ++i) {
    int a = ArgOf(def->input_arg(), i);
    tf::DataType t = of(n.input(i));
    if (a < 0 || t == tf::DT_INVALID) continue;
    const tf::OpDef::ArgDef& arg = def->input_arg(a);
    std::string where = absl::StrCat("input ", i, " of `", n.name(), "` (", n.op(), ")");
    if (arg.type() != tf::DT_INVALID) {
      if (t != arg.type())
        problems.push_back(absl::StrCat(where, " is ", ElemName(t), "; the op takes ",
                                        ElemName(arg.type())));
      continue;
    }
    const tf::OpDef::AttrDef* constraint = AttrDefOf(*def, arg.type_attr());
    if (constraint == nullptr) continue;
    const auto& allowed = constraint->allowed_values().list().type();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), t) == allowed.end()) {
      std::vector<std::string> names;
      for (int d : allowed) names.push_back(ElemName(static_cast<tf::DataType>(d)));
      problems.push_back(absl::StrCat(where, " is ", ElemName(t), ", which its type ",
                                      arg.type_attr(), " does not allow (",
                                      absl::StrJoin(names, ", "), ")"));
      continue;
    }
    if (arg.description() == "variadic heterogeneous" && i > a) continue;
    auto [it, fresh] = bound.emplace(arg.type_attr(), t);
    if (!fresh && it->second != t)
      problems.push_back(absl::StrCat(where, " is ", ElemName(t), ", but an earlier ",
                                      arg.type_attr(), " input is ",
                                      ElemName(it->second)));
  }
  // Outputs: fixed, bound by an input, or named by a `to`/`dtype` attr.
  const int count = std::max(n.num_used_ports(), def->output_arg_size());
  auto names = origin.output_names.find(n.name());
  for (int k = 0; k < count; ++k) {
    int a = ArgOf(def->output_arg(), k);
    tf::DataType t = tf::DT_INVALID;
    if (a >= 0) {
      const tf::OpDef::ArgDef& arg = def->output_arg(a);
      auto it = bound.find(arg.type_attr());
      t = arg.type() != tf::DT_INVALID ? arg.type()
          : it != bound.end()         ? it->second
                                      : tf::DT_INVALID;
      const tf::OpDef::AttrDef* constraint = AttrDefOf(*def, arg.type_attr());
      if (t == tf::DT_INVALID && constraint != nullptr &&
          constraint->description() != "partial" &&
          constraint->allowed_values().list().type_size() == 1)  // one type allowed
        t = constraint->allowed_values().list().type(0);
      if (t == tf::DT_INVALID && n.op() == "Constant") t = ConstantType(n);
      for (const char* attr : {"to", "dtype"}) {
        const tf::AttrValue* v = n.attr(attr);
        if (t == tf::DT_INVALID && v != nullptr && v->value_case() == tf::AttrValue::kI)
          t = OnnxElemType(static_cast<int>(v->i()));
      }
    }
    // What the model declares for the value, checked and used.
    if (!n.modified() && names != origin.output_names.end() &&
        k < static_cast<int>(names->second.size())) {
      auto d = declared.find(names->second[k]);
      if (d != declared.end() && d->second != tf::DT_INVALID) {
        if (t != tf::DT_INVALID && t != d->second)
          problems.push_back(absl::StrCat("`", names->second[k], "` is declared ",
                                          ElemName(d->second), ", but `", n.name(),
                                          "` (", n.op(), ") computes ", ElemName(t)));
        t = d->second;
      }
    }
    out.push_back(t);
  }
  return out;
}

void CheckNode(const Graph& graph, const graft::Node& node, bool signature_only,
               Types* types, const std::function<void(std::string)>& report) {
  const OnnxOrigin& origin = *OnnxOf(graph);
  const OpRegistry& ops = OnnxOps();
  // A rewrite's node of a domain the model does not import yet is checked
  // at the version the writer imports.
  const int64_t opset = origin.OpsetWritten(node.op());
  auto output_count = [&](const graft::Node& n) -> int {  // -1: unknown or open
    if (n.op() == "Const" || n.op() == "Placeholder") return 1;
    const tf::OpDef* def = ops.FindAt(n.op(), origin.OpsetOf(n.op()));
    if (def == nullptr) return -1;
    for (const auto& a : def->output_arg())
      if (!a.number_attr().empty()) return -1;
    return def->output_arg_size();
  };
  for (int i = 0; i < node.num_inputs(); ++i) {
    Endpoint e = node.input(i);
    if (!e.valid()) {
      if (!signature_only)
        report(absl::StrCat("input ", i, " of `", node.name(), "` names `",
                            graph.UnresolvedInputName(node.id(), i),
                            "`, which is not in the graph"));
      continue;
    }
    int outputs = output_count(graph.node(e.node));
    if (outputs >= 0 && e.port >= outputs)
      report(absl::StrCat("input ", i, " of `", node.name(), "` reads output ",
                          e.port, " of `", graph.node(e.node).name(), "` (",
                          graph.node(e.node).op(), "), which has ", outputs));
  }
  if (types != nullptr && !signature_only) {
    for (const std::string& p : types->Problems(node.id())) report(p);
  }
  if (IsSpecial(node.op())) return;
  if (!node.modified() && !signature_only) {
    auto early = origin.unsorted.find(node.name());
    if (early != origin.unsorted.end())
      report(absl::StrCat("`", node.name(), "` (", node.op(), ") reads `",
                          early->second, "`, which a later node writes: ONNX "
                          "wants nodes in topological order"));
  }
  size_t dot = node.op().rfind('.');
  if (dot != std::string::npos) {  // another domain's op: its domain imported
    const tf::OpDef* newest = ops.Find(node.op());
    if (!origin.ImportsDomainOf(node.op()) && (!node.modified() || newest == nullptr)) {
      report(absl::StrCat("`", node.name(), "` (", node.op(), ") is of domain `",
                          node.op().substr(0, dot), "`, which the model imports no opset of"));
      return;
    }
    if (newest == nullptr) return;  // a domain graft has no schemas of
    // onnx.checker does not know onnxruntime's ops: only a rewrite's are checked.
    if (OpRegistry::IsRuntimeContrib(*newest) && !node.modified()) return;
  }
  const tf::OpDef* def = ops.FindAt(node.op(), opset);
  if (def == nullptr) return;  // CheckOpName says so
  // Read from the file, trailing empty inputs ("") count as ONNX counts them.
  int inputs = node.num_inputs() - OnnxCaptureCount(node);  // operands
  if (auto it = origin.nodes.find(node.name()); !node.modified() && it != origin.nodes.end())
    inputs = std::max(inputs, it->second.input_size());
  auto [min, max] = OpRegistry::InputCounts(*def);
  if (inputs < min || (max >= 0 && inputs > max))
    report(absl::StrCat("`", node.name(), "` (", node.op(), ") has ",
                        inputs, " input(s); at opset ", opset,
                        " it takes ",
                        max < 0      ? absl::StrCat("at least ", min)
                        : min == max ? absl::StrCat(min)
                                     : absl::StrCat(min, " to ", max)));
  for (int i = 0; i < inputs && i < node.num_inputs(); ++i) {
    Endpoint e = node.input(i);
    int a = ArgOf(def->input_arg(), i);
    if (e.valid() && a >= 0 && graph.node(e.node).op() == "_Absent" &&
        def->input_arg(a).description().empty())
      report(absl::StrCat("input ", i, " (", def->input_arg(a).name(), ") of `",
                          node.name(), "` (", node.op(),
                          ") is required, but empty"));
  }
  for (const auto& [name, value] : node.attrs()) {
    if (name.empty() || name[0] == '_') continue;
    const tf::OpDef::AttrDef* a = AttrDefOf(*def, name);
    if (a == nullptr || a->type() == "type") {
      if (def->description() == "allows unchecked attributes") continue;
      report(absl::StrCat("`", node.name(), "` (", node.op(), ") has attr `",
                          name, "`, which the op does not have at opset ", opset));
    } else if (!OfType(value, a->type())) {
      report(absl::StrCat("attr `", name, "` of `", node.name(), "` (", node.op(),
                          ") is not of its type, ", a->type()));
    }
  }
  const onnx::NodeProto* original = nullptr;
  if (auto it = origin.nodes.find(node.name()); it != origin.nodes.end())
    original = &it->second;
  for (const auto& a : def->attr()) {
    if (a.description() != "required" || node.attr(a.name()) != nullptr) continue;
    bool kept = false;  // kinds graft keeps only in the original message
    for (int k = 0; original != nullptr && k < original->attribute_size(); ++k)
      kept = kept || original->attribute(k).name() == a.name();
    if (!kept)
      report(absl::StrCat("`", node.name(), "` (", node.op(),
                          ") lacks attr `", a.name(), "`, which its op requires"));
  }
}

}  // namespace graft::validate_onnx
