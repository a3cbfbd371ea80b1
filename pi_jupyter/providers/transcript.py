"""System messages in a request (pi 1.x transcripts) folded into the system prompt and tools.

A context rebuilt from a pi 1.x session carries ``system`` messages. Our three APIs
(Anthropic messages, OpenAI completions, OpenAI responses) take one system prompt, as pi's
adapters do by default (``supportsMidConvoSystemMessages`` off): the request's own prompt
and tools lead, every system message is replayed onto them (pi's ``normalizeContext`` then
``collapseSystemMessages``), and the result becomes the request's prompt and tool list.
"""

from __future__ import annotations

from typing import Any

from ..messages.system import current_system_message, system_message_text
from ..messages.types import SystemMessage
from .base import LlmRequest, ToolSpec


def collapse_request(request: LlmRequest) -> LlmRequest:
    """``request`` with its system messages folded into ``system_prompt`` and ``tools`` (unchanged without any)."""
    if not any(isinstance(m, SystemMessage) for m in request.messages):
        return request
    lead: list[dict[str, Any]] = []
    if request.system_prompt or request.tools:
        head: dict[str, Any] = {"role": "system", "content": request.system_prompt or ""}
        if request.tools:
            head["toolsAdded"] = [t.model_dump() for t in request.tools]
        lead.append(head)
    system = [m.to_dict() for m in request.messages if isinstance(m, SystemMessage)]
    replayed = current_system_message([*lead, *system]) or {}
    tools = [_tool_spec(t) for t in replayed.get("toolsAdded", [])]
    return request.model_copy(
        update={
            "system_prompt": system_message_text(replayed) or None,
            "messages": [m for m in request.messages if not isinstance(m, SystemMessage)],
            "tools": tools,
        }
    )


def _tool_spec(declaration: dict[str, Any]) -> ToolSpec:
    description = declaration.get("description")
    parameters = declaration.get("parameters")
    spec = ToolSpec(name=declaration["name"], description=description if isinstance(description, str) else "")
    if isinstance(parameters, dict):
        spec.parameters = parameters
    return spec
