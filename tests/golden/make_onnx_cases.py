"""Writes tests/golden/onnx_*: a golden case for every rule of the ONNX
libraries (rules/onnx/, rules/onnx/transformers/, rules/onnx/onnxoptimizer/),
each the rule's file applied to the input of the rule's first test block
(a small model from tests/data/onnx, copied as in.onnxtxt, with its params
and range table). Then write the expected diffs, and read them:

  python3 tests/golden/make_onnx_cases.py
  bazel run //tests/golden:golden_test -- --update
"""
import os
import re
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
LIBRARIES = ["rules/onnx", "rules/onnx/transformers", "rules/onnx/onnxoptimizer"]

RULE = re.compile(r"^rule (\w+) \{", re.M)
# A test block: on one line, or from its line to the line `  }`.
TEST = re.compile(r"^  test \"[^\"]*\" \{(?:([^\n]*)\}$|\n(.*?)^  \}$)", re.M | re.S)


def first_test(body):
    """The input and params of a rule's first test block that expects a
    change (not `no_match`)."""
    for test in TEST.finditer(body):
        block = test.group(1) or test.group(2)
        if re.search(r"^\s*no_match\s*$", block, re.M):
            continue
        found = re.search(r'input "([^"]+)"', block)
        if found is None:
            continue
        params = dict(re.findall(r'param (\w+) = "([^"]*)"', block))
        return found.group(1), params
    return None


def cases():
    for library in LIBRARIES:
        folder = os.path.join(ROOT, library)
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".graft"):
                continue
            path = os.path.join(folder, name)
            text = open(path).read()
            rules = list(RULE.finditer(text))
            for i, rule in enumerate(rules):
                end = rules[i + 1].start() if i + 1 < len(rules) else len(text)
                test = first_test(text[rule.start():end])
                if test is not None:
                    yield library, name, rule.group(1), path, test


def main():
    for old in os.listdir(HERE):
        if old.startswith(("onnx_", "onnxoptimizer_")) and os.path.isdir(os.path.join(HERE, old)):
            shutil.rmtree(os.path.join(HERE, old))
    written = set()
    for library, name, rule, path, (model, params) in cases():
        key = (path, model, tuple(sorted(params.items())))
        if key in written:  # one case per rule file, input and params
            continue
        written.add(key)
        prefix = "onnxoptimizer" if library == "rules/onnx/onnxoptimizer" else "onnx"
        case = os.path.join(HERE, "%s_%s" % (prefix, rule))
        if os.path.exists(case):  # the rule's file on another input
            case += "_%d" % len(written)
        os.makedirs(case)
        source = os.path.normpath(os.path.join(os.path.dirname(path), model))
        shutil.copy(source, os.path.join(case, "in.onnxtxt"))
        with open(os.path.join(case, "rules.graft"), "w") as out:
            out.write("# %s's rules on the input of `%s`'s first test block\n" % (
                os.path.relpath(path, ROOT), rule))
            out.write('dialect onnx\nimport "%s"\n' % os.path.relpath(path, case))
        lines = []
        for param, value in sorted(params.items()):
            table = os.path.normpath(os.path.join(os.path.dirname(path), value))
            if os.path.isfile(table):  # a file the rule reads: copied beside
                shutil.copy(table, os.path.join(case, os.path.basename(table)))
                value = os.path.relpath(os.path.join(case, os.path.basename(table)), ROOT)
            lines.append("%s=%s\n" % (param, value))
        if lines:
            with open(os.path.join(case, "params.txt"), "w") as out:
                out.writelines(lines)
        print("wrote", os.path.relpath(case, ROOT))


if __name__ == "__main__":
    main()
