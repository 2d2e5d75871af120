// Params: declared in rule files (with defaults and ranges), given values
// from the command line or a pipeline, loaded (`ranges` tables, `graph`
// files) once, when the rules compile.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dsl/checker.h"
#include "engine/dialect.h"

namespace graft::dsl {

using K = Expr::Kind;

ValueType ParamType(const std::string& type) {
  if (type == "int") return ValueType::kInt;
  if (type == "float") return ValueType::kFloat;
  if (type == "bool") return ValueType::kBool;
  if (type == "ranges") return ValueType::kRanges;
  if (type == "graph") return ValueType::kGraph;
  return ValueType::kString;
}

void Checker::CountTemplateParams(const std::string& text) {
  for (size_t open = text.find('{'); open != std::string::npos;
       open = text.find('{', open + 1)) {
    size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    std::string name = text.substr(open + 1, close - open - 1);
    if (param_types_.count(name) != 0) ++param_uses_[name];
  }
}

absl::StatusOr<Value> Checker::ParseParam(const std::string& type,
                                          const std::string& text) {
  if (type == "int") {
    int64_t v;
    if (absl::SimpleAtoi(text, &v)) return Value::Int(v);
  } else if (type == "float") {
    double v;
    if (absl::SimpleAtod(text, &v)) return Value::Float(v);
  } else if (type == "bool") {
    if (text == "true") return Value::Bool(true);
    if (text == "false") return Value::Bool(false);
  } else if (type == "ranges") {
    return LoadRanges(text);
  } else if (type == "graph") {
    return LoadGraphParam(text);
  } else {
    return Value::String(text);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("`", text, "` is not ", WithArticle(type)));
}

// A `ranges` param: the table in the YAML file `path` ("" for none).
// Problems in the file are reported at their lines; the value is then
// kAny, so nothing else is reported about it.
Value Checker::LoadRanges(const std::string& path) {
  if (path.empty()) return Value::Ranges(nullptr);
  std::vector<RangeFileProblem> problems;
  auto table =
      std::make_shared<TensorRanges>(LoadTensorRanges(path, &problems));
  for (const RangeFileProblem& p : problems) {
    d_->Error(path, {p.line, p.column}, p.message);
  }
  if (!problems.empty()) {
    Value bad;
    bad.type = ValueType::kAny;
    return bad;
  }
  return Value::Ranges(std::move(table));
}

// A `graph` param: the graph in file `path` ("" for none).
Value Checker::LoadGraphParam(const std::string& path) {
  if (path.empty()) return Value::GraphRef(nullptr, "");
  absl::StatusOr<Graph> graph = LoadGraphFile(path);
  if (!graph.ok()) {
    d_->Error(
        path, {},
        absl::StrCat("cannot load the graph: ", graph.status().message()));
    Value bad;
    bad.type = ValueType::kAny;
    return bad;
  }
  return Value::GraphRef(std::make_shared<const Graph>(*std::move(graph)),
                         path);
}

// A param's default, as declared (kNone when it has none; kAny when the
// default is wrong, which is reported here).
Value Checker::DefaultValue(const RuleFile& file, const Param& p) {
  Value v;
  v.type = ValueType::kNone;
  if (!p.default_value) return v;
  const Expr& e = *p.default_value;
  ValueType want = ParamType(p.type);
  bool neg = e.kind == K::kUnary && e.text == "-" && !e.args.empty();
  const Expr& lit = neg ? *e.args[0] : e;
  if (lit.kind == K::kInt &&
      (want == ValueType::kInt || want == ValueType::kFloat)) {
    return want == ValueType::kInt
               ? Value::Int(neg ? -lit.int_value : lit.int_value)
               : Value::Float(neg ? -lit.int_value : lit.int_value);
  }
  if (lit.kind == K::kFloat && want == ValueType::kFloat)
    return Value::Float(neg ? -lit.float_value : lit.float_value);
  if (lit.kind == K::kBool && want == ValueType::kBool && !neg)
    return Value::Bool(lit.bool_value);
  if (lit.kind == K::kString && want == ValueType::kString && !neg)
    return Value::String(lit.text);
  if (lit.kind == K::kString && want == ValueType::kRanges && !neg) {
    return LoadRanges(lit.text.empty() ? ""
                                       : PathRelativeTo(file.path, lit.text));
  }
  if (lit.kind == K::kString && want == ValueType::kGraph && !neg) {
    return LoadGraphParam(
        lit.text.empty() ? "" : PathRelativeTo(file.path, lit.text));
  }
  Error(file, e.loc,
        absl::StrCat("the default of `", p.name, "` is not ",
                     WithArticle(p.type)));
  v.type = ValueType::kAny;  // reported; no second error below
  return v;
}

namespace {

// The same expression, as written (a param's default).
bool SameExpr(const Expr* a, const Expr* b) {
  if (a == nullptr || b == nullptr) return a == b;
  if (a->kind != b->kind || a->text != b->text ||
      a->bool_value != b->bool_value || a->int_value != b->int_value ||
      a->float_value != b->float_value || a->port != b->port ||
      a->args.size() != b->args.size())
    return false;
  for (size_t i = 0; i < a->args.size(); ++i) {
    if (!SameExpr(a->args[i].get(), b->args[i].get())) return false;
  }
  return true;
}

bool SameParam(const Param& a, const Param& b) {
  return a.type == b.type && SameExpr(a.default_value.get(), b.default_value.get()) &&
         a.has_range == b.has_range && a.range_min == b.range_min &&
         a.range_max == b.range_max;
}

}  // namespace

// Every file's params, with their defaults. Files of one set (a library
// and what it imports, or two libraries applied together) may declare a
// param alike (name, type, default, range): it is one param, set once.
void Checker::DeclareParams() {
  for (const auto& file : set_->asts_) {
    for (const Param& p : file->params) {
      auto first = param_decls_.find(p.name);
      if (first != param_decls_.end()) {
        const auto& [path, decl] = first->second;
        if (path != file->path && SameParam(*decl, p)) continue;
        Error(*file, p.loc,
              path == file->path
                  ? absl::StrCat("param `", p.name, "` is declared twice")
                  : absl::StrCat("param `", p.name, "` is declared here and in `",
                                 path, "` (line ", decl->loc.line,
                                 ") differently: one param, one declaration"));
        continue;
      }
      param_decls_[p.name] = {file->path, &p};
      param_types_[p.name] = p.type;
      (*params_)[p.name] = DefaultValue(*file, p);
      set_->params_.push_back(p.name);
    }
  }
}

// Every param has a value, inside its range.
void Checker::CheckParamValues() {
  for (const auto& file : set_->asts_) {
    for (const Param& p : file->params) {
      const Value& v = (*params_)[p.name];
      if (v.type == ValueType::kNone) {
        Error(*file, p.loc,
              absl::StrCat("param `", p.name,
                           "` has no default and no value given"));
      }
      if (p.has_range && v.is_number() &&
          (v.number() < p.range_min || v.number() > p.range_max)) {
        bool given = options_.params.count(p.name) != 0;
        std::string range = absl::StrCat(p.range_min, "..", p.range_max);
        d_->Error(given ? "--param" : file->path, given ? Loc{} : p.loc,
                  absl::StrCat("param `", p.name, "`: ", v.number(),
                               " is outside ", range));
      }
      if (p.has_range && p.type != "int" && p.type != "float") {
        Error(*file, p.range_loc,
              absl::StrCat("only int and float params have a range"));
      }
    }
  }
}

void Checker::CollectParams() {
  DeclareParams();
  for (const auto& [name, text] : options_.params) {
    auto it = param_types_.find(name);
    if (it == param_types_.end() && options_.ignore_unknown_params) continue;
    if (it == param_types_.end()) {
      std::vector<std::string> known;
      for (const auto& [k, t] : param_types_) known.push_back(k);
      d_->Error("--param", {}, absl::StrCat("unknown param `", name, "`"),
                Suggest(name, known));
      continue;
    }
    absl::StatusOr<Value> v = ParseParam(it->second, text);
    if (!v.ok()) {
      d_->Error("--param", {},
                absl::StrCat("param `", name, "`: ", v.status().message()));
      continue;
    }
    (*params_)[name] = *v;
  }
  CheckParamValues();
}

}  // namespace graft::dsl
