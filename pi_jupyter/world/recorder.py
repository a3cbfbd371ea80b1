"""Recording what a tool call changes: the python tool's variables, the file tools' files.

A :class:`Recorder` is what the agent's tools are handed (``ctx.extra["world"]``): the python
tool wraps each run in :meth:`Recorder.python_call`, the file tools wrap each write in
:meth:`Recorder.file_call`, and ``bash`` reports :meth:`Recorder.untracked`. Each gives back a
:class:`~.record.Delta` that the tool puts in its result's ``details.world``.

The :class:`Tracker` remembers, for each name of the live namespace, which object the world
last saw there and its slot, so a value already saved is not saved again and a checkout can
tell the world's objects from the ones the user's own cells made.
"""

from __future__ import annotations

import copy
import os
import shutil
import stat
import tempfile
import threading
import types
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .files_seen import Watch
from .names import candidates, world_name
from .record import Delta, FileChange, Slot, VarChange, is_ref
from .store import Store, StoreError
from .values import DEFAULT_LIMIT, Unsaved, describe, serialize

FILE_LIMIT = 64 * 1024 * 1024
SECRET_SCAN_LIMIT = 1024 * 1024
"""Values (their stream, and each array of text or bytes) and files up to this size are read for secrets before they are saved."""
HELD_MAX = 256
"""Objects a kernel holds for a checkout in the same kernel when they cannot be saved (the oldest are let go)."""
NOT_HELD: Any = object()


