// The checker's pattern operands: each operand of a node pattern added to
// the matcher's node (a tensor, a port, a nested producer, the rest), and
// the names they bind.
#include "absl/strings/str_cat.h"
#include "dsl/checker.h"

namespace graft::dsl {

using OK = OperandPattern::Kind;

// The data operand marked `?` (`Where?(IsNaN(p), z, ?p)`), as an index
// among `p`'s data operands, or -1; a mark where none may be is reported.
int Checker::MarkedStandIn(const RuleFile& f, const NodePattern& p) {
  int marked = -1;
  for (size_t i = 0, k = 0; i < p.operands.size(); ++i) {
    const OperandPattern& o = p.operands[i];
    if (o.stand_in) {
      if (!p.optional) {
        Error(f, o.loc,
              "`?` marks the operand that stands in for an optional node, and "
              "this node is not optional (write `Op?(...)`)");
      } else if (marked >= 0) {
        Error(f, o.loc, "one operand stands in for an optional node, not two");
      } else if (o.kind == OK::kControl || o.kind == OK::kGap ||
                 o.kind == OK::kVariadic || o.kind == OK::kWildcard) {
        Error(f, o.loc,
              "the operand that stands in must be a tensor or a pattern (as "
              "`p` in `Where?(IsNaN(p), z, ?p)`)");
      } else {
        marked = static_cast<int>(k);
      }
    }
    if (o.kind != OK::kControl && o.kind != OK::kGap) ++k;
  }
  return marked;
}

// Operand `i` of `p`, added to `pn` (its data or control operands).
bool Checker::AddOperand(const RuleFile& f, const NodePattern& p, size_t i,
                         const std::string& what, PatternNode* pn,
                         std::vector<PatternNode>* pnodes, Names* names,
                         const std::map<std::string, int>& stmts) {
  const OperandPattern& o = p.operands[i];
  PatternOperand po;
  po.kind = o.kind;
  po.name = o.name;
  po.port = o.port;
  auto stmt = stmts.find(o.name);
  std::string nested_what =
      absl::StrCat("operand ", pn->data.size(), " of ", what);
  switch (o.kind) {
    case OK::kName:
      if (stmt != stmts.end()) {
        po.stmt = stmt->second;
        (*names)[o.name].uses++;
      } else {
        Bind(f, o.name, NameInfo::Kind::kTensor, ValueType::kTensor, o.loc,
             names);
      }
      break;
    case OK::kPort:
      if (stmt == stmts.end()) {
        Error(f, o.loc,
              absl::StrCat("`", o.name, ":", o.port, "` needs `", o.name,
                           "` to be a pattern of this match"));
      } else {
        po.stmt = stmt->second;
        (*names)[o.name].uses++;
      }
      break;
    case OK::kBound:
      if (stmt != stmts.end()) {
        Error(f, o.loc,
              absl::StrCat("`", o.name, "` is already a pattern; use `", o.name,
                           "` alone to refer to it"));
      }
      Bind(f, o.name, NameInfo::Kind::kTensor, ValueType::kTensor, o.loc,
           names);
      (*names)[o.name].ops = KnownOps(f, *o.nested);
      po.nested = AddPattern(f, *o.nested, "", nested_what, pnodes, names,
                             stmts, -1, o.name);
      break;
    case OK::kNested:
      po.nested =
          AddPattern(f, *o.nested, "", nested_what, pnodes, names, stmts);
      break;
    case OK::kVariadic: {
      bool last = true;
      for (size_t j = i + 1; j < p.operands.size(); ++j) {
        if (p.operands[j].kind != OK::kControl) last = false;
      }
      if (!last) {
        Error(f, o.loc,
              absl::StrCat("`", o.name.empty() ? "_" : o.name,
                           "...` must be the last data operand"));
      }
      pn->variadic = true;
      if (!o.name.empty())
        Bind(f, o.name, NameInfo::Kind::kList, ValueType::kList, o.loc, names);
      break;
    }
    case OK::kControl:
      if (stmt != stmts.end()) {
        po.stmt = stmt->second;
        (*names)[o.name].uses++;
      } else {
        Bind(f, o.name, NameInfo::Kind::kControl, ValueType::kNode, o.loc,
             names);
      }
      pn->control.push_back(po);
      return true;
    case OK::kWildcard:
    case OK::kGap:
      break;
  }
  pn->data.push_back(po);
  return false;
}

void Checker::Bind(const RuleFile& f, const std::string& name,
                   NameInfo::Kind kind, ValueType type, Loc loc, Names* names) {
  auto it = names->find(name);
  if (it != names->end()) {
    if (it->second.kind == kind && kind == NameInfo::Kind::kTensor) {
      it->second.uses++;  // the same tensor twice: a DAG pattern
      return;
    }
    Error(f, loc, absl::StrCat("`", name, "` is already bound"));
    return;
  }
  if (params_->count(name) != 0) {
    Error(f, loc, absl::StrCat("`", name, "` hides the param of that name"));
  }
  (*names)[name] = {kind,
                    type,
                    loc,
                    0,
                    optional_depth_ > 0,
                    expanding_.empty() ? nullptr : &f};
}

}  // namespace graft::dsl
