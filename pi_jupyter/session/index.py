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
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .index_runs import RunIndexing
from .index_stubs import StubLines
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
    pass

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


class EntryIndex(RunIndexing, StubLines):
    """Entries of one session file in file order, indexed for tree queries.

    Entries may be *stubs* (see :mod:`.stubs`): the line's id, parent, time and message role,
    the rest left in the file. Every method that hands out entries reads those back whole
    first (:meth:`materialize`); :attr:`order` and :attr:`by_id` may hold stubs.
    """

    def __len__(self) -> int:
        return len(self._seen) if self._seen is not None else len(self._posd)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in (self._seen if self._seen is not None else self._posd)

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

    def get(self, entry_id: str) -> RawEntry | None:
        """The whole entry ``entry_id`` (``None`` when it is not in the file)."""
        p = self._pos.get(entry_id)
        if p is None:
            return None
        if self._stubs and self._is_stub(p):
            self.materialize((p,))
        return self.by_id.get(entry_id)

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
