"""Cut a session tree into units: turns (the default) or single entries (full mode).

A *turn* is a user message with the assistant replies and tool results it caused. Settings
entries (model and thinking changes, labels, names) join the turn they lead into, or the turn
they follow when nothing follows them on one line. Compactions and branch summaries are units
of their own. A unit is always a linear run of entries: it ends where the tree branches, at
the current leaf, and before the next turn, so the units form a tree with the session's shape.
Checkout markers and cell records (dead-end ``custom`` children) are never units; their
children, if another program appended any, hang from their parent.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from ...session.index import TreeNode
from ...session.usage import SPENDING_ENTRY_TYPES
from .. import digest
from ..digest import RawEntry

_SERIALS = itertools.count(1)


@dataclass(slots=True, eq=False)
class Unit:
    """A linear run of entries drawn as one node (before folding)."""

    key: str
    """The id of its first entry (also the node name in the DOT source)."""
    entries: list[RawEntry]
    parent: Unit | None = None
    children: list[Unit] = field(default_factory=list)
    head: RawEntry | None = None
    """The entry that started the turn (a user message), if any."""
    kind: str = "turn"
    """``turn``, ``continuation``, ``compaction``, ``branch_summary``, ``start`` or ``meta``."""
    labels: list[str] = field(default_factory=list)
    on_path: bool = False
    is_leaf: bool = False
    status: str = "ok"
    """``ok``, ``error``, ``aborted`` or ``length`` (the worst stop reason in the unit)."""
    error: str | None = None
    tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    tool_errors: int = 0
    models: list[str] = field(default_factory=list)
    """Models set by ``model_change`` entries in this unit, in order."""
    cell: tuple[str, int | None] | None = None
    turns: int = 0
    """Turns this unit holds (1 for a turn, 0 for a compaction or a settings-only unit)."""
    has_label_entry: bool = False
    serial: int = field(default_factory=lambda: next(_SERIALS))
    """Unique to this unit and its annotations (a cache of drawn nodes keys on it)."""


@dataclass(slots=True)
class UnitTree:
    """The units of one session, with what the graph needs to know about the whole."""

    roots: list[Unit]
    units: list[Unit]
    """Every unit, parents before children."""
    by_entry: dict[str, Unit]
    leaf_unit: Unit | None
    path: list[Unit]
    """Units from the root to the leaf unit."""


def build_units(
    roots: list[TreeNode],
    *,
    full: bool,
    leaf_id: str | None,
    labels: dict[str, str],
    path_ids: set[str],
    cells: dict[str, tuple[str, int | None]],
) -> UnitTree:
    """Cut the tree (``Session.tree()``) into units and annotate each one."""
    out_roots: list[Unit] = []
    units = _cut([(n, None) for n in _visible(roots)], full, leaf_id, out_roots)
    by_entry: dict[str, Unit] = {}
    for unit in units:
        _annotate(unit, labels, path_ids, cells, leaf_id)
        for entry in unit.entries:
            by_entry[entry["id"]] = unit
    tree = UnitTree(out_roots, units, by_entry, None, [])
    _find_leaf(tree)
    return tree


def _cut(starts: list[tuple[TreeNode, Unit | None]], full: bool, leaf_id: str | None, out_roots: list[Unit]) -> list[Unit]:
    """Cut the subtrees starting at ``starts`` (a node and the unit above it) into units, parents before children.

    Each new unit is appended to its parent's children (to ``out_roots`` for a root).
    """
    units: list[Unit] = []
    stack = list(reversed(starts))
    while stack:
        start, parent = stack.pop()
        unit = Unit(key=node_key(start.id), entries=[], parent=parent)
        (parent.children if parent is not None else out_roots).append(unit)
        units.append(unit)
        cur = start
        prelude = True  # only settings entries so far
        while True:
            entry = cur.entry
            unit.entries.append(entry)
            if unit.head is None and digest.is_head(entry):
                unit.head = entry
            if prelude and not digest.is_meta(entry):
                prelude = False
            kids = _visible(cur.children)
            if full or len(kids) != 1 or entry["id"] == leaf_id or entry.get("type") in digest.SOLO_TYPES:
                break
            nxt = kids[0]
            if _starts_unit(nxt, unit, prelude, leaf_id):
                break
            cur = nxt
        for kid in reversed(kids):
            stack.append((kid, unit))
    return units


def _find_leaf(tree: UnitTree) -> None:
    """Set ``tree.leaf_unit`` and ``tree.path`` from the units' ``is_leaf`` flags."""
    tree.leaf_unit = next((u for u in tree.units if u.is_leaf), None)
    path: list[Unit] = []
    cur_unit = tree.leaf_unit
    while cur_unit is not None:
        path.append(cur_unit)
        cur_unit = cur_unit.parent
    path.reverse()
    tree.path = path


