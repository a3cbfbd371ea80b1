"""Playback on the exported page: the recorded timing of every entry, and the player that uses it.

The page written by ``pi-jupyter export`` can play the branch it shows as it happened, with no
kernel and no network: prompts appear, answers stream over the time they took, tool cards
appear and their results come in when the tools finished, at a chosen speed, with play, pause,
step and an optional step mode that stops before each tool call and at each branch point.

The timing is the session file's own (pi writes it): an assistant message's ``timestamp`` is
when its request started and its entry's ``timestamp`` when it was written; other entries
happen at their entry's ``timestamp``. This module hands the player, per entry, its start and
end (ms since the epoch, ``null`` when the file has none), its kind, the result entries of
its tool calls in order, and which entries sit at a branch point; the player itself is
``assets/playback.js`` (with ``assets/playback.css``), kept apart from the page's own script.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...messages.text import ms_from_iso

_ASSETS = Path(__file__).parent.parent / "assets"
_CONTENT = frozenset({"message", "compaction", "branch_summary", "custom_message"})
_SETTINGS = frozenset({"model_change", "thinking_level_change", "session_info"})


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        return None
    return int(value)


def playback_data(raws: list[dict[str, Any]]) -> dict[str, Any]:
    """What the player needs, from the raw entries of a session.

    ``times``: per entry id ``[start, end, kind, parent]`` plus, for an assistant message with
    tool calls, the entry ids of their results in order (kind ``u`` user, ``a`` assistant,
    ``r`` tool result, ``s`` a setting (model, thinking level, the recorded system prompt: those
    before the first prompt are the scene, shown before playing starts), ``o`` other; times in
    ms since the epoch or ``None``).
    ``branchPoints``: entries whose parent has other children, with how many others.
    """
    times: dict[str, list[Any]] = {}
    children: dict[str, list[str]] = {}
    results: dict[str, str] = {}
    for raw in raws:
        message = raw.get("message") if raw.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str):
            results.setdefault(message["toolCallId"], raw["id"])
    for raw in raws:
        eid = raw["id"]
        end = ms_from_iso(raw.get("timestamp"))
        message = raw.get("message") if raw.get("type") == "message" else None
        role = message.get("role") if isinstance(message, dict) else None
        kind = {"user": "u", "assistant": "a", "toolResult": "r", "system": "s"}.get(role if isinstance(role, str) else "", "o")
        if raw.get("type") in _SETTINGS:
            kind = "s"
        start = _number(message.get("timestamp")) if kind == "a" and isinstance(message, dict) else end
        calls: list[str | None] = []
        if kind == "a" and isinstance(message, dict) and isinstance(message.get("content"), list):
            calls = [
                results.get(str(block["id"])) if isinstance(block.get("id"), str) else None
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "toolCall"
            ]
        if start is not None and end is not None and end < start:
            start = end  # a clock that went back: the entry takes no time rather than negative time
        parent = raw.get("parentId")
        times[eid] = [start, end, kind, parent if isinstance(parent, str) else None, *([calls] if calls else [])]
        if isinstance(parent, str) and raw.get("type") in _CONTENT:
            children.setdefault(parent, []).append(eid)
    branch_points = {kid: len(kids) - 1 for kids in children.values() if len(kids) > 1 for kid in kids}
    return {"times": times, "branchPoints": branch_points}


def playback_tags(raws: list[dict[str, Any]], encode: Callable[[Any], str]) -> str:
    """The player for an exported page: its style, its data and its script, to put at the end of the page's body.

    ``encode`` writes the data as JSON that can sit in a ``<script>`` element whatever the
    file's ids hold (the page's own encoder, :func:`~pi_jupyter.views.export.page.script_json`).
    """
    css = (_ASSETS / "playback.css").read_text(encoding="utf-8")
    js = (_ASSETS / "playback.js").read_text(encoding="utf-8")
    data = encode(playback_data(raws))
    return f'<style>{css}</style><script type="application/json" id="pi-play">{data}</script><script>{js}</script>'


__all__ = ["playback_data", "playback_tags"]
