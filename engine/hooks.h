// The hook registry: native C++ functions that rules call by name, with
// typed signatures the rule compiler checks. Registration is explicit, from
// one place per component (builtins/builtins.h, analysis/hooks.h); no static
// initializers.
#ifndef GRAFT_ENGINE_HOOKS_H_
#define GRAFT_ENGINE_HOOKS_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/value.h"

namespace graft {

struct HookContext {
  const Graph& graph;
};

struct HookSignature {
  std::vector<ValueType> params;
  ValueType result = ValueType::kAny;
  // The last parameter may repeat (at least once).
  bool variadic = false;
  // The last `optional` parameters may be left out (the hook sees fewer
  // arguments and uses its defaults).
  int optional = 0;
  std::string doc;
};

using HookFn = std::function<absl::StatusOr<Value>(const HookContext&,
                                                   absl::Span<const Value>)>;

struct Hook {
  std::string name;
  HookSignature signature;
  HookFn fn;
};

class HookRegistry {
 public:
  // Fails when `name` is taken.
  absl::Status Register(std::string name, HookSignature signature, HookFn fn);
  const Hook* Find(const std::string& name) const;
  // Every hook, sorted by name.
  std::vector<const Hook*> All() const;

 private:
  std::map<std::string, Hook> hooks_;
};

// Registers one of graft's own hooks (whose names never collide).
void AddBuiltinHook(HookRegistry& registry, const std::string& name,
                    std::vector<ValueType> params, ValueType result,
                    const std::string& doc, HookFn fn, bool variadic = false,
                    int optional = 0);

}  // namespace graft

#endif  // GRAFT_ENGINE_HOOKS_H_
