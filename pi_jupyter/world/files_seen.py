"""The files a ``python`` call writes, seen through Python's audit events (PEP 578), each kept as it was before.

While a call is recorded, a process-wide audit hook (installed once, idle otherwise) hears
every ``open`` for writing (``open()``, ``Path.write_text``, ``df.to_csv``, ``np.save``,
``plt.savefig``, ``os.open``), ``os.remove``/``unlink``, ``os.rename``/``replace``,
``os.truncate``, ``shutil.copyfile``/``move`` and ``sqlite3.connect``, *before* the operation
runs: the file's content then is saved at once, so a checkout can bring it back, and its
content after is saved when the call ends. The cost is nothing for a call that writes no
file, and the bytes of the files it writes otherwise, whatever the size of the project.

What this does not see: writes made by native code that bypasses Python's I/O (pyarrow's
parquet writer, h5py, a compiled extension), by a subprocess (``os.system``, ``subprocess``,
the ``bash`` tool), or by a thread the code left running after the call. Why not scan the
project for changes instead: a scan by modification time and size of a 10,000-file project
takes 40-100 ms here (``bench/bench_world.py``), twice per call, which is many times the 5%
a recording may add to a call; and a scan finds a changed file only after the change, when
its earlier content is gone.

Paths are followed to where they really are (``os.path.realpath``): a file outside the
project folder, or reached through a link that leads outside it, is not the project's and is
left alone. So are the folders no one restores (``.git``, ``__pycache__``, ``.pi-world``,
virtual environments, ``node_modules``, tool caches) and the session files beside the store.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any

from .record import FileChange, Slot, is_ref

MAX_FILES = 1000
"""Files one call may have recorded; past that, the call counts as one whose effects were not all tracked."""

SKIPPED_PARTS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".pi-world", ".ipynb_checkpoints", ".venv", "venv", "node_modules",
     "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox"}
)  # fmt: skip
"""Folders whose files are never recorded: version control, caches, installed packages, the world's own store."""

_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EVENTS = frozenset({"open", "os.remove", "os.rename", "os.truncate", "shutil.copyfile", "shutil.move", "sqlite3.connect"})

_watches: weakref.WeakSet[Watch] = weakref.WeakSet()  # a call dropped without finishing (cancelled) lets go of its watch
_lock = threading.Lock()
_local = threading.local()
_installed = False


class Watch:
    """The files one call writes under ``recorder.cwd``: their slot before the first change (see the module notes)."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self.root = os.path.realpath(recorder.cwd)
        folder = getattr(recorder.store, "folder", None)
        self.sessions = os.path.realpath(os.path.dirname(folder)) if folder is not None else None
        self.before: dict[str, Slot] = {}
        self.overflow = 0
        self._lock = threading.Lock()

    def __enter__(self) -> Watch:
        _start(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _stop(self)

    def inside(self, path: Any) -> str | None:
        """The real path of ``path`` when it is a file of the project the world keeps, else ``None``."""
        if isinstance(path, int):
            return None  # a file descriptor: opened earlier, or by the call itself
        try:
            real = os.path.realpath(os.fsdecode(os.fspath(path)))
        except (TypeError, ValueError, OSError):
            return None
        if not real.startswith(self.root + os.sep):
            return None
        if SKIPPED_PARTS.intersection(real[len(self.root) + 1 :].split(os.sep)):
            return None
        if self.sessions is not None and self._session_file(real):
            return None  # appended by the agent, never the world's to restore
        return real

    def _session_file(self, real: str) -> bool:
        assert self.sessions is not None
        if self.sessions != self.root and real.startswith(self.sessions + os.sep):
            return True  # a folder of session files (``pi-sessions``) inside the project
        name = os.path.basename(real)
        return os.path.dirname(real) == self.sessions and (name.endswith(".jsonl") or (name.startswith(".") and name.endswith(".tmp")))

    def seen(self, path: Any) -> None:
        """A write of ``path`` is about to happen: keep what the file holds now (once per call)."""
        real = self.inside(path)
        if real is None:
            return
        with self._lock:
            if real in self.before:
                return
            if len(self.before) >= MAX_FILES:
                self.overflow += 1
                return
            self.before[real] = self.recorder.file_slot(real)

    def changes(self) -> list[FileChange]:
        """The files that differ from what they were before the call (``before``, ``after``)."""
        out = []
        for real, before in self.before.items():
            after = self.recorder.file_slot(real)
            if (after == before and is_ref(after)) or (before is None and after is None):
                continue  # rewritten with the same bytes, or made and removed within the call
            out.append(FileChange(self.recorder.relative(real), before, after))
        return out


def _start(watch: Watch) -> None:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)  # cannot be removed: it stays idle while no call is recorded
            _installed = True
        _watches.add(watch)


def _stop(watch: Watch) -> None:
    with _lock:
        _watches.discard(watch)


def _paths(event: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    if event == "open":
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        mode = args[1] if len(args) > 1 else None
        writing = bool(flags & _WRITING) or (isinstance(mode, str) and any(c in mode for c in "wax+"))
        return (args[0],) if writing else ()
    if event in ("os.rename", "shutil.copyfile", "shutil.move"):
        return args[:2] if event != "shutil.copyfile" else args[1:2]
    if event == "sqlite3.connect":
        return args[:1] if args and args[0] not in (":memory:", "", b":memory:") else ()
    return args[:1]  # os.remove, os.truncate


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _watches or event not in _EVENTS or getattr(_local, "busy", False):
        return
    _local.busy = True  # reading the file below opens it: that open is ours, not the call's
    try:
        paths = _paths(event, args)
        for watch in list(_watches):
            for path in paths:
                watch.seen(path)
    except Exception:  # noqa: BLE001 - a hook that raises would make the user's own open() fail
        pass
    finally:
        _local.busy = False
