"""System messages in a request (pi 1.x transcripts) folded into the system prompt and tools.

A context rebuilt from a pi 1.x session carries ``system`` messages. Our three APIs
(Anthropic messages, OpenAI completions, OpenAI responses) take one system prompt, as pi's
adapters do by default (``supportsMidConvoSystemMessages`` off): the request's own prompt
and tools lead, every system message is replayed onto them (pi's ``normalizeContext`` then
``collapseSystemMessages``), and the result becomes the request's prompt and tool list.
"""

from __future__ import annotations

from typing import Any

from ..messages.convert import convert_to_llm
from ..messages.system import current_system_message, system_message_text
from ..messages.types import SystemMessage
from .base import LlmRequest, Model, ToolSpec
from .normalize import IdNormalizer, transform_messages


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


def wire_request(request: LlmRequest, model: Model, normalize_tool_call_id: IdNormalizer | None = None) -> LlmRequest:
    """What ``request`` carries to ``model``, in neutral form: system messages folded (:func:`collapse_request`),
    then :func:`~pi_jupyter.providers.transform_messages` (failed replies left out, a tool call without a
    result answered with a placeholder, images a model cannot take replaced by a note).

    Every adapter sends exactly these messages (with its ``normalize_tool_call_id``), converted to its
    vendor's shapes; ``%pi context``, the tree's context lens and the request itself come from here,
    so they cannot disagree.
    """
    request = collapse_request(request)
    return request.model_copy(update={"messages": transform_messages(request.messages, model, normalize_tool_call_id)})


def sent_messages(history: list[Any], model: Model) -> LlmRequest:
    """The request a model call from the agent messages ``history`` carries (see :func:`wire_request`).

    ``history`` is what :meth:`Session.context` rebuilds (``.messages``) or an agent holds; the
    request's own system prompt and tools are not added (they do not change what is counted).
    """
    return wire_request(LlmRequest(messages=convert_to_llm(history)), model)
