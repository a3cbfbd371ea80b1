"""The in-memory tree of a session: entries by id, children, labels, and the leaf.

Entries are the dicts read from the file, kept as read. Beside them the index keeps, per
line, the position of its parent and a small kind code, so that a path walk and a context
rebuild touch plain integers instead of 100k dicts: lookups by id are O(1), a path walk is
O(depth) and guarded against parent cycles, adding an entry is O(1), and checking the
structure of a well-formed file (every parent written before its children, no repeated id)
costs nothing beyond reading it.

How odd files are read, entry by entry as pi reads them, except where pi hangs:

* **Duplicate ids** (pi's deferred flush can write a file's lines twice): the later line
  stands for the id, as in pi's ``byId`` map; the earlier line stays in :attr:`order`.
  pi's ``getTree`` shows such an entry twice; :meth:`EntryIndex.tree` shows it once.
* **Orphans** (a parent id not in the file): the path walk ends there, so the context starts
  at the orphan, as in pi; the tree shows it as a root, as pi does.
* **Self-parents**: treated as roots, by the tree (as pi) and by the path walk (pi's walk
  never ends on them).
* **Parent cycles** (A -> B -> A): the entries are unreachable from any root, as in pi's
  tree; walking their path raises :class:`~pi_jupyter.session.CycleError` (pi's walk never
  ends). All four are listed in the load report by :meth:`EntryIndex.check_structure`.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import threading
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .jsonl import paused_gc
from .kinds import (
    CELL_TYPE,
    CHECKOUT_TYPE,
    EXPERIMENT_TYPES,
    K_ASSISTANT,
    K_BRANCH_SUMMARY,
    K_COMPACTION,
    K_CONTEXT_EDIT,
    K_CUSTOM,
    K_CUSTOM_MESSAGE,
    K_LABEL,
    K_MESSAGE,
    K_MODEL,
    K_OTHER,
    K_SESSION_INFO,
    K_THINKING,
    K_USAGE,
    KINDS,
    TRANSPARENT_TYPES,
    RawEntry,
    TreeNode,
    is_assistant,
    js_date_ms,
    time_key,
)
from .line_numbers import LineNumbers
from .report import SAMPLE_PER_KIND, CycleError, EntryNotFoundError, LoadReport, SessionError

if TYPE_CHECKING:  # pragma: no cover
    from .lazy import LineSource

_MISSING: Any = object()
_SINGLE_READS = 32  # stubs read back one line at a time; more are read in one span of the file


def _is_transparent(entry: RawEntry) -> bool:
    custom_type = entry.get("customType")
    return type(custom_type) is str and custom_type in TRANSPARENT_TYPES


def _line_at(numbered: LineNumbers, adding: list[int], position: int) -> int:
    """The line of ``position``, which may be among the lines being added (``adding``)."""
    known = len(numbered)
    return numbered[position] if position < known else adding[position - known]


def _parent_key(entry: RawEntry) -> str | None:
    parent = entry.get("parentId")
    return parent if type(parent) is str and parent else None


class EntryIndex:
    """Entries of one session file in file order, indexed for tree queries.

    Entries may be *stubs* (see :mod:`.stubs`): the line's id, parent, time and message role,
    the rest left in the file. Every method that hands out entries reads those back whole
    first (:meth:`materialize`); :attr:`order` and :attr:`by_id` may hold stubs.
    """

    def __init__(self, *, defer_positions: bool = False) -> None:
        """``defer_positions``: runs of lines (:meth:`extend_run`) may leave their ids out of the
        dict of positions until something needs it (reading a file once, for its context)."""
        self._by_id: dict[str, RawEntry] = {}
        self._unlisted: list[tuple[list[str], list[RawEntry]]] = []  # runs indexed by extend_run, not yet in _by_id
        self.order: list[RawEntry] = []
        self.labels: dict[str, tuple[str, str]] = {}
        self.leaf: str | None = None
        self.name: str | None = None
        self._posd: dict[str, int] = {}  # id -> position in order of the line that stands for it (see _pos)
        # runs extend_run indexed without adding their ids to _posd yet: (first position, ids); while there are
        # any, _seen holds every id (a repeated id shows in its size) and _misses the lines whose parent is
        # not the line before, as (position, parent id), their parent positions still to be found
        self._pending: list[tuple[int, list[str]]] = []
        self._seen: set[str] | None = None
        self._misses: list[tuple[int, str]] = []
        self._lazy = defer_positions  # extend_run may leave runs pending (until something needs every position)
        self._parent = array("q")  # per line: position of its parent, -1 for none
        self._kind = bytearray()  # per line: a K_* code
        self._lines = LineNumbers()  # per line: its 1-based line number in the file (0: not from a file)
        self._children: dict[str | None, list[str]] | None = None  # built on first use
        self._cells: dict[str, list[int]] = {}  # notebook cell id -> positions of its run records, in file order
        # per line: byte offset of a line read as a stub, -1 for a whole entry, and its length; kept only as
        # far as the last line given with offsets (the lines after it are whole)
        self._stub_off = array("q")
        self._stub_len = array("q")
        self._stubs = 0  # how many lines are stubs
        self._source: LineSource | None = None
        self._fill_lock = threading.Lock()
        self._irregular = False  # a repeated id or a parent not seen before: check_structure must look
        self._stale = False  # _parent must be resolved again (a later line replaced an id, or a forward parent)

    @property
    def kinds(self) -> bytearray:
        """Per line in file order, the entry's kind code (``K_*``); read it, do not modify it."""
        return self._kind

    @property
    def by_id(self) -> dict[str, RawEntry]:
        """Entry id -> the entry that stands for it (the later line of a repeated id); do not modify it.

        Built on first use for the runs :meth:`extend_run` indexed: finding a branch and its
        context needs only the positions.
        """
        if self._unlisted:
            for ids, entries in self._unlisted:
                self._by_id.update(zip(ids, entries, strict=True))
            self._unlisted.clear()
        return self._by_id

    def __len__(self) -> int:
        return len(self._seen) if self._seen is not None else len(self._posd)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in (self._seen if self._seen is not None else self._posd)

    @property
    def _pos(self) -> dict[str, int]:
        """Id -> position of the line that stands for it, every pending run added first."""
        if self._seen is not None:
            posd = self._posd
            for first, ids in self._pending:
                posd.update(zip(ids, range(first, first + len(ids)), strict=True))
            self._pending.clear()
            self._seen = None
            self._lazy = False  # from now on every run is added as it comes
        if self._misses:
            self._settle()
        return self._posd

    def _position(self, entry_id: str) -> int:
        """The position of ``entry_id`` (-1: not in the file); a pending run is searched rather than listed whole."""
        if self._seen is None:
            return self._pos.get(entry_id, -1)
        if entry_id not in self._seen:
            return -1
        p = self._posd.get(entry_id)
        if p is not None:
            return p
        for first, ids in reversed(self._pending):  # the usual leaf: near the end
            if entry_id in ids:
                return first + ids.index(entry_id)
        return -1  # (not reached: every id in _seen is in one of them)

    def _settle(self) -> None:
        """Find the parents of the lines :meth:`extend_run` left pending: one pass over the pending ids."""
        if not self._misses:
            return
        misses, self._misses = self._misses, []
        wanted = {parent for _, parent in misses}
        posd = self._posd
        found = {eid: posd[eid] for eid in wanted if eid in posd}
        for first, ids in self._pending:
            for k in itertools.compress(range(len(ids)), map(wanted.__contains__, ids)):
                found[ids[k]] = first + k
        parents = self._parent
        for p, parent in misses:
            q = found.get(parent, -1)
            parents[p] = q
            if q < 0 or q >= p:
                # a parent missing, the line itself or later in the file: check_structure must look, and
                # the parent positions must be resolved again, as extend decides line by line
                self._irregular = self._stale = True

    @property
    def has_assistant(self) -> bool:
        """True when some message entry holds an assistant message."""
        return any(e.get("type") == "message" and is_assistant(e) for e in self.order)

    # -- building ------------------------------------------------------------------------

    def add(self, entry: RawEntry, line: int = 0, report: LoadReport | None = None) -> bool:
        """Index one entry (file order). Returns False when it is not an entry at all."""
        return self.extend((entry,), (line,), report, bulk=False) == 1

    def extend(
        self,
        entries: Iterable[RawEntry],
        lines: Iterable[int],
        report: LoadReport | None = None,
        *,
        bulk: bool = True,
        offsets: Sequence[int] | None = None,
        lengths: Sequence[int] | None = None,
    ) -> int:
        """Index many entries in file order (the bulk path of opening a file). Returns how many were entries.

        ``bulk`` pauses the garbage collector while the index grows (see :func:`~.jsonl.paused_gc`).
        ``offsets`` and ``lengths``, per entry, place the lines of stubs in the file (offset -1:
        a whole entry); they are read back from the :meth:`attach` ed source.
        """
        by_id = self.by_id
        order = self.order
        pos = self._pos
        parents = self._parent
        kinds = self._kind
        numbered = self._lines
        line_list: list[int] = []  # added to numbered at the end: one native call, not one per entry
        children = self._children
        kind_of = KINDS
        n = len(order)
        added = 0
        leaf = self.leaf
        stub_off, stub_len = self._stub_off, self._stub_len
        stubs = 0
        offs = itertools.repeat(-1) if offsets is None else offsets
        lens = itertools.repeat(0) if lengths is None else lengths
        placed = offsets is not None
        if placed and len(stub_off) < n:
            stub_off.frombytes(b"\xff" * (8 * (n - len(stub_off))))  # the lines before: whole
            stub_len.frombytes(bytes(8 * (n - len(stub_len))))
        with paused_gc() if bulk else contextlib.nullcontext():
            for entry, line, off, length in zip(entries, lines, offs, lens):  # noqa: B905 - iterables, checked by the callers
                eid = entry.get("id")
                etype = entry.get("type")
                if etype == "session":
                    if report is not None:
                        report.add(
                            line,
                            "duplicate_header",
                            "a second session header (pi's deferred flush writes one); ignored, as pi does",
                            "warning",
                        )
                    continue
                if type(eid) is not str or type(etype) is not str:
                    if report is not None:
                        report.add(line, "not_an_entry", "a JSON object without a string 'id' and 'type'; ignored", "error")
                    continue
                parent = entry.get("parentId")
                if type(parent) is not str or not parent:
                    parent = None
                previous = pos.get(eid)
                if previous is not None:
                    self._irregular = self._stale = True
                    if report is not None:
                        report.add(
                            line,
                            "duplicate_id",
                            f"id {eid!r} was already used on line {_line_at(numbered, line_list, previous)}; the later line wins, as in pi",
                            "warning",
                            eid,
                        )
                    if children is not None:
                        siblings = children.get(self._child_key(order[previous]))
                        if siblings is not None and eid in siblings:
                            siblings.remove(eid)
                elif report is not None and etype not in kind_of:
                    report.add(
                        line,
                        "unknown_type",
                        f"entry type {etype!r} is not known to this version; kept as a tree node that adds nothing to the context",
                        "info",
                        eid,
                    )
                if parent is None:
                    parent_pos = -1
                elif parent == eid:
                    parent_pos = -1
                    self._irregular = True
                else:
                    parent_pos = pos.get(parent, -1)
                    if parent_pos < 0:
                        self._irregular = self._stale = True
                by_id[eid] = entry
                pos[eid] = n
                order.append(entry)
                parents.append(parent_pos)
                line_list.append(line)
                if placed:
                    stub_off.append(off)
                    stub_len.append(length)
                    if off >= 0:
                        stubs += 1
                n += 1
                added += 1
                kind = kind_of.get(etype, K_OTHER)
                # the most common kind first: a message with a message says nothing more to the index
                if kind == K_MESSAGE and type(entry.get("message")) is dict:
                    leaf = eid
                else:
                    leaf = self._note(entry, eid, parent, kind, line, n - 1, report)
                kinds.append(kind)
                if children is not None:
                    children.setdefault(None if parent == eid else parent, []).append(eid)
        numbered.extend(line_list)
        if added:
            self.leaf = leaf
        self._stubs += stubs
        return added

    def _note(
        self, entry: RawEntry, eid: str, parent: str | None, kind: int, line: int, position: int, report: LoadReport | None
    ) -> str | None:
        """What an entry other than a plain message tells the index (labels, the name, cells, problems); returns the leaf it makes."""
        if kind == K_MESSAGE:
            # whether it is an assistant message is looked up when needed
            if type(entry.get("message")) is not dict and report is not None:
                what = (
                    "has no 'message' field; it adds nothing to the context"
                    if "message" not in entry
                    else "has a 'message' that is not an object; no model can be sent it"
                )
                report.add(line, "no_message", f"message entry {eid!r} {what}", "error", eid)
        elif kind == K_LABEL:
            target = entry.get("targetId")
            label = entry.get("label")
            if type(target) is str:
                if label:
                    self.labels[target] = (label, entry.get("timestamp", ""))
                else:
                    self.labels.pop(target, None)
        elif kind == K_SESSION_INFO:
            name = entry.get("name")
            self.name = (name.strip() or None) if isinstance(name, str) else None
        elif kind == K_CUSTOM and _is_transparent(entry):
            # a checkout marker stands for "the leaf is my parent": it is a dead-end child
            # of the target, so the branch (and pi's context, which walks through it) is the target's
            if entry.get("customType") == CELL_TYPE:
                data = entry.get("data")
                cell_id = data.get("cellId") if type(data) is dict else None
                if type(cell_id) is str:
                    self._cells.setdefault(cell_id, []).append(position)
            return parent
        return eid

    def extend_run(
        self,
        entries: list[RawEntry],
        ids: list[str],
        parents: list[str | None],
        others: list[int],
        first_line: int,
        report: LoadReport,
        *,
        offsets: array | None = None,
        lengths: array | None = None,
    ) -> None:
        """Index the entries of consecutive lines from ``first_line`` in a few native passes (see :mod:`.bulk`).

        ``ids`` and ``parents`` are the entries' string ids and ``parentId`` (``None`` where
        absent); ``others`` the positions (in ``entries``) of those that are not ``message``
        entries with a message; no entry is a session header. Gives the index and the reports
        :meth:`extend` gives, and hands the run to it when the run holds an id seen before or the
        children lists are built already. ``offsets`` and ``lengths`` place the lines of stubs in
        the file, as for :meth:`extend`.
        """
        count = len(ids)
        lines = range(first_line, first_line + count)
        first = len(self.order)
        if self._children is not None:
            self.extend(entries, lines, report, offsets=offsets, lengths=lengths)
            return
        # the ids go into a set now and into the dict of positions when something needs it: for a
        # context, finding the branch needs the positions of a few parents, not of 100k ids
        lazy = self._lazy and not self._posd
        if lazy:
            seen = self._seen if self._seen is not None else set()
            self._seen = seen
            known = len(seen)
            seen.update(ids)
            clash = len(seen) != known + count or ("" in seen and "" in parents)
        else:
            known = len(self._posd)
            self._posd.update(zip(ids, range(first, first + count), strict=True))
            clash = len(self._posd) != known + count or ("" in self._posd and "" in parents)
        if clash:
            # an id seen before, or the id "" with children (which extend reads as roots): line by line,
            # which reports them; the positions as they were before this run
            if lazy:
                seen.difference_update(ids)
            else:
                self._posd.clear()
                self._posd.update((entry["id"], i) for i, entry in enumerate(self.order))
            self.extend(entries, lines, report, offsets=offsets, lengths=lengths)
            return
        if lazy:
            self._pending.append((first, ids))
        pos = self._posd
        order = self.order
        # most lines follow their parent: the line before (a string comparison, where a lookup in a
        # dict of 100k ids misses the processor's caches)
        before = [order[-1]["id"] if order else None]
        before += ids[:-1]
        parent_pos = array("q", range(first - 1, first + count - 1))
        for j in itertools.compress(range(count), map(operator.ne, parents, before)):
            parent = parents[j]
            if parent is None:
                parent_pos[j] = -1
            elif lazy:
                self._misses.append((first + j, parent))  # found by _settle
            else:
                found = parent_pos[j] = pos.get(parent, -1)
                # a parent not indexed before its child (later in the file, missing, the entry itself): check_structure
                # must look, and the parent positions must be resolved again, as extend decides line by line
                if found >= first + j or found < 0:
                    self._irregular = self._stale = True
        self._unlisted.append((ids, entries))
        order.extend(entries)
        self._parent.extend(parent_pos)
        self._lines.add_run(first_line, count)
        if offsets is not None and lengths is not None:
            self._place(first, offsets, lengths, count - len(others))
        kinds = self._kind
        kinds.extend(bytes((K_MESSAGE,)) * count)
        leaf: str | None = ids[-1] if count else None
        for j in others:
            entry, kind = entries[j], KINDS.get(entries[j]["type"], K_OTHER)
            kinds[first + j] = kind
            leaf = self._note(entry, ids[j], parents[j], kind, first_line + j, first + j, report)
        if count:
            self.leaf = leaf if others and others[-1] == count - 1 else ids[-1]

    # -- entries read as stubs -----------------------------------------------------------

    def attach(self, source: LineSource) -> None:
        """Read the lines of stubs back from ``source`` when their entries are needed."""
        self._source = source
        if not self._stubs:
            source.done()

    @property
    def stubs(self) -> int:
        """How many entries are still stubs (0: every entry is whole)."""
        return self._stubs

    def get(self, entry_id: str) -> RawEntry | None:
        """The whole entry ``entry_id`` (``None`` when it is not in the file)."""
        p = self._pos.get(entry_id)
        if p is None:
            return None
        if self._stubs and self._is_stub(p):
            self.materialize((p,))
        return self.by_id.get(entry_id)

    def materialize(self, positions: Iterable[int], data: bytes | None = None) -> None:
        """Read back whole the entries at ``positions`` that are stubs (from ``data``, the file's bytes, when given)."""
        if not self._stubs:
            return
        offs = self._stub_off
        stub = self._is_stub
        wanted = [p for p in positions if stub(p)]
        if not wanted:
            return
        source = self._need_source()
        lens = self._stub_len
        with self._fill_lock, paused_gc():
            wanted = [p for p in wanted if stub(p)]
            if data is None and len(wanted) <= _SINGLE_READS:
                for p in wanted:
                    self._fill(p, source.read(offs[p], lens[p]), source)
                return
            first = 0
            if data is None:  # a long branch: one read of the bytes that hold it, rather than a read per line
                first = min(offs[p] for p in wanted)
                data = source.read(first, max(offs[p] + lens[p] for p in wanted) - first)
            view = memoryview(data)
            for p in wanted:
                start = offs[p] - first
                self._fill(p, view[start : start + lens[p]], source)

    def materialize_all(self) -> None:
        """Read back every stub (one read of the file), before handing out every entry."""
        if not self._stubs:
            return
        source = self._need_source()
        with self._fill_lock, paused_gc():
            if not self._stubs:
                return
            view = memoryview(source.whole())
            lens = self._stub_len
            for p, off in enumerate(self._stub_off):
                if off >= 0:
                    self._fill(p, view[off : off + lens[p]], source)

    def _place(self, first: int, offsets: array, lengths: array, stubs: int) -> None:
        """The file places of the lines from position ``first`` on (offset -1: a whole entry)."""
        stub_off, stub_len = self._stub_off, self._stub_len
        if len(stub_off) < first:
            stub_off.frombytes(b"\xff" * (8 * (first - len(stub_off))))  # the lines before: whole
            stub_len.frombytes(bytes(8 * (first - len(stub_len))))
        stub_off.extend(offsets)
        stub_len.extend(lengths)
        self._stubs += stubs

    def _is_stub(self, p: int) -> bool:
        offs = self._stub_off
        return p < len(offs) and offs[p] >= 0

    def _need_source(self) -> LineSource:
        if self._source is None:
            raise SessionError("entries were read as stubs but there is no file to read them back from")
        return self._source

    def _fill(self, p: int, raw: bytes | memoryview, source: LineSource) -> None:
        stub = self.order[p]
        eid = stub["id"]
        entry = source.parse(raw, eid)
        self.order[p] = entry
        if self.by_id.get(eid) is stub:
            self.by_id[eid] = entry
        self._stub_off[p] = -1
        self._stubs -= 1
        if not self._stubs:
            source.done()
            self._source = None

    def _child_key(self, entry: RawEntry) -> str | None:
        parent = _parent_key(entry)
        return None if parent == entry.get("id") else parent

    def _resolve_parents(self) -> None:
        """Point every line at the line that now stands for its parent id (after repeats or forward parents)."""
        pos = self._pos
        out: list[int] = []
        for entry in self.order:
            parent = _parent_key(entry)
            out.append(-1 if parent is None or parent == entry["id"] else pos.get(parent, -1))
        self._parent = array("q", out)
        self._stale = False

    @property
    def children(self) -> dict[str | None, list[str]]:
        """Parent id (``None``: roots) -> child ids in file order; self-parented entries are roots."""
        if self._children is None:
            children: dict[str | None, list[str]] = {}
            pos = self._pos
            with paused_gc():
                for i, entry in enumerate(self.order):
                    eid = entry["id"]
                    if pos[eid] != i:
                        continue  # an earlier line of a repeated id
                    children.setdefault(self._child_key(entry), []).append(eid)
            self._children = children
        return self._children

    @property
    def line_of(self) -> dict[str, int]:
        """Entry id -> the line number that stands for it (built on each call; for reports)."""
        lines = self._lines
        return {eid: lines[p] for eid, p in self._pos.items()}

    def cell_records(self, cell_id: str | None = None) -> list[RawEntry]:
        """The run records of notebook cell ``cell_id`` (every cell's with ``None``), in file order; O(records)."""
        if cell_id is not None:
            positions = self._cells.get(cell_id, [])
        else:
            positions = sorted(p for runs in self._cells.values() for p in runs)
        order = self.order
        return [order[p] for p in positions]

    def positions_of(self, kind: int) -> list[int]:
        """Positions of the lines of one kind code (``K_*``), in file order: a native search of the kind bytes."""
        code = bytes((kind,))
        find = self._kind.find
        out: list[int] = []
        i = find(code)
        while i >= 0:
            out.append(i)
            i = find(code, i + 1)
        return out

    def line(self, entry_id: str) -> int:
        """The 1-based line number of an entry (0 when unknown or not from a file)."""
        p = self._position(entry_id)
        return self._lines[p] if p >= 0 else 0

    # -- structure checks ----------------------------------------------------------------

    def check_structure(self, report: LoadReport) -> None:
        """Report orphans, self-parents and parent cycles (free when every parent came first).

        Cycles are found by walking up from every entry once (entries already walked end a
        walk), without building the children lists: a file of two million orphans costs a
        set of ids, not two million lists.
        """
        self._settle()
        if not self._irregular:
            return
        with paused_gc():  # a walk list per entry: millions of small containers on a damaged file
            self._check_structure(report)

    def _check_structure(self, report: LoadReport) -> None:
        by_id = self.by_id
        listed = report.counts.get("orphan", 0)
        counted = 0  # orphans beyond the report's sample: only counted (a file may hold millions)
        done: set[str] = set()
        for eid, entry in by_id.items():
            parent = entry.get("parentId")
            if type(parent) is not str or not parent:
                done.add(eid)
                continue
            if parent == eid:
                report.add(self.line(eid), "self_parent", f"entry {eid!r} is its own parent; treated as a root", "warning", eid)
                done.add(eid)
                continue
            if parent not in by_id:
                if listed < SAMPLE_PER_KIND:
                    listed += 1
                    report.add(
                        self.line(eid),
                        "orphan",
                        f"entry {eid!r} names parent {parent!r}, which is not in the file; its branch starts there",
                        "warning",
                        eid,
                    )
                else:
                    counted += 1
                done.add(eid)
                continue
            if eid in done or parent in done:
                done.add(eid)  # the common case (parents come first in a file): no walk to make
                continue
            walk: list[str] = []
            seen: dict[str, int] = {}
            cur: str | None = eid
            while cur is not None and cur not in done and cur not in seen:
                seen[cur] = len(walk)
                walk.append(cur)
                up = _parent_key(by_id[cur])
                # a root, an orphan (its branch starts there) or a self-parent ends the walk
                cur = up if up is not None and up != cur and up in by_id else None
            if cur is not None and cur in seen:
                loop = walk[seen[cur] :]
                report.add(
                    self.line(loop[0]),
                    "cycle",
                    f"parent cycle {' -> '.join(loop)} -> {loop[0]}; these entries and their descendants "
                    "are unreachable from any root (walking their path raises CycleError)",
                    "error",
                    loop[0],
                )
            done.update(walk)
        if counted:
            report.count_more("orphan", counted)

    # -- queries -------------------------------------------------------------------------

    def resolve(self, ref: str, path: str | None = None) -> str:
        """An entry id, a unique id prefix (4+ characters) or a label -> the entry id (``path`` names the file in errors)."""
        if not isinstance(ref, str) or not ref:
            raise EntryNotFoundError(str(ref), path)
        pos = self._pos
        if ref in pos:
            return ref
        labelled = [eid for eid, (label, _) in self.labels.items() if label == ref]
        if len(labelled) == 1:
            return labelled[0]
        if len(labelled) > 1:
            raise SessionError(f"label {ref!r} is on several entries: {', '.join(labelled)}; use an id")
        if len(ref) >= 4:
            matches = [eid for eid in pos if eid.startswith(ref)]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise SessionError(f"id prefix {ref!r} matches {len(matches)} entries ({', '.join(matches[:5])}); give more characters")
        raise EntryNotFoundError(ref, path)

    def path_positions(self, leaf_id: str | None) -> list[int]:
        """Positions (in :attr:`order`) from the root to ``leaf_id``, root first. Raises :class:`CycleError`."""
        return self.path_positions_from(self._position(leaf_id) if leaf_id else -1)

    def path_positions_from(self, start: int) -> list[int]:
        """Positions from the root to the entry at position ``start`` (whatever its id, ``""`` too)."""
        if start < 0:
            return []
        leaf_id = self.order[start]["id"]
        self._settle()
        if self._stale:
            self._resolve_parents()
        parents = self._parent
        out: list[int] = []
        add = out.append
        i = start
        for _ in range(len(parents)):
            add(i)
            i = parents[i]
            if i < 0:
                break
        else:
            order = self.order
            raise CycleError(leaf_id or "", [order[j]["id"] for j in out[-16:]])
        out.reverse()
        return out

    def path(self, leaf_id: str | None) -> list[RawEntry]:
        """Entries from the root to ``leaf_id`` (inclusive), root first. Raises :class:`CycleError`."""
        positions = self.path_positions(leaf_id)
        self.materialize(positions)
        order = self.order
        return [order[i] for i in positions]

    def child_ids(self, entry_id: str | None) -> list[str]:
        """Ids of the direct children of ``entry_id`` (``None``: the roots), in file order.

        Before :attr:`children` is built, one entry's children are found with a C-speed search of
        the parent positions, rather than building the lists of every entry in the file.
        """
        if self._children is not None or entry_id is None or entry_id not in self._pos:
            return list(self.children.get(entry_id, ()))
        self._settle()
        if self._stale:
            self._resolve_parents()
        parents, order, pos = self._parent, self.order, self._pos
        target = pos[entry_id]
        out: list[str] = []
        i = -1
        while True:
            try:
                i = parents.index(target, i + 1)
            except ValueError:
                return out
            eid = order[i]["id"]
            if pos[eid] == i:  # not an earlier line of a repeated id
                out.append(eid)

    def whole_positions(self) -> Iterable[int]:
        """Positions of the entries read whole (not stubs), in file order."""
        if not self._stubs:
            return range(len(self.order))
        offs = self._stub_off
        return itertools.chain((p for p in range(len(offs)) if offs[p] < 0), range(len(offs), len(self.order)))

    def tree(self) -> list[TreeNode]:
        """The whole tree as pi's ``getTree`` builds it: roots in file order, children by time."""
        self.materialize_all()
        labels = self.labels
        pos = self._pos
        nodes: dict[str, TreeNode] = {}
        roots: list[TreeNode] = []
        with paused_gc():
            for eid, entry in self.by_id.items():
                label = labels.get(eid)
                nodes[eid] = TreeNode(entry, [], label[0], label[1]) if label else TreeNode(entry, [])
            for i, entry in enumerate(self.order):
                eid = entry["id"]
                if pos[eid] != i:
                    continue  # an earlier line of a repeated id; the later line stands for it
                node = nodes[eid]
                parent = entry.get("parentId")
                if parent is None or parent == eid:
                    roots.append(node)
                    continue
                parent_node = nodes.get(parent) if type(parent) is str else None
                if parent_node is not None:
                    parent_node.children.append(node)
                else:
                    roots.append(node)
            for node in nodes.values():
                if len(node.children) > 1:
                    node.children.sort(key=time_key)
        return roots


__all__ = [
    "CELL_TYPE",
    "CHECKOUT_TYPE",
    "EXPERIMENT_TYPES",
    "K_ASSISTANT",
    "K_BRANCH_SUMMARY",
    "K_COMPACTION",
    "K_CONTEXT_EDIT",
    "K_CUSTOM",
    "K_CUSTOM_MESSAGE",
    "K_LABEL",
    "K_MESSAGE",
    "K_MODEL",
    "K_OTHER",
    "K_SESSION_INFO",
    "K_THINKING",
    "K_USAGE",
    "KINDS",
    "TRANSPARENT_TYPES",
    "EntryIndex",
    "RawEntry",
    "TreeNode",
    "is_assistant",
    "js_date_ms",
]
