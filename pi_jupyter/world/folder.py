"""The store's folder, walked without following a link: what a received session folder may hold is not trusted.

A folder that came from elsewhere may hold a symlink where the store expects a folder or an
object (``.pi-world/objects/ab`` leading to another folder, an object leading to ``/dev/zero``),
a named pipe, or a file much larger than its header says. Every open here goes one component
at a time from the store's own folder, each relative to its parent's descriptor and with
``O_NOFOLLOW``, so a link is never followed and nothing is read, written or removed through
one; files are opened without blocking and used only when they are regular files.
(The session folder itself, above ``.pi-world``, is the user's own choice and may be a link.)

A folder is a *handle*: a descriptor where the system opens files relative to one (Linux,
macOS), else its path, checked with ``lstat`` before each use (Windows, where this is all there is).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import Any

from ..session.files import not_regular

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC | _NOFOLLOW
SUPPORTED = bool(_NOFOLLOW) and os.open in os.supports_dir_fd and os.scandir in os.supports_fd

Handle = Any
"""A folder: a descriptor (``int``) or, where descriptors cannot be used so, a path (``str``)."""


class NotFollowed(OSError):
    """A component of the store is a link, or not what it should be (a folder, a regular file): it is left alone."""


def _at(parent: Handle, name: str) -> tuple[str, dict[str, Any]]:
    if isinstance(parent, int):
        return name, {"dir_fd": parent}
    return os.path.join(parent, name), {}


def _refuse(parent: Handle, name: str, what: str) -> NotFollowed:
    exc = NotFollowed(errno.ELOOP, f"{what}: not followed")
    exc.filename = name
    return exc


def open_dir(name: str, parent: Handle = None, *, create: bool = False) -> Handle:
    """Folder ``name`` (in ``parent``; ``None``: a path of its own), never through a link at ``name``; ``create``: made when missing."""
    if not SUPPORTED:  # pragma: no cover - Windows
        path = os.path.join(parent, name) if parent is not None else name
        if create:
            os.makedirs(path, exist_ok=True)
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(parent, name, "a link or not a folder")
        return path
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent)
        return os.open(name, _DIR, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise _refuse(parent, name, "a link or not a folder") from None
        raise


def close(handle: Handle) -> None:
    """Let go of a folder handle."""
    if isinstance(handle, int):
        os.close(handle)


@contextlib.contextmanager
def walk(root: str, parts: list[str], *, create: bool = False) -> Iterator[list[Handle]]:
    """The handles of ``root``, ``root/parts[0]``, ... opened component by component (``root`` itself not followed if a link).

    Yields the list of the parts' handles (the last is the deepest folder); all are closed after.
    """
    try:
        handle = open_dir(root)
    except FileNotFoundError:
        if not create:
            raise
        os.makedirs(os.path.dirname(root) or ".", exist_ok=True)
        handle = open_dir(root, create=True)
    opened = [handle]
    try:
        for part in parts:
            opened.append(open_dir(part, opened[-1], create=create))
        yield opened[1:] or opened
    finally:
        for h in opened:
            close(h)


def open_file(name: str, parent: Handle, flags: int = os.O_RDONLY, mode: int = 0o644) -> tuple[int, os.stat_result]:
    """Open file ``name`` of ``parent`` without following a link or blocking; anything but a regular file is refused."""
    path, kw = _at(parent, name)
    if not SUPPORTED:  # pragma: no cover - Windows
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise _refuse(parent, name, "a link")
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode, **kw)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _refuse(parent, name, "a link") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{name} is a folder")
        raise _refuse(parent, name, not_regular(st.st_mode) or "not a regular file")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)  # a regular file: non-blocking changes nothing, but be plain about it
    return fd, st


def lstat(name: str, parent: Handle) -> os.stat_result:
    """The entry ``name`` of ``parent`` itself (a link is described, not followed)."""
    path, kw = _at(parent, name)
    return os.stat(path, follow_symlinks=False, **kw)


def unlink(name: str, parent: Handle) -> None:
    """Remove entry ``name`` of ``parent`` (a link is removed itself; nothing it leads to is touched)."""
    path, kw = _at(parent, name)
    os.unlink(path, **kw)


def touch(name: str, parent: Handle) -> None:
    """Make entry ``name`` of ``parent`` young again (a link is not followed)."""
    path, kw = _at(parent, name)
    if kw and os.utime in os.supports_follow_symlinks:
        os.utime(path, follow_symlinks=False, **kw)
        return
    if not stat.S_ISREG(os.stat(path, follow_symlinks=False, **kw).st_mode):
        raise _refuse(parent, name, "not a regular file")
    os.utime(path, **kw)


def rename(src: str, src_parent: Handle, dst: str, dst_parent: Handle) -> None:
    """Rename ``src`` of one folder to ``dst`` of another (a link at ``dst`` is replaced, never written through)."""
    a, akw = _at(src_parent, src)
    b, bkw = _at(dst_parent, dst)
    os.replace(a, b, src_dir_fd=akw.get("dir_fd"), dst_dir_fd=bkw.get("dir_fd"))


def entries(parent: Handle) -> Iterator[tuple[str, os.stat_result]]:
    """``(name, lstat)`` of each entry of the folder ``parent`` (links described, never followed)."""
    with os.scandir(parent) as it:
        for entry in it:
            try:
                yield entry.name, entry.stat(follow_symlinks=False)
            except OSError:
                continue
