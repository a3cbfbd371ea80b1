"""A run of lines read as stubs in one native call: the command line's fast way through a large file.

Reading a 100k-entry file one line at a time costs more in the Python loop around the
parser than in the parser itself. :func:`decode_run` hands ``msgspec`` a whole run of lines
at once (``decode_lines``), into :class:`LineStub` objects that keep only ``type``, ``id``,
``parentId`` and the message's ``role``: what finding the current branch and its context
entries needs (the model of an assistant message on the branch is read from the file when
the context asks for it). The rest of each line is skipped while still being checked to be JSON. It gives up (``None``) unless
the run is plainly one entry per line: every line starts with ``{`` and ends with ``}``
(so no value can span two lines, nor two share one), their count is the count of values,
the bytes are UTF-8, every ``type`` and ``role`` is one this version knows and every ``id`` is
a string.
The caller then reads that run one line at a time, which reports every damaged line with
its number exactly as before: this only speeds up what reads cleanly.

A :class:`LineStub` answers ``stub["id"]``, ``stub.get("parentId")``, ``"message" in stub``
as a dict would; its ``message`` is one shared head per role, handed out as ``{"role": ...}``.
"""

from __future__ import annotations

import codecs
from array import array
from collections.abc import Callable, Iterator
from itertools import repeat
from operator import attrgetter
from typing import Any, Literal

import msgspec

from .depth_cap import capped as capped_decode
from .kinds import KINDS, PASSED_ON

_UNSET: Any = msgspec.UNSET

KnownType = Literal[
    "session",
    "message",
    "custom_message",
    "branch_summary",
    "compaction",
    "thinking_level_change",
    "model_change",
    "label",
    "session_info",
    "custom",
    "context_edit",
    "usage",
]
"""Every entry type this version knows (a ``Literal``: ``msgspec`` hands out one shared string per type)."""
assert set(KnownType.__args__) == {"session", *KINDS}  # type: ignore[attr-defined]  # kept in step with the index


KnownRole = Literal["user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary", "system"]
"""Every message role this version knows (pi's, and pi 1.x's ``system``)."""


class MessageHead(msgspec.Struct, frozen=True, gc=False):
    """What a stub keeps of its message: the role (frozen, so equal heads are shared: a file has a handful)."""

    role: KnownRole | msgspec.UnsetType = _UNSET

    def as_dict(self) -> dict[str, Any]:
        """The head as a dict (``{"role": ...}``; the message's other fields stay in the file)."""
        out = _HEAD_DICTS.get(self)
        if out is None:
            out = _HEAD_DICTS[self] = {k: v for k in self.__struct_fields__ if (v := getattr(self, k)) is not _UNSET}
        return out


class ModelHead(MessageHead, frozen=True, gc=False):
    """A stub's message head with the model that wrote it, as a session opened in a kernel keeps it."""

    provider: str | msgspec.UnsetType = _UNSET
    model: str | msgspec.UnsetType = _UNSET


_HEAD_DICTS: dict[MessageHead, dict[str, Any]] = {}


