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

:func:`read_for_session` reads a file the same way for :meth:`Session.open`, which keeps the
session: its stubs also keep their time and model, every other entry is kept whole, and the
index knows where each stub's line is, to read it back.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, cast

import orjson

from . import depth_cap
from .files import read_regular_fd
from .index import K_MESSAGE, EntryIndex, RawEntry, TreeNode
from .jsonl import DEEP_LINE_BYTES, SKIP, TORN, loads_line, paused_gc, report_too_deep, settle_gc, slow_line, too_deep
from .migrate import needs_migration
from .projection import entry_messages, is_system_entry
from .rebuild import EMITTING_KINDS, ContextPlan, context_plan
from .report import CycleError, LoadReport, SessionFileError

if TYPE_CHECKING:  # pragma: no cover
    from .entries import SessionHeader

CHUNK = 1 << 20
"""Bytes read at a time into one buffer (small enough to stay in the processor's cache); a longer line grows it."""

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

    def __init__(self, path: str, header: RawEntry, index: EntryIndex, report: LoadReport, lines: LineTable) -> None:
        self.path = path
        self.raw_header = header
        self._index = index
        self.load_report = report
        self._lines = lines

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
        """The stubs, in file order (as dicts)."""
        return [stub if type(stub) is dict else cast(Any, stub).as_dict() for stub in self._index.order]

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
        return context_plan(self._index, leaf_id, explicit_none=leaf_id is None, whole=self.read)

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
        start, length = self._lines.line(position)
        raw = os.pread(fd, length, start)
        problem = None
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            entry, problem = loads_line(raw)
        if not isinstance(entry, dict):  # the file changed under us since the scan
            raise SessionFileError(self.path, f"changed while it was being read (byte {start}{f': {problem}' if problem else ''})")
        return entry

    def messages_at(self, plan: ContextPlan, n: int) -> list[dict[str, Any]]:
        """The messages the ``n``-th context entry of ``plan`` gives, read back from the file."""
        position = plan.positions[n]
        return entry_messages(self.read(position), self._index.kinds[position], plan.compaction_head and n == 0)

    def message_texts(self, plan: ContextPlan) -> Iterator[tuple[memoryview | None, dict[str, Any] | None]]:
        """The context's messages one at a time as ``(text, None)`` or ``(None, message)``.

        ``text`` is the JSON of a message the context passes on exactly as the file holds it
        (:func:`~.bulk.message_text`), taken from the line without parsing the message; every
        other message is read whole and handed out parsed, as by :meth:`messages`.
        """
        from .bulk import message_text

        kinds = self._index.kinds
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            for n, position in enumerate(plan.positions):
                kind = kinds[position]
                if kind not in EMITTING_KINDS:
                    continue
                text = None
                if kind == K_MESSAGE:
                    start, length = self._lines.line(position)
                    line = os.pread(fd, length, start)
                    text = message_text(line)
                if text is not None:
                    yield text, None
                    continue
                for message in entry_messages(self._read(fd, position), kind, plan.compaction_head and n == 0):
                    yield None, message
        finally:
            os.close(fd)

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
    for a file the stubs cannot stand for. Without ``visit`` and ``keep`` the lines are read a
    run at a time (:mod:`.bulk`), each run that does not read cleanly one line at a time.
    """
    p = os.path.abspath(path)
    reader = _Reader(p, visit, keep)
    with read_regular_fd(_file(p)) as fh:
        reader.read(fh)
    _finish(reader)
    return ScannedSession(p, cast("RawEntry", reader.header), reader.index, reader.report, reader.lines)


class SessionFileRead(NamedTuple):
    """A session file read for :meth:`Session.open <pi_jupyter.session.Session.open>` (see :func:`read_for_session`)."""

    header: RawEntry
    entry_index: EntryIndex
    report: LoadReport
    fd: int
    """A descriptor of the file that was read (the caller closes it): stubs are read back through it."""
    size: int
    """Bytes read."""
    next_line: int
    """The number the next line written will have."""
    ends_with_newline: bool
    tail_start: int
    """File offset of a torn last line, or -1."""


def read_for_session(path: str) -> SessionFileRead:
    """Read ``path`` for a session opened in a kernel: message lines as stubs that keep their time and model.

    The runs of clean lines are read as :func:`scan` reads them; every other entry is kept
    whole, and the index knows where each stub's line is, to read it back when it is needed.
    Raises :class:`NeedsFullRead` for the files :func:`scan` leaves to a whole read (repeated
    ids, an old version, odd header fields), and :class:`SessionFileError` as ``Session.open`` does.
    """
    reader = _Reader(path, None, None, timed=True)
    with read_regular_fd(_file(path)) as fh:
        reader.read(fh)
        fd = os.dup(fh.fileno())
    try:
        _finish(reader)
    except BaseException:
        os.close(fd)
        raise
    next_line = reader.lineno if reader.ends_with_newline else reader.lineno - 1
    header = cast("RawEntry", reader.header)
    return SessionFileRead(header, reader.index, reader.report, fd, reader.size, next_line, reader.ends_with_newline, reader.tail_start)


def _file(path: str) -> str:
    if os.path.isdir(path):
        raise SessionFileError(path, "is a folder, not a session file")
    return path


def _finish(reader: _Reader) -> None:
    """The checks after a file was read: a header, no repeated ids; the structure report."""
    report, index = reader.report, reader.index
    if reader.header is None:
        if not reader.nonblank:
            raise SessionFileError(reader.path, "the file is empty: a session file starts with a header line")
        first = report.problems[0].line if report.problems else None
        raise SessionFileError(reader.path, "no line could be read as a JSON object: this is not a session file", first)
    if any(problem.kind == "duplicate_id" for problem in report.problems):
        raise NeedsFullRead("repeated ids")
    index.check_structure(report)
    report.problems.sort(key=lambda problem: problem.line)
    settle_gc()  # the stubs, made with the collector paused, go straight to its oldest generation


class _Reader:
    """The state of one :func:`scan`: the index and report it fills, where the next line starts."""

    def __init__(
        self, path: str, visit: Callable[[RawEntry], None] | None, keep: Callable[[RawEntry], Any] | None, *, timed: bool = False
    ) -> None:
        self.path = path
        self.visit = visit
        self.keep = keep
        self.light = visit is None and keep is None  # message lines need not be read whole
        # for a session opened in a kernel: stubs with their time and model, every other entry kept whole,
        # and each stub's place in the file given to the index (it reads them back itself)
        self.timed = timed
        self.report = LoadReport(path=path)
        self.index = EntryIndex(defer_positions=not timed)
        self.header: RawEntry | None = None
        self.nonblank = False  # a file of blank lines only is "empty", as for Session.open
        self.lineno = 1
        self.lines = LineTable()
        self.size = 0  # bytes read
        self.ends_with_newline = True
        self.tail_start = -1  # file offset of a torn last line

    def read(self, fh: BinaryIO) -> None:  # a buffered reader (os.fdopen 'rb'): it has readinto
        """Read the file a chunk at a time into one buffer; each chunk's whole lines are read, the rest carried over."""
        buf = bytearray(CHUNK)
        filled = 0
        base = 0  # file offset of buf[0]
        at_start = True
        while True:
            with memoryview(buf) as view:
                got = cast(Any, fh).readinto(view[filled:]) if filled < len(buf) else -1
            final = got == 0
            filled += max(got or 0, 0)
            if at_start and (filled >= 3 or final):
                if buf.startswith(b"\xef\xbb\xbf"):
                    del buf[:3]
                    buf.extend(b"\0\0\0")
                    filled, base = filled - 3, base + 3
                at_start = False
            cut = filled if final else buf.rfind(b"\n", 0, filled) + 1
            if final:
                self.size = base + filled
                self.ends_with_newline = not filled or buf[filled - 1] == _NEWLINE
            if cut <= 0:
                if final:
                    return
                if filled == len(buf):  # a line longer than the buffer: make room for it
                    buf.extend(bytes(len(buf)))
                continue
            with memoryview(buf) as view, paused_gc():
                self._chunk(buf, view, cut, base, final)
            if final:
                return
            rest = filled - cut
            buf[:rest] = buf[cut:filled]
            filled = rest
            base += cut

    def _chunk(self, buf: bytearray, view: memoryview, cut: int, base: int, final: bool) -> None:
        """The lines of ``buf[:cut]``: a run at a time after the header when light, else one by one."""
        start = 0
        if self.header is None or not self.light:
            start = self._lines(view[:cut].tobytes(), base, final, until_header=self.light)
        if start >= cut:
            return
        stop = cut if buf[cut - 1] == _NEWLINE else buf.rfind(b"\n", start, cut) + 1  # the last line of the file may have no newline
        if stop > start and not self._run(buf, view, start, stop, base):
            self._lines(view[start:stop].tobytes(), base + start, False)
        if stop < cut:
            self._lines(view[max(stop, start) : cut].tobytes(), base + max(stop, start), final)

    def _run(self, buf: bytearray, view: memoryview, start: int, stop: int, base: int) -> bool:
        """Read the lines of ``buf[start:stop]`` as one run (see :mod:`.bulk`); False when they must be read one by one."""
        from .bulk import decode_run, ids_of, line_ends, parent_ids, special_positions

        ends = line_ends(buf, start, stop)
        if ends is None:
            return False
        capped = depth_cap.available()  # msgspec refuses a line too deep by itself: no bracket to count
        if not capped and _deep_line(buf, start, ends):
            return False  # one line at a time: it reports the line nested too deeply
        # the whole buffer ASCII (what is past the chunk was read from the file too): no UTF-8 to check
        stubs = decode_run(view[start:stop], len(ends), buf.isascii(), timed=self.timed, capped=capped)
        if stubs is None:
            return False
        others = special_positions(stubs)
        ids, parents = list(map(ids_of, stubs)), parent_ids(stubs)
        first = self.lineno
        entries: list[RawEntry] = stubs  # a LineStub reads as the dict stub it stands for
        for j in others:  # another kind of entry: read whole, as one line at a time would
            if stubs[j].type == "session":
                return False  # a second header: one line at a time reports it
            at = ends[j - 1] + 1 if j else start
            obj = _whole_line(view, buf, at, ends[j], first + j, self.report, torn=False)
            if obj is None:  # JSON to msgspec, not to orjson nor the standard library: one line at a time
                return False
            entries[j] = obj if self.timed else self._stub(obj)
        if self.timed:
            begins = array("q", (start,))
            begins.extend(map(operator.add, ends[:-1], itertools.repeat(1)))
            lengths = array("q", map(operator.sub, ends, begins))
            offsets = array("q", map(operator.add, begins, itertools.repeat(base)))
            for j in others:
                offsets[j] = -1  # read whole: nothing to read back
            self.index.extend_run(entries, ids, parents, others, first, self.report, offsets=offsets, lengths=lengths)
        else:
            self.lines.add_run(len(self.index.order), base, start, ends)
            self.index.extend_run(entries, ids, parents, others, first, self.report)
        self.lineno = first + len(stubs)
        return True

    def _lines(self, data: bytes, base: int, final: bool, *, until_header: bool = False) -> int:
        """Read the lines of ``data`` (whole lines at file offset ``base``) one by one; returns where it stopped.

        ``final``: ``data`` ends the file (an unreadable last line without a newline is torn).
        ``until_header``: stop after the header line.
        """
        if not self.nonblank and data.strip():
            self.nonblank = True
        light = self.light
        if light:
            from .stubs import message_stub  # msgspec: imported only by the commands that use it
        report = self.report
        stubs: list[RawEntry] = []
        lines: list[int] = []
        starts: list[int] = []
        lengths: list[int] = []
        view = memoryview(data)
        cut = len(data)
        ascii_only = light and data.isascii()
        lineno = self.lineno
        start = 0
        while start < cut:
            end = data.find(b"\n", start, cut)
            if end < 0:
                end = cut
            if end > start:
                if end - start > DEEP_LINE_BYTES and too_deep(data, start, end):
                    report_too_deep(report, lineno, data[start : min(end, start + 60)])
                    lineno += 1
                    start = end + 1
                    continue
                stub = message_stub(view[start:end], ascii_only) if light and self.header is not None else None
                whole = stub is None
                if whole:
                    torn = final and end == cut and not data.endswith(b"\n")
                    stub = _whole_line(view, data, start, end, lineno, report, torn=torn)
                    if stub is None:
                        if torn and report.problems and report.problems[-1].kind == "torn_tail":
                            self.tail_start = base + start
                    elif self.header is None:
                        self.header, stub = stub, None
                        _check_header(self.path, self.header, lineno)
                        if until_header:
                            lineno += 1
                            start = end + 1
                            break
                    elif not self.timed:
                        stub = self._stub(stub)
                if stub is not None:
                    stubs.append(stub)
                    lines.append(lineno)
                    starts.append(-1 if whole and self.timed else base + start)
                    lengths.append(end - start)
            lineno += 1
            start = end + 1
        self.lineno = lineno
        self._index(stubs, lines, starts, lengths)
        return min(start, cut)

    def _stub(self, obj: RawEntry) -> RawEntry:
        """The stub of an entry read whole, after showing it to ``visit``."""
        if self.visit is not None:
            self.visit(obj)
        stub = _stub(obj)
        if self.keep is not None:
            stub["_keep"] = self.keep(obj)
        return stub

    def _index(self, stubs: list[RawEntry], lines: list[int], starts: list[int], lengths: list[int]) -> None:
        index = self.index
        before = len(index.order)
        if self.timed:
            index.extend(stubs, lines, self.report, offsets=starts, lengths=lengths)
        else:
            index.extend(stubs, lines, self.report)
        if len(index.order) - before != len(stubs):
            # a stub was not indexed (a second header, no id): keep offsets aligned with the index
            raise NeedsFullRead("lines without an id or a repeated header")
        if not self.timed:
            self.lines.add_lines(before, starts, lengths)


