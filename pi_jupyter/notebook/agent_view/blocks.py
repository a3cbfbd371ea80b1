"""The compact items an AgentView sends to the browser: content blocks, tool arguments, tool output.

Pure helpers over messages and events (no widget state); the view and its transport use them.
"""

from __future__ import annotations

import json
from typing import Any

from ...messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall
from ...views.transcript import clip_middle
from ...views.world_lines import changed_line

MAX_OUTPUT = 6000
MAX_LIVE_OUTPUT = 4000
MAX_ARGS = 6000


def jsonable(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    return value


def pretty_args(arguments: Any) -> str:
    if arguments in (None, {}, ""):
        return ""
    try:
        text = json.dumps(jsonable(arguments), indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(arguments)
    return clip_middle(text, MAX_ARGS)


def field(obj: Any, *names: str, default: Any = None) -> Any:
    """The first of ``names`` present on ``obj`` (an object or a dict)."""
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return default


def output_text(result: Any) -> str:
    """Text of a tool result (``{content, details}``, a ToolResult or a ToolResultMessage)."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    content = field(result, "content", default=None)
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        kind = field(block, "type")
        if kind == "text":
            parts.append(field(block, "text", default="") or "")
        elif kind == "image":
            parts.append("[image]")
    return "".join(parts)


def block_item(block: Any) -> dict[str, Any]:
    """The compact form of one assistant content block the browser renders."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingContent):
        out: dict[str, Any] = {"type": "thinking", "text": block.thinking}
        if block.redacted:
            out["redacted"] = True
        return out
    if isinstance(block, ToolCall):
        return {"type": "toolCall", "id": block.id, "name": block.name, "text": pretty_args(block.arguments)}
    if isinstance(block, ImageContent):
        return {"type": "other", "text": "[image]"}
    return {"type": "other", "text": f"[{field(block, 'type', default='unknown')} block]"}


def note_changed(x: dict[str, Any], details: Any) -> None:
    """Put what a call changed in the world (``set df2 (DataFrame 1,000×4); wrote notes.txt``) in its card's state ``x``."""
    changed = changed_line(details)
    if changed:
        x["changed"] = changed


def usage_dict(message: AssistantMessage) -> dict[str, Any]:
    u = message.usage
    return {"input": u.input, "output": u.output, "cacheRead": u.cache_read, "cacheWrite": u.cache_write, "cost": u.cost.total}


__all__ = [
    "MAX_ARGS", "MAX_LIVE_OUTPUT", "MAX_OUTPUT", "block_item", "field", "jsonable", "note_changed", "output_text", "pretty_args",
    "usage_dict",
]  # fmt: skip
