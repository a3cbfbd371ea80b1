"""The files a ``python`` call writes, each kept as it was just before the call changed it.

While a call is recorded, Python's own file functions are wrapped: ``open``/``io.open`` for
writing (``open()``, ``Path.write_text``, ``df.to_csv``, ``np.save``, ``plt.savefig``,
``shutil.copy``), ``os.open``, ``os.remove``/``unlink``, ``os.rename``/``replace``,
``os.truncate`` and ``sqlite3.connect``. Before the operation runs, the file's content then is
saved, so a checkout can bring it back; its content after is saved when the call ends. The
originals are put back when no recorded call runs. The cost is nothing for a call that writes
no file, and the bytes of the files it writes otherwise, whatever the size of the project.

Why not Python's audit hooks (PEP 578), which see the same operations from C: a hook cannot
be removed once added, and every audited event of the process then calls it, ``id()`` among
them, about 250 ns each (the world's own recording of a 2,000-name namespace got 0.5 ms
slower per call). Why not scan the project for changes: a scan by modification time and size
of a 10,000-file project takes 40-150 ms here (``bench/bench_world.py``), twice per call,
many times the 5% a recording may add to a call; and a scan finds a changed file only after
the change, when its earlier content is gone.

Only the writes made from the thread the code runs in are the call's (the calls of one
answer run at the same time: the ``write`` tool's file is the write call's). What this does
not see: writes made by native code that bypasses Python's I/O (pyarrow's parquet writer,
h5py, a compiled extension), by a subprocess (``os.system``, ``subprocess``, the ``bash``
tool), through a function a library took from ``os`` before the call (``from os import
remove``), or by a thread the code starts.

Paths are followed to where they really are (``os.path.realpath``): a file outside the
project folder, or reached through a link that leads outside it, is not the project's and is
left alone. So are the folders no one restores (``.git``, ``__pycache__``, ``.pi-world``,
virtual environments, ``node_modules``, tool caches) and the session files beside the store.
"""

from __future__ import annotations

import functools
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

_watches: weakref.WeakSet[Watch] = weakref.WeakSet()  # a call dropped without finishing (cancelled) lets go of its watch
_lock = threading.Lock()
_local = threading.local()
_wrapped: list[tuple[Any, str, Any, Any]] = []
"""``(module, name, original, wrapper)`` while the functions are wrapped."""


class Watch:
    """The files one call writes under ``recorder.cwd``: their slot before the first change (see the module notes)."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self.root = os.path.realpath(recorder.cwd)
        folder = getattr(recorder.store, "folder", None)
        self.sessions = os.path.realpath(os.path.dirname(folder)) if folder is not None else None
        self.before: dict[str, Slot] = {}
        self.threads: set[int] = set()
        """The threads the call's code runs in (:meth:`runs_here`); empty: any thread's writes are the call's."""
        self._checked: set[tuple[str, str | bytes]] = set()
        self.overflow = 0
        self._lock = threading.Lock()

    def __enter__(self) -> Watch:
        _start(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _stop(self)

    def runs_here(self) -> None:
        """The call's code runs in the calling thread: from now on only this thread's writes are the call's.

        The calls of one answer run at the same time, so a ``write`` tool's file must not be
        taken for the ``python`` call's. (A thread the code starts itself is not followed.)
        """
        self.threads.add(threading.get_ident())

    def mine(self) -> bool:
        """True when a write in the current thread belongs to this call."""
        return not self.threads or threading.get_ident() in self.threads

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
        key = (os.getcwd(), path) if isinstance(path, (str, bytes)) else None  # a relative path means another file after a chdir
        if key is not None and key in self._checked:
            return  # written again in the same call: kept already (a loop of appends pays once)
        real = self.inside(path)
        if key is not None:
            self._checked.add(key)
        if real is None or (os.path.lexists(real) and not os.path.isfile(real)):
            return  # not the project's, or not a file (a pipe, a device, a folder): nothing to keep
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
    with _lock:
        if not _wrapped:
            _wrap_all()
        _watches.add(watch)
    weakref.finalize(watch, _released)  # a call dropped without finishing (cancelled) unwraps too


def _released() -> None:
    with _lock:
        if not list(_watches):
            _unwrap_all()


def _stop(watch: Watch) -> None:
    with _lock:
        _watches.discard(watch)
        if not _watches:
            _unwrap_all()


def _seen(*paths: Any) -> None:
    """A write of ``paths`` is about to happen: every watch keeps what they hold now."""
    if getattr(_local, "busy", False):
        return  # reading the file to keep it opens it: that open is the watch's own
    _local.busy = True
    try:
        for watch in list(_watches):
            if watch.mine():
                for path in paths:
                    watch.seen(path)
    except Exception:  # noqa: BLE001 - keeping the file must never stop the user's own write
        pass
    finally:
        _local.busy = False


def _under(folder: Any, path: Any) -> Any:
    """``path`` as it is from the working folder, when it is relative to a folder's descriptor (``shutil.rmtree`` does that)."""
    if not isinstance(folder, int) or not isinstance(path, (str, bytes)) or os.path.isabs(path):
        return path
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{folder}"), os.fsdecode(path))
    except OSError:
        return None  # no /proc (macOS): the file cannot be told, and is not kept


def _writing_mode(mode: Any) -> bool:
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def _wrap_all() -> None:
    import builtins
    import io
    import sqlite3

    opened = builtins.open

    def open_(file: Any, mode: Any = "r", *args: Any, **kwargs: Any) -> Any:
        if _watches and _writing_mode(mode):
            _seen(file)
        return opened(file, mode, *args, **kwargs)

    def make(original: Any, first: int, flag_at: int | None = None) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _watches and (flag_at is None or (len(args) > flag_at and isinstance(args[flag_at], int) and args[flag_at] & _WRITING)):
                folder = kwargs.get("dir_fd", kwargs.get("src_dir_fd"))
                _seen(*(_under(folder, p) for p in args[:first]))
            return original(*args, **kwargs)

        return functools.wraps(original)(wrapper)

    def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        if _watches and database not in (":memory:", b":memory:", ""):
            _seen(database)
        return connect_original(database, *args, **kwargs)

    connect_original = sqlite3.connect
    targets: list[tuple[Any, str, Any]] = [
        (builtins, "open", functools.wraps(opened)(open_)),
        (os, "open", make(os.open, 1, flag_at=1)),
        (os, "remove", make(os.remove, 1)),
        (os, "unlink", make(os.unlink, 1)),
        (os, "rename", make(os.rename, 2)),
        (os, "replace", make(os.replace, 2)),
        (os, "truncate", make(os.truncate, 1)),
        (sqlite3, "connect", functools.wraps(connect_original)(connect)),
    ]
    targets.append((io, "open", targets[0][2]))  # the same function under both names, as Python has it
    shell = sys.modules.get("IPython.core.interactiveshell")
    if shell is not None and getattr(shell, "io_open", None) is opened:
        targets.append((shell, "io_open", targets[0][2]))  # the ``open`` IPython puts in a notebook's namespace calls this
    for module, name, wrapper in targets:
        _wrapped.append((module, name, getattr(module, name), wrapper))
        setattr(module, name, wrapper)


def _unwrap_all() -> None:
    while _wrapped:
        module, name, original, wrapper = _wrapped.pop()
        if getattr(module, name, None) is wrapper:  # code that replaced it meanwhile keeps its own
            setattr(module, name, original)
