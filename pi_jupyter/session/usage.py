"""Where a session's spending is recorded (pi 1.x's ``getUsageCostBreakdown``).

Besides assistant messages, pi 1.x records model calls outside the conversation: ``usage``
entries (summaries, cache warming, an experiment's judge) and the ``usage`` of compaction
and branch-summary entries. None of them is in the context; all of them are in every cost
total (info, compare, the tree, the status line).
"""

from __future__ import annotations

from typing import Any

SPENDING_ENTRY_TYPES = frozenset({"usage", "compaction", "branch_summary"})
"""Entry types (besides assistant messages) whose ``usage`` counts in cost totals."""

SUMMARIES_KEY = "Tools/summaries"
"""pi's name for spending that no model of the conversation is credited with."""


def entry_usage(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(who spent, usage object)`` for an entry that records spending, else ``None`` (pi's attribution)."""
    etype = entry.get("type")
    if etype == "message":
        message = entry.get("message")
        if type(message) is not dict:
            return None
        usage = message.get("usage")
        if message.get("role") == "assistant":
            model = message.get("responseModel") or message.get("model")
            return (f"{message.get('provider')}/{model}", usage) if type(usage) is dict else None
        if message.get("role") == "toolResult" and type(usage) is dict:
            return SUMMARIES_KEY, usage
        return None
    usage = entry.get("usage")
    if type(usage) is not dict:
        return None
    if etype == "usage":
        return f"{entry.get('provider')}/{entry.get('model')}", usage
    if etype in ("compaction", "branch_summary"):
        return SUMMARIES_KEY, usage
    return None


def response_usage(response: Any) -> dict[str, Any] | None:
    """The ``usage`` object of a model response (message model or dict), if it has one."""
    data = response.to_dict() if hasattr(response, "to_dict") else response
    usage = data.get("usage") if isinstance(data, dict) else None
    return usage if isinstance(usage, dict) and usage else None


def combine_usage(first: dict[str, Any] | None, second: dict[str, Any] | None) -> dict[str, Any] | None:
    """The sum of two usage objects (pi's ``combineUsage``); ``None`` when both are missing."""
    if first is None or second is None:
        return first or second

    def num(value: Any) -> float:
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    out: dict[str, Any] = {k: num(first.get(k)) + num(second.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")}
    costs = [c if isinstance(c, dict) else {} for c in (first.get("cost"), second.get("cost"))]
    out["cost"] = {k: num(costs[0].get(k)) + num(costs[1].get(k)) for k in ("input", "output", "cacheRead", "cacheWrite", "total")}
    return out
