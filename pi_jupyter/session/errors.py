"""The errors the session store raises (plain exceptions: importing them costs nothing)."""

from __future__ import annotations


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
