"""Reading and creating session files safely: regular files only, and no half-written header.

A named pipe blocks a reader until something writes to it, and ``/dev/zero`` never ends, so
"open a session" on either would hang or fill memory. The file is opened without blocking,
and anything that is not a regular file is refused before a byte is read. A new file's
header is written whole or not at all: when the disk is full, the empty file is removed
again, so it does not block the path as "an empty file".
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from .report import SessionError, SessionFileError

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def not_regular(mode: int) -> str | None:
    """What a file of this ``st_mode`` is when it is not a regular file (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _open_regular_fd(path: str) -> int:
    """A read-only descriptor of the regular file at ``path``; anything else raises :class:`SessionFileError`."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    what = not_regular(os.fstat(fd).st_mode)
    if what is not None:
        os.close(fd)
        raise SessionFileError(path, f"is {what}, not a regular file: a session is a .jsonl file")
    return fd


@contextlib.contextmanager
def read_regular_fd(path: str) -> Iterator[BinaryIO]:
    """The regular file at ``path`` opened for reading in chunks; anything else raises :class:`SessionFileError`."""
    fd = _open_regular_fd(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            yield fh
    finally:
        os.close(fd)


def open_regular(path: str) -> tuple[int, bytes]:
    """A read-only descriptor of the regular file at ``path``, kept open, and its bytes (see :func:`read_regular`)."""
    fd = _open_regular_fd(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fd, fh.read()
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str) -> bytes:
    """The bytes of the regular file at ``path``; anything else raises :class:`SessionFileError`.

    ``O_NONBLOCK`` makes opening a FIFO return at once (it changes nothing for a regular
    file); the type is checked on the opened descriptor, so a swap after a check by name
    cannot slip a pipe in.
    """
    with read_regular_fd(path) as fh:
        return fh.read()


def create_exclusive(path: str, data: bytes, *, fsync: bool) -> None:
    """Create ``path`` (it must not exist) holding ``data``, or leave nothing behind.

    Raises :class:`FileExistsError` when something is already there. Any failure while
    writing (a full disk, a quota) removes the new file before the error propagates, as a
    :class:`SessionError` naming the cause.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:  # pragma: no cover - os.write raises rather than returning 0 on a full disk
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            view = view[written:]
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:  # pragma: no cover - removed by someone else already
            pass
        reason = exc.strerror or str(exc)
        raise SessionError(f"{path}: could not write the session header ({reason}); the new file was removed") from exc
    os.close(fd)
