"""Message lines read as stubs: the few fields the tree needs, the line still checked whole.

Almost every line of a large session is a ``message`` entry, and almost all of its bytes are
the message's content, which only the current branch's context needs. :func:`message_stub`
reads such a line with a ``msgspec`` decoder that keeps ``type``, ``id``, ``parentId``,
``timestamp`` and the message's ``role``, ``provider`` and ``model``, and skips the rest while
still checking it is JSON, so a damaged line is found as surely as by a full parse: the caller
then reads it whole, which reports it exactly as before. Lines that are not plain messages
(labels, compactions, custom entries, pi 1.x's system messages...) are read whole too: they
are few, and their other fields matter to the index and the load report.

The whole entry is read back from the file by its offset when it is needed
(:meth:`~.index.EntryIndex.materialize`).
"""

from __future__ import annotations

import codecs
from typing import Any

import msgspec

from .index import RawEntry

_UNSET = msgspec.UNSET


class _MessageFields(msgspec.Struct):
    role: Any = _UNSET
    provider: Any = _UNSET
    model: Any = _UNSET


class _LineFields(msgspec.Struct):
    type: Any = _UNSET
    id: Any = _UNSET
    parentId: Any = _UNSET  # noqa: N815 - the JSON key
    timestamp: Any = _UNSET
    message: _MessageFields | msgspec.UnsetType = _UNSET


_decode = msgspec.json.Decoder(_LineFields).decode
_errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
_utf8 = codecs.utf_8_decode


def message_stub(raw: bytes | memoryview, ascii_only: bool) -> RawEntry | None:
    """The stub of a plain message line, or ``None`` when the line must be read whole.

    ``ascii_only`` says the caller knows the bytes are ASCII; otherwise they are checked to be
    UTF-8 (the skipped text is not decoded, and a line that is not UTF-8 is reported when it is
    read whole). ``None`` for: not JSON, not an object, not a ``message`` entry with a string
    id, a ``message`` that is not an object, a system message.
    """
    try:
        fields = _decode(raw)
    except _errors:
        return None
    message = fields.message
    if fields.type != "message" or type(fields.id) is not str or message is _UNSET:
        return None
    role = message.role
    if role == "system":
        return None
    if not ascii_only:
        try:
            _utf8(raw, "strict", True)
        except UnicodeDecodeError:
            return None
    stub: RawEntry = {"type": "message", "id": fields.id}
    if fields.parentId is not _UNSET:
        stub["parentId"] = fields.parentId
    if fields.timestamp is not _UNSET:
        stub["timestamp"] = fields.timestamp
    key = (role, message.provider, message.model)
    try:
        head = _HEADS.get(key)
    except TypeError:  # an unhashable value (a list where a string was expected): not shared
        head = None
    if head is None:
        head = {k: v for k, v in zip(("role", "provider", "model"), key, strict=True) if v is not _UNSET}
        if len(_HEADS) < _MAX_HEADS:
            try:
                _HEADS[key] = head
            except TypeError:
                pass
    stub["message"] = head
    return stub


_HEADS: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
"""One ``message`` stub per (role, provider, model): a file has a handful, shared by its 100k stubs (never modified)."""
_MAX_HEADS = 1024


__all__ = ["message_stub"]
