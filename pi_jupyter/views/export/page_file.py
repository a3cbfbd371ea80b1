"""Writing a page (the class view) where the user asked: never over a session file, never over a stranger's file.

A session file is never replaced, whatever the flags; any other existing file is replaced only
when it is a page this package wrote (it carries :data:`GENERATOR`) or when the caller says
``force``; a FIFO or a device is refused at once (writing to it could hang). The page is written
to a temporary file beside the target and moved into place, so a failure leaves the old file whole.
"""

from __future__ import annotations

import os
import stat

from .files import is_session_head, write_atomically

GENERATOR = '<meta name="generator" content="pi-jupyter">'
"""The mark of a page this package wrote (in its ``<head>``)."""


class PageWriteError(ValueError):
    """The page was not written; the message says why in one line."""


def _looks_like_session(path: str) -> bool:
    if path.endswith(".jsonl"):
        return True
    try:
        with open(path, "rb") as fh:
            return is_session_head(fh.read(4096))
    except OSError:
        return False


def _ours(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return GENERATOR.encode() in fh.read(4096)
    except OSError:
        return False


def write_page(path: str | os.PathLike[str], text: str, *, force: bool = False) -> str:
    """Write ``text`` to ``path`` (see the module doc); returns the absolute path. Raises :class:`PageWriteError`."""
    target = os.path.abspath(os.fspath(path))
    if os.path.lexists(target):
        mode = os.stat(target).st_mode if os.path.exists(target) else 0
        if os.path.isdir(target):
            raise PageWriteError(f"{target} is a folder; give a file name for the page")
        if mode and not stat.S_ISREG(mode):
            raise PageWriteError(f"{target} is not a regular file (a pipe or a device); the page was not written")
        if _looks_like_session(target):
            raise PageWriteError(f"{target} is a session file; a page never replaces one (choose another name)")
        if not force and not _ours(target):
            raise PageWriteError(f"{target} exists and is not a page pi-jupyter wrote; use --force to replace it")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise PageWriteError(f"no folder {folder} for {os.path.basename(target)}")
    try:
        write_atomically(target, text.encode("utf-8"), replace=os.path.lexists(target))
    except OSError as exc:
        raise PageWriteError(f"{target}: {exc.strerror or exc}") from None
    return target


__all__ = ["GENERATOR", "PageWriteError", "write_page"]
