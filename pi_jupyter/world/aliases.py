"""Names that share objects (``b = a``, ``c = [a]``, a view of an array): saved and restored together.

After ``a = [1, 2]; b = a`` the two names are one object; after ``c = [a]`` they share one. Saved
one by one, a checkout would bring them back as separate copies and ``a is b`` would quietly
become false. So the world groups the names whose object graphs overlap (Kishu's
*co-variables*) and saves each group as one object (a dict of its names): pickling it once
keeps every sharing between them, and a checkout restores the whole group from one load.

An object graph here is the set of ids of the mutable objects a value reaches: containers and
instances the garbage collector follows (``gc.get_referents``), numpy arrays and the arrays
they view. Modules, classes and functions are ends (a function's globals would join
everything). The walk stops after :data:`WALK_LIMIT` objects; what lies beyond is not compared.
Open files found on the way are reported (see :mod:`.handles`): such a value is never pickled.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import compress
from typing import Any

from .handles import is_handle

WALK_LIMIT = 200_000
"""Objects one value's walk visits at most."""

_ENDS = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.FrameType)


@dataclass(frozen=True)
class Graph:
    """What one value reaches: the ids of its mutable objects, and the first open file among them (``None``: none)."""

    ids: frozenset[int]
    handle: Any = None


def _is_frame(obj: Any) -> bool:
    """A pandas object: its columns may share memory with another's, but copy-on-write keeps them apart (pandas 3)."""
    return type(obj).__module__.startswith("pandas.")


def _is_array(obj: Any) -> bool:
    cls = type(obj)
    return cls.__name__ in ("ndarray", "memmap", "matrix") and cls.__module__.startswith("numpy")


def graph(value: Any, limit: int = WALK_LIMIT) -> Graph:
    """The :class:`Graph` of ``value`` (its own id included when it is mutable)."""
    ids: set[int] = set()
    handle = None
    stack = [value]
    visited = 0
    while stack and visited < limit:
        obj = stack.pop()
        key = id(obj)
        if key in ids:
            continue
        visited += 1
        if is_handle(obj):
            ids.add(key)
            handle = handle if handle is not None else obj
            continue  # a file's buffers and decoders are its own
        if _is_array(obj):
            ids.add(key)
            base = getattr(obj, "base", None)
            while base is not None and id(base) not in ids:  # a view shares its base's memory
                ids.add(id(base))
                base = getattr(base, "base", None) if _is_array(base) else None
            if getattr(getattr(obj, "dtype", None), "hasobject", False):
                stack.extend(gc.get_referents(obj))
            continue
        if isinstance(obj, _ENDS) or (_is_frame(obj) and _copy_on_write()):
            if obj is value or not isinstance(obj, _ENDS):
                ids.add(key)
            continue
        if not gc.is_tracked(obj):
            continue  # numbers, strings, tuples of them: nothing in them can change
        ids.add(key)
        found = gc.get_referents(obj)
        if len(found) > 64:
            tracked = list(compress(found, map(gc.is_tracked, found)))
            if len(tracked) < 64:  # mostly numbers or strings: an array among them still counts
                tracked += [x for x in found if _is_array(x) or is_handle(x)]
            found = tracked
        stack.extend(found)
    return Graph(frozenset(ids), handle)


def _copy_on_write() -> bool:
    import sys

    pandas = sys.modules.get("pandas")
    if pandas is None:
        return True
    version = str(getattr(pandas, "__version__", "3"))
    if not version[:1].isdigit() or int(version.split(".")[0]) >= 3:
        return True
    try:
        return bool(pandas.options.mode.copy_on_write is True)
    except AttributeError:
        return False


VIEW_OF = "__pi_world_view_of__"
"""In a saved group: an array that is a view of another name's array, kept as where it looks rather than as a copy."""


