// Shared by the builtin hook files: argument shorthands and node lists.
#ifndef GRAFT_BUILTINS_INTERNAL_H_
#define GRAFT_BUILTINS_INTERNAL_H_

#include <vector>

#include "absl/types/span.h"
#include "engine/hooks.h"

namespace graft::builtins {

using VT = ValueType;
using Args = absl::Span<const Value>;

// Registers a builtin with no optional parameters.
inline void Add(HookRegistry& r, const char* name,
                std::vector<ValueType> params, ValueType result, bool variadic,
                const char* doc, HookFn fn) {
  AddBuiltinHook(r, name, std::move(params), result, doc, std::move(fn),
                 variadic);
}

// Nodes of a node value or a list of them.
std::vector<NodeId> NodesOf(const Value& v);
Value NodeList(const std::vector<NodeId>& ids);
Value TensorList(const std::vector<Endpoint>& ts);

void RegisterGraphQueryHooks(HookRegistry& r);
void RegisterConstantHooks(HookRegistry& r);
void RegisterSurgeryHooks(HookRegistry& r);
void RegisterQuantizationHooks(HookRegistry& r);

}  // namespace graft::builtins

#endif  // GRAFT_BUILTINS_INTERNAL_H_
