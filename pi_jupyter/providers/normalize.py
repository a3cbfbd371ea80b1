"""Request-side normalization every adapter runs before converting to a vendor format.

pi's ``transformMessages`` (pi-design §3.5), in our words:

* Failed (``error``) and ``aborted`` assistant messages are dropped: they are kept in the
  session, but replaying an incomplete turn confuses models and some APIs reject it.
* A tool call left without a result when the conversation moves on (a user message, another
  assistant message, or the end of the list) gets a synthetic error result
  ``"No result provided"``, because vendors require every tool call to be answered.
* An assistant message from another model (provider, api or model id differ): its thinking
  is dropped (pi 1.6: signatures only hold for the model that made them, and readable thinking
  sent as text would read as part of the visible reply; pi 0.73 sent it as text), text and
  thought signatures are stripped, and tool-call ids are rewritten by the adapter's ``normalize_tool_call_id``
  (their tool results follow the rewrite).
* The same model: signed thinking is kept even when empty (it must be replayed as is);
  empty unsigned thinking is dropped.
* Images are replaced by a short note for a model that does not take images.

Input messages are never modified; changed ones are copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from .base import Model

NO_RESULT_TEXT = "No result provided"
USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"

IdNormalizer = Callable[[str, Model, AssistantMessage], str]
"""``(tool_call_id, target_model, source_message) -> id`` the target vendor accepts."""


def _replace_images(content: list[Any], placeholder: str) -> list[Any]:
    out: list[Any] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not previous_was_placeholder:
                out.append(TextContent(text=placeholder))
            previous_was_placeholder = True
            continue
        out.append(block)
        previous_was_placeholder = isinstance(block, TextContent) and block.text == placeholder
    return out


def _downgrade_images(message: Any, model: Model) -> Any:
    if "image" in model.input:
        return message
    if isinstance(message, (UserMessage, ToolResultMessage)) and not isinstance(message.content, str):
        if any(isinstance(b, ImageContent) for b in message.content):
            placeholder = USER_IMAGE_PLACEHOLDER if isinstance(message, UserMessage) else TOOL_IMAGE_PLACEHOLDER
            return message.model_copy(update={"content": _replace_images(message.content, placeholder)})
    return message


def same_model(message: AssistantMessage, model: Model) -> bool:
    """True if ``message`` was produced by ``model`` (same provider, api and id)."""
    return message.provider == model.provider and message.api == model.api and message.model == model.id


def _transform_assistant(
    message: AssistantMessage, model: Model, normalize_id: IdNormalizer | None, id_map: dict[str, str]
) -> AssistantMessage:
    same = same_model(message, model)
    blocks: list[Any] = []
    changed = False
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if not same:
                changed = True  # another model's thinking is dropped, as pi 1.6 does
                continue
            if block.redacted or block.thinking_signature:
                blocks.append(block)  # replayed as is, even when empty
                continue
            if not block.thinking or not block.thinking.strip():
                changed = True
                continue
            blocks.append(block)
        elif isinstance(block, TextContent):
            if same or block.text_signature is None:
                blocks.append(block)
            else:
                blocks.append(TextContent(text=block.text))
                changed = True
        elif isinstance(block, ToolCall):
            call = block
            if not same and call.thought_signature is not None:
                call = call.model_copy(update={"thought_signature": None})
            if not same and normalize_id is not None:
                new_id = normalize_id(call.id, model, message)
                if new_id != call.id:
                    id_map[call.id] = new_id
                    call = call.model_copy(update={"id": new_id})
            changed = changed or call is not block
            blocks.append(call)
        else:
            blocks.append(block)
    return message.model_copy(update={"content": blocks}) if changed else message


def transform_messages(messages: Sequence[Any], model: Model, normalize_tool_call_id: IdNormalizer | None = None) -> list[Any]:
    """Normalize ``messages`` (user, assistant, toolResult) for a request to ``model``; see the module docstring."""
    id_map: dict[str, str] = {}
    transformed: list[Any] = []
    for message in messages:
        message = _downgrade_images(message, model)
        if isinstance(message, ToolResultMessage):
            new_id = id_map.get(message.tool_call_id)
            if new_id and new_id != message.tool_call_id:
                message = message.model_copy(update={"tool_call_id": new_id})
        elif isinstance(message, AssistantMessage):
            message = _transform_assistant(message, model, normalize_tool_call_id, id_map)
        transformed.append(message)

    result: list[Any] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def patch_orphans() -> None:
        nonlocal pending, answered
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=[TextContent(text=NO_RESULT_TEXT)], is_error=True)
                )
        pending = []
        answered = set()

    for message in transformed:
        if isinstance(message, AssistantMessage):
            patch_orphans()
            if message.stop_reason in ("error", "aborted"):
                continue
            calls = message.tool_calls
            if calls:
                pending = calls
                answered = set()
            result.append(message)
        elif isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            result.append(message)
        elif isinstance(message, UserMessage):
            patch_orphans()
            result.append(message)
        else:
            result.append(message)
    patch_orphans()
    return result
