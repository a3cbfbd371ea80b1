"""What one drawing of a session computes before the layout, kept for the next drawing.

A TreeView redraws its session after every new turn. Most of a drawing's cost is walking the
whole file (the tree, the units, the cell records, the scores); when the session only grew
below its leaf since the last drawing, :class:`GraphCache` reuses that walk: the leaf's unit
is cut again with the new entries (:func:`~pi_jupyter.views.graph.units.grow_units`) and the rest is
kept, so a redraw costs what the new entries and the drawn nodes cost, not the file. Drawn
nodes whose units did not change are reused too. Anything else (a checkout elsewhere, a file
read again, other options) builds everything anew, so a drawing is always what a fresh
:meth:`Session.graph` would give.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...session.report import CycleError
from .. import digest
from ..scores import SCORE_TYPE, scores_by_leaf
from .units import UnitTree, build_units, grow_units

if TYPE_CHECKING:
    from ...session import Session
    from .layout import Shown
    from .nodes import GraphNode


@dataclass
class GraphParts:
    """The inputs of a drawing's layout: units, the leaf, the path, cells, scores, counts."""

    units: UnitTree
    leaf_id: str | None
    path_entries: list[dict[str, Any]]
    problem: str | None
    cells: dict[str, tuple[str, int | None]]
    scores: dict[str, Any]
    entry_count: int
    hidden_count: int
    labels: dict[str, Any]
    scores_seen: int = 0
    """Score entries read so far (drawn nodes are reused only while no new score arrived)."""
    style: tuple[Any, ...] = ()
    """The options a drawn node depends on."""
    drawn: dict[tuple[Any, ...], GraphNode] = field(default_factory=dict)

    def describe(self, shown: Shown, make: Callable[[Shown], GraphNode]) -> GraphNode:
        """The drawn node for ``shown``: a copy of the last one made for the same units, else ``make(shown)``."""
        units = tuple((u.serial, not u.children) for u in shown.units)
        key = (shown.key, shown.kind, shown.on_path, self.scores_seen, self.style, units)
        node = self.drawn.get(key)
        if node is None:
            node = self.drawn[key] = make(shown)
        return copy.copy(node)  # the caller sets its parent, children, marks and search text


class GraphCache:
    """Keeps the last drawing's :class:`GraphParts` of one session (see the module docstring)."""

    def __init__(self) -> None:
        self._parts: GraphParts | None = None
        self._seen: tuple[Any, ...] = ()

    def parts(self, session: Session, options: Any) -> GraphParts:
        """The parts for drawing ``session`` now: grown from the last ones when it only grew, else built anew."""
        entries = session.raw_entries()
        last = self._parts
        known = self._seen
        now = (id(session), options.mode, len(entries), id(entries[-1]) if entries else None)
        grown = None
        if last is not None and known[:2] == now[:2] and 0 < known[2] <= len(entries) and entries[known[2] - 1] is known[4]:
            if known[2] == len(entries) and last.leaf_id == visible_leaf(session):
                return last  # nothing was appended since
            grown = _grow(last, session, options, entries[known[2] :])
        parts = grown or _build(session, options, entries)
        style = (options.mode, options.preview_chars)
        if parts.style != style or len(parts.drawn) > 4 * len(parts.units.units) + 256:
            parts.drawn, parts.style = {}, style  # nodes drawn with other options, or too many kept
        self._parts = parts
        self._seen = (*now, entries[-1] if entries else None)
        return parts


def visible_leaf(session: Session) -> str | None:
    """The leaf, or the first ancestor of it that is drawn (a checkout marker or cell record stands for its parent)."""
    leaf = session.leaf_id
    for _ in range(64):
        entry = digest.lookup(session, leaf) if leaf is not None else None
        if entry is None or not digest.is_transparent(entry):
            return leaf
        parent = entry.get("parentId")
        leaf = parent if isinstance(parent, str) and parent else None
    return leaf


def _path(session: Session, leaf_id: str | None) -> tuple[list[dict[str, Any]], str | None]:
    try:
        return (digest.branch_of(session, leaf_id) if leaf_id is not None else []), None
    except CycleError as exc:
        return [], f"the leaf's path has a parent cycle ({exc})"


def _build(session: Session, options: Any, entries: list[dict[str, Any]]) -> GraphParts:
    cells = digest.cell_records(entries)
    leaf_id = visible_leaf(session)
    path_entries, problem = _path(session, leaf_id)
    labels = dict(session.labels)
    units = build_units(
        session.tree(),
        full=options.mode == "full",
        leaf_id=leaf_id,
        labels=labels,
        path_ids={e["id"] for e in path_entries},
        cells=cells,
    )
    return GraphParts(
        units=units,
        leaf_id=leaf_id,
        path_entries=path_entries,
        problem=problem,
        cells=cells,
        scores=scores_by_leaf(entries),
        entry_count=len(entries),
        hidden_count=sum(1 for e in entries if digest.is_transparent(e)),
        labels=labels,
        scores_seen=sum(1 for e in entries if e.get("customType") == SCORE_TYPE),
    )


def _grow(last: GraphParts, session: Session, options: Any, new: list[dict[str, Any]]) -> GraphParts | None:
    """``last`` brought up to date with the ``new`` entries appended since, or ``None`` when only a full build can."""
    leaf_id = visible_leaf(session)
    path_entries, problem = _path(session, leaf_id)
    if problem is not None or last.problem is not None:
        return None
    labels = dict(session.labels)
    touched = {k for k in labels.keys() | last.labels.keys() if labels.get(k) != last.labels.get(k)}
    fresh_cells = digest.cell_records(new)
    cells = {**last.cells, **fresh_cells}
    touched.update(fresh_cells)
    scored = sum(1 for e in new if e.get("customType") == SCORE_TYPE)
    ok = grow_units(
        last.units,
        new,
        full=options.mode == "full",
        leaf_id=leaf_id,
        labels=labels,
        path_ids={e["id"] for e in path_entries},
        cells=cells,
        touched=touched,
    )
    if not ok:
        return None
    return GraphParts(
        units=last.units,
        leaf_id=leaf_id,
        path_entries=path_entries,
        problem=None,
        cells=cells,
        scores=_merged(last.scores, scores_by_leaf(new)) if scored else last.scores,
        entry_count=last.entry_count + len(new),
        hidden_count=last.hidden_count + sum(1 for e in new if digest.is_transparent(e)),
        labels=labels,
        scores_seen=last.scores_seen + scored,
        drawn=last.drawn,
        style=last.style,
    )


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Scores by leaf, ``new`` after ``old`` (a later score of the same name wins, as in one pass)."""
    out = dict(old)
    for leaf, scores in new.items():
        out[leaf] = {**old.get(leaf, {}), **scores}
    return out
