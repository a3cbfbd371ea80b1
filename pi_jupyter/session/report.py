"""What went wrong while reading a session file, and the errors the store raises."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

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


class LoadProblem(BaseModel):
    """One problem found while reading, with the 1-based line it is on (0: the whole file)."""

    line: int
    kind: ProblemKind
    message: str
    severity: Literal["error", "warning", "info"] = "warning"
    entry_id: str | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"{where}: {self.severity}: {self.message}"


class LoadReport(BaseModel):
    """Every problem found while reading a session file. Nothing reported here was rewritten.

    The first :data:`SAMPLE_PER_KIND` problems of each kind are kept in :attr:`problems`; the
    rest are only counted, in :attr:`omitted` (kind -> how many more), so two million orphans
    cost a counter, not two million objects.
    """

    path: str | None = None
    problems: list[LoadProblem] = Field(default_factory=list)
    omitted: dict[str, int] = Field(default_factory=dict)
    _counts: dict[str, int] = PrivateAttr(default_factory=dict)

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
        return self._counts.get(kind, 0) >= SAMPLE_PER_KIND

    def add(self, line: int, kind: ProblemKind, message: str, severity: str = "warning", entry_id: str | None = None) -> None:
        """Record a problem (only count it when :data:`SAMPLE_PER_KIND` of its kind are kept already)."""
        count = self._counts.get(kind, 0)
        self._counts[kind] = count + 1
        if count >= SAMPLE_PER_KIND:
            self.omitted[kind] = self.omitted.get(kind, 0) + 1
            return
        self.problems.append(LoadProblem(line=line, kind=kind, message=message, severity=severity, entry_id=entry_id))  # type: ignore[arg-type]

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


class SessionError(Exception):
    """Base class of the errors raised by the session store."""


class SessionFileError(SessionError):
    """The file cannot be used as a session (no valid header, empty, not JSON). It was not touched."""

    def __init__(self, path: str, reason: str, line: int | None = None):
        self.path = path
        self.reason = reason
        self.line = line
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason} (the file was left untouched)")


class EntryNotFoundError(SessionError, KeyError):
    """An entry id (or label) that is not in the session."""

    def __init__(self, ref: str, path: str | None = None):
        self.ref = ref
        where = f" in {path}" if path else ""
        super().__init__(f"entry {ref!r} not found{where}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class CycleError(SessionError):
    """The parent links of some entries form a loop, so the path to the root never ends."""

    def __init__(self, entry_id: str, loop: list[str]):
        self.entry_id = entry_id
        self.loop = loop
        shown = " -> ".join(loop[:8]) + (" -> ..." if len(loop) > 8 else "")
        super().__init__(f"parent cycle reached from entry {entry_id!r}: {shown}")


class SessionLockedError(SessionError):
    """Another process held the session file's lock for too long."""


class SessionChangedError(SessionError):
    """Another program shrank or replaced the file while it was open; nothing was appended."""
