"""Open a checked path so that what is opened is what was checked.

The policy resolves a path (``..`` and symlinks) and checks the real path; opening that
path again by name would follow any symlink swapped in since (a folder replaced by a link to
``~/.ssh`` between the check and the open). :func:`open_resolved` opens the real path one
component at a time from ``/``, each relative to its parent's descriptor and with
``O_NOFOLLOW``: a component that has become a symlink makes the open fail instead of leading
elsewhere. Everything after the open works on the descriptor, never on the name.

Hard links cannot be told apart from the file they link to: a write through a file with more
than one link is refused (it would change the other names too, possibly outside the
project). Reads through one are allowed: making a hard link needs write access to the
project, and on Linux (``fs.protected_hardlinks``) to the target as well, so whoever made it
could put that content in the project anyway; package managers (pnpm) link files this way.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["PathChanged", "check_writable", "open_resolved"]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SUPPORTED = bool(_NOFOLLOW) and os.open in os.supports_dir_fd


class PathChanged(OSError):
    """A component of a checked path became a symlink (or stopped being a folder) before it was opened."""


def open_resolved(real: str, flags: int, mode: int = 0o666, *, make_parents: bool = False) -> int:
    """Open the resolved absolute path ``real`` without following a symlink anywhere on the way.

    ``flags`` are ``os.open`` flags for the last component (``O_NOFOLLOW`` is added);
    ``make_parents`` creates missing folders on the way (as ``os.makedirs``). Raises
    :class:`PathChanged` when a component is now a symlink, else the usual ``OSError``.
    """
    if not _SUPPORTED:  # pragma: no cover - Windows: no dir_fd; the check is all there is
        if make_parents:
            os.makedirs(os.path.dirname(real), exist_ok=True)
        return os.open(real, flags, mode)
    parts = [p for p in real.split(os.sep) if p]
    fd = os.open(os.sep, _DIR_FLAGS)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not make_parents:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd):
                    raise _changed(parts[: i + 1]) from None
                raise
            os.close(fd)
            fd = child
        if not parts:
            return os.dup(fd)
        try:
            return os.open(parts[-1], flags | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(parts[-1], fd):
                raise _changed(parts) from None
            raise
    finally:
        os.close(fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _changed(parts: list[str]) -> PathChanged:
    where = os.sep + os.sep.join(parts)
    return PathChanged(
        errno.ELOOP, f"{where} changed while it was being opened (it is now a symlink); it was not followed. Try again if this was expected"
    )


def check_writable(fd: int, path: str) -> os.stat_result:
    """Refuse writing through ``fd`` unless it is a regular file with one link; returns its stat."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise PermissionError(errno.EPERM, f"{path} is not a regular file (a device, pipe or socket); file tools write regular files only")
    if st.st_nlink > 1:
        raise PermissionError(
            errno.EPERM,
            f"{path} has {st.st_nlink} hard links: writing through it would also change the other names, which may lie outside"
            " the project. Refused; copy the file to a new name first if the change is meant",
        )
    return st