class _DictLike(msgspec.Struct, gc=False):
    """A line read as a stub, readable as the dict stub it stands for (do not modify it)."""

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get``: the field, or ``default`` when the line did not have it."""
        value = getattr(self, key, _UNSET)
        if value is _UNSET:
            return default
        return value.as_dict() if key == "message" else value

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _UNSET)
        if value is _UNSET:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and getattr(self, key, _UNSET) is not _UNSET

    def keys(self) -> Iterator[str]:
        """The fields the line had."""
        return (key for key in self.__struct_fields__ if getattr(self, key) is not _UNSET)

    def as_dict(self) -> dict[str, Any]:
        """The stub as a dict."""
        return {key: self.get(key) for key in self.keys()}


class LineStub(_DictLike, gc=False):
    """One line read as a stub: its type, id, parent and message role (what the command line needs)."""

    type: KnownType
    id: str
    parentId: str | None | msgspec.UnsetType = _UNSET  # noqa: N815 - the JSON key
    message: MessageHead | msgspec.UnsetType = _UNSET


class TimedStub(_DictLike, gc=False):
    """One line read as a stub for a session opened in a kernel: also its time and its message's model.

    The same fields as :func:`~.stubs.message_stub`'s dict stubs, so the tree can sort by time
    and a branch name its model without reading the line whole.
    """

    type: KnownType
    id: str
    parentId: str | None | msgspec.UnsetType = _UNSET  # noqa: N815 - the JSON key
    timestamp: Any = _UNSET
    message: ModelHead | msgspec.UnsetType = _UNSET


class _MessageLine(msgspec.Struct):
    message: msgspec.Raw | msgspec.UnsetType = _UNSET


class _MessageText(msgspec.Struct):
    role: KnownRole | msgspec.UnsetType = _UNSET
    content: msgspec.Raw | msgspec.UnsetType = _UNSET


def message_text(line: bytes) -> memoryview | None:
    """The JSON text of a ``message`` line's message, when it is one the context passes on as written.

    That is a message object with a :data:`PASSED_ON` role and a content that is not ``null``
    (pi reads a missing or ``null`` content as empty, which changes the message). ``None`` for
    anything else, and for a line that is not JSON or not UTF-8: the caller reads the line
    whole, as before. Writing the text as it stands (a view of ``line``, not a copy) spares
    parsing a message only to write it again.
    """
    try:
        raw = _message_line(line).message
        if isinstance(raw, msgspec.UnsetType):
            return None
        head = _message_text(raw)
        if head.role not in PASSED_ON or isinstance(head.content, msgspec.UnsetType) or bytes(head.content) == b"null":
            return None
        if not line.isascii():
            _utf8(raw, "strict", True)
    except (*_errors, UnicodeDecodeError):
        return None
    return memoryview(raw)


_message_line = msgspec.json.Decoder(_MessageLine).decode
_message_text = msgspec.json.Decoder(_MessageText).decode
_DECODERS: dict[bool, Callable[[memoryview], list[Any]]] = {
    False: msgspec.json.Decoder(LineStub).decode_lines,
    True: msgspec.json.Decoder(TimedStub).decode_lines,
}
_errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
_utf8 = codecs.utf_8_decode
_heads: dict[Any, Any] = {}
_OPEN, _CLOSE = ord("{"), ord("}")


def line_ends(data: bytearray | bytes, start: int, stop: int) -> array | None:
    """Where the lines of ``data[start:stop]`` (which ends with a newline) end, or ``None`` unless each is ``{...}``."""
    ends = array("q")
    if stop <= start or data[start] != _OPEN:
        return None
    add = ends.append
    find = data.find
    i = find(b"\n", start, stop)
    while i >= 0:
        add(i)
        j = i + 1
        if data[i - 1] != _CLOSE or (j < stop and data[j] != _OPEN):
            return None
        i = find(b"\n", j, stop)
    return ends


def decode_run(run: memoryview, count: int, ascii_only: bool = False, *, timed: bool = False, capped: bool = False) -> list[Any] | None:
    """The ``count`` lines of ``run`` (each ``{...}``, see :func:`line_ends`) as stubs, or ``None`` to read them one by one.

    ``None`` too for a run holding a system message (pi 1.x): read one by one, it asks for the
    whole file to be opened, as before. ``ascii_only``: the caller knows the bytes are ASCII.
    ``timed``: :class:`TimedStub` rather than :class:`LineStub`. ``capped``: decode under
    :mod:`.depth_cap`'s cap, so that a line nested too deeply gives ``None`` (the caller has not
    counted brackets).
    """
    decode = _DECODERS[timed]
    try:
        stubs = capped_decode(decode, run) if capped else decode(run)
        if not ascii_only:
            _utf8(run, "strict", True)  # the skipped text was not decoded: check it is UTF-8 all the same
    except (*_errors, UnicodeDecodeError):
        return None
    if len(stubs) != count:
        return None
    messages = list(map(_message_of, stubs))
    heads = list(map(_heads.setdefault, messages, messages))  # one shared head per role
    systems = [head for head in _heads if getattr(head, "role", None) == "system"]  # a handful of heads in all
    if systems and any(head in heads for head in systems):
        return None
    for _ in map(setattr, stubs, repeat("message"), heads):
        pass
    return stubs


def special_positions(stubs: list[Any]) -> list[int]:
    """Positions of the stubs that are not plain messages (other entry types, a message line without a message): read whole."""
    return [i for i, stub in enumerate(stubs) if stub.type != _MESSAGE or stub.message is _UNSET]


def parent_ids(stubs: list[Any]) -> list[str | None]:
    """Each stub's ``parentId``, ``None`` where the line had none or an empty one (as the line-by-line read takes it)."""
    raw = list(map(_parent_of, stubs))
    return list(map(_NO_PARENT.get, raw, raw)) if _UNSET in raw or "" in raw else raw


_MESSAGE = "message"
_NO_PARENT: dict[Any, None] = {_UNSET: None, "": None}
_message_of = attrgetter("message")
_parent_of = attrgetter("parentId")
ids_of = attrgetter("id")


__all__ = [
    "LineStub",
    "MessageHead",
    "decode_run",
    "ids_of",
    "line_ends",
    "message_text",
    "parent_ids",
    "special_positions",
]
