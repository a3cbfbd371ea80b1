"""Entries and messages as the compaction code reads them: plain dicts in pi's JSON shape.

Everything here works on the dicts the session store keeps (``Session.raw_branch()``), which
is what makes preparing a compaction cheap; models (messages or entries) are accepted too and
turned into their dict form once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..messages.text import ms_from_iso

RawEntry = dict[str, Any]
RawMessage = dict[str, Any]


def as_dict(value: Any, what: str = "message") -> dict[str, Any]:
    """A pi-shaped dict for a message or entry given as a dict or a pydantic model."""
    if isinstance(value, dict):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"expected a {what} dict or model, got {type(value).__name__}")


def as_dicts(values: Iterable[Any], what: str = "entry") -> list[dict[str, Any]]:
    """:func:`as_dict` over a sequence (dicts are passed through, not copied)."""
    return [v if type(v) is dict else as_dict(v, what) for v in values]


def custom_message(entry: RawEntry) -> RawMessage:
    """pi's ``createCustomMessage`` for a ``custom_message`` entry (a field the entry lacks is left out, as JSON leaves ``undefined``)."""
    message: RawMessage = {"role": "custom"}
    for key in ("customType", "content", "display", "details"):
        if key in entry:
            message[key] = entry[key]
    message["timestamp"] = ms_from_iso(entry.get("timestamp"))
    return message


def branch_summary_message(entry: RawEntry) -> RawMessage:
    """pi's ``createBranchSummaryMessage`` for a ``branch_summary`` entry."""
    return {
        "role": "branchSummary",
        "summary": entry.get("summary"),
        "fromId": entry.get("fromId"),
        "timestamp": ms_from_iso(entry.get("timestamp")),
    }


def compaction_summary_message(entry: RawEntry) -> RawMessage:
    """pi's ``createCompactionSummaryMessage`` for a ``compaction`` entry."""
    return {
        "role": "compactionSummary",
        "summary": entry.get("summary"),
        "tokensBefore": entry.get("tokensBefore"),
        "timestamp": ms_from_iso(entry.get("timestamp")),
    }


def message_for_compaction(entry: RawEntry) -> RawMessage | None:
    """The message an entry contributes to a compaction (pi's ``getMessageFromEntryForCompaction``).

    Messages of every role, custom messages and branch summaries (even empty ones); not
    compaction entries (the previous summary is passed separately) nor settings, labels or
    private ``custom`` entries.
    """
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message")
    if kind == "custom_message":
        return custom_message(entry)
    if kind == "branch_summary":
        return branch_summary_message(entry)
    return None


def message_for_branch_summary(entry: RawEntry) -> RawMessage | None:
    """The message an entry contributes to a branch summary (pi's branch ``getMessageFromEntry``).

    Like :func:`message_for_compaction`, except that tool results are skipped (the assistant's
    tool call says what was done) and compaction entries count as their summary.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "toolResult":
            return None
        return message
    if kind == "custom_message":
        return custom_message(entry)
    if kind == "branch_summary":
        return branch_summary_message(entry)
    if kind == "compaction":
        return compaction_summary_message(entry)
    return None


def latest_compaction_index(entries: list[RawEntry]) -> int:
    """The index of the last ``compaction`` entry in ``entries``, or -1."""
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].get("type") == "compaction":
            return i
    return -1


def role_of(entry: RawEntry) -> str | None:
    """The role of a ``message`` entry's message, else ``None``."""
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def is_turn_start(entry: RawEntry) -> bool:
    """True for entries that begin a turn: user and bash messages, custom messages, branch summaries."""
    kind = entry.get("type")
    if kind in ("branch_summary", "custom_message"):
        return True
    return kind == "message" and role_of(entry) in ("user", "bashExecution")


def text_blocks(content: Any, sep: str = "") -> str:
    """Text blocks of ``content`` joined with ``sep``; a string is returned as it is."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return sep.join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
