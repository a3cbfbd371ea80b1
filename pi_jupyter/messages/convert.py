"""``convert_to_llm``: the agent's messages translated into what a model understands."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import WireModel
from .content import ImageContent, TextContent, UserContent
from .lenient import readable_message, time_ms, wrapped_text
from .system import lenient_system_message
from .types import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    OpaqueMessage,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
    as_message,
)
from .wire import IMAGE_BLOCKED_TEXT


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """The text a model sees for a user-run shell command (pi's exact format)."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def convert_to_llm(messages: Iterable[Any], *, block_images: bool = False) -> list[Message]:
    """Translate agent messages into model messages, keeping their order.

    ``bashExecution``, ``custom``, ``branchSummary`` and ``compactionSummary`` become user
    messages with pi's exact wrapper text; ``user``, ``assistant``, ``toolResult`` and
    ``system`` (pi 1.x) pass through unchanged (the same objects); any other role is dropped. ``block_images``
    replaces images in user and tool-result messages with a short note, as pi's
    ``images.blockImages`` setting does. Accepts models or pi-shaped dicts.

    Never raises for what a session file may hold. A summary whose entry has no valid time
    keeps ``timestamp: None`` (pi's ``NaN``). A message of a known role whose fields hold
    values of other types (an :class:`OpaqueMessage` of that role) is read as well as it can
    be (:mod:`pi_jupyter.messages.lenient`): pi's wrapper text is built from the values as
    pi builds it, and odd values in the other roles are shown as text or skipped. Items that
    are no message at all (``null``, a number) are skipped.
    """
    out: list[Any] = []
    for raw in messages:
        if not isinstance(raw, (WireModel, dict)):
            continue  # not a message: nothing a model could be sent
        m = as_message(raw)
        if isinstance(m, OpaqueMessage):
            m = lenient_system_message(m.to_dict()) if m.role == "system" else _readable(m)
            if m is None:
                continue
        if isinstance(m, SystemMessage):
            out.append(m)
        elif isinstance(m, (UserMessage, AssistantMessage, ToolResultMessage)):
            out.append(_block_images(m) if block_images else m)
        elif isinstance(m, (BashExecutionMessage, BranchSummaryMessage, CompactionSummaryMessage)):
            # pi's text from the fields as read (a summary missing from the file reads "undefined" in pi too)
            text = wrapped_text(m.to_dict())
            if text is not None:
                out.append(UserMessage(content=[TextContent(text=text)], timestamp=m.timestamp))
        elif isinstance(m, CustomMessage):
            content: list[UserContent] = [TextContent(text=m.content)] if isinstance(m.content, str) else list(m.content)
            msg = UserMessage(content=content, timestamp=m.timestamp)
            out.append(_block_images(msg) if block_images else msg)
    return out


def _readable(message: OpaqueMessage) -> Any | None:
    """What a model is sent for a message that did not validate (``None``: nothing)."""
    data = message.to_dict()
    text = wrapped_text(data)
    if text is not None:
        return UserMessage(content=[TextContent(text=text)], timestamp=time_ms(data.get("timestamp")))
    return readable_message(data)


def _block_images(message: Any) -> Any:
    if isinstance(message, AssistantMessage) or isinstance(message.content, str):
        return message
    if not any(isinstance(b, ImageContent) for b in message.content):
        return message
    blocks: list[Any] = []
    for block in message.content:
        if isinstance(block, ImageContent):
            block = TextContent(text=IMAGE_BLOCKED_TEXT)
            if blocks and isinstance(blocks[-1], TextContent) and blocks[-1].text == IMAGE_BLOCKED_TEXT:
                continue
        blocks.append(block)
    return message.model_copy(update={"content": blocks})
