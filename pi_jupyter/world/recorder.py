"""Recording what a tool call changes: the python tool's variables, the file tools' files.

A :class:`Recorder` is what the agent's tools are handed (``ctx.extra["world"]``): the python
tool wraps each run in :meth:`Recorder.python_call`, the file tools wrap each write in
:meth:`Recorder.file_call`, and ``bash`` reports :meth:`Recorder.untracked`. Each gives back a
:class:`~.record.Delta` that the tool puts in its result's ``details.world``.

What the world knows of the live namespace is its :class:`~.tracker.Tracker`. Names whose objects
are shared (``b = a``) are saved together as one group (:mod:`.aliases`), so a checkout keeps
``a is b``; a change made in place through one of them (``a.append(3)``) is recorded for both.
Open files are kept as handles, never read (:mod:`.handles`).
"""

from __future__ import annotations

import copy
import os
import shutil
import stat
import tempfile
import threading
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from . import handles
from .aliases import Graph, graph, groups, pack_views
from .files_seen import Watch
from .names import candidates, world_name
from .record import Delta, FileChange, Slot, VarChange, is_ref, same_slot, slot_refs
from .store import Store, StoreError
from .tracker import HELD_MAX, NOT_HELD, Tracker
from .values import DEFAULT_LIMIT, Unsaved, describe, serialize

__all__ = ["FILE_LIMIT", "HELD_MAX", "NOT_HELD", "SECRET_SCAN_LIMIT", "FileCall", "PythonCall", "Recorder", "Tracker"]

FILE_LIMIT = 64 * 1024 * 1024
SECRET_SCAN_LIMIT = 1024 * 1024
"""Values (their stream, and each array of text or bytes) and files up to this size are read for secrets before they are saved."""


