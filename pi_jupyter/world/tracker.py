"""What the world knows of a live namespace and project folder, shared by every session that uses them.

A kernel's sessions share one namespace and one folder, so they share one :class:`Tracker`:
for each name, the object the world last saw there and its slot (a value already saved is not
saved again, and a checkout tells the world's objects from the ones the user's own cells made);
which names share objects (:mod:`.aliases`); which names a user's cell may have changed in place
(:attr:`Tracker.dirty`, compared by content before anything trusts them); for each file, the
slot of the content the world last wrote or read there, with its size and time (a file that
kept them was not touched since); and which session's world the namespace and folder now stand
for (:attr:`Tracker.owner`), so moving to another session moves from where the live world really is.
"""

from __future__ import annotations

import os
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .aliases import Graph, Index, graph
from .record import Slot

HELD_MAX = 256
"""Objects a kernel holds for a checkout in the same kernel when they cannot be saved (the oldest are let go)."""
NOT_HELD: Any = object()

Stamp = tuple[int, int, int]
"""A file's modification time (ns), size and inode: while they stay the same, so does its content."""


def stamp(info: os.stat_result) -> Stamp:
    """The :data:`Stamp` of a ``stat`` result."""
    return (info.st_mtime_ns, info.st_size, info.st_ino)


@dataclass
class Tracker:
    """The world's knowledge of a live namespace (name -> id of the object seen there, its slot) and of its files."""

    known: dict[str, tuple[int, Slot]] = field(default_factory=dict)
    busy: int = 0
    """Runs using the namespace now (a checkout waits for them to end)."""
    held: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    """What could not be saved (a connection, a lock, an open file, a value holding a secret), by the token its slot
    names: a checkout in this kernel still brings it back; a new kernel cannot (the slot says why)."""
    running: list[Callable[[], bool]] = field(default_factory=list)
    """Whether each agent that uses the namespace is running now (a notebook's sessions share one namespace)."""
    index: Index = field(default_factory=Index)
    """Which names share objects (see :mod:`.aliases`)."""
    dirty: set[str] = field(default_factory=set)
    """Names a user's cell may have changed in place since the world saw them: compared by content, never trusted."""
    files: dict[str, tuple[Stamp, Slot]] = field(default_factory=dict)
    """Real path -> the stamp and slot of the content the world last wrote, restored or read there."""
    owner: Any = None
    """A weak reference to the world (of one session) whose position the live namespace and files stand for."""
    watching: bool = False
    """True once a notebook's cells are watched for the names they may change (see ``world_cells.watch_cells``)."""

    def in_use(self) -> bool:
        """True while a run uses the namespace: a checkout then would change it under the run's tools."""
        return self.busy > 0 or any(check() for check in list(self.running))

    # ------------------------------------------------------------ held objects
    def hold(self, value: Any) -> str:
        """Keep ``value`` for a checkout in this kernel; returns the token its slot names."""
        for token, held in self.held.items():
            if held is value:  # the same object, seen again (a connection a call names each time)
                self.held.move_to_end(token)
                return token
        token = uuid.uuid4().hex[:16]
        self.held[token] = value
        while len(self.held) > HELD_MAX:
            self.held.popitem(last=False)
        return token

    def held_for(self, slot: Slot) -> Any:
        """What this kernel holds for ``slot`` (:data:`NOT_HELD` when nothing)."""
        token = slot.get("held") if isinstance(slot, dict) else None
        return self.held.get(token, NOT_HELD) if isinstance(token, str) else NOT_HELD

    def hold_as(self, slot: Slot, value: Any) -> None:
        """Hold ``value`` under the token ``slot`` names (a value made again by ``%pi rerun``)."""
        token = slot.get("held") if isinstance(slot, dict) else None
        if isinstance(token, str):
            self.held[token] = value

    # ------------------------------------------------------------ names
    def note(self, name: str, value: Any, slot: Slot, shape: Graph | None = None) -> None:
        """``name`` now holds ``value``, saved as ``slot`` (``shape``: its graph, when already walked)."""
        self.known[name] = (id(value), slot)
        self.index.put(name, shape if shape is not None else graph(value))
        self.dirty.discard(name)

    def forget(self, name: str) -> None:
        """``name`` holds nothing the world saved any more."""
        self.known.pop(name, None)
        self.index.drop(name)
        self.dirty.discard(name)

    def slot_of(self, name: str, value: Any) -> Slot | None:
        """The slot of ``value`` when it is the object the world last saw under ``name`` (and no cell may have changed it since)."""
        seen = self.known.get(name)
        if seen is not None and seen[0] == id(value) and name not in self.dirty:
            return seen[1]
        return None

    def is_seen(self, name: str, value: Any) -> bool:
        """True when ``value`` is the object the world last saw under ``name`` (changed in place or not)."""
        seen = self.known.get(name)
        return seen is not None and seen[0] == id(value)

    def touched(self, names: Iterable[str], namespace: dict[str, Any], called: Iterable[str] = ()) -> None:
        """A user's cell may have changed ``names`` of ``namespace`` in place: they, and the names sharing objects with them, are dirty.

        ``called``: names whose methods the cell called; those whose value was never saved (a
        connection) are dirty too, since no comparison could tell what the call did.
        """
        for name in called:
            seen = self.known.get(name)
            if seen is not None and isinstance(seen[1], dict) and "unsaved" in seen[1]:
                self.dirty.add(name)
        for name in names:
            if name in self.known:
                self.dirty.add(name)
            value = namespace.get(name)
            if value is not None:
                self.dirty |= self.index.sharing(graph(value).ids) & self.known.keys()

    # ------------------------------------------------------------ files
    def stamp_file(self, real: str, info: os.stat_result | None, slot: Slot) -> None:
        """The file at ``real`` (with ``stat`` result ``info``; ``None``: absent) holds ``slot``."""
        if info is None:
            self.files[real] = ((0, -1, 0), slot)
        else:
            self.files[real] = (stamp(info), slot)

    def file_slot(self, real: str) -> Slot | None:
        """The slot of the file at ``real`` when it was not touched since the world last saw it (``NOT_HELD``: unknown)."""
        seen = self.files.get(real)
        if seen is None:
            return NOT_HELD
        try:
            now = stamp(os.stat(real))
        except FileNotFoundError:
            now = (0, -1, 0)
        except OSError:
            return NOT_HELD
        return seen[1] if now == seen[0] else NOT_HELD

    # ------------------------------------------------------------ sessions
    def stands_for(self, world: Any) -> None:
        """The live namespace and files now stand for ``world``'s position."""
        self.owner = weakref.ref(world)

    def standing(self) -> Any:
        """The world whose position the live namespace stands for (``None``: none yet)."""
        return self.owner() if self.owner is not None else None

    def copy(self) -> Tracker:
        """A tracker for another namespace that starts as a copy of this one (a grid's branch)."""
        return Tracker(dict(self.known), held=self.held, index=self.index.child(), dirty=set(self.dirty))
