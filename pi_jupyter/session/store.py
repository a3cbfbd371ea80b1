"""``Session``: a pi-compatible, append-only JSONL session tree that loses nothing.

Reading never drops or rewrites what it cannot parse: problems go to :attr:`Session.load_report`
with line numbers, and the lines stay in the file byte for byte. Writing appends one line per
entry under an advisory lock, starts on a fresh line after a torn tail, and replaces the file
only for a migration, atomically. The leaf is persisted the way pi reads it: pi resumes at the
last line, so a checkout appends a small ``custom`` marker whose parent is the target.

Appending, step by step: take an exclusive ``flock`` on the file; read and index whatever
other writers appended since we last looked (they do not move our leaf); choose the new id
(unique among everything read, so two writers never collide); write the line with one
``write`` call on an ``O_APPEND`` descriptor (preceded by a newline if the file ended in a
torn line); fsync as the durability setting says; release the lock. Two pi-jupyter
processes on one file are therefore serialized, never interleave half lines, and each keeps
appending below its own leaf, so each one's entries form its own branch.

When pi and pi-jupyter write one file at once: pi takes no lock, but each of its appends is
also a single ``write`` of a whole line on an ``O_APPEND`` descriptor, so lines do not mix.
We read pi's lines before each of our appends; pi does not read ours until it reopens the
file, and it keeps appending below its own leaf, so the two programs grow separate
branches, both readable afterwards by either. pi's ids are checked only against what pi has
read (a collision with one of ours is unlikely: 8 random hex digits; the later line would
win, as in pi). If pi appends after a torn line it glues its line to the fragment; both are
then one malformed line, reported here and skipped by pi. pi rewrites a whole file only to
migrate an old version or to replace a file without a valid header; if the file shrinks or
is replaced while we have it open, our next append fails with :class:`SessionChangedError`
instead of writing into a file that changed under us.

This module holds :class:`Session` itself and its constructors (``open``, ``create``,
``in_memory``, ``continue_recent``, ``fork_from``, ``fork``); the rest is split by concern into
its bases: reading and indexing (:mod:`.reading`), appending and locking (:mod:`.appending`),
checkout and branch summaries (:mod:`.moves`). ``graph()`` and ``compare()`` reach the views
through :mod:`.viewers`, so the store imports nothing below it.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..messages import now_iso
from .appending import fresh_id
from .edit_follow import edits_to_carry, latest_edits
from .entries import CURRENT_VERSION
from .files import create_exclusive, open_regular
from .index import EntryIndex, RawEntry
from .jsonl import dumps, loads_line, parse_lines, paused_gc, settle_gc, strip_bom
from .lazy import FileLines
from .listing import SessionInfo
from .lock import exclusive, fsync_dir, write_atomic
from .migrate import migrate, needs_migration
from .moves import SessionMoves
from .paths import default_session_dir, new_session_id, session_file_name
from .pi1_checks import check_pi1_entries
from .reading import CURRENT_LEAF, Durability, typed_header
from .report import CycleError, LoadReport, SessionChangedError, SessionError, SessionFileError
from .stubs import message_stub

__all__ = ["Durability", "Session"]

_MIGRATION_ATTEMPTS = 3  # reads of a file that another process changes while we migrate it
_SETTLE_GC_ENTRIES = 5000  # files at least this long get their objects moved to the oldest GC generation


class Session(SessionMoves):
    """A session tree stored in a JSONL file in pi's version-3 format (or only in memory).

    Create one with :meth:`open`, :meth:`create`, :meth:`in_memory`, :meth:`continue_recent`
    or :meth:`fork_from`. Every ``append_*`` method adds a child of the current leaf and moves
    the leaf to it, as pi does, and returns the new entry's id.

    Files are written at once: :meth:`create` writes the header immediately, and every
    append goes to disk before the method returns (never a second header), so a notebook
    user keeps the prompt even if the kernel dies before the first reply. pi instead keeps a
    new session in memory until the first assistant message. When pi continues a file of
    ours that has no assistant message yet, its deferred flush appends the file's existing
    lines a second time (header included) before its own; such a file still opens here: the
    repeated header and ids are reported as warnings, the later copy of each id stands for
    it (as in pi), and the context is the same as pi's.

    Durability (``durability=``): ``"turn"`` (the default) fsyncs after each assistant
    message, compaction and branch summary, so a crash loses at most the turn in progress;
    ``"entry"`` fsyncs every entry; ``"never"`` leaves it to the operating system. Closing
    a session (or :meth:`sync`) fsyncs what is pending unless the setting is ``"never"``.
    """

    def __init__(
        self,
        header: dict[str, Any],
        index: EntryIndex,
        *,
        path: str | None,
        report: LoadReport,
        durability: Durability = "turn",
        readonly: bool = False,
        end: int = 0,
        next_line: int = 1,
        needs_newline: bool = False,
    ) -> None:
        # Use the class methods; this constructor is the store's internal assembly point.
        if durability not in ("entry", "turn", "never"):
            raise ValueError(f"durability must be 'entry', 'turn' or 'never', not {durability!r}")
        self._header = header
        self._index = index
        self._path = path
        self._report = report
        self._durability: Durability = durability
        self._readonly = readonly
        self._end = end
        self._next_line = next_line
        self._needs_newline = needs_newline
        self._tail_start = -1  # byte offset of an incomplete last line, re-read whole on catch-up
        self._fd: int | None = None
        self._lock = threading.RLock()
        self._listeners: list[Callable[[RawEntry], None]] = []
        self._dirty = False
        self._closed = False
        self._leaf_saved = True  # False after checkout(persist=False) until the next append
        self.branch_summarizer: Callable[..., Any] | None = None
        """Set by the agent layer so that ``checkout(..., summarize=True)`` can ask a model."""

    # ---------------------------------------------------------------- constructors

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        create: bool = False,
        readonly: bool = False,
        durability: Durability = "turn",
        cwd: str | None = None,
    ) -> Session:
        """Open the session file at ``path``.

        Problems that do not stop the file from being used (malformed lines, a torn last
        line, orphans, duplicate ids) are listed in :attr:`load_report`, and the lines stay
        in the file. A file with no valid header, an empty file or one that is not JSON
        raises :class:`SessionFileError` and is left untouched. A version 1 or 2 file is
        migrated to version 3 and written back atomically (not when ``readonly``).
        ``create=True`` starts a new session at ``path`` when no file is there.

        Reading is fast (about 0.26 s of CPU for 100k entries, 150 MB, on a short branch): the
        file is read a megabyte at a time, each run of clean lines decoded at once (see
        :func:`~.scan.read_for_session`); message lines are kept as stubs (their ids, parents,
        times, roles and models; every line is still checked to be JSON and UTF-8) and read back
        whole from the file when they are needed, the current branch first. A file with repeated
        ids or of an old version is read one line at a time, as is a run with a damaged line.
        The garbage collector is paused while the file is parsed, and the new objects of a large
        file are then moved to its oldest generation, so the next few collections do not walk them all again.
        """
        p = os.path.abspath(os.fspath(path))
        if not os.path.exists(p):
            if create:
                return cls.create(path=p, cwd=cwd, durability=durability)
            raise FileNotFoundError(f"no session file at {p} (use create=True to start one there)")
        if os.path.isdir(p):
            raise SessionFileError(p, "is a folder, not a session file")
        session = cls._open_by_runs(p, readonly=readonly, durability=durability)
        if session is not None:
            return session
        for attempt in range(_MIGRATION_ATTEMPTS):
            fd, data = open_regular(p)
            try:
                with paused_gc():
                    session = cls._from_bytes(p, data, readonly=readonly, durability=durability, fd=fd)
                    del data
                    if len(session._index.order) >= _SETTLE_GC_ENTRIES:
                        settle_gc()  # before the collector runs again, or its next young collection walks them all
                return session
            except SessionChangedError:
                # another process wrote the file while we migrated it (probably migrating it too): read it again
                if attempt == _MIGRATION_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    @classmethod
    def _open_by_runs(cls, path: str, *, readonly: bool, durability: Durability) -> Session | None:
        """The usual file (the current version, no repeated id) read a run of lines at a time (see :mod:`.scan`).

        ``None`` for the others, which are read whole as before. The message lines stay on
        disk as stubs and the current branch is read back at once, as a whole read leaves them.
        """
        from .scan import NeedsFullRead, read_for_session

        try:
            with paused_gc():
                read = read_for_session(path)
        except NeedsFullRead:
            return None
        try:
            index, report = read.entry_index, read.report
            check_pi1_entries(index, report)
            report.problems.sort(key=lambda problem: problem.line)
            session = cls(
                read.header,
                index,
                path=path,
                report=report,
                durability=durability,
                readonly=readonly,
                end=read.size,
                next_line=read.next_line,
                needs_newline=not read.ends_with_newline,
            )
            session._tail_start = read.tail_start
        except BaseException:
            os.close(read.fd)
            raise
        _read_back_through(index, FileLines(path, read.fd, read.size))
        return session

    @classmethod
    def _from_bytes(cls, path: str, data: bytes, *, readonly: bool, durability: Durability, fd: int | None = None) -> Session:
        """The session in ``data``; with ``fd`` (the file ``data`` was read from; it is taken over) message lines are stubs."""
        try:
            session = cls._parse(path, data, readonly=readonly, lazy=fd is not None, durability=durability)
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        if fd is not None:
            _read_back_through(session._index, FileLines(path, fd, len(data)), data)
        return session

    @classmethod
    def _parse(cls, path: str, data: bytes, *, readonly: bool, lazy: bool, durability: Durability) -> Session:
        report = LoadReport(path=path)
        body = strip_bom(data)
        offset = len(data) - len(body)
        if not body or body.isspace():
            raise SessionFileError(path, "the file is empty: a session file starts with a header line")
        lazy = lazy and _current_header(body)
        chunk = parse_lines(body, report, stub=message_stub if lazy else None)
        if not chunk.objs:
            first = report.problems[0] if report.problems else None
            raise SessionFileError(
                path, "no line could be read as a JSON object: this is not a session file", first.line if first else None
            )
        header = chunk.objs[0]
        if header.get("type") != "session" or not isinstance(header.get("id"), str):
            kind = header.get("type")
            what = f"a {kind!r} entry" if isinstance(kind, str) else "an object without a 'type'"
            raise SessionFileError(
                path,
                f"the first JSON line is {what}, not a session header (type 'session' with a string id)",
                chunk.lines[0],
            )
        entries = chunk.objs[1:]
        lines = chunk.lines[1:]
        migrated = False
        if needs_migration(header):
            old = header.get("version", 1)
            migrated = migrate(header, entries)
            report.add(0, "migrated", f"migrated from version {old} to {CURRENT_VERSION}", "info")
        bad_fields = typed_header(header)[1]
        if bad_fields:
            shown = ", ".join(f"{key} = {header.get(key)!r}" for key in bad_fields)
            report.add(chunk.lines[0], "odd_value", f"header field(s) of an unexpected type ({shown}); read as unset", "warning")
        all_entries, all_lines = entries, lines  # repeated headers are reported and skipped by the index
        index = EntryIndex()
        if chunk.offsets is not None and chunk.lengths is not None:
            offsets = chunk.offsets[1:]
            if offset:
                offsets = type(offsets)("q", (o + offset if o >= 0 else o for o in offsets))
            index.extend(entries, lines, report, offsets=offsets, lengths=chunk.lengths[1:])
        else:
            index.extend(entries, lines, report)
        index.check_structure(report)
        check_pi1_entries(index, report)
        report.problems.sort(key=lambda problem: problem.line)  # stable: file-wide notes first, then by line
        session = cls(
            header,
            index,
            path=path,
            report=report,
            durability=durability,
            readonly=readonly,
            end=len(data),
            next_line=chunk.next_line,
            needs_newline=not chunk.ends_with_newline,
        )
        if chunk.tail_start >= 0:
            session._tail_start = offset + chunk.tail_start
        if migrated and not readonly:
            session._rewrite_migrated(data, offset, header, chunk.lines[0], all_entries, all_lines)
        return session

    def _rewrite_migrated(
        self, data: bytes, offset: int, header: RawEntry, header_line: int, entries: list[RawEntry], lines: list[int]
    ) -> None:
        """Write the migrated file atomically, keeping every unreadable line where it was."""
        assert self._path is not None
        by_line = dict(zip(lines, entries, strict=True))
        by_line[header_line] = header
        out: list[bytes] = []
        pieces = data[offset:].split(b"\n")
        trailing = data.endswith(b"\n")
        if trailing:
            pieces.pop()
        for lineno, raw in enumerate(pieces, start=1):
            entry = by_line.get(lineno)
            out.append(dumps(entry) if entry is not None else raw)
        blob = data[:offset] + b"\n".join(out) + (b"\n" if trailing else b"")
        with self._lock:
            fd = self._open_fd()
            try:
                with exclusive(fd, self._path):
                    stat = os.fstat(fd)
                    try:
                        current = os.stat(self._path).st_ino
                    except FileNotFoundError:
                        current = None
                    # another writer may have migrated it first (a new file) and appended to it since
                    if stat.st_size != len(data) or current != stat.st_ino:
                        raise SessionChangedError(f"{self._path}: changed while it was being migrated; not rewritten")
                    write_atomic(self._path, blob)
            finally:
                self._close_fd()
        self._end = len(blob)
        if self._tail_start >= 0:
            self._tail_start = len(blob) - (len(data) - self._tail_start)

    @classmethod
    def create(
        cls,
        dir: str | os.PathLike[str] | None = None,
        *,
        cwd: str | None = None,
        path: str | os.PathLike[str] | None = None,
        parent_session: str | None = None,
        durability: Durability = "turn",
        session_id: str | None = None,
    ) -> Session:
        """Start a new session file and write its header at once.

        The file goes to ``path`` if given, else into ``dir``, else into pi's per-project
        folder for ``cwd`` (``~/.pi/agent/sessions/--<cwd>--/``, honouring
        ``PI_CODING_AGENT_DIR``), named ``<timestamp>_<uuid>.jsonl`` as pi names it.
        """
        cwd = os.path.abspath(cwd or os.getcwd())
        sid = session_id or new_session_id()
        ts = now_iso()
        if path is None:
            folder = Path(dir) if dir is not None else default_session_dir(cwd)
            path = folder / session_file_name(ts, sid)
        p = os.path.abspath(os.fspath(path))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        header = _header(sid, ts, cwd, parent_session)
        line = dumps(header) + b"\n"
        try:
            create_exclusive(p, line, fsync=durability != "never")
        except FileExistsError:
            raise SessionFileError(p, "a file already exists there; open it with Session.open") from None
        if durability != "never":
            fsync_dir(p)
        return cls(header, EntryIndex(), path=p, report=LoadReport(path=p), durability=durability, end=len(line), next_line=2)

    @classmethod
    def in_memory(cls, cwd: str | None = None) -> Session:
        """A session that is never written to disk (tests, throwaway experiments)."""
        header = _header(new_session_id(), now_iso(), os.path.abspath(cwd or os.getcwd()), None)
        return cls(header, EntryIndex(), path=None, report=LoadReport(), durability="never")

    @classmethod
    def continue_recent(
        cls, dir: str | os.PathLike[str] | None = None, *, cwd: str | None = None, durability: Durability = "turn"
    ) -> Session:
        """Open the most recently active session in ``dir`` (default: pi's folder for ``cwd``), or start one."""
        from .listing import list_sessions

        folder = Path(dir) if dir is not None else default_session_dir(cwd)
        infos = list_sessions(folder)
        if infos:
            return cls.open(infos[0].path, durability=durability)
        return cls.create(folder, cwd=cwd, durability=durability)

    @staticmethod
    def list(dir: str | os.PathLike[str] | None = None, *, cwd: str | None = None) -> list[SessionInfo]:
        """Info on every session in ``dir`` (default: pi's folder for ``cwd``), most recent first."""
        from .listing import list_sessions

        return list_sessions(Path(dir) if dir is not None else default_session_dir(cwd))

    @staticmethod
    def list_all() -> builtins.list[SessionInfo]:  # below Session.list, "list" is that method
        """Info on every session of every project under pi's sessions folder, most recent first."""
        from .listing import list_all_sessions

        return list_all_sessions()

    @classmethod
    def fork_from(
        cls,
        source: str | os.PathLike[str],
        *,
        cwd: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        durability: Durability = "turn",
    ) -> Session:
        """Copy a whole session file (for example from another project) into a new session.

        The copy is migrated first, written atomically, and its header names ``source`` as
        ``parentSession``. The source is only read.
        """
        src = cls.open(source, readonly=True)
        cwd = os.path.abspath(cwd or os.getcwd())
        sid = new_session_id()
        ts = now_iso()
        folder = Path(dir) if dir is not None else default_session_dir(cwd)
        path = os.path.abspath(folder / session_file_name(ts, sid))
        header = _header(sid, ts, cwd, os.fspath(source))
        return cls._write_new(path, header, src.raw_entries(), durability)

    @classmethod
    def _write_new(cls, path: str, header: RawEntry, entries: builtins.list[RawEntry], durability: Durability) -> Session:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            raise SessionFileError(path, "a file already exists there")
        blob = b"".join(dumps(e) + b"\n" for e in [header, *entries])
        write_atomic(path, blob)
        return cls.open(path, durability=durability)

    # ---------------------------------------------------------------- forks

    def fork(self, entry_id: str | None = CURRENT_LEAF, *, dir: str | os.PathLike[str] | None = None, path: str | None = None) -> Session:
        """A new session holding the branch from the root to ``entry_id`` (default: the current leaf).

        As pi's ``createBranchedSession``: label entries on the path are dropped and the labels
        of entries on it are re-created at its end; the header names this file as
        ``parentSession``. Unlike pi, an entry whose parent was a dropped label is re-attached
        to the entry before it (pi leaves it an orphan, so the fork's context would start there),
        and a compaction that keeps history from a dropped label keeps it from the next entry.
        The new file is written at once (atomically) into ``dir`` (default: this session's
        folder). An in-memory session forks into an in-memory session.
        """
        leaf = self._index.leaf if entry_id is CURRENT_LEAF else (self.resolve(entry_id) if entry_id is not None else None)
        path_entries = self._index.path(leaf)
        if not path_entries:
            # only the point before the first entry has an empty branch (an unknown id fails in resolve)
            raise SessionError("nothing to fork: the branch is empty (the leaf is before the first entry); give an entry id")
        kept: list[RawEntry] = []
        previous: str | None = None
        dropped: list[str] = []  # labels since the last kept entry
        moved: dict[str, str] = {}  # a dropped label -> the next entry kept after it
        for e in path_entries:
            if e.get("type") == "label":
                dropped.append(e["id"])
                continue
            moved.update((label_id, e["id"]) for label_id in dropped)
            dropped.clear()
            if e.get("parentId") != previous and e is not path_entries[0]:
                # pi copies the path verbatim, so an entry whose parent was a dropped label
                # becomes an orphan and the fork's context starts there; re-attach it instead
                e = {**e, "parentId": previous}
            if e.get("type") == "compaction" and e.get("firstKeptEntryId") in moved:
                # likewise a compaction that keeps history from a label on: keep it from the next entry
                e = {**e, "firstKeptEntryId": moved[e["firstKeptEntryId"]]}
            kept.append(e)
            previous = e["id"]
        ids = {e["id"] for e in kept}
        parent = kept[-1]["id"] if kept else None
        labels: list[RawEntry] = []
        for target, (text, ts) in self._index.labels.items():
            if target in ids:
                lid = fresh_id(ids)
                ids.add(lid)
                labels.append({"type": "label", "id": lid, "parentId": parent, "timestamp": ts, "targetId": target, "label": text})
                parent = lid
        # an entry forgotten on another branch stays forgotten in the fork (see edit_follow)
        for fields in edits_to_carry(latest_edits(self._index.order, self._index.kinds), kept):
            eid = fresh_id(ids)
            ids.add(eid)
            labels.append({"type": "context_edit", "id": eid, "parentId": parent, "timestamp": now_iso(), **fields})
            parent = eid
        sid = new_session_id()
        stamp = now_iso()
        header = _header(sid, stamp, self.cwd or os.getcwd(), self._path)
        if self._path is None and path is None and dir is None:
            index = EntryIndex()
            for e in [*kept, *labels]:
                index.add(e)
            return Session(header, index, path=None, report=LoadReport(), durability="never")
        folder = Path(dir) if dir is not None else Path(self.session_dir or default_session_dir(self.cwd))
        target_path = os.path.abspath(path or folder / session_file_name(stamp, sid))
        return Session._write_new(target_path, header, [*kept, *labels], self._durability)


def _read_back_through(index: EntryIndex, source: FileLines, data: bytes | None = None) -> None:
    """Stubs are read back from ``source`` (which owns the file's descriptor), the current branch at once.

    ``data``: the file's bytes at hand, to read the branch from. Without stubs the source is closed.
    """
    index.attach(source)  # (closed at once when there is no stub)
    if not index.stubs:
        return
    try:  # the current branch is what is asked for first
        index.materialize(index.path_positions(index.leaf), data)
    except CycleError:
        pass  # in the load report; walking it raises when it is asked for


def _current_header(body: bytes) -> bool:
    """True when the first line is a header of the current version (its message lines can be read as stubs)."""
    end = body.find(b"\n")
    header = loads_line(body[: end if end >= 0 else len(body)])[0]
    return type(header) is dict and header.get("type") == "session" and not needs_migration(header)


def _header(sid: str, ts: str, cwd: str, parent: str | None) -> RawEntry:
    header: RawEntry = {"type": "session", "version": CURRENT_VERSION, "id": sid, "timestamp": ts, "cwd": cwd}
    if parent:
        header["parentSession"] = parent
    return header
