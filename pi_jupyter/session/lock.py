"""An advisory lock on a session file, held only while one entry is written.

Each writer (a kernel, a CLI run, an RPC process) takes an exclusive ``flock`` on the file
around its append, reads what other writers appended since its last look, then writes its
line in one ``write`` call. pi takes no lock; its appends are single ``write`` calls on an
``O_APPEND`` descriptor, so lines do not interleave mid-line, but pi does not see entries
written by others until it reopens the file.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from .report import SessionLockedError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_TIMEOUT_S = 10.0


@contextlib.contextmanager
def exclusive(fd: int, path: str, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``fd``; raise :class:`SessionLockedError` after ``timeout``."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise SessionLockedError(
                    f"{path}: another process has held the session lock for more than {timeout:.0f} s; nothing was written"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def fsync_dir(path: str) -> None:
    """Make a rename in ``path``'s folder durable."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file in the same folder, fsync, rename, fsync folder."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
