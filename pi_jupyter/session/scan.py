"""Reading a large session file without holding it: the command line's way in.

:meth:`Session.open` keeps every entry parsed in memory, which a kernel needs (it appends,
rebuilds, draws the tree again and again). A command that prints a context, a tree or a
summary once does not: :func:`scan` reads the file in chunks, keeps only a small stub of
each entry (id, type, parent, timestamp, the few fields the tree and the context rebuild
look at) with its byte offset, and hands each whole entry to a ``visit`` callback on the
way. The context is then streamed: each entry on the branch is read again from its offset
when it is printed. The same :class:`~.index.EntryIndex` and load report as the store's are
built from the stubs, so the answers are the same; files the stubs cannot stand for (an old
version to migrate, repeated ids, odd header fields) raise :class:`NeedsFullRead` and the
caller opens them with :meth:`Session.open`.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from .files import read_regular_fd
from .index import EntryIndex, RawEntry, TreeNode
from .jsonl import SKIP, TORN, loads_line, paused_gc, settle_gc, slow_line
from .migrate import needs_migration
from .projection import entry_messages, is_system_entry
from .rebuild import EMITTING_KINDS, ContextPlan, context_plan
from .report import CycleError, LoadReport, SessionFileError

if TYPE_CHECKING:  # pragma: no cover
    from .entries import SessionHeader

CHUNK = 8 << 20
"""Bytes read at a time; a line longer than this is read whole."""

_KEEP = {
    "label": ("targetId", "label"),
    "session_info": ("name",),
    "custom": ("customType",),
    "compaction": ("firstKeptEntryId", "summary", "tokensBefore"),
    "branch_summary": ("summary",),
    "thinking_level_change": ("thinkingLevel",),
    "model_change": ("provider", "modelId"),
}


class NeedsFullRead(Exception):
    """The file is one the stubs cannot stand for; open it with :meth:`Session.open` instead."""


_PI1_TYPES = frozenset({"context_edit", "usage"})


def _stub(obj: RawEntry) -> RawEntry:
    """The fields of an entry the tree, the leaf and the context choices look at; the rest stays on disk.

    pi 1.x's context edits, usage entries, system messages and compaction snapshots need the
    whole entries (edits apply across the branch, the load report checks their fields): such a
    file is read whole (:class:`NeedsFullRead`).
    """
    kind = obj.get("type")
    if kind in _PI1_TYPES or is_system_entry(obj) or (kind == "compaction" and ("systemMessage" in obj or "usage" in obj)):
        raise NeedsFullRead(f"pi 1.x entries ({kind}) are read whole")
    stub: RawEntry = {"type": kind, "id": obj.get("id")}
    for key in ("parentId", "timestamp"):
        if key in obj:
            stub[key] = obj[key]
    if kind == "message":
        if "message" in obj:
            message = obj["message"]
            stub["message"] = {k: message[k] for k in ("role", "provider", "model") if k in message} if type(message) is dict else message
    else:
        for key in _KEEP.get(kind, ()):  # type: ignore[arg-type]
            if key in obj:
                stub[key] = obj[key]
    return stub


class ScannedSession:
    """A session file read as stubs; entries are read back from disk by position when needed."""

    def __init__(self, path: str, header: RawEntry, index: EntryIndex, report: LoadReport, offsets: array) -> None:
        self.path = path
        self.raw_header = header
        self._index = index
        self.load_report = report
        self._offsets = offsets  # per index position: its byte offset and length, side by side

    @property
    def header(self) -> SessionHeader:
        """The header, typed."""
        from .entries import SessionHeader

        return SessionHeader.model_validate(self.raw_header)

    @property
    def leaf_id(self) -> str | None:
        """The current leaf, as :attr:`Session.leaf_id`."""
        return self._index.leaf

    @property
    def name(self) -> str | None:
        """The latest session name."""
        return self._index.name

    @property
    def labels(self) -> dict[str, str]:
        """Entry id -> label."""
        return {eid: label for eid, (label, _) in self._index.labels.items()}

    def __len__(self) -> int:
        return len(self._index)

    def raw_entries(self) -> list[RawEntry]:
        """The stubs, in file order."""
        return list(self._index.order)

    def branch_ids(self, leaf: str | None = None) -> list[str]:
        """Ids from the root to ``leaf`` (default: the current leaf). Raises :class:`CycleError`."""
        order = self._index.order
        return [order[i]["id"] for i in self._index.path_positions(leaf if leaf is not None else self.leaf_id)]

    def resolve(self, ref: str) -> str:
        """An entry id, a unique id prefix (4+ characters) or a label, as :meth:`Session.resolve`."""
        return self._index.resolve(ref, self.path)

    def tree(self) -> list[TreeNode]:
        """The tree of stubs, as :meth:`Session.tree`."""
        return self._index.tree()

    def plan(self, leaf_id: str | None) -> ContextPlan:
        """Which entries the context of the branch ending at ``leaf_id`` is made of (``None``: before the first entry)."""
        return context_plan(self._index, leaf_id, explicit_none=leaf_id is None)

    def stub_at(self, position: int) -> RawEntry:
        """The stub at an index position (from :attr:`ContextPlan.positions`)."""
        return self._index.order[position]

    def emits(self, position: int) -> bool:
        """True when the entry at ``position`` is of a kind that can give the context a message."""
        return self._index.kinds[position] in EMITTING_KINDS

    def read(self, position: int) -> RawEntry:
        """The whole entry at an index position, read back from the file."""
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            return self._read(fd, position)
        finally:
            os.close(fd)

    def _read(self, fd: int, position: int) -> RawEntry:
        start, length = self._offsets[2 * position], self._offsets[2 * position + 1]
        raw = os.pread(fd, length, start)
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            entry = loads_line(raw)[0]
        if not isinstance(entry, dict):  # the file changed under us since the scan
            raise SessionFileError(self.path, f"changed while it was being read (byte {start})")
        return entry

    def messages_at(self, plan: ContextPlan, n: int) -> list[dict[str, Any]]:
        """The messages the ``n``-th context entry of ``plan`` gives, read back from the file."""
        position = plan.positions[n]
        return entry_messages(self.read(position), self._index.kinds[position], plan.compaction_head and n == 0)

    def messages(self, plan: ContextPlan) -> Iterator[dict[str, Any]]:
        """The context's messages one at a time, each entry read back from the file as it is needed."""
        kinds = self._index.kinds
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            for n, position in enumerate(plan.positions):
                kind = kinds[position]
                if kind in EMITTING_KINDS:
                    yield from entry_messages(self._read(fd, position), kind, plan.compaction_head and n == 0)
        finally:
            os.close(fd)


