"""msgspec's decoders made to refuse lines nested too deeply, at no cost, where the interpreter allows it.

Every reader refuses a line whose JSON nests arrays and objects more than
:data:`~.jsonl.MAX_DEPTH` deep (:func:`~.jsonl.too_deep`). Finding such a line by counting each
line's brackets is a pass over every byte: about 0.15 s of CPU on a 150 MB session, a third of
what ``pi-jupyter context --json`` takes. msgspec walks every byte anyway, and it keeps count of
the levels as it goes: each array or object it enters (decoded or skipped) takes one unit of the
interpreter's recursion budget (``Py_EnterRecursiveCall``), and it raises ``RecursionError`` when
none is left. On CPython 3.10 and 3.11 that budget is the recursion limit less the frames in use,
so with the limit set to leave exactly ``MAX_DEPTH`` units at the decoder's call, msgspec refuses
exactly the lines that are too deep, and the caller reads them one by one (which names them).

Where that cannot be arranged the caller counts brackets as before (:func:`available` is false):

* CPython 3.12 and later keep a separate budget for C code that no setting reaches;
* a process with other threads: the limit is the whole interpreter's, and lowering it could
  stop a thread that is deep in its own work (so a kernel counts; the command line does not);
* a msgspec that stops counting levels this way: every call proves the cap first (below).

Each call proves the cap before relying on it, from the very frame the decoder runs in: a probe
line nested ``MAX_DEPTH`` deep must decode, and one a level deeper must be refused. A cap that
cannot be proved is given up for the rest of the process.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from .jsonl import MAX_DEPTH

T = TypeVar("T")

_SETTABLE = sys.implementation.name == "cpython" and sys.version_info < (3, 12)
_state: dict[str, Any] = {"offset": None, "broken": not _SETTABLE}
"""``offset``: the interpreter's recursion depth at the decoder's call less the frames Python shows (found once);
``broken``: the cap was given up in this process."""


def _probe(depth: int) -> bytes:
    """A stub line whose JSON nests ``depth`` levels (the line's object, then arrays in a field no stub keeps)."""
    return b'{"type":"message","id":"p","z":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"


_FITS = _probe(MAX_DEPTH)
_TOO_DEEP = _probe(MAX_DEPTH + 1)
_OFFSETS = range(-4, 16)
"""Where the search for the offset looks (3.11 has shown 0 to 3: frames entered by C calls above the caller)."""


def available() -> bool:
    """True when :func:`capped` can be used here: CPython before 3.12, this the only thread, the cap not given up."""
    return not _state["broken"] and threading.active_count() == 1 and threading.current_thread() is threading.main_thread()


def capped(decode: Callable[[Any], T], data: bytes | memoryview) -> T:
    """``decode(data)`` with JSON nested more than ``MAX_DEPTH`` deep refused by a ``RecursionError``.

    ``decode`` is a msgspec JSON decoder's ``decode`` or ``decode_lines`` for stub lines (it must
    read :func:`_probe`'s line). Call it only when :func:`available`. When the cap cannot be proved,
    it is given up and ``RecursionError`` is raised as for a line too deep: the caller then reads
    the lines one by one, which checks every line's depth itself.
    """
    frames = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        frames += 1
        frame = frame.f_back
    before = sys.getrecursionlimit()
    known = _state["offset"]
    try:
        # the probes and the real call are all made from this frame, at the same depth
        for offset in ([known] if known is not None else []) + [o for o in _OFFSETS if o != known]:
            sys.setrecursionlimit(frames + offset + MAX_DEPTH)
            try:
                decode(_FITS)
            except RecursionError:
                continue  # the limit is too low: the probe that fits was refused
            try:
                decode(_TOO_DEEP)
            except RecursionError:
                _state["offset"] = offset
                return decode(data)
        _state["broken"] = True
        raise RecursionError("the nesting cap could not be proved here; read the lines one by one")
    finally:
        sys.setrecursionlimit(before)


__all__ = ["available", "capped"]
