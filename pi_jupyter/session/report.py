"""What went wrong while reading a session file, and the errors the store raises.

Plain msgspec structs, not dataclasses: every command and every open builds a report, and
msgspec is imported by every reader already, where :mod:`dataclasses` would bring
:mod:`inspect` and :mod:`ast` into a shell command that reads a small file (some 15 ms).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .errors import (
    CycleError,
    EntryNotFoundError,
    SessionChangedError,
    SessionError,
    SessionFileError,
    SessionLockedError,
)

ProblemKind = Literal[
    "malformed",  # a line that is not a JSON object
    "torn_tail",  # the last line was cut off mid-write
    "invalid_utf8",  # bytes that are not UTF-8 (read with replacement characters, as pi does)
    "duplicate_header",  # a second session header (pi's deferred flush can write one)
    "not_an_entry",  # a JSON object without a string id or type
    "duplicate_id",  # an id seen before; the later line wins, as in pi
    "orphan",  # the parent id is not in the file; the entry is shown as a root
    "self_parent",  # an entry that is its own parent; treated as a root
    "cycle",  # entries whose parents form a loop; unreachable from any root
    "unknown_type",  # an entry type this version does not know; kept, adds nothing to the context
    "migrated",  # the file was migrated from an older version
    "odd_value",  # a header field of an unexpected JSON type; read as unset
    "no_message",  # a message entry whose 'message' is missing or not an object; adds nothing to the context
    "bad_context_edit",  # pi 1.x: an edit whose target or replacement is not usable
    "bad_system_message",  # pi 1.x: a system message with fields of odd types
    "bad_usage",  # pi 1.x: a usage entry (or compaction usage) with odd numbers
]

_INFO_KINDS = ("unknown_type", "migrated")  # the kinds reported with severity "info"

SAMPLE_PER_KIND = 100
"""Problems of one kind kept in full; beyond that only counted, so a badly damaged file costs no more than a sound one."""


class LoadProblem(msgspec.Struct):
    """One problem found while reading, with the 1-based line it is on (0: the whole file)."""

    line: int
    kind: ProblemKind
    message: str
    severity: Literal["error", "warning", "info"] = "warning"
    entry_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{line, kind, message, severity, entry_id}`` (the JSON of ``pi-jupyter info --json``)."""
        return {"line": self.line, "kind": self.kind, "message": self.message, "severity": self.severity, "entry_id": self.entry_id}

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"{where}: {self.severity}: {self.message}"


class LoadReport(msgspec.Struct):
    """Every problem found while reading a session file. Nothing reported here was rewritten.

    The first :data:`SAMPLE_PER_KIND` problems of each kind are kept in :attr:`problems`; the
    rest are only counted, in :attr:`omitted` (kind -> how many more), so two million orphans
    cost a counter, not two million objects.
    """

    path: str | None = None
    problems: list[LoadProblem] = msgspec.field(default_factory=list)
    omitted: dict[str, int] = msgspec.field(default_factory=dict)
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    """Problems found per kind (listed and omitted)."""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``path``, ``problems``, ``omitted``)."""
        return {"path": self.path, "problems": [p.to_dict() for p in self.problems], "omitted": dict(self.omitted)}

    @property
    def ok(self) -> bool:
        """True when nothing but informational notes was found."""
        return all(p.severity == "info" for p in self.problems)

    @property
    def errors(self) -> list[LoadProblem]:
        """Problems of severity ``error`` (lines that could not be read)."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[LoadProblem]:
        """Problems of severity ``warning`` (structure that pi tolerates but that looks wrong)."""
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def total(self) -> int:
        """How many problems were found, the omitted ones included."""
        return len(self.problems) + sum(self.omitted.values())

    @property
    def serious(self) -> int:
        """How many errors and warnings were found (informational notes left out), the omitted ones included."""
        listed = sum(1 for p in self.problems if p.severity != "info")
        return listed + sum(n for kind, n in self.omitted.items() if kind not in _INFO_KINDS)

    def sampled(self, kind: str) -> bool:
        """True when problems of ``kind`` are only counted from now on (callers can skip building the message)."""
        return self.counts.get(kind, 0) >= SAMPLE_PER_KIND

    def add(self, line: int, kind: ProblemKind, message: str, severity: str = "warning", entry_id: str | None = None) -> None:
        """Record a problem (only count it when :data:`SAMPLE_PER_KIND` of its kind are kept already)."""
        count = self.counts.get(kind, 0)
        self.counts[kind] = count + 1
        if count >= SAMPLE_PER_KIND:
            self.omitted[kind] = self.omitted.get(kind, 0) + 1
            return
        self.problems.append(LoadProblem(line=line, kind=kind, message=message, severity=severity, entry_id=entry_id))  # type: ignore[arg-type]

    def count_more(self, kind: ProblemKind, n: int) -> None:
        """Count ``n`` more problems of ``kind`` without listing them (the caller listed a sample already)."""
        self.counts[kind] = self.counts.get(kind, 0) + n
        self.omitted[kind] = self.omitted.get(kind, 0) + n

    def omitted_lines(self) -> list[str]:
        """One line per kind with problems only counted: ``... and 1999900 more orphan problems``."""
        return [f"... and {n} more {kind} problem(s) (the first {SAMPLE_PER_KIND} are listed)" for kind, n in self.omitted.items()]

    def __str__(self) -> str:
        if not self.problems:
            return f"{self.path or 'session'}: no problems"
        lines = [f"{self.path or 'session'}: {self.total} problem(s)"]
        lines.extend(f"  {p}" for p in self.problems)
        lines.extend(f"  {row}" for row in self.omitted_lines())
        return "\n".join(lines)


__all__ = [
    "SAMPLE_PER_KIND",
    "CycleError",
    "EntryNotFoundError",
    "LoadProblem",
    "LoadReport",
    "ProblemKind",
    "SessionChangedError",
    "SessionError",
    "SessionFileError",
    "SessionLockedError",
]
