"""System messages in the transcript (pi 1.x): replay, collapse and rendering.

pi 1.x records the system prompt and the tool set as ``system`` messages: the first one
holds the prompt and the declared tools, later ones patch named ``sections`` (``None``
removes one), append ``content``, and add or remove tools. These functions are pi's
``getCurrentSystemMessage``, ``collapseSystemMessages``, ``getSystemMessageText`` and
``renderSystemMessageUpdate`` (``@earendil-works/pi-ai``, ``utils/transcript`` and
``utils/text``), on pi-shaped dicts or message models. Values of the wrong type (a file
written by hand) are skipped rather than raising.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import WireModel


def _as_dict(message: Any) -> dict[str, Any] | None:
    if isinstance(message, WireModel):
        return message.to_dict()
    return message if isinstance(message, dict) else None


def _system_dicts(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The system messages among ``messages``, as dicts; the role is read first, so the others are never converted."""
    return [data for m in messages if is_system(m) and (data := _as_dict(m)) is not None]


def is_system(message: Any) -> bool:
    """True for a system message (model or dict)."""
    role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
    return role == "system"


def content_text(content: Any, separator: str = "\n") -> str:
    """The text of a message's content: a string as is, else its text blocks joined (pi's ``contentText``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        block = _as_dict(block)
        if block is not None and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return separator.join(parts)


def _sections(message: dict[str, Any]) -> dict[str, Any]:
    sections = message.get("sections")
    return sections if isinstance(sections, dict) else {}


def _tools(message: dict[str, Any], key: str) -> list[dict[str, Any]]:
    tools = message.get(key)
    if not isinstance(tools, list):
        return []
    return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def system_message_text(message: Any) -> str:
    """A system message as a complete prompt: its content, then its sections (pi's ``getSystemMessageText``)."""
    data = _as_dict(message) or {}
    parts = [content_text(data.get("content"))]
    parts.extend(v for v in _sections(data).values() if isinstance(v, str))
    return "\n\n".join(p for p in parts if p)


def render_system_message_update(message: Any) -> str:
    """A later system message for APIs that take system messages mid-conversation (pi's ``renderSystemMessageUpdate``)."""
    data = _as_dict(message) or {}
    parts = []
    text = content_text(data.get("content"))
    if text:
        parts.append(text)
    for name, value in _sections(data).items():
        if value is None:
            parts.append(f'Removed system prompt section "{name}".')
        elif isinstance(value, str):
            parts.append(f'Updated system prompt section "{name}":\n\n{value}')
    return "\n\n".join(parts)


def current_tools(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The tool declarations after replaying every system message in order (pi's ``getCurrentTools``)."""
    tools: dict[str, dict[str, Any]] = {}
    for data in _system_dicts(messages):
        for tool in _tools(data, "toolsRemoved"):
            tools.pop(tool["name"], None)
        for tool in _tools(data, "toolsAdded"):
            tools[tool["name"]] = tool  # a redefinition keeps its place, as in a JavaScript Map
    return list(tools.values())


def current_system_message(messages: Iterable[Any]) -> dict[str, Any] | None:
    """Every system message replayed into one (pi's ``getCurrentSystemMessage``); ``None`` when there is none."""
    system = _system_dicts(messages)
    content: list[str] = []
    sections: dict[str, str] = {}
    timestamp: Any = None
    for data in system:
        if timestamp is None:
            timestamp = data.get("timestamp")
        text = content_text(data.get("content"))
        if text:
            content.append(text)
        for name, value in _sections(data).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
    tools = current_tools(system)
    if timestamp is None and not tools:
        return None
    head: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        head["sections"] = sections
    if tools:
        head["toolsAdded"] = tools
    head["timestamp"] = timestamp if timestamp is not None else 0
    return head


def collapse_system_messages(messages: list[Any]) -> list[Any]:
    """The replayed system message first, every other system message dropped (pi's ``collapseSystemMessages``)."""
    head = current_system_message(messages)
    rest = [m for m in messages if not is_system(m)]
    return [head, *rest] if head is not None else rest


def lenient_system_message(data: dict[str, Any]) -> Any:
    """A system message whose fields have odd types, read as pi's replay reads it: odd parts left out."""
    from .types import SystemMessage

    clean: dict[str, Any] = {"role": "system", "content": content_text(data.get("content"))}
    sections = {k: v for k, v in _sections(data).items() if v is None or isinstance(v, str)}
    if sections:
        clean["sections"] = sections
    for key in ("toolsAdded", "toolsRemoved"):
        tools = _tools(data, key)
        if tools:
            clean[key] = tools
    timestamp = data.get("timestamp")
    clean["timestamp"] = timestamp if isinstance(timestamp, int) and not isinstance(timestamp, bool) else None
    return SystemMessage.from_wire(clean)


def tool_state_changes(previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(toolsAdded, toolsRemoved)`` from one tool set to the next; a changed definition is both (pi's ``getToolStateChanges``)."""
    before = {t["name"]: t for t in previous}
    after = {t["name"]: t for t in current}
    added = [t for t in current if before.get(t["name"]) != t]
    removed = [{"name": t["name"]} for t in previous if after.get(t["name"]) != t]
    return added, removed


def system_message_note(message: Any) -> str:
    """One line for a reader (a notebook's output): what the model was told, in plain words.

    The first system message of a conversation sets the instructions and the tools; later ones
    change them. Section names and tool definitions are pi's bookkeeping, left to ``%pi context``.
    """
    data = _as_dict(message) or {}
    added = [t["name"] for t in _tools(data, "toolsAdded")]
    removed = [t["name"] for t in _tools(data, "toolsRemoved")]
    changed = [n for n in added if n in removed]  # a tool redefined is withdrawn and offered again
    added = [n for n in added if n not in changed]
    removed = [n for n in removed if n not in changed]
    said = bool(content_text(data.get("content")) or _sections(data))
    parts = []
    if said:
        parts.append("the model's instructions were set" if added and not removed and not changed else "the model's instructions changed")
    if added:
        parts.append(f"tools offered: {', '.join(added)}")
    if changed:
        parts.append(f"tools changed: {', '.join(changed)}")
    if removed:
        parts.append(f"tools withdrawn: {', '.join(removed)}")
    text = "; ".join(parts) or "the model's instructions were set"
    return text[0].upper() + text[1:] + " (%pi context shows them)"


def system_message_summary(message: Any) -> str:
    """One line for a system message: its text, the sections it sets or removes, the tools it adds or removes."""
    data = _as_dict(message) or {}
    parts = []
    text = content_text(data.get("content"))
    if text:
        parts.append(repr(text[:40] + ("…" if len(text) > 40 else "")))
    sections = _sections(data)
    if sections:
        parts.append("sections " + ", ".join(f"-{name}" if value is None else name for name, value in sections.items()))
    changes = [f"-{t['name']}" for t in _tools(data, "toolsRemoved")] + [f"+{t['name']}" for t in _tools(data, "toolsAdded")]
    if changes:
        parts.append("tools " + " ".join(changes))
    return "system prompt: " + ("; ".join(parts) or "(empty)")