def scan(
    path: str,
    *,
    visit: Callable[[RawEntry], None] | None = None,
    keep: Callable[[RawEntry], Any] | None = None,
) -> ScannedSession:
    """Read ``path`` as stubs. ``visit(entry)`` sees every whole entry in file order; ``keep(entry)`` is stored as ``stub["_keep"]``.

    Raises :class:`SessionFileError` as :meth:`Session.open` does, and :class:`NeedsFullRead`
    for a file the stubs cannot stand for.
    """
    p = os.path.abspath(path)
    if os.path.isdir(p):
        raise SessionFileError(p, "is a folder, not a session file")
    light = visit is None and keep is None  # message lines need not be read whole
    if light:
        from .stubs import message_stub  # msgspec: imported only by the commands that use it
    report = LoadReport(path=p)
    index = EntryIndex()
    offsets = array("q")  # per entry: byte offset, length
    header: RawEntry | None = None
    nonblank = False  # a file of blank lines only is "empty", as for Session.open
    with read_regular_fd(p) as fh:
        carry = b""
        base = 0  # file offset of carry[0]
        lineno = 1
        at_start = True
        while True:
            block = fh.read(CHUNK)
            final = not block
            data = carry + block if carry else block
            if at_start and data:
                if data.startswith(b"\xef\xbb\xbf"):
                    data, base = data[3:], base + 3
                at_start = False
            if not nonblank and data.strip():
                nonblank = True
            cut = len(data) if final else data.rfind(b"\n") + 1
            if cut <= 0 and not final:
                carry = data
                continue
            stubs: list[RawEntry] = []
            lines: list[int] = []
            view = memoryview(data)
            start = 0
            ascii_only = light and data.isascii()
            with paused_gc():
                while start < cut:
                    end = data.find(b"\n", start, cut)
                    if end < 0:
                        end = cut
                    if end > start:
                        stub = message_stub(view[start:end], ascii_only) if light and header is not None else None
                        if stub is None:
                            stub = _whole_line(
                                view, data, start, end, lineno, report, torn=final and end == cut and not data.endswith(b"\n")
                            )
                            if stub is None:
                                pass  # blank, unreadable (reported) or torn
                            elif header is None:
                                header, stub = stub, None
                                _check_header(p, header, lineno)
                            else:
                                obj = stub
                                if visit is not None:
                                    visit(obj)
                                stub = _stub(obj)
                                if keep is not None:
                                    stub["_keep"] = keep(obj)
                        if stub is not None:
                            stubs.append(stub)
                            lines.append(lineno)
                            offsets.append(base + start)
                            offsets.append(end - start)
                    lineno += 1
                    start = end + 1
            before = len(index.order)
            index.extend(stubs, lines, report)
            if len(index.order) - before != len(stubs):
                # a stub was not indexed (a second header, no id): keep offsets aligned with the index
                raise NeedsFullRead("lines without an id or a repeated header")
            if final:
                break
            carry = data[cut:]
            base += cut
    if header is None:
        if not nonblank:
            raise SessionFileError(p, "the file is empty: a session file starts with a header line")
        first = report.problems[0].line if report.problems else None
        raise SessionFileError(p, "no line could be read as a JSON object: this is not a session file", first)
    if any(problem.kind == "duplicate_id" for problem in report.problems):
        raise NeedsFullRead("repeated ids")
    index.check_structure(report)
    report.problems.sort(key=lambda problem: problem.line)
    settle_gc()  # the stubs, made with the collector paused, go straight to its oldest generation
    return ScannedSession(p, header, index, report, offsets)