def grow_units(
    tree: UnitTree,
    new_entries: list[RawEntry],
    *,
    full: bool,
    leaf_id: str | None,
    labels: dict[str, str],
    path_ids: set[str],
    cells: dict[str, tuple[str, int | None]],
    touched: set[str],
) -> bool:
    """Bring ``tree`` up to date after ``new_entries`` were appended under its leaf; False when it cannot.

    The common case of a session that grows (a turn arrives, a label is set): the entries hang
    below the current leaf, whose unit has no units below it, and the new leaf is among them.
    Only that unit is cut again, together with the new entries, exactly as :func:`build_units`
    would cut it; units holding an entry of ``touched`` (a new label's or cell record's
    target) are annotated again. Anything else (a checkout elsewhere, a new branch inside the
    leaf's unit, an id seen before) returns False, and the caller builds the units anew.
    """
    old = tree.leaf_unit
    if old is None or old.children or old.is_leaf is False:
        return False
    nodes: dict[str, TreeNode] = {}
    for entry in old.entries:
        node = TreeNode(entry, [])
        if nodes:
            above = nodes.get(entry.get("parentId"))  # type: ignore[arg-type]
            if above is None:
                return False  # the unit runs on through a checkout marker: rare, built anew
            above.children.append(node)
        nodes[entry["id"]] = node
    for entry in new_entries:
        eid = entry.get("id")
        if not isinstance(eid, str) or eid in tree.by_entry or eid in nodes:
            return False
        parent = nodes.get(entry.get("parentId"))  # type: ignore[arg-type]
        if parent is None:
            if digest.is_transparent(entry):
                continue  # a cell record or checkout marker elsewhere: no unit changes shape
            return False
        node = nodes[eid] = TreeNode(entry, [])
        parent.children.append(node)
    if leaf_id not in nodes or any(len(_visible(n.children)) > 1 for n in nodes.values()):
        return False
    parent_unit = old.parent
    siblings = parent_unit.children if parent_unit is not None else tree.roots
    at = siblings.index(old)
    del siblings[at]
    fresh = _cut([(nodes[old.entries[0]["id"]], parent_unit)], full, leaf_id, tree.roots)
    siblings.insert(at, siblings.pop())  # the new first unit where the old one was
    index = tree.units.index(old)
    tree.units[index : index + 1] = fresh
    for entry in old.entries:
        del tree.by_entry[entry["id"]]
    for unit in fresh:
        _annotate(unit, labels, path_ids, cells, leaf_id)
        for entry in unit.entries:
            tree.by_entry[entry["id"]] = unit
    again = {id(u): u for eid in touched if (u := tree.by_entry.get(eid)) is not None and u not in fresh}
    for unit in again.values():
        _reset(unit)
        _annotate(unit, labels, path_ids, cells, leaf_id)
    _find_leaf(tree)
    return tree.leaf_unit is not None


def _reset(unit: Unit) -> None:
    """Forget a unit's annotations (before annotating it again), and give it a new serial."""
    unit.labels, unit.models = [], []
    unit.is_leaf = unit.has_label_entry = False
    unit.status, unit.error, unit.cell, unit.kind = "ok", None, None, "turn"
    unit.tokens = unit.tool_calls = unit.tool_errors = unit.turns = 0
    unit.cost = 0.0
    unit.serial = next(_SERIALS)


_UNSAFE = re.compile(r"[\\\x00-\x1f\x7f\ud800-\udfff]")
_PREFIXES = ("id:", "fold:", "sub:", "more:")


def node_key(entry_id: str) -> str:
    """The Graphviz node name for a unit starting at ``entry_id``: the id itself when Graphviz keeps it intact.

    DOT names cannot hold every string (a backslash before the closing quote, control
    characters, a lone surrogate, which is no UTF-8), and a key must never be empty (``""``
    means "none" to the TreeView) nor look like a fold's key (``fold:ID``) or an encoded one;
    such ids get ``id:`` and their UTF-8 bytes in hex (the empty id is ``id:``).
    """
    if entry_id and not _UNSAFE.search(entry_id) and not entry_id.startswith(_PREFIXES):
        return entry_id
    return "id:" + entry_id.encode("utf-8", "surrogatepass").hex()


