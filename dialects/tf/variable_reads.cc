#include "dialects/tf/variable_reads.h"

#include <functional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dialects/tf/constant_args.h"
#include "dialects/tf/freeze.h"
#include "dialects/tf/function_body.h"
#include "engine/rewriter.h"

namespace graft {
namespace {

// A marked constant's attr: the read it stands for.
constexpr char kMark[] = "_graft_variable_read";
// An arg two calls pass different things to, or something not a variable.
constexpr char kConflict[] = "\x01";

using Library = FunctionsByName;

}  // namespace

VariableReads VariableReads::Of(const Graph& graph) {
  VariableReads reads;
  const SavedModelOrigin* origin = SavedModelOf(graph);
  if (origin == nullptr || origin->frozen) return reads;
  absl::StatusOr<CheckpointKeys> keys = CheckpointKeys::Of(graph);
  // No restore op to read keys from: nothing is shown (the rules run on
  // the reads as they are, as freezing would refuse this model).
  if (!keys.ok()) return reads;
  Library library;
  std::set<std::string> names;
  for (const tf::FunctionDef& f : graph.header().library().function()) {
    library[f.signature().name()] = &f;
    names.insert(f.signature().name());
    reads.arg_keys_[f.signature().name()].resize(f.signature().input_arg_size());
  }
  auto propose = [&](const std::string& function, int index, const std::string& key) {
    std::string& held = reads.arg_keys_[function][index];
    held = held.empty() || held == key ? key : kConflict;
  };
  // A call passes its data inputs to the callee's args; anything else
  // naming a function (If/While branches and bodies) makes its args hold
  // nothing. `key_of` says what a data input (by position, or its name in
  // a function body) holds.
  auto calls = [&](const tf::NodeDef& node,
                   const std::function<std::string(int, const std::string&)>& key_of) {
    const tf::FunctionDef* target = CallTarget(node, library);
    for (const std::string& callee : FunctionsCalled(node, names)) {
      auto it = library.find(callee);  // attrs may name a missing one
      if (it == library.end() || it->second == target) continue;
      for (int i = 0; i < it->second->signature().input_arg_size(); ++i)
        propose(callee, i, kConflict);
    }
    if (target == nullptr) return;
    const int args = target->signature().input_arg_size();
    int i = 0;
    for (const std::string& input : node.input()) {
      if (!input.empty() && input[0] == '^') continue;
      if (i < args) propose(target->signature().name(), i, key_of(i, input));
      ++i;
    }
  };
  graph.ForEachNode([&](const Node& n) {
    calls(n.def(), [&](int i, const std::string&) -> std::string {
      const std::string* key = i < n.num_inputs() ? keys->Find(graph, n.input(i)) : nullptr;
      return key != nullptr ? *key : kConflict;
    });
  });
  std::vector<const tf::FunctionDef*> order = CallOrder(library);
  if (order.empty()) {  // recursion (refused elsewhere): nothing is shown
    reads.arg_keys_.clear();
    return reads;
  }
  for (const tf::FunctionDef* f : order) {
    const std::string& caller = f->signature().name();
    const std::map<std::string, int> arg_index = ArgIndex(*f);
    for (const tf::NodeDef& node : f->node_def()) {
      calls(node, [&](int, const std::string& input) -> std::string {
        auto arg = arg_index.find(input);
        if (arg == arg_index.end()) return kConflict;
        const std::string& held = reads.arg_keys_[caller][arg->second];
        // Callers come first, so an arg no call set is one nothing passes.
        return held.empty() ? kConflict : held;
      });
    }
  }
  reads.origin_ = std::dynamic_pointer_cast<const SavedModelOrigin>(graph.origin());
  return reads;
}

std::string VariableReads::KeyOf(const std::string& function, int index) const {
  auto it = arg_keys_.find(function);
  if (it == arg_keys_.end() || index < 0 ||
      index >= static_cast<int>(it->second.size()))
    return "";
  const std::string& key = it->second[index];
  return key == kConflict ? "" : key;
}

absl::StatusOr<int> VariableReads::Expose(const std::string& function,
                                          Graph& body) const {
  if (origin_ == nullptr) return 0;
  const TensorBundle* bundle =
      origin_->variables.has_value() ? &*origin_->variables : nullptr;
  std::vector<std::pair<NodeId, std::string>> reads;  // ReadVariableOp, key
  body.ForEachNode([&](const Node& arg) {
    if (arg.op() != "_Arg") return;
    const tf::AttrValue* index = arg.attr("index");
    std::string key = KeyOf(function, index != nullptr ? static_cast<int>(index->i()) : -1);
    if (key.empty() || arg.num_used_ports() == 0) return;
    for (const InputSlot& slot : arg.consumers(0)) {  // only read here
      if (body.node(slot.node).op() != "ReadVariableOp" || slot.index != 0) return;
    }
    for (const InputSlot& slot : arg.consumers(0)) reads.emplace_back(slot.node, key);
  });
  Rewriter rewriter(body);
  rewriter.SetProvenance("variable read");
  int exposed = 0;
  for (const auto& [id, key] : reads) {
    const Node& read = body.node(id);
    const tf::BundleEntryProto* entry = bundle != nullptr ? bundle->Find(key) : nullptr;
    const tf::AttrValue* dtype = read.attr("dtype");
    if (!read.control_inputs().empty() || read.num_used_ports() == 0 ||
        read.consumers(0).empty() || entry == nullptr || dtype == nullptr ||
        dtype->type() != entry->dtype() || entry->dtype() == tf::DT_STRING ||
        entry->slices_size() > 0)
      continue;
    absl::StatusOr<NodeSpec> constant =
        CheckpointConstant(*bundle, key, dtype, read.name() + "/value");
    if (!constant.ok())
      return absl::Status(constant.status().code(),
                          absl::StrCat("function `", function, "`, `", read.name(),
                                       "`: ", constant.status().message()));
    constant->device = read.device();
    constant->attrs[kMark].set_s(read.name());
    absl::StatusOr<NodeId> made = rewriter.AddNode(*std::move(constant));
    if (!made.ok()) return made.status();
    absl::StatusOr<int> moved = rewriter.Reroute({id, 0}, {*made, 0});
    if (!moved.ok()) return moved.status();
    ++exposed;
  }
  return exposed;
}

absl::StatusOr<int> VariableReads::Restore(Graph& body) {
  return RestoreMarkedConstants(body, kMark, "ReadVariableOp", "variable read");
}

}  // namespace graft
