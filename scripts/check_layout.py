#!/usr/bin/env python3
"""Checks the house rules on layout:
- sizes: no source file over 800 lines and no function over 120 lines in
  dsl/, engine/, dialects/, analysis/, batch/ and draw/ (tests and generated files
  aside);
- layering: cli -> batch -> builtins -> dialects -> analysis, dsl, draw ->
  engine -> proto, nothing upward (an #include is a dependency); the core
  (engine/ and dsl/: the graph IR, Rewriter, driver, surgery, values, hooks,
  validation and the rule language) includes no dialect's header, and no
  dialect another's (docs/dialects.md). Tests of the core read their
  TensorFlow fixtures through dialects/graph_io.h and are not the core.
Prints each offender; exits 1 if any.

    scripts/check_layout.py [--report]   # --report also lists the longest
"""
import os
import re
import sys

ROOTS = ["dsl", "engine", "dialects", "analysis", "batch", "draw"]
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else)\b")
SCOPE = re.compile(r"\b(namespace|class|struct|enum|union)\b[^()]*$|^extern\b")


def strip(text):
    """The text with comments, strings and chars blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, line count) of each function body in `text`."""
    code = strip(text)
    stack = []  # 'scope', 'fn' or 'other'
    header_start = 0
    result = []
    for i, c in enumerate(code):
        if c == "{":
            header = " ".join(code[header_start:i].split())
            inside_fn = "fn" in stack
            kind = "other"
            if not inside_fn:
                if SCOPE.search(header) and "(" not in header.split("{")[-1]:
                    kind = "scope"
                elif "(" in header and not CONTROL.match(header) and \
                        not re.search(r"=\s*$", header) and "]" not in header:
                    kind = "fn"
                    name = re.findall(r"([~\w:]+)\s*\(", header)
                    start_line = code.count("\n", 0, i) + 1
                    result.append([name[0] if name else header[:40],
                                   start_line, None, len(stack)])
            stack.append(kind)
            header_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "other"
            if kind == "fn":
                for r in reversed(result):
                    if r[2] is None and r[3] == len(stack):
                        r[2] = code.count("\n", 0, i) + 1 - r[1] + 1
                        break
            header_start = i + 1
        elif c == ";":
            header_start = i + 1
    return [(n, s, l) for n, s, l, _ in result if l is not None]


def sources(root):
    for folder, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".cc", ".h")) or f.endswith("_test.cc") or f.startswith("test_"):
                continue
            if "embedded" in f:
                continue
            yield os.path.join(folder, f)


# What each layer may include (besides itself and third-party headers).
ALLOWED = {
    "proto": {"proto"},
    "engine": {"engine", "proto"},
    "dsl": {"dsl", "engine", "proto"},
    "draw": {"draw", "engine", "proto"},
    "dialects": {"dialects", "engine", "proto"},
    "builtins": {"builtins", "dialects", "engine", "proto"},
    "analysis": {"analysis", "engine", "proto"},
    "batch": {"batch", "dialects", "dsl", "draw", "engine", "proto"},
    "cli": {"cli", "batch", "dsl", "draw", "analysis", "builtins", "dialects", "engine",
            "proto"},
}
INCLUDE = re.compile(r'^#include "([a-z_]+)/', re.M)
DIALECT_INCLUDE = re.compile(r'^#include "dialects/([a-z_]+)/', re.M)


def layering_problems():
    problems = []
    for layer, allowed in ALLOWED.items():
        for path in sources(layer):
            for used in INCLUDE.findall(open(path, encoding="utf-8").read()):
                if used in ALLOWED and used not in allowed:
                    problems.append(f"{path}: includes {used}/ ({layer}/ may "
                                    f"use {', '.join(sorted(allowed))})")
    return problems


def dialect_problems():
    """A dialect's folder includes no other dialect's header (the format
    dispatch, dialects/graph_io, sits above them all)."""
    problems = []
    for path in sources("dialects"):
        parts = path.split(os.sep)
        if len(parts) < 3:
            continue
        own = parts[1]
        for used in DIALECT_INCLUDE.findall(open(path, encoding="utf-8").read()):
            if used != own:
                problems.append(f"{path}: the {own} dialect includes dialects/{used}/ "
                                f"(dialects depend on the core only)")
    return problems


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems, longest = [], []
    for root in ROOTS:
        for path in sources(root):
            text = open(path, encoding="utf-8").read()
            lines = text.count("\n")
            if lines > MAX_FILE_LINES:
                problems.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES})")
            for name, start, count in functions(text):
                longest.append((count, f"{path}:{start}: {name}"))
                if count > MAX_FUNCTION_LINES:
                    problems.append(f"{path}:{start}: `{name}` is {count} lines "
                                    f"(at most {MAX_FUNCTION_LINES})")
    problems += layering_problems()
    problems += dialect_problems()
    if "--report" in sys.argv:
        for count, where in sorted(longest, reverse=True)[:15]:
            print(f"{count:5d}  {where}")
    for p in problems:
        print(p)
    print(f"layout: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