def pack_views(together: dict[str, Any]) -> dict[str, Any]:
    """A group's names as they are saved: a numpy view of another name's array is kept as where it looks in it.

    Pickling copies a view's data, so it would come back as an array of its own (``view.base
    is arr`` false, and writing through it would no longer change ``arr``). The view is
    saved as its offset, shape, strides and dtype in the other name's array, and made again
    from it (:func:`unpack_views`).
    """
    roots = {id(v): n for n, v in together.items() if _is_array(v) and v.base is None}
    out = dict(together)
    for name, value in together.items():
        if not _is_array(value) or value.base is None or value.dtype.fields is not None or value.dtype.hasobject:
            continue
        root = value.base
        while _is_array(root) and root.base is not None:
            root = root.base
        owner = roots.get(id(root))
        if owner is None or owner == name:
            continue
        offset = value.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        out[name] = {
            VIEW_OF: owner, "offset": offset, "shape": list(value.shape), "strides": list(value.strides),
            "dtype": value.dtype.str, "writeable": bool(value.flags.writeable),
        }  # fmt: skip
    return out


def unpack_views(loaded: Any) -> Any:
    """A saved group with its views made again on the arrays they look into (see :func:`pack_views`)."""
    if not isinstance(loaded, dict):
        return loaded
    for name, value in list(loaded.items()):
        if isinstance(value, dict) and isinstance(value.get(VIEW_OF), str) and _is_array(loaded.get(value[VIEW_OF])):
            import numpy as np

            view = np.ndarray(
                tuple(value["shape"]), dtype=np.dtype(value["dtype"]), buffer=loaded[value[VIEW_OF]],
                offset=int(value["offset"]), strides=tuple(value["strides"]),
            )  # fmt: skip
            if not value.get("writeable", True):
                view.flags.writeable = False
            loaded[name] = view
    return loaded


def groups(graphs: Mapping[str, Graph]) -> list[list[str]]:
    """The names whose graphs overlap, joined (each name in exactly one group; names sorted within a group)."""
    parent = {name: name for name in graphs}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    owner: dict[int, str] = {}
    for name, g in graphs.items():
        for key in g.ids:
            other = owner.setdefault(key, name)
            if other != name:
                a, b = root(other), root(name)
                if a != b:
                    parent[b] = a
    out: dict[str, list[str]] = {}
    for name in graphs:
        out.setdefault(root(name), []).append(name)
    return [sorted(g) for g in out.values()]


class Index:
    """For the names of a live namespace the world saved: their graphs, and which names reach each object id.

    ``parent``: the index this one starts as (a grid branch's namespace starts as the
    notebook's); it is read, never changed, and a name this index sets or drops hides its entry there.
    """

    def __init__(self, parent: Index | None = None) -> None:
        self.parent = parent
        self.graphs: dict[str, Graph] = {}
        self._owners: dict[int, set[str]] = {}
        self._hidden: set[str] = set()

    def get(self, name: str) -> Graph | None:
        """The graph ``name`` reached when the world last saw it."""
        if name in self.graphs:
            return self.graphs[name]
        if self.parent is not None and name not in self._hidden:
            return self.parent.get(name)
        return None

    def put(self, name: str, g: Graph) -> None:
        """``name`` now reaches ``g``."""
        self.drop(name)
        self.graphs[name] = g
        for key in g.ids:
            self._owners.setdefault(key, set()).add(name)

    def drop(self, name: str) -> None:
        """``name`` reaches nothing the world knows any more."""
        if self.parent is not None:
            self._hidden.add(name)
        old = self.graphs.pop(name, None)
        if old is None:
            return
        for key in old.ids:
            names = self._owners.get(key)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._owners[key]

    def sharing(self, ids: Iterable[int]) -> set[str]:
        """The names whose graphs reach any of ``ids``."""
        out: set[str] = set()
        ids = list(ids)
        for key in ids:
            names = self._owners.get(key)
            if names:
                out |= names
        if self.parent is not None:
            out |= self.parent.sharing(ids) - self._hidden
        return out

    def child(self) -> Index:
        """An index that starts as this one, for a grid branch's namespace (this one is left as it is)."""
        return Index(parent=self)
