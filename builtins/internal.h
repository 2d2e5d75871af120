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

using ::graft::NodeList;
using ::graft::NodesOf;
using ::graft::TensorList;

void RegisterGraphQueryHooks(HookRegistry& r);
void RegisterConstantHooks(HookRegistry& r);
void RegisterSurgeryHooks(HookRegistry& r);
void RegisterQuantizationHooks(HookRegistry& r);
void RegisterOnnxFoldHooks(HookRegistry& r);
void RegisterTransformerHooks(HookRegistry& r);

}  // namespace graft::builtins

#endif  // GRAFT_BUILTINS_INTERNAL_H_
