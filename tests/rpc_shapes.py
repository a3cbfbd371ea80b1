"""Comparing JSON shapes (keys and value types, recursively) of ours and pi 1.6's RPC answers and events.

Values that are legitimately different (ids, times, texts, the model's system prompt) are not
compared, only what kind of value sits where. Where pi 1.6 has a field we do not (or the other
way round) and that is a known, accepted difference, it is listed in :data:`PI_ONLY` or
:data:`OURS_ONLY` with the reason; anything else is a difference the test reports.
"""

from __future__ import annotations

from typing import Any

FREE_FORM = {"sections", "details", "arguments", "args", "partialResult", "data", "compat", "headers", "parameters"}
"""Keys whose value is a dict keyed by data (section names, tool arguments, a tool's JSON schema): only ``dict`` is compared.

A tool's ``parameters`` schema is ours (pydantic: ``anyOf``/``default``/``title``) where pi's is
TypeBox's; both are valid JSON Schema for the same arguments."""

PI_ONLY = {
    # pi-ai 1.6 fields on assistant messages and their usage that our messages do not record (yet)
    "responseId",
    "rawStopReason",
    "durationMs",
    "thinkingLevel@message",
    # pi-ai 1.6's flag on a tool declaration (system message ``toolsAdded``)
    "constrainedSampling",
    # pi 1.6's bash tool result carries {output, truncated, exit_code, wall_time_seconds} for MCP-style clients
    "structuredContent@result",
    "reasoning@usage",
    "totalFromProvider@cost",
    # pi's catalog fields on model objects (its compat flags, prompt-cache and input limits)
    "promptCache@model",
    "inputLimits@model",
}
"""Keys pi 1.6 sends that we leave out, as ``key`` or ``key@parent`` (``parent`` is the enclosing key)."""

OURS_ONLY = {
    "retryAfterMs",  # auto_retry_start: the wait the server asked for, beside pi's delayMs
    "details",  # a tool result's details (pi's ToolResult has the optional field; its bash leaves it out when nothing was cut)
}
"""Keys we send that pi 1.6 does not (clients ignore unknown keys)."""


def kind(value: Any) -> str:
    """The JSON type of a value (``number`` for int and float)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _allowed(names: set[str], key: str, parent: str) -> bool:
    return key in names or f"{key}@{parent}" in names


def _label(item: Any) -> str | None:
    """What tells the items of a mixed list apart: an entry's or block's ``type``, a message's ``role``."""
    if not isinstance(item, dict):
        return None
    for key in ("role", "type"):
        if isinstance(item.get(key), str):
            return f"{key}={item[key]}"
    return None


def diff_shapes(ours: Any, theirs: Any, path: str = "$", parent: str = "") -> list[str]:
    """Where the shape of ``ours`` differs from ``theirs`` (an empty list when it does not).

    Objects: the same keys (less the allowed ones) and, under each key, the same shape. Arrays:
    items are grouped by their ``role``/``type`` and the first item of each group present on
    both sides is compared (a list of one kind compares its first items). A ``null`` on one
    side and a value on the other is a difference: pi clients test for it.
    """
    if kind(ours) != kind(theirs):
        return [f"{path}: ours is {kind(ours)}, pi's is {kind(theirs)}"]
    if isinstance(ours, dict):
        if parent in FREE_FORM:
            return []
        out: list[str] = []
        scope = "model" if {"contextWindow", "maxTokens"} <= set(theirs) else "message" if "role" in theirs else parent
        for key in sorted(set(theirs) - set(ours)):
            if not _allowed(PI_ONLY, key, scope):
                out.append(f"{path}.{key}: pi sends it, ours does not")
        for key in sorted(set(ours) - set(theirs)):
            if not _allowed(OURS_ONLY, key, scope):
                out.append(f"{path}.{key}: ours sends it, pi does not")
        for key in sorted(set(ours) & set(theirs)):
            out += diff_shapes(ours[key], theirs[key], f"{path}.{key}", key)
        return out
    if isinstance(ours, list):
        if not ours or not theirs:
            return []
        mine: dict[str | None, Any] = {}
        for item in ours:
            mine.setdefault(_label(item), item)
        pis: dict[str | None, Any] = {}
        for item in theirs:
            pis.setdefault(_label(item), item)
        out = []
        for label in mine.keys() & pis.keys():
            out += diff_shapes(mine[label], pis[label], f"{path}[{label or 0}]", parent)
        return out
    return []


def event_names(events: list[dict[str, Any]]) -> list[str]:
    """Event lines as names (``message_start:user``, ``message_update:text_delta``), runs of one name folded."""
    out: list[str] = []
    for event in events:
        name = event.get("type", "?")
        message = event.get("message")
        if isinstance(message, dict) and isinstance(message.get("role"), str):
            name += ":" + message["role"]
        if name == "message_update":
            name += ":" + event["assistantMessageEvent"]["type"]
        if not out or out[-1] != name:
            out.append(name)
    return out
