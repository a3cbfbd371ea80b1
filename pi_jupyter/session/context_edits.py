"""Writing pi 1.x's new entries: context edits, usage records, compaction snapshots.

:func:`context_edit_entry` is pi 1.6's ``appendContextEdit``: the same refusals (with pi's
reasons) and the same normalization (a string replacement of an assistant message or tool
result becomes one text block). :func:`usage_entry` is ``appendUsage``;
:func:`system_snapshot` is what ``appendCompaction`` stores as ``systemMessage``.
"""

from __future__ import annotations

from typing import Any

from ..messages import WireModel, ms_from_iso
from ..messages.system import current_system_message
from .index import RawEntry
from .report import SessionError


class ContextEditError(SessionError, ValueError):
    """An edit pi would refuse: the target is missing, not on the branch, or carries no editable content."""


def _replacement_dict(replacement: Any) -> dict[str, Any] | None:
    if replacement is None:
        return None
    if isinstance(replacement, (str, list)):
        replacement = {"content": replacement}
    if isinstance(replacement, dict) and "content" in replacement:
        content = replacement["content"]
        if isinstance(content, list):
            content = [b.to_dict() if isinstance(b, WireModel) else b for b in content]
        if isinstance(content, (str, list)):
            return {**replacement, "content": content}
    raise ContextEditError("Context edit replacement must be null or contain string/array content")


def editable(entry: RawEntry) -> bool:
    """True for an entry a context edit can change (pi 1.6's rule: user, assistant, tool-result or custom message content)."""
    if entry.get("type") == "custom_message":
        return True
    message = entry.get("message") if entry.get("type") == "message" else None
    return isinstance(message, dict) and message.get("role") in ("user", "assistant", "toolResult")


def context_edit_entry(target: RawEntry | None, target_id: str, branch_ids: list[str], replacement: Any) -> dict[str, Any]:
    """The fields of a ``context_edit`` entry for ``target``, or :class:`ContextEditError` with pi's reason.

    ``replacement`` is ``None`` (drop the entry from the context), a string, a list of content
    blocks, or ``{"content": ...}``.
    """
    normalized = _replacement_dict(replacement)
    if target is None:
        raise ContextEditError(f"Entry {target_id} not found")
    if target_id not in branch_ids:
        raise ContextEditError(f"Entry {target_id} is not on the active branch")
    if not editable(target):
        raise ContextEditError(f"Entry {target_id} does not contribute editable model content")
    message = target.get("message") if target.get("type") == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    if normalized is not None and role in ("assistant", "toolResult") and isinstance(normalized["content"], str):
        normalized = {"content": [{"type": "text", "text": normalized["content"]}]}
    return {"type": "context_edit", "targetId": target_id, "replacement": normalized}


def usage_entry(kind: str, provider: str, model: str, usage: Any, note: str | None = None) -> dict[str, Any]:
    """The fields of a ``usage`` entry (pi's ``appendUsage``): spending outside the conversation."""
    usage = usage.to_dict() if isinstance(usage, WireModel) else usage
    fields: dict[str, Any] = {"type": "usage", "kind": kind, "provider": provider, "model": model, "usage": usage}
    if note:
        fields["note"] = note
    return fields


def system_snapshot(context_messages: list[dict[str, Any]], timestamp: str) -> dict[str, Any] | None:
    """The replayed system message a compaction stores as ``systemMessage`` (``None`` without any)."""
    head = current_system_message(context_messages)
    if head is None:
        return None
    return {**head, "timestamp": ms_from_iso(timestamp)}
