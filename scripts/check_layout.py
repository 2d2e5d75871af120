#!/usr/bin/env python3
"""Checks the house rules on layout:
- sizes: no source file over 800 lines and no function over 120 lines in
  dsl/, engine/, analysis/, batch/ and draw/ (tests and generated files
  aside);
- layering: cli -> batch -> dsl, analysis, builtins, draw -> engine ->
  proto, nothing upward (an #include is a dependency);
- dialects: the core (the graph IR, Rewriter, driver, surgery, values,
  hooks, validation and the rule language) includes no format's header
  (a codec, its origin, its validator) but where listed in
  CORE_KNOWS_A_FORMAT (docs/design-notes.md, "The dialect split"); the
  list may only shrink: a new include fails, and so does an entry no
  longer true.
Prints each offender; exits 1 if any.

    scripts/check_layout.py [--report]   # --report also lists the longest
"""
import os
import re
import sys

ROOTS = ["dsl", "engine", "analysis", "batch", "draw"]
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
            if not f.endswith((".cc", ".h")) or f.endswith("_test.cc"):
                continue
            if "embedded" in f:
                continue
            yield os.path.join(folder, f)


# What each layer may include (besides itself and third-party headers).
ALLOWED = {
    "proto": {"proto"},
    "engine": {"engine", "proto"},
    "builtins": {"builtins", "engine", "proto"},
    "analysis": {"analysis", "engine", "proto"},
    "dsl": {"dsl", "engine", "proto"},
    "draw": {"draw", "engine", "proto"},
    "batch": {"batch", "dsl", "draw", "engine", "proto"},
    "cli": {"cli", "batch", "dsl", "draw", "analysis", "builtins", "engine",
            "proto"},
}
INCLUDE = re.compile(r'^#include "([a-z_]+)/', re.M)


def layering_problems():
    problems = []
    for layer, allowed in ALLOWED.items():
        for path in sources(layer):
            for used in INCLUDE.findall(open(path, encoding="utf-8").read()):
                if used in ALLOWED and used not in allowed:
                    problems.append(f"{path}: includes {used}/ ({layer}/ may "
                                    f"use {', '.join(sorted(allowed))})")
    return problems


# The formats' headers (TensorFlow's and ONNX's codecs, origins and
# validators, and the format dispatch).
FORMAT_HEADERS = {
    "constant_args", "freeze", "function_body", "graph_io", "graph_io_onnx",
    "onnx_bodies", "onnx_convert", "onnx_data", "onnx_model", "saved_model",
    "tensor_bundle", "validate_onnx", "variable_reads",
}
CORE_ENGINE = {
    "const_tensor", "driver", "graph", "graph_algorithms", "graph_diff", "graph_stats",
    "hooks", "name_regex", "op_registry", "rewriter", "suggest", "surgery",
    "tensor_content", "tensor_ranges", "validate", "value",
}
# Where the core still includes a format's header today; to be emptied by
# the dialect interface.
CORE_KNOWS_A_FORMAT = {
    ("dsl/actions.cc", "onnx_convert"),
    ("dsl/checker_actions.cc", "graph_io"),
    ("dsl/checker_params.cc", "graph_io"),
    ("dsl/functions.cc", "constant_args"),
    ("dsl/functions.cc", "function_body"),
    ("dsl/functions.cc", "onnx_bodies"),
    ("dsl/functions.cc", "saved_model"),
    ("dsl/functions.cc", "variable_reads"),
    ("dsl/runner.cc", "graph_io"),
    ("engine/driver.cc", "onnx_model"),
    ("engine/graph_diff.cc", "function_body"),
    ("engine/graph_diff.cc", "graph_io"),
    ("engine/graph_diff.cc", "onnx_bodies"),
    ("engine/tensor_ranges.cc", "onnx_model"),
    ("engine/validate.cc", "function_body"),
    ("engine/validate.cc", "onnx_model"),
    ("engine/validate.cc", "validate_onnx"),
    ("engine/value.cc", "onnx_model"),
}
ENGINE_INCLUDE = re.compile(r'^#include "engine/([a-z_]+)\.h"', re.M)


def dialect_problems():
    core = [p for p in sources("engine")
            if os.path.basename(p).split(".")[0] in CORE_ENGINE] + list(sources("dsl"))
    found = set()
    for path in core:
        for header in ENGINE_INCLUDE.findall(open(path, encoding="utf-8").read()):
            if header in FORMAT_HEADERS:
                found.add((path, header))
    problems = [f"{p}: the core includes engine/{h}.h, a format's header (add it to the "
                f"dialect's interface instead)" for p, h in sorted(found - CORE_KNOWS_A_FORMAT)]
    problems += [f"{p}: no longer includes engine/{h}.h: remove it from CORE_KNOWS_A_FORMAT"
                 for p, h in sorted(CORE_KNOWS_A_FORMAT - found)]
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