_NEWLINE = ord("\n")


class LineTable:
    """Where the line of each indexed entry is in the file, kept per run of lines rather than per line."""

    def __init__(self) -> None:
        self._firsts: list[int] = []  # index position of each segment's first entry
        self._segments: list[tuple[int, int, int, array, array | None]] = []

    def add_lines(self, first: int, starts: list[int], lengths: list[int]) -> None:
        """Entries from index position ``first`` on, at these file offsets, with these lengths."""
        if starts:
            self._firsts.append(first)
            self._segments.append((first, 0, 0, array("q", starts), array("q", lengths)))

    def add_run(self, first: int, base: int, start: int, ends: array) -> None:
        """Entries from index position ``first`` on, on consecutive lines from ``base + start`` ending at ``base + ends[k]``."""
        if ends:
            self._firsts.append(first)
            self._segments.append((first, base, start, ends, None))

    def line(self, position: int) -> tuple[int, int]:
        """The file offset and length of the line of the entry at index ``position``."""
        first, base, begin, column, lengths = self._segments[bisect.bisect_right(self._firsts, position) - 1]
        k = position - first
        if lengths is not None:
            return column[k], lengths[k]
        start = column[k - 1] + 1 if k else begin
        return base + start, column[k] - start


def _deep_line(buf: bytearray, start: int, ends: array) -> bool:
    """True when a line of the run (ending at ``ends``) is nested too deeply (only long lines can be)."""
    begin = start
    for end in ends:
        if end - begin > DEEP_LINE_BYTES and too_deep(buf, begin, end):
            return True
        begin = end + 1
    return False


def _whole_line(
    view: memoryview, data: bytes | bytearray, start: int, end: int, lineno: int, report: LoadReport, *, torn: bool
) -> RawEntry | None:
    """The object on a line read whole, or ``None`` for a blank, unreadable or torn line, or one that is not an object (reported)."""
    if end - start > DEEP_LINE_BYTES and too_deep(data, start, end):
        report_too_deep(report, lineno, data[start : min(end, start + 60)])
        return None
    try:
        obj = orjson.loads(view[start:end])
    except orjson.JSONDecodeError:
        obj = slow_line(bytes(data[start:end]), lineno, report, torn=torn)  # a damaged line: the copy is no cost
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


__all__ = ["CycleError", "NeedsFullRead", "ScannedSession", "SessionFileRead", "read_for_session", "scan"]
