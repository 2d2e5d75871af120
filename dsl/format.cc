#include "dsl/format.h"

#include <cctype>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace graft::dsl {
namespace {

enum class Tok { kWord, kNumber, kString, kComment, kPunct };

struct Token {
  Tok kind;
  std::string text;
  bool space_before = false;  // in the source
};

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::vector<Token> Tokenize(const std::string& line) {
  std::vector<Token> out;
  size_t i = 0;
  bool space = false;
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      space = true;
      ++i;
      continue;
    }
    Token t{Tok::kPunct, "", space};
    space = false;
    if (c == '#') {
      t.kind = Tok::kComment;
      t.text = std::string(absl::StripTrailingAsciiWhitespace(line.substr(i)));
      i = line.size();
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < line.size() && line[j] != '"') j += line[j] == '\\' ? 2 : 1;
      t.kind = Tok::kString;
      t.text = line.substr(i, std::min(j + 1, line.size()) - i);
      i = std::min(j + 1, line.size());
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[j])) ||
              line[j] == '.' ||
              ((line[j] == '-' || line[j] == '+') &&
               (line[j - 1] == 'e' || line[j - 1] == 'E')))) {
        ++j;
      }
      t.kind = Tok::kNumber;
      t.text = line.substr(i, j - i);
      i = j;
    } else if (IsWordChar(c)) {
      size_t j = i;
      while (j < line.size() && (IsWordChar(line[j]) || line[j] == '*')) ++j;
      t.kind = Tok::kWord;
      t.text = line.substr(i, j - i);
      i = j;
    } else {
      static const char* kMulti[] = {
          "...", "..", "->", "==", "!=", "<=", ">=", "//"};
      t.text = std::string(1, c);
      for (const char* m : kMulti) {
        std::string s(m);
        if (line.compare(i, s.size(), s) == 0) {
          t.text = s;
          break;
        }
      }
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
  return out;
}

bool IsBinary(const std::string& p) {
  return p == "=" || p == "==" || p == "!=" || p == "<=" || p == ">=" ||
         p == "<" || p == ">" || p == "->" || p == "+" || p == "*" ||
         p == "/" || p == "|" || p == "-" || p == "//" || p == "%";
}