class Recorder:
    """Records the changes of tool calls on ``namespace`` (variables) and under ``cwd`` (files) into ``store``.

    ``has_secret(text)``: True when ``text`` holds a secret (the agent's redaction rules); such
    a value is not saved (its slot says so). ``limit``: the largest value saved, in bytes.
    """

    def __init__(
        self,
        namespace: dict[str, Any],
        store: Store,
        *,
        cwd: str,
        tracker: Tracker | None = None,
        has_secret: Callable[[str], bool] | None = None,
        limit: int = DEFAULT_LIMIT,
        isolate: bool = False,
    ) -> None:
        self.namespace = namespace
        self.store = store
        self.cwd = os.path.abspath(cwd)
        self.tracker = tracker or Tracker()
        self.has_secret = has_secret
        self.limit = limit
        self.isolate = isolate
        """A branch of a grid: objects the code may change in place are copied first, so siblings keep theirs."""
        self.overlay: str | None = None
        """A branch's folder for the files it writes (see :meth:`redirect`)."""
        self.shared: set[int] = set()
        """Ids of objects this namespace shares with others (copied before a change in place when ``isolate``)."""
        self.shared_slots: dict[int, tuple[Any, Slot]] = {}
        """Shared objects and their slots, saved by the first branch that needed one (the dict is the siblings';
        :meth:`World.grid_ended` empties it)."""
        self._lock = threading.Lock()

    def branch(self) -> Recorder:
        """A recorder for one branch of a grid: a namespace of its own that starts as a copy of this one.

        Rebinding in the branch never reaches this namespace; an object the branch's code may
        change in place is copied for the branch first (see :mod:`.names`); files the branch
        writes go to a folder of its own (:meth:`redirect`).
        """
        own = dict(self.namespace)
        for name, value in own.items():  # a function defined in the notebook runs in the branch's own globals
            if isinstance(value, types.FunctionType) and value.__globals__ is self.namespace:
                own[name] = _in_globals(value, own)
        rec = Recorder(own, self.store, cwd=self.cwd, tracker=self.tracker.copy(), has_secret=self.has_secret, limit=self.limit)
        rec.isolate = True
        rec.shared = {id(v) for v in own.values()}
        rec.shared_slots = self.shared_slots  # siblings save a shared object once between them
        rec._lock = self._lock
        return rec

    def shared_slot(self, value: Any, shape: Graph | None = None) -> Slot:
        """:meth:`save`, once for all the branches of a grid when ``value`` is an object they share."""
        if id(value) not in self.shared:
            return self.save(value, shape)
        with self._lock:
            held = self.shared_slots.get(id(value))
            if held is not None and held[0] is value:
                return held[1]
            slot = self.save(value, shape)
            self.shared_slots[id(value)] = (value, slot)  # held, so the id cannot name another object meanwhile
            return slot

    # ------------------------------------------------------------ values
    def save(self, value: Any, shape: Graph | None = None) -> Slot:
        """The slot for ``value``: its ref once stored, a module's name, a handle's description, or why it was not saved.

        ``shape``: the value's graph when already walked (an open file inside it means it is never pickled).
        """
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__}
        if handles.is_handle(value):
            return handles.slot(value, self.cwd, self.tracker.hold)
        shape = shape if shape is not None else graph(value)
        if shape.handle is not None:
            return handles.holding(value, shape.handle, self.tracker.hold)
        try:
            ser = serialize(value, self.limit)
        except Unsaved as exc:
            if exc.big:
                return {"unsaved": str(exc)}  # not held: holding it would keep that much memory
            return {"unsaved": str(exc), "held": self.tracker.hold(value)}
        if self.has_secret is not None:  # the stream's strings, and arrays of text or bytes (see Serialized.secret_text)
            text = value if type(value) is str else ser.secret_text(SECRET_SCAN_LIMIT)
            if text and self.has_secret(text):
                return {"unsaved": f"{describe(value)}: holds a secret, not saved", "held": self.tracker.hold(value)}
        try:
            return self.store.put_value(ser)
        except StoreError as exc:
            return {"unsaved": str(exc)}

    def save_names(self, values: Mapping[str, Any], shapes: Mapping[str, Graph] | None = None) -> dict[str, tuple[Slot, Graph]]:
        """The slots of several names at once: the names whose objects overlap are saved as one group (see :mod:`.aliases`).

        Returns ``name -> (slot, graph)``. A group's object is a dict of its names, pickled
        once, so the sharing between them comes back with it. A group that cannot be saved
        is held here name by name (the very objects, so they stay one in this kernel).
        """
        shapes = {n: (shapes or {}).get(n) or graph(v) for n, v in values.items()}
        out: dict[str, tuple[Slot, Graph]] = {}
        for names in groups(shapes):
            if len(names) == 1 or any(isinstance(values[n], types.ModuleType) for n in names):
                for n in names:
                    out[n] = (self.shared_slot(values[n], shapes[n]), shapes[n])
                continue
            held = next((shapes[n].handle for n in names if shapes[n].handle is not None), None)
            together = pack_views({n: values[n] for n in names})
            slot = self.save(together, Graph(frozenset(), held))
            if is_ref(slot):
                for n in names:
                    out[n] = ({"group": slot, "name": n}, shapes[n])
                continue
            why = str(slot.get("unsaved", "not saved")) if isinstance(slot, dict) else "not saved"
            for n in names:
                one = self.save(values[n], shapes[n])
                if is_ref(one):  # it alone could be saved, but not without the others it shares objects with
                    one = {"unsaved": f"shares objects with {', '.join(m for m in names if m != n)} ({why})"}
                if isinstance(one, dict) and "held" not in one and "module" not in one and not one.get("handle"):
                    one = {**one, "held": self.tracker.hold(values[n])}
                out[n] = (one, shapes[n])
        return out

    def sharing(self, namespace: Mapping[str, Any], shapes: Mapping[str, Graph]) -> dict[str, Graph]:
        """Names the world saved that share objects with ``shapes`` (and still hold what it saw): they change with them."""
        found: dict[str, Graph] = {}
        todo = list(shapes.values())
        while todo:
            ids: set[int] = set()
            for g in todo:
                ids |= g.ids
            todo = []
            for name in self.tracker.index.sharing(ids):
                if name in shapes or name in found or name not in namespace:
                    continue
                value = namespace[name]
                if not self.tracker.is_seen(name, value):
                    continue  # the user rebound it: theirs
                found[name] = graph(value)
                todo.append(found[name])
        return found

    def _known_or_save(self, name: str, value: Any) -> Slot:
        slot = self.tracker.slot_of(name, value)
        return slot if slot is not None else self.save(value)

    # ------------------------------------------------------------ python
    def python_call(self, namespace: dict[str, Any], code: str) -> PythonCall | None:
        """A recording of one run of ``code`` in ``namespace`` (``None`` when that is not this recorder's namespace)."""
        if namespace is not self.namespace:
            return None
        return PythonCall(self, code)

    # ------------------------------------------------------------ files
    def relative(self, real_path: str) -> str:
        """A path as the record keeps it: relative to the project folder, ``/``-separated (absolute outside it)."""
        rel = os.path.relpath(real_path, self.cwd)
        if rel.startswith(".."):
            return real_path.replace(os.sep, "/")
        return rel.replace(os.sep, "/")

    def file_call(self, real_path: str) -> FileCall:
        """A recording of one write of ``real_path`` (read before and after)."""
        return FileCall(self, real_path)

    def file_slot(self, real_path: str) -> Slot:
        """The slot of a file's current content (``None``: no such file); the tracker remembers it with the file's stamp."""
        try:
            info = os.stat(real_path)
            if not stat.S_ISREG(info.st_mode):  # a pipe would wait for a writer forever; a device never ends
                return {"unsaved": "not a regular file"}
            if info.st_size > FILE_LIMIT:
                return {"unsaved": f"{info.st_size:,} bytes, over the file limit"}
            with open(real_path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            self.tracker.stamp_file(os.path.realpath(real_path), None, None)
            return None
        except (IsADirectoryError, PermissionError, OSError) as exc:
            return {"unsaved": f"could not be read: {getattr(exc, 'strerror', None) or exc}"}
        if self.has_secret is not None and len(data) <= SECRET_SCAN_LIMIT and self.has_secret(data.decode("utf-8", "replace")):
            slot: Slot = {"unsaved": "holds a secret, not saved", "held": self.tracker.hold(data)}
        else:
            try:
                slot = self.store.put_file(data)
            except StoreError as exc:
                return {"unsaved": str(exc)}
        if len(data) == info.st_size and not self.isolate:
            self.tracker.stamp_file(os.path.realpath(real_path), info, slot)
        return slot

    def redirect(self, real_path: str, access: str) -> str:
        """The path a file tool opens for ``real_path``: in a branch of a grid, the branch's own copy.

        A branch writes into a folder of its own (the file is copied there first), and reads
        its own copy once it has one; other branches and the notebook see the project folder
        unchanged. Outside a grid, and for paths outside the project folder, the path itself.
        """
        if not self.isolate:
            return real_path
        rel = os.path.relpath(real_path, self.cwd)
        if rel.startswith("..") or os.path.isabs(rel):
            return real_path
        if self.overlay is None:
            self.overlay = tempfile.mkdtemp(prefix="pi-world-branch-")
            weakref.finalize(self, shutil.rmtree, self.overlay, True)
        shadow = os.path.join(self.overlay, rel)
        if access != "write":
            return shadow if os.path.isfile(shadow) else real_path
        if not os.path.lexists(shadow):
            os.makedirs(os.path.dirname(shadow), exist_ok=True)
            if os.path.isfile(real_path):
                shutil.copyfile(real_path, shadow)
        return shadow

    def untracked(self, kind: str) -> Delta:
        """A call whose effects the world cannot follow (``bash``)."""
        return Delta(untracked=[kind])


class PythonCall:
    """Before and after one run of code (see :meth:`Recorder.python_call`)."""

    def __init__(self, recorder: Recorder, code: str) -> None:
        self.recorder = recorder
        ns = recorder.namespace
        # copies at C speed: the objects (kept alive for the "before" of rebound names) and their ids
        self.before = dict(ns)
        self.before_ids = _ids(self.before)
        self.candidates = candidates(code, self.before)
        self.before_slots: dict[str, Slot] = {}
        self.before_what: dict[str, str] = {}  # described now: a change in place leaves nothing to describe after
        self.copied: dict[str, Any] = {}
        tracker = recorder.tracker
        unknown = {}
        # the names that share an object with one the code may change change with it: their content before is kept too
        sharing = recorder.sharing(self.before, {n: graph(self.before[n]) for n in self.candidates}) if tracker.known else {}
        for name in [*self.candidates, *sharing]:
            self.before_what[name] = describe(self.before[name])
            slot = tracker.slot_of(name, self.before[name])
            if slot is None:
                unknown[name] = self.before[name]
            else:
                self.before_slots[name] = slot
        if unknown:  # changed in place: its content before is gone after (saved together when they share objects)
            for name, (slot, shape) in recorder.save_names(unknown).items():
                self.before_slots[name] = slot
                tracker.note(name, unknown[name], slot, shape)
        if recorder.isolate:
            self._isolate(ns)
        # the files it writes (a grid's branches share the project folder: theirs are not told apart)
        self.files = None if recorder.isolate else Watch(recorder).__enter__()
        self.after: dict[str, Any] | None = None

    def _isolate(self, ns: dict[str, Any]) -> None:
        """In a branch of a grid: what the code may change in place becomes the branch's own copy (one copy for names that share)."""
        rec = self.recorder
        shared = {n: ns[n] for n in self.candidates if id(ns[n]) in rec.shared}
        if not shared:
            return
        for name in rec.sharing(ns, {n: graph(v) for n, v in shared.items()}):
            if id(ns[name]) in rec.shared:
                shared[name] = ns[name]
        try:
            fresh = copy.deepcopy(shared)  # from the live objects, never a saved copy that may be older; one memo keeps sharing
        except Exception:  # noqa: BLE001 - objects that cannot be copied stay shared
            return
        for name, value in fresh.items():
            ns[name] = self.copied[name] = value
            slot = self.before_slots.get(name) or rec.tracker.slot_of(name, shared[name])
            if slot is not None:
                rec.tracker.note(name, value, slot)

    def runs_here(self) -> None:
        """The code runs in the calling thread: the files written from it are this call's (other tools run at the same time)."""
        if self.files is not None:
            self.files.runs_here()

    def stop(self) -> None:
        """The code has ended: its files stop being followed and the names it left are taken, here, at once.

        Called in the code's own thread (the kernel's main thread in a notebook), so a cell run
        next is never the call's; the saving in :meth:`finish` may then happen elsewhere, and
        a value whose pickling hangs holds up no cell.
        """
        if self.after is None:
            self.after = dict(self.recorder.namespace)
            if self.files is not None:
                self.files.__exit__()

    def finish(self) -> Delta:
        """What the run changed; the tracker learns the new objects (:meth:`stop` first, when it was not called)."""
        rec = self.recorder
        tracker = rec.tracker
        self.stop()
        after = self.after if self.after is not None else {}
        delta = Delta()
        if self.files is not None:
            delta.files = sorted(self.files.changes(), key=lambda f: f.path)
            if self.files.overflow:
                delta.untracked.append("python")  # wrote more files than one call records
        rebound_or_new = {name for name, _id in self.before_ids.items() ^ _ids(after).items()}
        names = sorted(n for n in rebound_or_new | self.candidates if isinstance(n, str) and world_name(n))
        present: dict[str, Any] = {}
        gone: list[str] = []
        for name in names:
            old = self.before.get(name, _ABSENT)
            new = after.get(name, _ABSENT)
            rebound = new is not self.copied.get(name, old)
            if not rebound and name not in self.candidates:
                continue
            if new is _ABSENT:
                gone.append(name)
            else:
                present[name] = new
        self._save_befores([*gone, *present])
        for name in gone:
            before = self._before(name, self.before.get(name, _ABSENT))
            tracker.forget(name)
            if before is not None:
                delta.vars.append(VarChange(name, before, None))
        shapes = {n: graph(v) for n, v in present.items()}
        through = rec.sharing(after, shapes)  # names that share an object with a changed one changed with it
        shapes.update(through)
        values = {**present, **{n: after[n] for n in through}}
        saved = rec.save_names(values, shapes) if values else {}
        fresh: set[Any] = set()  # saved by this finish: young already
        for name in sorted(values):
            after_slot, shape = saved[name]
            old = self.before.get(name, _ABSENT)
            new = values[name]
            before = None if old is _ABSENT else self._before(name, old)
            fresh.update(slot_refs(after_slot))
            tracker.note(name, new, after_slot, shape)
            rec.shared.discard(id(new))
            rebound = name in present and new is not self.copied.get(name, old)
            if not rebound and same_slot(before, after_slot):
                continue  # named in a changing way (or sharing with a changed name), but unchanged
            was = (self.before_what.get(name) or describe(old)) if slot_refs(before) else ""
            delta.vars.append(VarChange(name, before, after_slot, describe(new), was))
        # what it saved at its start, or long before (a name's earlier value), may be older than a gc's min age: young again
        rec.store.keep({r for c in delta.vars for r in slot_refs(c.before)} - fresh)
        return delta

    def _before(self, name: str, old: Any) -> Slot:
        if name in self.before_slots:
            return self.before_slots[name]
        return self.recorder._known_or_save(name, old)

    def _save_befores(self, names: list[str]) -> None:
        """The values rebound or deleted names had, saved together where they shared objects (``a is b`` before the call too)."""
        tracker = self.recorder.tracker
        olds = {}
        for name in names:
            old = self.before.get(name, _ABSENT)
            if old is not _ABSENT and name not in self.before_slots and tracker.slot_of(name, old) is None:
                olds[name] = old
        if olds:
            for name, (slot, _shape) in self.recorder.save_names(olds).items():
                self.before_slots[name] = slot


class FileCall:
    """Before and after one write of a file (see :meth:`Recorder.file_call`)."""

    def __init__(self, recorder: Recorder, real_path: str) -> None:
        self.recorder = recorder
        self.real_path = real_path
        self.before = recorder.file_slot(recorder.redirect(real_path, "read"))

    def finish(self) -> Delta:
        after = self.recorder.file_slot(self.recorder.redirect(self.real_path, "read"))
        if after == self.before and is_ref(after):
            return Delta()
        return Delta(files=[FileChange(self.recorder.relative(self.real_path), self.before, after)])


def _in_globals(fn: types.FunctionType, namespace: dict[str, Any]) -> types.FunctionType:
    """A copy of ``fn`` whose globals are ``namespace`` (its code, defaults, closure and attributes kept)."""
    copy_ = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy_.__kwdefaults__ = fn.__kwdefaults__
    copy_.__qualname__, copy_.__module__, copy_.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    copy_.__annotations__ = dict(getattr(fn, "__annotations__", {}) or {})
    copy_.__dict__.update(fn.__dict__)
    return copy_


def _ids(namespace: dict[str, Any]) -> dict[str, int]:
    return dict(zip(namespace, map(id, namespace.values()), strict=True))


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()