@dataclass
class Tracker:
    """The world's knowledge of a live namespace: name -> (id of the object seen there, its slot)."""

    known: dict[str, tuple[int, Slot]] = field(default_factory=dict)
    busy: int = 0
    """Runs using the namespace now (a checkout waits for them to end)."""
    held: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    """What could not be saved (a connection, a lock, a value holding a secret), by the token its slot names: a checkout in
    this kernel still brings it back; a new kernel cannot (the slot says why)."""
    running: list[Callable[[], bool]] = field(default_factory=list)
    """Whether each agent that uses the namespace is running now (a notebook's sessions share one namespace)."""

    def in_use(self) -> bool:
        """True while a run uses the namespace: a checkout then would change it under the run's tools."""
        return self.busy > 0 or any(check() for check in list(self.running))

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

    def note(self, name: str, value: Any, slot: Slot) -> None:
        """``name`` now holds ``value``, saved as ``slot``."""
        self.known[name] = (id(value), slot)

    def forget(self, name: str) -> None:
        """``name`` holds nothing the world saved any more."""
        self.known.pop(name, None)

    def slot_of(self, name: str, value: Any) -> Slot | None:
        """The slot of ``value`` when it is the object the world last saw under ``name``, else ``None``."""
        seen = self.known.get(name)
        if seen is not None and seen[0] == id(value):
            return seen[1]
        return None

    def copy(self) -> Tracker:
        """A tracker for another namespace that starts as a copy of this one (a grid's branch)."""
        return Tracker(dict(self.known), held=self.held)


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
        self.shared_slots: dict[int, tuple[Any, Slot]] = {}
        """Shared objects and their slots, saved by the first branch that needed one (the dict is the siblings';
        :meth:`World.grid_ended` empties it)."""
        """Ids of objects this namespace shares with others (copied before a change in place when ``isolate``)."""
        self._lock = threading.Lock()

    def branch(self) -> Recorder:
        """A recorder for one branch of a grid: a namespace of its own that starts as a copy of this one.

        Rebinding in the branch never reaches this namespace; an object the branch's code may
        change in place is copied for the branch first (see :mod:`.names`); files the branch
        writes go to a folder of its own (:meth:`redirect`).
        """
        own = dict(self.namespace)
        rec = Recorder(own, self.store, cwd=self.cwd, tracker=self.tracker.copy(), has_secret=self.has_secret, limit=self.limit)
        rec.isolate = True
        rec.shared = {id(v) for v in own.values()}
        rec.shared_slots = self.shared_slots  # siblings save a shared object once between them
        rec._lock = self._lock
        return rec

    def shared_slot(self, value: Any) -> Slot:
        """:meth:`save`, once for all the branches of a grid when ``value`` is an object they share."""
        if id(value) not in self.shared:
            return self.save(value)
        with self._lock:
            held = self.shared_slots.get(id(value))
            if held is not None and held[0] is value:
                return held[1]
            slot = self.save(value)
            self.shared_slots[id(value)] = (value, slot)  # held, so the id cannot name another object meanwhile
            return slot

    # ------------------------------------------------------------ values
    def save(self, value: Any) -> Slot:
        """The slot for ``value``: its ref once stored, a module's name, or why it was not saved."""
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__}
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
        """The slot of a file's current content (``None``: no such file)."""
        try:
            info = os.stat(real_path)
            if not stat.S_ISREG(info.st_mode):  # a pipe would wait for a writer forever; a device never ends
                return {"unsaved": "not a regular file"}
            if info.st_size > FILE_LIMIT:
                return {"unsaved": f"{info.st_size:,} bytes, over the file limit"}
            with open(real_path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return None
        except (IsADirectoryError, PermissionError, OSError) as exc:
            return {"unsaved": f"could not be read: {getattr(exc, 'strerror', None) or exc}"}
        if self.has_secret is not None and len(data) <= SECRET_SCAN_LIMIT and self.has_secret(data.decode("utf-8", "replace")):
            return {"unsaved": "holds a secret, not saved", "held": self.tracker.hold(data)}
        try:
            return self.store.put_file(data)
        except StoreError as exc:
            return {"unsaved": str(exc)}

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
        for name in self.candidates:
            value = self.before[name]
            self.before_what[name] = describe(value)
            slot = recorder.tracker.slot_of(name, value)
            if slot is None:
                slot = recorder.shared_slot(value)  # changed in place: its content before is gone after
                recorder.tracker.note(name, value, slot)
            self.before_slots[name] = slot
            if recorder.isolate and id(value) in recorder.shared:
                ns[name] = self.copied[name] = self._private_copy(value, slot)
        # the files it writes (a grid's branches share the project folder: theirs are not told apart)
        self.files = None if recorder.isolate else Watch(recorder).__enter__()

    def runs_here(self) -> None:
        """The code runs in the calling thread: the files written from it are this call's (other tools run at the same time)."""
        if self.files is not None:
            self.files.runs_here()

    def _private_copy(self, value: Any, slot: Slot) -> Any:
        """A copy of a shared object for this branch alone (from the store when it is there)."""
        rec = self.recorder
        try:
            fresh = rec.store.get_value(slot) if is_ref(slot) else copy.deepcopy(value)
        except Exception:  # noqa: BLE001 - an object that cannot be copied stays shared
            return value
        return fresh

    def finish(self) -> Delta:
        """What the run changed; the tracker learns the new objects."""
        rec = self.recorder
        after = dict(rec.namespace)
        delta = Delta()
        fresh: set[Any] = set()  # saved by this finish: young already
        if self.files is not None:
            self.files.__exit__()
            delta.files = sorted(self.files.changes(), key=lambda f: f.path)
            if self.files.overflow:
                delta.untracked.append("python")  # wrote more files than one call records
        rebound_or_new = {name for name, _id in self.before_ids.items() ^ _ids(after).items()}
        names = sorted(n for n in rebound_or_new | self.candidates if isinstance(n, str) and world_name(n))
        for name in names:
            old = self.before.get(name, _ABSENT)
            new = after.get(name, _ABSENT)
            rebound = new is not self.copied.get(name, old)
            if not rebound and name not in self.candidates:
                continue
            if old is _ABSENT:
                before: Slot = None
            elif name in self.before_slots:
                before = self.before_slots[name]
            else:
                before = rec._known_or_save(name, old)
            if new is _ABSENT:
                rec.tracker.forget(name)
                if before is not None:
                    delta.vars.append(VarChange(name, before, None))
                continue
            after_slot = rec.save(new)
            fresh.add(after_slot if is_ref(after_slot) else None)
            rec.tracker.note(name, new, after_slot)
            rec.shared.discard(id(new))
            if not rebound and is_ref(before) and before == after_slot:
                continue  # named in a changing way, but unchanged
            was = (self.before_what.get(name) or describe(old)) if is_ref(before) else ""
            delta.vars.append(VarChange(name, before, after_slot, describe(new), was))
        # what it saved at its start, or long before (a name's earlier value), may be older than a gc's min age: young again
        rec.store.keep({c.before for c in delta.vars if is_ref(c.before)} - fresh)
        return delta


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


def _ids(namespace: dict[str, Any]) -> dict[str, int]:
    return dict(zip(namespace, map(id, namespace.values()), strict=True))


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()
