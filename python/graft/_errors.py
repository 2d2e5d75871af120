"""graft.Error: what went wrong, and where."""

from __future__ import annotations

import dataclasses
from typing import List


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One located problem in a rule file: file, line, column, message."""

    path: str
    line: int
    column: int
    message: str
    notes: List[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: error: {self.message}"


class Error(Exception):
    """A graft call failed: bad input, rules that do not compile, a rewrite
    that did not converge. ``str(error)`` is the message the CLI prints;
    ``diagnostics`` locates each problem in the rule files; ``usage`` is True
    when an argument was at fault (the CLI's exit status 2)."""

    def __init__(self, message: str, usage: bool = False,
                 diagnostics=(), notes=()):
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.diagnostics = [d if isinstance(d, Diagnostic) else Diagnostic(
            d[0], d[1], d[2], d[3], list(d[4])) for d in diagnostics]
        self.notes = list(notes)

    def __str__(self) -> str:
        return "\n".join([self.message] + ["  " + n for n in self.notes])

    def __reduce__(self):  # survives pickling (process pools, clusters)
        return (Error, (self.message, self.usage, self.diagnostics,
                        self.notes))
