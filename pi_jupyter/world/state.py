"""The world at a node, and what moving from one node to another must change.

The world at a node is the fold of the deltas recorded on the path from the root to it: for
each variable and file, the slot after its last change (the latest wins). Moving from node A
to node B concerns two kinds of keys. Those changed between them, on the path from their
common ancestor to A (to be undone) or to B (to be redone): for each, :func:`plan` gives the
slot the world holds now (at A) and the one it must hold at B; a key changed only on A's side
goes back to what it was at the common ancestor (the "before" of its first change there).
And every other key of B's world, the same at both nodes: it is checked, not moved (a user's
cell may have changed it since).

A and B may be nodes of two sessions (a notebook's sessions share one namespace: going back to
a session after ``%pi fork`` moves from where the fork left the world). A fork keeps the ids of
the entries it copies, so their common ancestor is the last world record both paths share;
two sessions that share none are compared by content alone.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .record import Delta, Slot, delta_of, same_slot

UNKNOWN: Any = object()
"""A position nobody knows: a fresh kernel holds none of the recorded variables."""


@dataclass
class Target:
    """One variable or file to bring to its slot at the target node."""

    key: str
    now: Slot
    """What the world says it holds at the current position (``UNKNOWN`` in a fresh kernel)."""
    then: Slot
    """What it must hold at the target."""
    origin: str | None = None
    """The entry whose record gave ``then`` (``None``: the value from before any recorded change)."""
    moved: bool = True
    """False for a key the two nodes hold alike: it is only checked (see the module notes)."""


@dataclass
class Plan:
    """What a move changes: variables, files, and how many untracked commands ran on the paths between."""

    vars: list[Target] = field(default_factory=list)
    files: list[Target] = field(default_factory=list)
    untracked: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.vars or self.files or self.untracked)

    def moving(self) -> bool:
        """True when something differs between the two nodes (not only keys to check)."""
        return bool(self.untracked) or any(t.moved for t in (*self.vars, *self.files))


def deltas(session: Any, ids: Iterable[str]) -> list[Delta]:
    """The deltas recorded on the entries ``ids``, in that order."""
    return [d for _eid, d in recorded(session, ids)]


def recorded(session: Any, ids: Iterable[str]) -> list[tuple[str, Delta]]:
    """``(entry id, delta)`` of the entries among ``ids`` that record a change of the world, in that order."""
    out = []
    for eid in ids:
        d = delta_of(session.raw_entry(eid))
        if d:
            out.append((eid, d))
    return out


def path_ids(session: Any, node: str | None) -> list[str]:
    return session.branch_ids(node) if node is not None else []


_paths: weakref.WeakKeyDictionary[Any, dict[str, list[tuple[str, Delta]]]] = weakref.WeakKeyDictionary()
_PATHS_KEPT = 64


def recorded_to(session: Any, node: str | None) -> list[tuple[str, Delta]]:
    """:func:`recorded` for the path to ``node`` (kept for the last few nodes: a path never changes once written)."""
    if node is None:
        return []
    try:
        kept = _paths.setdefault(session, {})
    except TypeError:  # a session that cannot be weakly referred to: read each time
        return recorded(session, path_ids(session, node))
    found = kept.get(node)
    if found is None:
        found = recorded(session, path_ids(session, node))
        if len(kept) >= _PATHS_KEPT:
            kept.pop(next(iter(kept)))
        kept[node] = found
    return found


def world_at(session: Any, node: str | None) -> tuple[dict[str, Slot], dict[str, Slot]]:
    """The variables and files recorded on the path to ``node``: ``(name -> slot, path -> slot)`` after their last change."""
    vars_: dict[str, Slot] = {}
    files: dict[str, Slot] = {}
    for _eid, d in recorded_to(session, node):
        for c in d.vars:
            vars_[c.name] = c.after
        for f in d.files:
            files[f.path] = f.after
    return vars_, files


def origins_at(session: Any, node: str | None) -> dict[tuple[str, str], str]:
    """``(kind, key) -> the entry that last changed it`` on the path to ``node`` (kind ``vars`` or ``files``)."""
    out: dict[tuple[str, str], str] = {}
    for eid, d in recorded_to(session, node):
        for c in d.vars:
            out["vars", c.name] = eid
        for f in d.files:
            out["files", f.path] = eid
    return out


def plan(session: Any, current: Any, target: str | None, *, files_current: Any = None, source: Any = None) -> Plan:
    """What moving the live world from ``current`` (a node, ``None`` for the root, or :data:`UNKNOWN`) to ``target`` changes.

    ``files_current``: where the files are, when it differs from where the variables are
    (after a restart the files on disk are where the session left them, the variables
    nowhere). ``source``: the session ``current`` is a node of, when it is another one than
    ``session`` (the session whose world the live namespace stood for until now).
    """
    source = session if source is None else source
    files_from = current if files_current is None else files_current
    to = recorded_to(session, target)
    out = Plan()
    out.vars = _targets(_from(source, current), to, kind="vars", untracked=out.untracked)
    out.files = _targets(_from(source, files_from), to, kind="files", untracked=None)
    return out


def _from(source: Any, node: Any) -> list[tuple[str, Delta]] | None:
    return None if node is UNKNOWN else recorded_to(source, node)


def _changes(d: Delta, kind: str) -> list[tuple[str, Slot, Slot]]:
    if kind == "vars":
        return [(c.name, c.before, c.after) for c in d.vars]
    return [(f.path, f.before, f.after) for f in d.files]


def _split(a: list[tuple[str, Delta]], b: list[tuple[str, Delta]]) -> int:
    n = 0
    for (x, _dx), (y, _dy) in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _fold(items: list[tuple[str, Delta]], kind: str, into: dict[str, tuple[Slot, str | None]]) -> None:
    for eid, d in items:
        for key, _before, after in _changes(d, kind):
            into[key] = (after, eid)


def _targets(
    from_path: list[tuple[str, Delta]] | None, to_path: list[tuple[str, Delta]], *, kind: str, untracked: dict[str, int] | None
) -> list[Target]:
    target: dict[str, tuple[Slot, str | None]] = {}
    _fold(to_path, kind, target)
    if from_path is None:  # a fresh kernel: every key of the target's world, from nowhere
        return [Target(k, UNKNOWN, slot, origin) for k, (slot, origin) in target.items()]
    k = _split(from_path, to_path)
    left, right = from_path[k:], to_path[k:]
    if untracked is not None:
        for _eid, d in (*left, *right):
            for u in d.untracked:
                untracked[u] = untracked.get(u, 0) + 1
    touched: dict[str, None] = {}
    for _eid, d in (*left, *right):
        for key, _b, _a in _changes(d, kind):
            touched[key] = None
    # the value at the common ancestor: its last change on the shared path, else the first "before" on either side
    at_fork: dict[str, tuple[Slot, str | None]] = {}
    _fold(to_path[:k], kind, at_fork)
    for _eid, d in (*left, *right):
        for key, before, _a in _changes(d, kind):
            if key not in at_fork:
                at_fork[key] = (before, None)
    now = dict(at_fork)
    _fold(left, kind, now)
    then = dict(at_fork)
    _fold(right, kind, then)
    out = []
    for key in touched:
        moved = not same_slot(now[key][0], then[key][0])
        out.append(Target(key, now[key][0], then[key][0], then[key][1], moved))
    for key, (slot, origin) in target.items():
        if key not in touched:
            out.append(Target(key, slot, slot, origin, moved=False))
    return out
