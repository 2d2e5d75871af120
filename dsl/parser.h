// Parsing rule files into the AST (dsl/ast.h).
#ifndef GRAFT_DSL_PARSER_H_
#define GRAFT_DSL_PARSER_H_

#include <string>

#include "dsl/ast.h"
#include "dsl/diagnostics.h"

namespace graft::dsl {

// Parses `source` (named `path` in diagnostics). Syntax errors go to
// `diagnostics`, one per top-level item: after an error the parser skips to
// the next line that starts with `rule`, `param`, `import` or `require` and
// goes on.
RuleFile ParseRuleFile(const std::string& path, const std::string& source,
                       Diagnostics* diagnostics);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_PARSER_H_
