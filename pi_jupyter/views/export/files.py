"""Writing an export to a file without destroying anything: the rule ``export``, RPC ``export_html`` and ``%pi export`` share.

* A file that reads as a session (its first line a session header) is never overwritten,
  ``force`` or not: the session being exported, or any other one.
* Any other existing file is replaced only when it is an earlier export (it starts with
  :data:`HTML_MARKER` or :data:`MARKDOWN_MARKER`) or when ``force`` says so.
* A named pipe, a device, a socket or a folder is refused before anything is opened for
  writing, so nothing can block on it.
* The text goes to a temporary file in the target's folder, is flushed to disk, and is
  renamed over the target (or linked in its place when there is none, so a file that
  appeared meanwhile is not replaced): a reader sees the old file or the new one, whole.

Refusals raise :class:`ExportRefused` (a ``ValueError``) with one line naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets

from ...session.files import not_regular, read_regular_fd
from ...session.lock import fsync_dir
from ...session.report import SessionError

HTML_MARKER = '<meta name="generator" content="pi-jupyter export">'
"""In the ``<head>`` of every page :func:`~pi_jupyter.views.export.page.export_html` writes, within its first line."""
MARKDOWN_MARKER = "<!-- pi-jupyter export -->"
"""The first line of every Markdown export (a comment: Markdown readers show nothing)."""

_HEAD_BYTES = 1 << 16
"""How much of an existing file is read to tell what it is (a session header is far shorter)."""
_SESSION_TYPE_RE = re.compile(rb'"type"\s*:\s*"session"')


class ExportRefused(ValueError):
    """An export that would destroy or block on something; the message is one line naming the path."""


def write_export(path: str, text: str, *, force: bool = False, force_hint: str = "--force") -> int:
    """Write ``text`` to ``path`` under the rule of this module; returns the bytes written.

    ``force_hint`` is how the caller's user says "force" (``--force``, ``"force": true``),
    named in the refusal of a file that was not an export.
    """
    data = text.encode("utf-8", "surrogatepass")
    target = os.path.realpath(path)  # through a symlink: the file it points at is what would be replaced
    for _attempt in range(3):
        exists = _check(path, target, force, force_hint)
        try:
            write_atomically(target, data, replace=exists)
        except FileExistsError:
            continue  # created between the check and the link: check it again
        except OSError as exc:
            raise ExportRefused(f"{path}: cannot write the export ({exc.strerror or exc})") from None
        return len(data)
    raise ExportRefused(f"{path}: the file keeps being replaced while the export is written; try again")


def _check(path: str, target: str, force: bool, force_hint: str) -> bool:
    """Refuse what must not be written to; ``True`` when the (allowed) target exists."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ExportRefused(f"{path}: cannot write the export ({exc.strerror or exc})") from None
    what = not_regular(st.st_mode)
    if what is not None:
        raise ExportRefused(f"{path}: is {what}, not a regular file; an export is written to a file")
    head = _head(path, target)
    if is_session_head(head):
        raise ExportRefused(f"{path}: is a session file; an export never overwrites one (choose another output name)")
    if not force and not head.lstrip(b"\xef\xbb\xbf").startswith(_MARKERS) and not _html_export(head):
        raise ExportRefused(f"{path}: already exists and is not an export; add {force_hint} to replace it")
    return True


_MARKERS = (MARKDOWN_MARKER.encode(),)


def _html_export(head: bytes) -> bool:
    first = head.split(b"\n", 2)
    return len(first) > 1 and first[0].strip().lower() == b"<!doctype html>" and HTML_MARKER.encode() in first[1]


def _head(path: str, target: str) -> bytes:
    try:
        with read_regular_fd(target) as fh:
            return fh.read(_HEAD_BYTES)
    except SessionError as exc:  # swapped for a pipe or a device since the check
        raise ExportRefused(f"{path}: {getattr(exc, 'reason', exc)}") from None
    except OSError as exc:
        raise ExportRefused(f"{path}: cannot read what is there now ({exc.strerror or exc})") from None


def is_session_head(head: bytes) -> bool:
    """True when the first non-blank line reads as a session header (or is cut off looking like one)."""
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    line = text.split(b"\n", 1)[0]
    if not line.startswith(b"{"):
        return False
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return bool(_SESSION_TYPE_RE.search(line))  # a header line longer than we read, or damaged: keep it safe
    return isinstance(obj, dict) and obj.get("type") == "session"


def write_atomically(target: str, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to a temporary file beside ``target`` and move it into place (``replace``: over what is
    there; else only if nothing is, ``FileExistsError`` otherwise): a failure leaves the old file whole."""
    folder = os.path.dirname(target)
    tmp = os.path.join(folder, f".{os.path.basename(target)}.{secrets.token_hex(4)}.tmp")
    mode = 0o666  # less the umask, as a plain open() would make it
    if replace:
        with contextlib.suppress(OSError):
            mode = os.stat(target).st_mode & 0o7777
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(target)


_NO_LINKS = frozenset({errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})
"""What ``link`` says on a file system without hard links (FAT, some network shares)."""


def _link_new(tmp: str, target: str) -> None:
    """Put ``tmp`` at ``target`` only if nothing is there (``FileExistsError`` otherwise)."""
    try:
        os.link(tmp, target)
    except OSError as exc:
        if exc.errno == errno.EEXIST or exc.errno not in _NO_LINKS:
            raise
        if os.path.lexists(target):  # a file system without hard links: check once more, then rename
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target) from None
        os.replace(tmp, target)


__all__ = ["HTML_MARKER", "MARKDOWN_MARKER", "ExportRefused", "is_session_head", "write_atomically", "write_export"]
