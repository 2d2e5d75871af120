#include "builtins/builtins.h"

#include "builtins/internal.h"

namespace graft {

void RegisterBuiltinHooks(HookRegistry& registry) {
  builtins::RegisterGraphQueryHooks(registry);
  builtins::RegisterConstantHooks(registry);
  builtins::RegisterSurgeryHooks(registry);
  builtins::RegisterQuantizationHooks(registry);
  builtins::RegisterOnnxFoldHooks(registry);
  builtins::RegisterTransformerHooks(registry);
}

}  // namespace graft
