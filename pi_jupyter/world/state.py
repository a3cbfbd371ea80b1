"""The world at a node, and what moving from one node to another must change.

The world at a node is the fold of the deltas recorded on the path from the root to it: for
each variable and file, the slot after its last change. Moving from node A to node B only
concerns what changed between them: the names and files touched on the path from their
common ancestor to A (to be undone) or to B (to be redone). For each, :func:`plan` gives the
slot the world should hold now (at A) and the one it must hold at B.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .record import Delta, Slot, delta_of

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


@dataclass
class Plan:
    """What a move changes: variables, files, and how many untracked commands ran on the paths between."""

    vars: list[Target] = field(default_factory=list)
    files: list[Target] = field(default_factory=list)
    untracked: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.vars or self.files or self.untracked)


def deltas(session: Any, ids: Iterable[str]) -> list[Delta]:
    """The deltas recorded on the entries ``ids``, in that order."""
    out = []
    for eid in ids:
        entry = session.raw_entry(eid)
        d = delta_of(entry)
        if d:
            out.append(d)
    return out


def path_ids(session: Any, node: str | None) -> list[str]:
    return session.branch_ids(node) if node is not None else []


def world_at(session: Any, node: str | None) -> tuple[dict[str, Slot], dict[str, Slot]]:
    """The variables and files recorded on the path to ``node``: ``(name -> slot, path -> slot)`` after their last change."""
    vars_: dict[str, Slot] = {}
    files: dict[str, Slot] = {}
    for d in deltas(session, path_ids(session, node)):
        for c in d.vars:
            vars_[c.name] = c.after
        for f in d.files:
            files[f.path] = f.after
    return vars_, files


def _split(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def plan(session: Any, current: Any, target: str | None, *, files_current: Any = None) -> Plan:
    """What moving the live world from ``current`` (a node, ``None`` for the root, or :data:`UNKNOWN`) to ``target`` changes.

    ``files_current``: where the files are, when it differs from where the variables are
    (after a restart the files on disk are where the session left them, the variables nowhere).
    """
    files_from = current if files_current is None else files_current
    to_path = path_ids(session, target)
    out = Plan()
    out.vars = _targets(session, current, to_path, kind="vars", untracked=out.untracked)
    out.files = _targets(session, files_from, to_path, kind="files", untracked=None)
    return out


def _changes(d: Delta, kind: str) -> list[tuple[str, Slot, Slot]]:
    if kind == "vars":
        return [(c.name, c.before, c.after) for c in d.vars]
    return [(f.path, f.before, f.after) for f in d.files]


def _targets(session: Any, current: Any, to_path: list[str], *, kind: str, untracked: dict[str, int] | None) -> list[Target]:
    if current is UNKNOWN:
        found: dict[str, Slot] = {}
        for d in deltas(session, to_path):
            for key, _before, after in _changes(d, kind):
                found[key] = after
        return [Target(k, UNKNOWN, v) for k, v in found.items()]
    from_path = path_ids(session, current)
    k = _split(from_path, to_path)
    left = deltas(session, from_path[k:])
    right = deltas(session, to_path[k:])
    if untracked is not None:
        for d in (*left, *right):
            for u in d.untracked:
                untracked[u] = untracked.get(u, 0) + 1
    touched: dict[str, None] = {}
    for d in (*left, *right):
        for key, _b, _a in _changes(d, kind):
            touched[key] = None
    if not touched:
        return []
    # the value at the common ancestor: its last change on the shared path, else the first "before" on either side
    at_fork: dict[str, Slot] = {}
    for d in deltas(session, to_path[:k]):
        for key, _b, after in _changes(d, kind):
            if key in touched:
                at_fork[key] = after
    for d in (*left, *right):
        for key, before, _a in _changes(d, kind):
            at_fork.setdefault(key, before)
    now = dict(at_fork)
    for d in left:
        for key, _b, after in _changes(d, kind):
            now[key] = after
    then = dict(at_fork)
    for d in right:
        for key, _b, after in _changes(d, kind):
            then[key] = after
    return [Target(key, now[key], then[key]) for key in touched]
