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
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..messages.text import ms_from_iso
from .entries import ENTRY_TYPES
from .jsonl import paused_gc
from .report import SAMPLE_PER_KIND, CycleError, EntryNotFoundError, LoadReport, SessionError

RawEntry = dict[str, Any]

CHECKOUT_TYPE = "pi_jupyter.checkout"
"""``customType`` of the marker entry that persists a checkout (see ``Session.checkout``)."""

CELL_TYPE = "pi_jupyter.cell"
"""``customType`` of the record of one notebook cell's run (see ``pi_jupyter.notebook.cells``)."""

EXPERIMENT_TYPES = ("pi_jupyter.score", "pi_jupyter.branch_end", "pi_jupyter.experiment")
"""``custom`` records of experiments (``pi_jupyter.experiment``): scores, branch outcomes, the grid."""

TRANSPARENT_TYPES = frozenset({CHECKOUT_TYPE, CELL_TYPE, *EXPERIMENT_TYPES})
"""``custom`` entries that do not move the leaf: dead-end children that stand for their parent."""

# kind codes, one byte per line; the first five are the ones a context rebuild looks at
K_OTHER = 0
K_MESSAGE = 1
K_ASSISTANT = 2  # unused: whether a message is an assistant's is looked up when needed
K_CUSTOM_MESSAGE = 3
K_BRANCH_SUMMARY = 4
K_COMPACTION = 5
K_THINKING = 6
K_MODEL = 7
K_LABEL = 8
K_SESSION_INFO = 9
K_CUSTOM = 10
K_CONTEXT_EDIT = 11
K_USAGE = 12

KINDS = {
    "message": K_MESSAGE,
    "custom_message": K_CUSTOM_MESSAGE,
    "branch_summary": K_BRANCH_SUMMARY,
    "compaction": K_COMPACTION,
    "thinking_level_change": K_THINKING,
    "model_change": K_MODEL,
    "label": K_LABEL,
    "session_info": K_SESSION_INFO,
    "custom": K_CUSTOM,
    "context_edit": K_CONTEXT_EDIT,
    "usage": K_USAGE,
}
assert set(KINDS) == set(ENTRY_TYPES), "every known entry type needs a kind code"
_MISSING: Any = object()


@dataclass(slots=True)
class TreeNode:
    """One entry in :meth:`Session.tree`, with its children in pi's order (oldest first)."""

    entry: RawEntry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None

    @property
    def id(self) -> str:
        """The entry id."""
        return self.entry["id"]

    @property
    def type(self) -> str:
        """The entry type (``message``, ``compaction``, ...)."""
        return self.entry.get("type", "")

    def typed(self) -> Any:
        """The entry as a pydantic model."""
        from .entries import entry_from_dict

        return entry_from_dict(self.entry)


def is_assistant(entry: RawEntry) -> bool:
    message = entry.get("message")
    return type(message) is dict and message.get("role") == "assistant"


def _is_transparent(entry: RawEntry) -> bool:
    custom_type = entry.get("customType")
    return type(custom_type) is str and custom_type in TRANSPARENT_TYPES


def _parent_key(entry: RawEntry) -> str | None:
    parent = entry.get("parentId")
    return parent if type(parent) is str and parent else None


