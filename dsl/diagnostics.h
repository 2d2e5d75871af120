// Diagnostics for rule files, printed like a compiler's:
//
//   rules/x.graft:4:12: error: unknown op `Conv2d`
//       conv = Conv2d(x, w: Const)
//              ^
//   note: did you mean `Conv2D`?
#ifndef GRAFT_DSL_DIAGNOSTICS_H_
#define GRAFT_DSL_DIAGNOSTICS_H_

#include <string>
#include <vector>

#include "dsl/ast.h"

namespace graft::dsl {

struct Diagnostic {
  std::string path;
  Loc loc;
  std::string message;
  std::vector<std::string> notes;
  bool warning = false;  // a lint: reported, but the rules still compile
};

class Diagnostics {
 public:
  void Error(const std::string& path, Loc loc, std::string message,
             std::vector<std::string> notes = {});
  // A lint finding: shown with the errors, does not fail the compile.
  void Warning(const std::string& path, Loc loc, std::string message,
               std::vector<std::string> notes = {});
  bool has_errors() const { return !errors_.empty(); }
  const std::vector<Diagnostic>& errors() const { return errors_; }
  const std::vector<Diagnostic>& warnings() const { return warnings_; }
  // Registers a file's text so Render can show its lines.
  void AddSource(const std::string& path, const std::string& text);
  // Every error with its source line and caret.
  std::string Render() const;

 private:
  std::vector<Diagnostic> errors_;
  std::vector<Diagnostic> warnings_;
  std::vector<std::pair<std::string, std::string>> sources_;
};

// "did you mean `x`?" for the known name closest to `name` (at most two
// edits away), or nothing.
std::vector<std::string> Suggest(const std::string& name,
                                 const std::vector<std::string>& known);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_DIAGNOSTICS_H_
