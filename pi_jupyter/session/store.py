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
"""

from __future__ import annotations

import os
import secrets
import threading
import uuid
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ..messages import WireModel, as_message, now_iso
from .context import SessionContext
from .context_edits import context_edit_entry, system_snapshot, usage_entry
from .entries import CURRENT_VERSION, Entry, SessionHeader, entry_from_dict
from .index import CHECKOUT_TYPE, EntryIndex, RawEntry, TreeNode, build_context
from .jsonl import dumps, parse_lines, paused_gc, settle_gc, strip_bom
from .listing import SessionInfo
from .lock import exclusive, fsync_dir, write_atomic
from .migrate import migrate, needs_migration
from .paths import default_session_dir, new_session_id, session_file_name
from .pi1_checks import check_pi1_entries
from .report import EntryNotFoundError, LoadReport, SessionChangedError, SessionError, SessionFileError

Durability = Literal["entry", "turn", "never"]
"""When appends are forced to disk: after every entry, after each assistant message, or never."""

_CURRENT: Any = object()
_MIGRATION_ATTEMPTS = 3  # reads of a file that another process changes while we migrate it
_SETTLE_GC_ENTRIES = 5000  # files at least this long get their objects moved to the oldest GC generation


class Session:
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

        Reading is fast (about 1 s for 100k entries, 150 MB): the garbage collector is paused
        while the file is parsed, and the new objects of a large file are then moved to its
        oldest generation, so the next few collections do not walk them all again.
        """
        p = os.path.abspath(os.fspath(path))
        if not os.path.exists(p):
            if create:
                return cls.create(path=p, cwd=cwd, durability=durability)
            raise FileNotFoundError(f"no session file at {p} (use create=True to start one there)")
        if os.path.isdir(p):
            raise SessionFileError(p, "is a folder, not a session file")
        for attempt in range(_MIGRATION_ATTEMPTS):
            with open(p, "rb") as fh:
                data = fh.read()
            try:
                with paused_gc():
                    session = cls._from_bytes(p, data, readonly=readonly, durability=durability)
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
    def _from_bytes(cls, path: str, data: bytes, *, readonly: bool, durability: Durability) -> Session:
        report = LoadReport(path=path)
        body = strip_bom(data)
        offset = len(data) - len(body)
        if not body or body.isspace():
            raise SessionFileError(path, "the file is empty: a session file starts with a header line")
        chunk = parse_lines(body, report)
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
        bad_fields = _typed_header(header)[1]
        if bad_fields:
            shown = ", ".join(f"{key} = {header.get(key)!r}" for key in bad_fields)
            report.add(chunk.lines[0], "odd_value", f"header field(s) of an unexpected type ({shown}); read as unset", "warning")
        all_entries, all_lines = entries, lines  # repeated headers are reported and skipped by the index
        index = EntryIndex()
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
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise SessionFileError(p, "a file already exists there; open it with Session.open") from None
        try:
            os.write(fd, line)
            if durability != "never":
                os.fsync(fd)
        finally:
            os.close(fd)
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
    def list_all() -> list[SessionInfo]:
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
        return cls._write_new(path, header, list(src._index.order), durability)

    @classmethod
    def _write_new(cls, path: str, header: RawEntry, entries: list[RawEntry], durability: Durability) -> Session:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            raise SessionFileError(path, "a file already exists there")
        blob = b"".join(dumps(e) + b"\n" for e in [header, *entries])
        write_atomic(path, blob)
        return cls.open(path, durability=durability)

    # ---------------------------------------------------------------- properties

    @property
    def path(self) -> str | None:
        """The session file, or ``None`` for an in-memory session."""
        return self._path

    @property
    def id(self) -> str:
        """The session id (a UUID, from the header)."""
        return self._header["id"]

    @property
    def header(self) -> SessionHeader:
        """The header line as a model (a field of the wrong type, which pi ignores, reads as unset)."""
        return _typed_header(self._header)[0]

    @property
    def raw_header(self) -> RawEntry:
        """The header line as read (after a migration, as migrated); do not modify it."""
        return self._header

    @property
    def cwd(self) -> str:
        """The working directory recorded in the header."""
        cwd = self._header.get("cwd")
        return cwd if isinstance(cwd, str) else ""

    @property
    def session_dir(self) -> str | None:
        """The folder of the session file; forks go there."""
        return os.path.dirname(self._path) if self._path else None

    @property
    def leaf_id(self) -> str | None:
        """The current leaf: new entries become its children. ``None``: before the first entry."""
        return self._index.leaf

    @property
    def name(self) -> str | None:
        """The session's name (the last ``session_info`` entry in the file), if any."""
        return self._index.name

    @property
    def load_report(self) -> LoadReport:
        """Every problem found while reading the file, with line numbers."""
        return self._report

    @property
    def durability(self) -> Durability:
        """When appends are fsynced: ``"entry"``, ``"turn"`` (default) or ``"never"``."""
        return self._durability

    @property
    def readonly(self) -> bool:
        """True when opened with ``readonly=True``: nothing is ever written."""
        return self._readonly

    @property
    def labels(self) -> dict[str, str]:
        """Entry id -> label, for every labelled entry in the file."""
        return {k: v[0] for k, v in self._index.labels.items()}

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._index.by_id

    def __repr__(self) -> str:
        where = self._path or "in memory"
        name = f" {self.name!r}" if self.name else ""
        return f"<Session{name} {where}: {len(self)} entries, leaf {self.leaf_id}>"

    # ---------------------------------------------------------------- reading

    def entry(self, ref: str) -> Entry:
        """The entry with id (or unique id prefix, or label) ``ref``, as a model."""
        return entry_from_dict(self._index.by_id[self.resolve(ref)])

    def raw_entry(self, ref: str) -> RawEntry:
        """The entry dict exactly as read from the file (do not modify it)."""
        return self._index.by_id[self.resolve(ref)]

    def entries(self) -> list[Entry]:
        """Every entry in file order, as models."""
        return [entry_from_dict(e) for e in self._index.order if self._index.by_id.get(e["id"]) is e]

    def raw_entries(self) -> list[RawEntry]:
        """Every entry dict in file order (the fast path for large sessions)."""
        return list(self._index.order)

    def info(self) -> SessionInfo:
        """This session's listing info (pi's ``SessionInfo`` fields: name, counts, first message, times)."""
        from .listing import info_from_entries

        mtime = None
        if self._path is not None:
            try:
                mtime = os.stat(self._path).st_mtime
            except OSError:
                mtime = None
        order = self._index.order
        by_id = self._index.by_id
        entries = (e for e in order if by_id.get(e["id"]) is e)
        problems = len([p for p in self._report.problems if p.severity != "info"])
        return info_from_entries(self._path or "", self._header, entries, problems=problems, mtime=mtime)

    def label_of(self, entry_id: str) -> str | None:
        """The label of an entry, if it has one."""
        label = self._index.labels.get(entry_id)
        return label[0] if label else None

    def resolve(self, ref: str) -> str:
        """Turn an entry id, a unique id prefix (4+ characters) or a label into an entry id."""
        if not isinstance(ref, str) or not ref:
            raise EntryNotFoundError(str(ref), self._path)
        by_id = self._index.by_id
        if ref in by_id:
            return ref
        labelled = [eid for eid, (label, _) in self._index.labels.items() if label == ref]
        if len(labelled) == 1:
            return labelled[0]
        if len(labelled) > 1:
            raise SessionError(f"label {ref!r} is on several entries: {', '.join(labelled)}; use an id")
        if len(ref) >= 4:
            matches = [eid for eid in by_id if eid.startswith(ref)]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise SessionError(f"id prefix {ref!r} matches {len(matches)} entries ({', '.join(matches[:5])}); give more characters")
        raise EntryNotFoundError(ref, self._path)

    def branch(self, leaf: str | None = _CURRENT) -> list[Entry]:
        """The entries from the root to ``leaf`` (default: the current leaf), root first, as models."""
        return [entry_from_dict(e) for e in self.raw_branch(leaf)]

    def raw_branch(self, leaf: str | None = _CURRENT) -> list[RawEntry]:
        """Like :meth:`branch`, but the entry dicts (O(depth), no validation)."""
        leaf_id = self._index.leaf if leaf is _CURRENT else (self.resolve(leaf) if leaf is not None else None)
        return self._index.path(leaf_id)

    def branch_ids(self, leaf: str | None = _CURRENT) -> list[str]:
        """The ids on the branch ending at ``leaf``, root first."""
        return [e["id"] for e in self.raw_branch(leaf)]

    def children(self, entry_id: str | None) -> list[Entry]:
        """The direct children of an entry (``None``: the roots), in file order. O(children)."""
        key = self.resolve(entry_id) if entry_id is not None else None
        return [entry_from_dict(self._index.by_id[c]) for c in self._index.child_ids(key)]

    def child_ids(self, entry_id: str | None) -> list[str]:
        """Ids of the direct children of an entry (``None``: the roots), in file order."""
        key = self.resolve(entry_id) if entry_id is not None else None
        return self._index.child_ids(key)

    def tree(self) -> list[TreeNode]:
        """The whole tree in pi's order: roots in file order, children oldest first, labels resolved."""
        return self._index.tree()

    def graph(self, **opts: Any) -> Any:
        """The session tree as a ``graphviz.Digraph`` (a ``SessionGraph``) that displays itself.

        One node per turn (``full=True``: per entry); long linear runs are folded into one
        node saying how many turns it holds, and at most ``max_nodes`` (250) are drawn. The
        current leaf and its path, branch points, labels, compactions, branch summaries,
        notebook cells, errors, aborts and model changes are marked; tooltips preview each
        node's text with its tokens and cost. Displayed with a system ``dot``, else
        ``graphviz-pure``, else as a text tree. Options: ``full``, ``fold``, ``fold_min``,
        ``keep_recent``, ``max_nodes``, ``expand``, ``rankdir``, ``preview_chars``,
        ``backend``, ``header`` (see :class:`pi_jupyter.views.GraphOptions`). ``.model`` holds the nodes
        by key, ``.text()`` the text tree, ``.svg()`` the SVG.
        """
        from ..views import build_graph

        return build_graph(self, **opts)

    def compare(self, *refs: str, **opts: Any) -> Any:
        """Compare branches: ``compare("baseline", "variant")`` (ids, id prefixes, labels or cell ids).

        Returns a :class:`pi_jupyter.views.Comparison`: the common ancestor, and per branch
        the turns, tool calls, tokens, cost, duration, stop reasons and final answer. It
        displays as an HTML table with a figure of tokens and cost per turn; ``to_frame()``
        gives a pandas DataFrame, ``diff()`` a side-by-side diff of the final answers,
        ``figure()`` the SVG figure. One ref is compared with the current leaf; with none,
        the most recent tips of the tree are compared.
        """
        from ..views import compare

        return compare(self, *refs, **opts)

    def context(self, leaf: str | None = _CURRENT) -> SessionContext:
        """The rebuilt context of the branch ending at ``leaf`` (default: the current leaf).

        Matches pi's ``buildSessionContext``: the latest compaction on the branch becomes a
        summary message followed by the kept messages, custom messages and branch summaries
        become their message kinds, and the model and thinking level are the last ones set
        on the branch. ``leaf=None`` is the point before the first entry (an empty context).
        """
        leaf_id = self._index.leaf if leaf is _CURRENT else (self.resolve(leaf) if leaf is not None else None)
        raw = build_context(self._index, leaf_id, explicit_none=leaf_id is None)
        return SessionContext.from_raw(raw, leaf_id)

    # ---------------------------------------------------------------- appending

    def append_message(self, message: WireModel | dict[str, Any]) -> str:
        """Append a message (user, assistant, toolResult, bashExecution, or custom) and return its id.

        A ``custom`` message is stored as a ``custom_message`` entry, as pi stores it.
        Compaction and branch summaries are entries of their own: use :meth:`append_compaction`
        and :meth:`branch_with_summary`.
        """
        if isinstance(message, dict):
            # a pi-shaped dict is stored as given (no validation: the hot path of a large import)
            data = message
            role = message.get("role")
            custom = (message.get("customType", ""), message.get("content", ""), message.get("display"), message.get("details"))
        else:
            model = as_message(message)
            role = getattr(model, "role", None)
            data = None
            custom = (
                getattr(model, "custom_type", ""),
                getattr(model, "content", ""),
                getattr(model, "display", None),
                getattr(model, "details", None),
            )
        if role in ("compactionSummary", "branchSummary"):
            raise SessionError(f"a {role} message is not stored as a message; use append_compaction or branch_with_summary")
        if role == "custom":
            return self.append_custom_message(custom[0], custom[1], display=custom[2], details=custom[3])
        if data is None:
            data = model.to_dict()
        return self._append(lambda eid, parent, ts: {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": data})

    def append_thinking_level_change(self, level: str) -> str:
        """Record that the thinking level is ``level`` from here on."""
        return self._append(
            lambda eid, parent, ts: {
                "type": "thinking_level_change",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "thinkingLevel": level,
            }
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record that the model is ``provider/model_id`` from here on."""
        return self._append(
            lambda eid, parent, ts: {
                "type": "model_change",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "provider": provider,
                "modelId": model_id,
            }
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Any = None,
    ) -> str:
        """Record a compaction: history before ``first_kept_entry_id`` is ``summary`` from here on.

        As pi 1.x, ``usage`` is what the summary cost, and the replayed system prompt and tools of
        the branch (if the transcript records them) are kept as ``systemMessage``.
        """
        context = self.context().raw_messages

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {
                "type": "compaction",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "summary": summary,
                "firstKeptEntryId": first_kept_entry_id,
                "tokensBefore": tokens_before,
            }
            if details is not None:
                entry["details"] = details
            if usage is not None:
                entry["usage"] = usage.to_dict() if isinstance(usage, WireModel) else usage
            if from_hook is not None:
                entry["fromHook"] = from_hook
            snapshot = system_snapshot(context, ts)
            if snapshot is not None:
                entry["systemMessage"] = snapshot
            return entry

        return self._append(build)

    def append_usage(self, kind: str, provider: str, model: str, usage: Any, note: str | None = None) -> str:
        """Record spending outside the conversation (a judge, cache warming): never in the context, in every cost total."""
        fields = usage_entry(kind, provider, model, usage, note)
        return self._append(lambda eid, parent, ts: {"type": "usage", "id": eid, "parentId": parent, "timestamp": ts, **fields})

    def edit_context(self, entry_id: str, replacement: Any) -> str:
        """Replace what an entry of the current branch shows the model, or with ``None`` drop it; the file keeps the original.

        ``replacement`` is a string, a list of content blocks or ``{"content": ...}``. Refused
        (:class:`~pi_jupyter.session.context_edits.ContextEditError`, pi 1.6's reasons) for an entry
        that is not on the current branch or carries no user, assistant, tool-result or custom content.
        Returns the id of the ``context_edit`` entry.
        """
        try:
            target_id = self.resolve(entry_id)
        except EntryNotFoundError:
            target_id = entry_id
        fields = context_edit_entry(self._index.by_id.get(target_id), target_id, self.branch_ids(), replacement)
        return self._append(lambda eid, parent, ts: {"type": "context_edit", "id": eid, "parentId": parent, "timestamp": ts, **fields})

    def append_custom(self, custom_type: str, data: Any = None) -> str:
        """Append private state (an extension's, or pi-jupyter's own). The model never sees it."""

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {"type": "custom", "customType": custom_type}
            if data is not None:
                entry["data"] = data
            entry.update(id=eid, parentId=parent, timestamp=ts)
            return entry

        return self._append(build)

    def append_custom_message(self, custom_type: str, content: Any, display: bool | None = True, details: Any = None) -> str:
        """Append a message the model sees (as a user message), from an extension or a program."""
        if isinstance(content, list):
            content = [b.to_dict() if isinstance(b, WireModel) else b for b in content]

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {"type": "custom_message", "customType": custom_type, "content": content}
            if display is not None:
                entry["display"] = display
            if details is not None:
                entry["details"] = details
            entry.update(id=eid, parentId=parent, timestamp=ts)
            return entry

        return self._append(build)

    def label(self, target: str, label: str | None) -> str:
        """Set the label of an entry (``None`` or ``""`` clears it). Like pi, this appends a ``label`` entry."""
        target_id = self.resolve(target)

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {"type": "label", "id": eid, "parentId": parent, "timestamp": ts, "targetId": target_id}
            if label is not None:
                entry["label"] = label
            return entry

        return self._append(build)

    def set_name(self, name: str) -> str:
        """Name the session (a ``session_info`` entry)."""
        if not isinstance(name, str) or not name.strip():
            raise SessionError("a session name cannot be empty")
        trimmed = name.strip()
        return self._append(
            lambda eid, parent, ts: {"type": "session_info", "id": eid, "parentId": parent, "timestamp": ts, "name": trimmed}
        )

    def branch_with_summary(
        self, from_id: str | None, summary: str, details: Any = None, from_hook: bool | None = None, usage: Any = None
    ) -> str:
        """Move the leaf to ``from_id`` and attach a ``branch_summary`` there (pi's ``branchWithSummary``)."""
        target = self.resolve(from_id) if from_id is not None else None

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {
                "type": "branch_summary",
                "id": eid,
                "parentId": target,
                "timestamp": ts,
                "fromId": target if target is not None else "root",
                "summary": summary,
            }
            if details is not None:
                entry["details"] = details
            if usage is not None:
                entry["usage"] = usage.to_dict() if isinstance(usage, WireModel) else usage
            if from_hook is not None:
                entry["fromHook"] = from_hook
            return entry

        return self._append(build)

    def checkout(self, target: str | None, *, summarize: bool = False, persist: bool = True, **summary_options: Any) -> str | None:
        """Move the leaf to ``target`` (an id, id prefix or label; ``None``: before the first entry).

        The move is persisted: a ``custom`` entry of type ``pi_jupyter.checkout`` is appended
        as a child of ``target``, so reopening the file, here or in pi (which resumes at the
        last line), continues on that branch. The marker adds nothing to the context.
        ``persist=False`` only moves the leaf in memory (use it when an append follows at once).

        ``summarize=True`` summarizes the branch being left into a ``branch_summary`` entry;
        that needs a model, so it works once an :class:`~pi_jupyter.Agent` is attached to this
        session (it sets :attr:`branch_summarizer`). Returns the new leaf id.
        """
        target_id = self.resolve(target) if target is not None else None
        if summarize:
            if self.branch_summarizer is None:
                raise SessionError("summarize=True needs a model: create an Agent for this session first (Agent(session))")
            return self.branch_summarizer(target_id, **summary_options)
        if summary_options:
            raise TypeError(f"unexpected options without summarize=True: {', '.join(summary_options)}")
        previous = self._index.leaf
        if target_id == previous and (self._leaf_saved or not persist):
            return previous
        with self._lock:
            if not persist or self._path is None:
                self._index.leaf = target_id
                self._leaf_saved = self._path is None
                return target_id
            if self._readonly:
                raise SessionError(f"{self._path}: opened read-only; a checkout is written to the file (use persist=False)")
            self._index.leaf = target_id
            try:
                # the marker is a child of the target; indexing it leaves the leaf on the target
                self.append_custom(CHECKOUT_TYPE, {"targetId": target_id, "fromId": previous})
            except BaseException:
                self._index.leaf = previous  # nothing was written: the leaf stays where the file says it is
                raise
        return self._index.leaf

    def on_append(self, callback: Callable[[RawEntry], None]) -> Callable[[], None]:
        """Call ``callback(entry_dict)`` after every entry this object appends; returns an unsubscribe function."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _append(self, build: Callable[[str, str | None, str], RawEntry]) -> str:
        if self._readonly:
            raise SessionError(f"{self._path}: opened read-only; nothing can be appended")
        if self._closed:
            raise SessionError(f"{self._path}: the session is closed")
        with self._lock:
            if self._path is None:
                entry = build(self._new_id(), self._index.leaf, now_iso())
                self._index.add(entry, 0)
            else:
                entry = self._append_to_file(build)
        for listener in list(self._listeners):
            try:
                listener(entry)
            except Exception:  # noqa: BLE001 - a consumer's bug must not lose the entry
                import logging

                logging.getLogger(__name__).exception("session listener failed")
        return entry["id"]

    def _append_to_file(self, build: Callable[[str, str | None, str], RawEntry]) -> RawEntry:
        assert self._path is not None
        fd = self._open_fd()
        with exclusive(fd, self._path):
            self._catch_up(fd)
            # ids are chosen under the lock, after reading what other writers added
            entry = build(self._new_id(), self._index.leaf, now_iso())
            line = dumps(entry) + b"\n"
            if self._needs_newline:
                line = b"\n" + line
                self._next_line += 1
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            self._end += len(line)
            self._needs_newline = False
            self._tail_start = -1
            if self._durability == "entry" or (self._durability == "turn" and _ends_turn(entry)):
                os.fsync(fd)
                self._dirty = False
            else:
                self._dirty = True
        self._index.add(entry, self._next_line)
        self._next_line += 1
        self._leaf_saved = True
        return entry

    def _catch_up(self, fd: int) -> None:
        """Index what other writers appended since we last looked (called under the lock).

        When our view ended in a torn line, that line is read again whole: a writer that does
        not check for a torn tail (pi) glues its line onto the fragment, and a fresh reader
        sees one malformed line there, so we must too.
        """
        stat = os.fstat(fd)
        size = stat.st_size
        try:
            current = os.stat(self._path).st_ino if self._path else stat.st_ino
        except FileNotFoundError:
            current = None
        if current != stat.st_ino:
            raise SessionChangedError(
                f"{self._path}: the file was replaced, moved or deleted since it was opened (another program "
                "rewrote it?); nothing was appended; open it again"
            )
        if size == self._end:
            return
        if size < self._end:
            raise SessionChangedError(
                f"{self._path}: the file shrank from {self._end} to {size} bytes since it was read "
                "(another program rewrote it); nothing was appended"
            )
        start = self._tail_start if self._needs_newline and self._tail_start >= 0 else self._end
        data = os.pread(fd, size - start, start)
        chunk = parse_lines(data, self._report, self._next_line)
        leaf = self._index.leaf
        entries, lines = chunk.objs, chunk.lines  # repeated headers are reported and skipped by the index
        self._index.extend(entries, lines, self._report)
        self._index.leaf = leaf  # other writers' entries do not move our leaf
        self._end = size
        self._next_line = chunk.next_line
        self._needs_newline = not chunk.ends_with_newline
        self._tail_start = start + chunk.tail_start if chunk.tail_start >= 0 else -1

    def refresh(self) -> int:
        """Read entries other writers appended since the file was opened; returns how many were new."""
        if self._path is None:
            return 0
        before = len(self._index)
        with self._lock:
            fd = self._open_fd()
            with exclusive(fd, self._path):
                self._catch_up(fd)
        return len(self._index) - before

    def _new_id(self) -> str:
        return _fresh_id(self._index.by_id)

    def _open_fd(self) -> int:
        if self._fd is None:
            assert self._path is not None
            try:
                self._fd = os.open(self._path, os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:
                raise SessionChangedError(f"{self._path}: the session file was deleted or moved; nothing was appended") from None
        return self._fd

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ---------------------------------------------------------------- forks

    def fork(self, entry_id: str | None = _CURRENT, *, dir: str | os.PathLike[str] | None = None, path: str | None = None) -> Session:
        """A new session holding the branch from the root to ``entry_id`` (default: the current leaf).

        As pi's ``createBranchedSession``: label entries on the path are dropped and the labels
        of entries on it are re-created at its end; the header names this file as
        ``parentSession``. Unlike pi, an entry whose parent was a dropped label is re-attached
        to the entry before it (pi leaves it an orphan, so the fork's context would start there),
        and a compaction that keeps history from a dropped label keeps it from the next entry.
        The new file is written at once (atomically) into ``dir`` (default: this session's
        folder). An in-memory session forks into an in-memory session.
        """
        leaf = self._index.leaf if entry_id is _CURRENT else (self.resolve(entry_id) if entry_id is not None else None)
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
                lid = _fresh_id(ids)
                ids.add(lid)
                labels.append({"type": "label", "id": lid, "parentId": parent, "timestamp": ts, "targetId": target, "label": text})
                parent = lid
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

    # ---------------------------------------------------------------- lifetime

    def sync(self) -> None:
        """Force appended entries to disk (fsync), whatever the durability setting."""
        with self._lock:
            if self._fd is not None and self._dirty:
                os.fsync(self._fd)
                self._dirty = False

    def close(self) -> None:
        """Sync (unless durability is ``"never"``) and release the file. Reading still works."""
        with self._lock:
            if self._durability != "never":
                self.sync()
            self._close_fd()
            self._closed = True

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries())


def _header(sid: str, ts: str, cwd: str, parent: str | None) -> RawEntry:
    header: RawEntry = {"type": "session", "version": CURRENT_VERSION, "id": sid, "timestamp": ts, "cwd": cwd}
    if parent:
        header["parentSession"] = parent
    return header


def _typed_header(raw: RawEntry) -> tuple[SessionHeader, list[str]]:
    """The header as a model, and the keys whose values had the wrong type (left unset in the model)."""
    try:
        return SessionHeader.model_validate(raw), []
    except ValidationError as exc:
        bad = sorted({str(err["loc"][0]) for err in exc.errors() if err.get("loc")} - {"type", "id"})
        data = {k: v for k, v in raw.items() if k not in bad}
        if "version" in bad:
            data["version"] = None  # unknown, rather than the current version's default
        return SessionHeader.model_validate(data), bad


def _ends_turn(entry: RawEntry) -> bool:
    if entry.get("type") in ("compaction", "branch_summary"):
        return True
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def _fresh_id(used: Container[str]) -> str:
    """pi's kind of id: 8 lowercase hex digits (``randomUUID().slice(0, 8)``), not in ``used``."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in used:
            return candidate
    return str(uuid.uuid4())
