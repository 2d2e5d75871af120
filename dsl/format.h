// The canonical format of rule files (`graft fmt`).
//
// Line breaks and comments stay where the author put them (at most one blank
// line in a row); everything else is canonical: two spaces of indent per
// `{`, four more inside open parentheses or brackets, one space after `,`
// and around `=`, `==`, `->`, `and`, arithmetic and `|`, none inside
// parentheses, `name: value` with a space, ports (`s:1`) tight. Formatting
// is idempotent: formatting formatted text changes nothing.
#ifndef GRAFT_DSL_FORMAT_H_
#define GRAFT_DSL_FORMAT_H_

#include <string>

namespace graft::dsl {

std::string FormatRuleText(const std::string& source);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_FORMAT_H_