def _whole_line(view: memoryview, data: bytes, start: int, end: int, lineno: int, report: LoadReport, *, torn: bool) -> RawEntry | None:
    """The object on a line read whole, or ``None`` for a blank, unreadable or torn line, or one that is not an object (reported)."""
    try:
        obj = orjson.loads(view[start:end])
    except orjson.JSONDecodeError:
        obj = slow_line(data[start:end], lineno, report, torn=torn)
        if obj is SKIP or obj is TORN:
            return None
    if type(obj) is not dict:
        from ..messages.text import json_type

        report.add(lineno, "malformed", f"a JSON {json_type(obj)}, not an object", "error")
        return None
    return obj


def _check_header(path: str, header: RawEntry, line: int) -> None:
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        kind = header.get("type")
        what = f"a {kind!r} entry" if isinstance(kind, str) else "an object without a 'type'"
        raise SessionFileError(path, f"the first JSON line is {what}, not a session header (type 'session' with a string id)", line)
    if needs_migration(header):
        raise NeedsFullRead("an old version, migrated in memory")
    if _plain_header(header):
        return  # the usual header: no need for the model's validation (nor for importing it)
    from pydantic import ValidationError

    from .entries import SessionHeader

    try:
        SessionHeader.model_validate(header)
    except ValidationError:
        raise NeedsFullRead("odd header fields") from None


_HEADER_STRINGS = ("timestamp", "cwd", "parentSession")


def _plain_header(header: RawEntry) -> bool:
    """True when every known header field has exactly its usual type (anything else is checked by the model)."""
    version = header.get("version")
    if version is not None and type(version) is not int:
        return False
    return all(type(header.get(key, "")) is str for key in _HEADER_STRINGS)


__all__ = ["CycleError", "NeedsFullRead", "ScannedSession", "scan"]
