#include "builtins/builtins.h"

#include "builtins/internal.h"

namespace graft {
namespace builtins {

// Nodes of a node value or a list of them.
std::vector<NodeId> NodesOf(const Value& v) {
  std::vector<NodeId> out;
  if (v.type == VT::kList) {
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

}  // namespace builtins

void RegisterBuiltinHooks(HookRegistry& registry) {
  builtins::RegisterGraphQueryHooks(registry);
  builtins::RegisterConstantHooks(registry);
  builtins::RegisterSurgeryHooks(registry);
  builtins::RegisterQuantizationHooks(registry);
}

}  // namespace graft