class EntryIndex:
    """Entries of one session file in file order, indexed for tree queries."""

    def __init__(self) -> None:
        self.by_id: dict[str, RawEntry] = {}
        self.order: list[RawEntry] = []
        self.labels: dict[str, tuple[str, str]] = {}
        self.leaf: str | None = None
        self.name: str | None = None
        self._pos: dict[str, int] = {}  # id -> position in order of the line that stands for it
        self._parent: list[int] = []  # per line: position of its parent, -1 for none
        self._kind = bytearray()  # per line: a K_* code
        self._lines: list[int] = []  # per line: its 1-based line number in the file (0: not from a file)
        self._children: dict[str | None, list[str]] | None = None  # built on first use
        self._cells: dict[str, list[int]] = {}  # notebook cell id -> positions of its run records, in file order
        self._irregular = False  # a repeated id or a parent not seen before: check_structure must look
        self._stale = False  # _parent must be resolved again (a later line replaced an id, or a forward parent)

    @property
    def kinds(self) -> bytearray:
        """Per line in file order, the entry's kind code (``K_*``); read it, do not modify it."""
        return self._kind

    def __len__(self) -> int:
        return len(self.by_id)

    @property
    def has_assistant(self) -> bool:
        """True when some message entry holds an assistant message."""
        return any(e.get("type") == "message" and is_assistant(e) for e in self.order)

    # -- building ------------------------------------------------------------------------

    def add(self, entry: RawEntry, line: int = 0, report: LoadReport | None = None) -> bool:
        """Index one entry (file order). Returns False when it is not an entry at all."""
        return self.extend((entry,), (line,), report, bulk=False) == 1

    def extend(self, entries: Iterable[RawEntry], lines: Iterable[int], report: LoadReport | None = None, *, bulk: bool = True) -> int:
        """Index many entries in file order (the bulk path of opening a file). Returns how many were entries.

        ``bulk`` pauses the garbage collector while the index grows (see :func:`~.jsonl.paused_gc`).
        """
        by_id = self.by_id
        order = self.order
        pos = self._pos
        parents = self._parent
        kinds = self._kind
        line_list = self._lines
        children = self._children
        kind_of = KINDS
        n = len(order)
        added = 0
        leaf = self.leaf
        with paused_gc() if bulk else contextlib.nullcontext():
            for entry, line in zip(entries, lines):  # noqa: B905 - iterables, checked by the callers
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
                            f"id {eid!r} was already used on line {self._lines[previous]}; the later line wins, as in pi",
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
                n += 1
                added += 1
                kind = kind_of.get(etype, K_OTHER)
                leaf = eid
                if kind == K_MESSAGE:
                    # the most common kind first; whether it is an assistant message is looked up when needed
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
                    leaf = parent
                    if entry.get("customType") == CELL_TYPE:
                        data = entry.get("data")
                        cell_id = data.get("cellId") if type(data) is dict else None
                        if type(cell_id) is str:
                            self._cells.setdefault(cell_id, []).append(n - 1)
                kinds.append(kind)
                if children is not None:
                    children.setdefault(None if parent == eid else parent, []).append(eid)
        if added:
            self.leaf = leaf
        return added

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
        self._parent = out
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

    def line(self, entry_id: str) -> int:
        """The 1-based line number of an entry (0 when unknown or not from a file)."""
        p = self._pos.get(entry_id)
        return self._lines[p] if p is not None else 0

    # -- structure checks ----------------------------------------------------------------

    def check_structure(self, report: LoadReport) -> None:
        """Report orphans, self-parents and parent cycles (free when every parent came first).

        Cycles are found by walking up from every entry once (entries already walked end a
        walk), without building the children lists: a file of two million orphans costs a
        set of ids, not two million lists.
        """
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
        by_id = self.by_id
        if ref in by_id:
            return ref
        labelled = [eid for eid, (label, _) in self.labels.items() if label == ref]
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
        raise EntryNotFoundError(ref, path)

    def path_positions(self, leaf_id: str | None) -> list[int]:
        """Positions (in :attr:`order`) from the root to ``leaf_id``, root first. Raises :class:`CycleError`."""
        return self.path_positions_from(self._pos.get(leaf_id, -1) if leaf_id else -1)

    def path_positions_from(self, start: int) -> list[int]:
        """Positions from the root to the entry at position ``start`` (whatever its id, ``""`` too)."""
        if start < 0:
            return []
        leaf_id = self.order[start]["id"]
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
        order = self.order
        return [order[i] for i in self.path_positions(leaf_id)]

    def child_ids(self, entry_id: str | None) -> list[str]:
        """Ids of the direct children of ``entry_id`` (``None``: the roots), in file order."""
        return list(self.children.get(entry_id, ()))

    def tree(self) -> list[TreeNode]:
        """The whole tree as pi's ``getTree`` builds it: roots in file order, children by time."""
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
                    node.children.sort(key=_time_key)
        return roots


_JS_MAX_MS = 8_640_000_000_000_000  # beyond this a JavaScript Date is invalid
_YEAR_MONTH = re.compile(r"^([+-]\d{6}|\d{4})(?:-(\d{2}))?$")


def js_date_ms(value: Any) -> int | None:
    """``new Date(value).getTime()`` as pi computes an entry's time; ``None`` where JavaScript gives ``NaN``.

    Entry timestamps are ISO strings, but a file written by another tool may hold a number
    (milliseconds, as ``docs/compaction.md`` wrongly shows) or ``null``, which JavaScript reads
    as 0. Strings are read as ISO dates, including the year and year-month forms (UTC).
    """
    if isinstance(value, str):
        ms = ms_from_iso(value)
        if ms is None:
            ms = _year_month_ms(value)
        return ms if ms is not None and abs(ms) <= _JS_MAX_MS else None
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        if value != value or abs(value) > _JS_MAX_MS:
            return None
        return int(value)  # TimeClip truncates toward zero
    return None


def _year_month_ms(text: str) -> int | None:
    """The year (``2024``, ``+012024``) and year-month (``2024-05``) forms JavaScript reads as UTC."""
    match = _YEAR_MONTH.match(text.strip())
    if match is None:
        return None
    month = int(match.group(2) or 1)
    if not 1 <= month <= 12:
        return None
    return ms_from_iso(f"{int(match.group(1)):04d}-{month:02d}-01T00:00:00Z")  # None beyond datetime's years


def _time_key(node: TreeNode) -> int:
    ms = js_date_ms(node.entry.get("timestamp"))
    return ms if ms is not None else 0