def entry_of_key(key: str) -> str | None:
    """The entry id a unit's key stands for (the inverse of :func:`node_key`), or ``None``."""
    if not key.startswith("id:"):
        return None if key.startswith(_PREFIXES) or not key else key
    try:
        return bytes.fromhex(key[3:]).decode("utf-8", "surrogatepass")
    except ValueError:
        return None


def _visible(nodes: list[TreeNode]) -> list[TreeNode]:
    """``nodes`` with transparent entries replaced by their own (visible) children, in order."""
    if not any(digest.is_transparent(n.entry) for n in nodes):
        return nodes
    out: list[TreeNode] = []
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if digest.is_transparent(node.entry):
            stack.extend(reversed(node.children))
        else:
            out.append(node)
    return out


def _starts_unit(node: TreeNode, unit: Unit, prelude: bool, leaf_id: str | None) -> bool:
    entry = node.entry
    if entry.get("type") in digest.SOLO_TYPES:
        return True
    if digest.is_head(entry):
        return not prelude
    if digest.is_meta(entry):
        return not prelude and _leads_to_head(node, leaf_id)
    return False  # assistant replies and tool results continue the turn


def _leads_to_head(node: TreeNode, leaf_id: str | None) -> bool:
    """True when a chain of settings entries starting at ``node`` runs, unbranched, into a new turn."""
    cur = node
    for _ in range(10_000):
        if cur.id == leaf_id:
            return False
        kids = _visible(cur.children)
        if len(kids) != 1:
            return False
        nxt = kids[0].entry
        if digest.is_head(nxt):
            return True
        if not digest.is_meta(nxt):
            return False
        cur = kids[0]
    return False


_STATUS_RANK = {"ok": 0, "length": 1, "aborted": 2, "error": 3}


def _annotate(
    unit: Unit,
    labels: dict[str, str],
    path_ids: set[str],
    cells: dict[str, tuple[str, int | None]],
    leaf_id: str | None,
) -> None:
    first = unit.entries[0]
    kind = first.get("type")
    conversation = False
    for entry in unit.entries:
        eid = entry["id"]
        label = labels.get(eid)
        if label:  # pi keeps any truthy value as a label: show a number or a list as text
            unit.labels.append(digest.as_text(label))
        if eid == leaf_id:
            unit.is_leaf = True
        if unit.cell is None:
            unit.cell = cells.get(eid)
        etype = entry.get("type")
        if etype == "model_change":
            unit.models.append(digest.model_ref(entry.get("provider"), entry.get("modelId")))
        elif etype == "label":
            unit.has_label_entry = True
        elif etype == "custom_message":
            conversation = True
        elif etype in SPENDING_ENTRY_TYPES:  # pi 1.x: model calls outside the conversation count too
            tokens, cost, _ = digest.usage(entry)
            unit.tokens += tokens
            unit.cost += cost
        msg = digest.message(entry)
        if msg is None:
            continue
        r = msg.get("role")
        if r == "system":
            continue  # pi 1.x's record of the prompt and tools: a setting, so the session's first node is its start
        conversation = True
        if r == "assistant":
            tokens, cost = digest.usage_brief(msg)
            unit.tokens += tokens
            unit.cost += cost
            unit.tool_calls += len(digest.tool_calls(msg))
            stop = msg.get("stopReason")
            status = stop if stop in ("error", "aborted", "length") else "ok"
            if _STATUS_RANK[status] > _STATUS_RANK[unit.status]:
                unit.status = status
                if status == "error":
                    unit.error = digest.as_text(msg.get("errorMessage") or "error")
        elif r == "toolResult" and msg.get("isError"):
            unit.tool_errors += 1
    unit.on_path = first["id"] in path_ids
    if kind == "compaction":
        unit.kind = "compaction"
    elif kind == "branch_summary":
        unit.kind = "branch_summary"
    elif unit.head is not None:
        unit.kind = "turn"
        unit.turns = 1
    elif conversation:
        unit.kind = "continuation"
    else:
        unit.kind = "start" if unit.parent is None else "meta"


def last_assistant(unit_entries: list[RawEntry]) -> dict[str, Any] | None:
    """The last assistant message among ``unit_entries``."""
    for entry in reversed(unit_entries):
        msg = digest.message(entry)
        if msg is not None and msg.get("role") == "assistant":
            return msg
    return None
