"""Open files in variables: kept as handles, never as their content.

``cloudpickle`` saves a file opened for reading by reading it: a checkout after a restart gave
back an ``io.StringIO`` of its content (named "restored"), merely opening a 200 MB text file
made the call read and store it whole, and two handles on one path were one value. So a value
that is, or holds, an open file is never pickled. Its slot says what it was (path, mode,
position) and this kernel holds the very object, so a checkout here brings that handle back.
In a new kernel a handle opened for reading is opened again on the same path and moved to the
same position, and the line says so (``reopened fh (notes.txt at 120, mode 'r')``); one opened
for writing is never opened again (that could empty the file): it is named, and the line
offers the call that made it (``%pi rerun``).
"""

from __future__ import annotations

import io
import os
import stat
from typing import Any

from .record import Slot


def is_handle(value: Any) -> bool:
    """True for an open (or closed) file object of the operating system, not an in-memory one."""
    return isinstance(value, io.IOBase) and not isinstance(value, (io.StringIO, io.BytesIO))


def _where(value: Any, cwd: str) -> str | None:
    name = getattr(value, "name", None)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not isinstance(name, str):
        return None  # a descriptor number, a socket's file: no path to open again
    real = os.path.abspath(name)
    root = os.path.abspath(cwd)
    return os.path.relpath(real, root).replace(os.sep, "/") if real.startswith(root + os.sep) else real


def info(value: Any, cwd: str) -> dict[str, Any]:
    """What a handle is: ``{"path", "mode", "pos", "closed"}`` (a path relative to ``cwd`` inside it; ``pos`` ``None`` when unknown)."""
    closed = bool(getattr(value, "closed", False))
    pos = None
    if not closed:
        try:
            pos = value.tell()
        except (OSError, ValueError, AttributeError):
            pos = None
    mode = getattr(value, "mode", None)
    out: dict[str, Any] = {"path": _where(value, cwd), "mode": mode if isinstance(mode, str) else None, "pos": pos, "closed": closed}
    encoding = getattr(value, "encoding", None)
    if isinstance(encoding, str):
        out["encoding"] = encoding
    return out


def phrase(data: dict[str, Any]) -> str:
    """``open file notes.txt (mode 'r', at 120)`` for a person."""
    path = data.get("path") or "(no path)"
    if data.get("closed"):
        return f"closed file {path}"
    at = f", at {data['pos']}" if isinstance(data.get("pos"), int) else ""
    return f"open file {path} (mode {data.get('mode')!r}{at})"


def reading_only(mode: Any) -> bool:
    """True for a mode that only reads (opening the file again changes nothing in it)."""
    return isinstance(mode, str) and "r" in mode and not any(c in mode for c in "wax+")


def slot(value: Any, cwd: str, hold: Any) -> Slot:
    """The slot of a handle: what it is, why it is not saved, and the token this kernel holds it under."""
    data = info(value, cwd)
    return {"unsaved": f"{phrase(data)}: a handle, not its content", "held": hold(value), "handle": data}


def holding(value: Any, found: Any, hold: Any) -> Slot:
    """The slot of a value that holds an open file somewhere inside: not saved (it would read the file), held here."""
    from .values import describe

    name = getattr(found, "name", None)
    where = f" ({name})" if isinstance(name, str) else ""
    return {"unsaved": f"{describe(value)}: holds an open file{where}, not saved", "held": hold(value)}


def _without_waiting(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def reopen(slot: Slot, cwd: str) -> tuple[Any, str]:
    """A new handle for a handle's slot in a new kernel: ``(handle, how)``, or ``(None, why not)``."""
    data = slot.get("handle") if isinstance(slot, dict) else None
    if not isinstance(data, dict):
        return None, "not saved"
    if data.get("closed"):
        return None, f"{phrase(data)}: nothing to open again"
    path, mode = data.get("path"), data.get("mode")
    if not isinstance(path, str) or not isinstance(mode, str):
        return None, f"{phrase(data)}: no path to open again"
    if not reading_only(mode):
        return None, f"{phrase(data)}: a handle for writing is not opened again after a restart (that could empty the file)"
    full = path if os.path.isabs(path) else os.path.join(cwd, path)
    kwargs = {"encoding": data["encoding"]} if "b" not in mode and isinstance(data.get("encoding"), str) else {}
    try:
        # opened without waiting, then checked on what was opened: a pipe put there would wait for a writer forever
        fh = open(full, mode, opener=_without_waiting, **kwargs)  # noqa: SIM115 - the handle is the value being restored
    except (OSError, ValueError, LookupError) as exc:
        return None, f"{phrase(data)}: cannot be opened again ({getattr(exc, 'strerror', None) or exc})"
    try:
        regular = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
        if regular:
            os.set_blocking(fh.fileno(), True)
    except OSError:
        regular = False
    if not regular:
        fh.close()
        return None, f"{phrase(data)}: not a regular file now"
    pos = data.get("pos")
    if isinstance(pos, int) and pos > 0:
        try:
            fh.seek(pos)
        except (OSError, ValueError):
            fh.close()
            return None, f"{phrase(data)}: its position cannot be found again"
    return fh, phrase(data)