// Joins one line's tokens with canonical spacing.
std::string Join(const std::vector<Token>& toks) {
  std::string out;
  for (size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    const Token* prev = i > 0 ? &toks[i - 1] : nullptr;
    bool space = false;
    if (prev != nullptr) {
      const std::string& p = prev->text;
      const std::string& c = t.text;
      bool prev_punct = prev->kind == Tok::kPunct;
      bool cur_punct = t.kind == Tok::kPunct;
      // A `-` is unary after an operator, `(`, `[`, `,` or at the start.
      auto unary_minus = [&](size_t k) {
        if (toks[k].text != "-" || toks[k].kind != Tok::kPunct) return false;
        if (k == 0) return true;
        const Token& b = toks[k - 1];
        if (b.kind == Tok::kWord) {
          for (const char* kw :
               {"and", "or", "not", "where", "with", "let", "return"}) {
            if (b.text == kw) return true;
          }
          return false;
        }
        return b.kind == Tok::kPunct && b.text != ")" && b.text != "]";
      };
      // `*` right after a word is part of an op glob (`FusedBatchNorm*`).
      auto glob_star = [&](size_t k) {
        return toks[k].text == "*" && k > 0 && toks[k - 1].kind == Tok::kWord &&
               !toks[k].space_before;
      };
      // `Op?(...)`, `(A | B)?(...)`: an optional node's mark stays on its
      // op (or its alternatives) and its operands.
      bool optional_mark = (c == "?" && cur_punct && !t.space_before &&
                            (prev->kind == Tok::kWord || (prev_punct && p == ")"))) ||
                           (p == "?" && prev_punct && cur_punct && c == "(");
      // `Where?(IsNaN(p), z, ?p)`: the stand-in's mark stays on its operand.
      bool stand_in_mark = p == "?" && prev_punct && i >= 2 &&
                           toks[i - 2].kind == Tok::kPunct &&
                           (toks[i - 2].text == "(" || toks[i - 2].text == ",");
      if (t.kind == Tok::kComment) {
        space = true;
      } else if (optional_mark || stand_in_mark) {
        space = false;
      } else if (cur_punct && (c == "," || c == ")" || c == "]" || c == "." ||
                               c == "..." || c == ":")) {
        space = false;
        if (c == ":" && p == ")") space = false;
      } else if (prev_punct &&
                 (p == "(" || p == "[" || p == "." || p == ".." || p == "^")) {
        space = false;
      } else if (prev_punct && p == ":") {
        // `s:1` stays tight (a port); `w: Const`, `T: "x"`, `Relu: 0` get a
        // space.
        // A port of any node: `qs[0]:1`, `node_named("x"):1` too.
        const Token* before = i >= 2 ? &toks[i - 2] : nullptr;
        bool node_before = before != nullptr &&
                           (before->kind == Tok::kWord ||
                            (before->kind == Tok::kPunct &&
                             (before->text == "]" || before->text == ")")));
        space = !(t.kind == Tok::kNumber && !t.space_before && node_before &&
                  !toks[i - 1].space_before);
      } else if (cur_punct && (c == "(" || c == "[")) {
        // A call or op keeps its parenthesis; after a keyword or operator, a
        // space.
        static const char* kKeywords[] = {
            "and",     "or",     "not",     "with",    "in",        "where",
            "only",    "except", "then",    "else",    "if",        "replace",
            "reroute", "swap",   "erase",   "control", "uncontrol", "device",
            "clone",   "fail",   "require", "order"};
        bool keyword = false;
        for (const char* k : kKeywords) keyword = keyword || p == k;
        space = (prev_punct && p != ")" && p != "]") || keyword;
        if (prev_punct && (p == "(" || p == "[")) space = false;
      } else if (cur_punct && glob_star(i)) {
        space = false;
      } else if (prev_punct && p == "*" && glob_star(i - 1)) {
        space = !(cur_punct && (c == "(" || c == ")" || c == "," || c == "|"));
        if (cur_punct && c == "|") space = true;
      } else if (cur_punct && c == "^") {
        space = true;
      } else if (prev_punct && unary_minus(i - 1)) {
        space = false;
      } else if (cur_punct && c == "-" && unary_minus(i)) {
        space = true;
      } else if ((cur_punct && IsBinary(c)) || (prev_punct && IsBinary(p))) {
        space = true;
      } else {
        space = true;
      }
    }
    if (space && !out.empty()) out.push_back(' ');
    out += t.text;
  }
  return out;
}

}  // namespace

std::string FormatRuleText(const std::string& source) {
  std::vector<std::string> lines = absl::StrSplit(source, '\n');
  std::string out;
  int braces = 0;
  int parens = 0;
  bool blank = false;
  bool started = false;
  bool in_pattern_where = false;
  for (const std::string& raw : lines) {
    std::vector<Token> toks = Tokenize(raw);
    if (toks.empty()) {
      blank = started;
      if (braces == 0) in_pattern_where = false;
      continue;
    }
    if (blank) out += "\n";
    blank = false;
    started = true;
    // A closing bracket at the start of a line dedents that line; a line
    // that goes on a condition (`and ...`, `or ...`) indents two more.
    const Token& first = toks.front();
    int lead_braces = first.kind == Tok::kPunct && first.text == "}" ? 1 : 0;
    int lead_parens =
        first.kind == Tok::kPunct && (first.text == ")" || first.text == "]")
            ? 1
            : 0;
    bool continues =
        first.kind == Tok::kWord && (first.text == "and" || first.text == "or");
    // A named pattern's `where` goes on its declaration (two more), and
    // so do the conditions after it and its alternatives (`| p(x)`).
    bool alternative =
        braces == 0 && parens == 0 && first.kind == Tok::kPunct && first.text == "|";
    bool pattern_where =
        braces == 0 && first.kind == Tok::kWord && first.text == "where";
    if (braces == 0 && first.kind == Tok::kWord && !continues)
      in_pattern_where = pattern_where;
    int indent = 2 * std::max(0, braces - lead_braces) +
                 (parens - lead_parens > 0 ? 4 : 0) + (continues ? 2 : 0) +
                 (in_pattern_where || alternative ? 2 : 0);
    out += std::string(indent, ' ') + Join(toks) + "\n";
    for (const Token& t : toks) {
      if (t.kind != Tok::kPunct) continue;
      if (t.text == "{") ++braces;
      if (t.text == "}") braces = std::max(0, braces - 1);
      if (t.text == "(" || t.text == "[") ++parens;
      if (t.text == ")" || t.text == "]") parens = std::max(0, parens - 1);
    }
  }
  return out;
}

}  // namespace graft::dsl
