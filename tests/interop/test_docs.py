"""README.md and the guides under docs/: the README stays a front page,
every link between them resolves, and every `graft` command they show
names a subcommand and flags the built `graft` has (what each command
does is tested where its feature is)."""
import glob
import os
import re
import subprocess

import pytest

from conftest import ROOT, graft_binary

PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def _text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _prose(text):
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _anchor(heading):
    """GitHub's anchor of a heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def _anchors(path):
    return {_anchor(line.lstrip("#")) for line in _prose(_text(path)).splitlines()
            if line.startswith("#")}


def test_readme_is_a_front_page():
    lines = _text(os.path.join(ROOT, "README.md")).count("\n")
    assert lines <= 400, "README.md has %d lines: guides belong under docs/" % lines
    for page in PAGES[1:]:
        name = os.path.relpath(page, ROOT)
        if name.startswith("docs/") and name != "docs/benchmarks.md":
            assert "docs/" + os.path.basename(page) in _text(PAGES[0]), (
                "README.md does not link %s" % name)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_links_resolve(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(_text(page))):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(resolved):
            broken.append(target)
        elif anchor and resolved.endswith(".md") and anchor not in _anchors(resolved):
            broken.append(target)
    assert not broken, broken


def _commands(text):
    """(subcommand words, flags) of every `graft ...` line in code blocks,
    continuation lines of a synopsis included."""
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        current = None
        for line in block.splitlines():
            stripped = re.sub(r"^\$ ", "", line.strip())
            m = re.match(r"^(?:\S+=\S+ )*(?:\S*/)?graft ([a-z][a-z-]*)(?: (merge))?\b(.*)", stripped)
            if m:
                current = [m.group(1)] + ([m.group(2)] if m.group(2) else [])
                rest = m.group(3)
            elif current and line.startswith(" ") and not stripped.startswith("#"):
                rest = stripped
            else:
                current = None
                continue
            rest = rest.split(" #")[0]
            yield tuple(current), set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest))


def test_every_shown_command_exists():
    graft = graft_binary()
    helps = {}
    problems = []
    for page in PAGES:
        for words, flags in _commands(_text(page)):
            if words[0] in ("version",) or words == ("--version",):
                continue
            if words not in helps:
                proc = subprocess.run([graft, *words, "--help"], capture_output=True, text=True)
                helps[words] = proc.stdout if proc.returncode == 0 else None
            help_text = helps[words]
            if help_text is None:
                problems.append("%s: `graft %s` is no subcommand" % (
                    os.path.relpath(page, ROOT), " ".join(words)))
                continue
            for flag in sorted(flags - {"--help", "--version"}):
                if not re.search(r"(?<![\w-])%s\b" % re.escape(flag), help_text):
                    problems.append("%s: `graft %s` has no %s" % (
                        os.path.relpath(page, ROOT), " ".join(words), flag))
    assert not problems, "\n".join(sorted(set(problems)))
    assert len(helps) >= 10, helps.keys()


def test_shipped_files_named_in_readme_exist():
    missing = [p for p in re.findall(r"`((?:rules|examples|scripts)/[\w./-]+)`", _text(PAGES[0]))
               if not glob.glob(os.path.join(ROOT, p.rstrip("/")))]
    assert not missing, missing
