#include "engine/hooks.h"

#include "absl/strings/str_cat.h"

namespace graft {

absl::Status HookRegistry::Register(std::string name, HookSignature signature,
                                    HookFn fn) {
  if (hooks_.count(name) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("hook `", name, "` is already registered"));
  }
  Hook hook{name, std::move(signature), std::move(fn)};
  hooks_.emplace(std::move(name), std::move(hook));
  return absl::OkStatus();
}

const Hook* HookRegistry::Find(const std::string& name) const {
  auto it = hooks_.find(name);
  return it == hooks_.end() ? nullptr : &it->second;
}

std::vector<const Hook*> HookRegistry::All() const {
  std::vector<const Hook*> out;
  for (const auto& [name, hook] : hooks_) out.push_back(&hook);
  return out;
}

void AddBuiltinHook(HookRegistry& registry, const std::string& name,
                    std::vector<ValueType> params, ValueType result,
                    const std::string& doc, HookFn fn, bool variadic,
                    int optional) {
  HookSignature sig;
  sig.params = std::move(params);
  sig.result = result;
  sig.variadic = variadic;
  sig.optional = optional;
  sig.doc = doc;
  (void)registry.Register(name, std::move(sig),
                          std::move(fn));  // names are unique by construction
}

}  // namespace graft
