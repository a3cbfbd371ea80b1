"""Decide what is drawn: fold long linear runs of units and keep the picture under a node budget.

Folding keeps what a reader looks for and folds the rest: roots, branch points and the
first unit of every branch, tips, the current leaf and the few units before it, labelled
units, compactions and branch summaries (always), errors, aborts and model changes (while
the budget allows). A run of at least ``fold_min`` other units in a line becomes one node
that says how many turns it holds. When the picture is still larger than ``max_nodes``,
whole branches off the current path are collapsed into one node each (those without labels
and the largest first), then the middle siblings of crowded branch points are merged.

Anything folded can be expanded again by key: ``fold:ID`` shows a run (a very long run a
chunk at a time), ``sub:ID`` a collapsed branch, ``more:ID`` merged siblings; a plain entry
id keeps the unit holding that entry visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .units import Unit, UnitTree

KEEP_SIBLINGS = 3
"""Collapsed branches kept on each side of a crowded branch point before merging the rest."""


@dataclass(slots=True, eq=False)
class Shown:
    """One drawn node: a unit, or a fold / collapsed branch / merged siblings standing for many."""

    key: str
    kind: str
    units: list[Unit]
    parent: Shown | None = None
    children: list[Shown] = field(default_factory=list)
    on_path: bool = False


@dataclass(slots=True)
class Layout:
    """The drawn nodes (parents before children) and what was folded."""

    nodes: list[Shown]
    roots: list[Shown]
    by_unit: dict[Unit, Shown]
    folded_runs: int = 0
    collapsed_branches: int = 0
    merged: int = 0


def plan(
    tree: UnitTree,
    *,
    fold: bool,
    fold_min: int,
    keep_recent: int,
    max_nodes: int,
    expand: set[str],
) -> Layout:
    """Fold ``tree`` for drawing (see the module docstring for the rules)."""
    # units and drawn nodes are compared by identity (eq=False): they key sets and dicts themselves
    keep = {tree.by_entry[k] for k in expand if k in tree.by_entry}
    keep.update(tree.path[max(0, len(tree.path) - keep_recent - 1) :])
    chunk = max(fold_min, max_nodes // 4, 1)
    runs = _runs(tree, fold_min, keep, expand, chunk, soft=True) if fold else []
    layout = _assemble(tree, runs, {}, set())
    if fold and len(layout.nodes) > max_nodes:
        runs = _runs(tree, fold_min, keep, expand, chunk, soft=False)
        layout = _assemble(tree, runs, {}, set())
    collapsed: dict[Unit, Shown] = {}
    if len(layout.nodes) > max_nodes:
        collapsed = _collapse_branches(tree, layout, max_nodes, expand)
        layout = _assemble(tree, runs, collapsed, set())
    if len(layout.nodes) > max_nodes:
        before = runs
        runs, deep = _fold_path(tree, runs, layout, keep, expand, chunk, max_nodes)
        layout = _assemble(tree, runs, collapsed, deep)
        if len(layout.nodes) > max_nodes:
            # still too many (hundreds of compactions or labels on the path): fold the older of
            # those too; the recent ones, the leaf, the units before it and what was asked for stay
            runs, deep = _fold_path(tree, before, _assemble(tree, before, collapsed, set()), keep, expand, chunk, max_nodes, strict=True)
            layout = _assemble(tree, runs, collapsed, deep)
    layout.folded_runs = sum(1 for n in layout.nodes if n.kind == "fold")
    layout.collapsed_branches = sum(1 for n in layout.nodes if n.kind == "sub")
    layout.merged = sum(_heads(n) for n in layout.nodes if n.kind == "more")
    return layout


def _heads(node: Shown) -> int:
    """Units in ``node`` whose parent is outside it: the branches it stands for."""
    inside = set(node.units)
    return sum(1 for u in node.units if u.parent is None or u.parent not in inside)


def _pinned(unit: Unit, keep: set[Unit], soft: bool) -> bool:
    if unit.parent is None or len(unit.children) != 1 or len(unit.parent.children) != 1:
        return True
    if unit.is_leaf or unit.labels or unit.kind in ("compaction", "branch_summary") or unit in keep:
        return True
    return soft and (unit.status != "ok" or bool(unit.models))


def _runs(tree: UnitTree, fold_min: int, keep: set[Unit], expand: set[str], chunk: int, *, soft: bool) -> list[list[Unit]]:
    pinned = {u for u in tree.units if _pinned(u, keep, soft)}
    runs: list[list[Unit]] = []
    for unit in tree.units:
        if unit in pinned or (unit.parent is not None and unit.parent not in pinned):
            continue  # not the first unit of a run
        run = [unit]
        cur = unit
        while len(cur.children) == 1 and cur.children[0] not in pinned:
            cur = cur.children[0]
            run.append(cur)
        while run and "fold:" + run[0].key in expand:
            run = run[chunk:]  # an expanded run shows a chunk; the rest stays folded
        if len(run) >= max(2, fold_min):
            runs.append(run)
    return runs


def _assemble(tree: UnitTree, runs: list[list[Unit]], collapsed: dict[Unit, Shown], deep: set[str]) -> Layout:
    """Build the drawn tree.

    ``collapsed``: unit -> the node standing for the branch it starts; ``deep``: keys of
    folds along the current path that also hold the side branches leaving them.
    """
    run_of: dict[Unit, Shown] = {}
    for run in runs:
        node = Shown(key="fold:" + run[0].key, kind="fold", units=[], on_path=run[0].on_path)
        for unit in run:
            run_of[unit] = node
    for node in collapsed.values():
        node.units.clear()
        node.children.clear()
        node.parent = None
    nodes: list[Shown] = []
    roots: list[Shown] = []
    by_unit: dict[Unit, Shown] = {}
    placed: set[Shown] = set()
    for unit in tree.units:
        parent_shown = by_unit.get(unit.parent) if unit.parent is not None else None
        if parent_shown is not None and (parent_shown.kind in ("sub", "more") or (parent_shown.key in deep and not unit.on_path)):
            node = parent_shown  # inside a collapsed branch, or a side branch of a folded stretch of the path
        else:
            node = collapsed.get(unit) or run_of.get(unit) or Shown(key=unit.key, kind=unit.kind, units=[], on_path=unit.on_path)
        node.units.append(unit)
        by_unit[unit] = node
        if node in placed:
            continue
        placed.add(node)
        node.parent = parent_shown
        (parent_shown.children if parent_shown is not None else roots).append(node)
        nodes.append(node)
    return Layout(nodes, roots, by_unit)


def _sizes(layout: Layout) -> dict[Shown, int]:
    """Drawn node -> how many nodes its subtree draws."""
    size: dict[Shown, int] = {}
    for node in reversed(layout.nodes):
        size[node] = 1 + sum(size[c] for c in node.children)
    return size


def _collapse_branches(tree: UnitTree, layout: Layout, max_nodes: int, expand: set[str]) -> dict[Unit, Shown]:
    """Collapse branches off the current path (then merge crowded siblings) until the picture fits.

    Returns unit -> the node standing for the branch that unit starts.
    """
    size = _sizes(layout)
    labelled: dict[Shown, bool] = {}
    for node in reversed(layout.nodes):
        labelled[node] = any(u.labels for u in node.units) or any(labelled[c] for c in node.children)
    candidates = [
        n for n in layout.nodes if not n.on_path and (n.parent is None or n.parent.on_path) and "sub:" + n.units[0].key not in expand
    ]
    candidates.sort(key=lambda n: (labelled[n], -size[n]))
    total = len(layout.nodes)
    collapsed: dict[Unit, Shown] = {}
    for node in candidates:
        if total <= max_nodes:
            break
        if size[node] > 1:
            first = node.units[0]
            collapsed[first] = Shown(key="sub:" + first.key, kind="sub", units=[])
            total -= size[node] - 1
    if total > max_nodes:
        branch_points: list[tuple[Unit | None, list[Unit]]] = [(u, u.children) for u in tree.path if len(u.children) > 1]
        branch_points.append((None, tree.roots))
        branch_points.sort(key=lambda pair: -len(pair[1]))
        for parent, kids in branch_points:
            if total <= max_nodes:
                break
            off = [k for k in kids if not k.on_path]
            middle = off[KEEP_SIBLINGS:-KEEP_SIBLINGS] if len(off) > 2 * KEEP_SIBLINGS + 1 else []
            key = "more:" + (parent.key if parent is not None else "")
            if len(middle) < 2 or key in expand:
                continue
            node = Shown(key=key, kind="more", units=[])
            for kid in middle:
                old = collapsed.get(kid)
                total -= 1 if old is not None else size.get(layout.by_unit[kid], 1)
                collapsed[kid] = node
            total += 1
    return collapsed


def _fold_path(
    tree: UnitTree,
    runs: list[list[Unit]],
    layout: Layout,
    keep: set[Unit],
    expand: set[str],
    chunk: int,
    max_nodes: int,
    strict: bool = False,
) -> tuple[list[list[Unit]], set[str]]:
    """Fold stretches of the current path, side branches and all, oldest first, until the picture fits.

    Only the root, the leaf and the units kept before it, labelled units, compactions and
    branch summaries stay (with ``strict``, only the most recent ``max_nodes // 4`` of those);
    branch points in between go into the folds.
    """
    size = _sizes(layout)
    marked = [u for u in tree.path if u.labels or u.kind in ("compaction", "branch_summary")]
    if strict:
        marked = marked[len(marked) - max_nodes // 4 :] if len(marked) > max_nodes // 4 else marked
    marked_set = set(marked)
    stretches: list[list[Unit]] = []
    current: list[Unit] = []
    for unit in tree.path:
        pinned = unit.parent is None or unit.is_leaf or unit in keep or unit in marked_set
        if pinned:
            stretches.append(current)
            current = []
        else:
            current.append(unit)
    stretches.append(current)
    total = len(layout.nodes)
    chosen: list[list[Unit]] = []
    for run in stretches:
        while run and "fold:" + run[0].key in expand:
            run = run[chunk:]
        if total <= max_nodes:
            break
        if not run:
            continue
        drawn = {layout.by_unit[u] for u in run}
        side = {layout.by_unit[c] for u in run for c in u.children if not c.on_path}
        saving = len(drawn) + sum(size[s] for s in side) - 1
        if saving >= 1:
            chosen.append(run)
            total -= saving
    taken = {u for run in chosen for u in run}
    kept_runs = [r for r in runs if not any(u in taken for u in r)]
    return kept_runs + chosen, {"fold:" + r[0].key for r in chosen}
