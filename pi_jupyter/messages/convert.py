"""``convert_to_llm``: the agent's messages translated into what a model understands."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .content import ImageContent, TextContent
from .types import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
    as_message,
)
from .wire import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    IMAGE_BLOCKED_TEXT,
)


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


def convert_to_llm(messages: Iterable[Any], *, block_images: bool = False) -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    """Translate agent messages into model messages, keeping their order.

    ``bashExecution``, ``custom``, ``branchSummary`` and ``compactionSummary`` become user
    messages with pi's exact wrapper text; ``user``, ``assistant`` and ``toolResult`` pass
    through unchanged (the same objects); any other role is dropped. ``block_images``
    replaces images in user and tool-result messages with a short note, as pi's
    ``images.blockImages`` setting does. Accepts models or pi-shaped dicts.
    """
    out: list[Any] = []
    for raw in messages:
        m = as_message(raw)
        if isinstance(m, (UserMessage, AssistantMessage, ToolResultMessage)):
            out.append(_block_images(m) if block_images else m)
        elif isinstance(m, BashExecutionMessage):
            if m.exclude_from_context:
                continue
            out.append(UserMessage(content=[TextContent(text=bash_execution_to_text(m))], timestamp=m.timestamp))
        elif isinstance(m, CustomMessage):
            content = [TextContent(text=m.content)] if isinstance(m.content, str) else list(m.content)
            msg = UserMessage(content=content, timestamp=m.timestamp)
            out.append(_block_images(msg) if block_images else msg)
        elif isinstance(m, BranchSummaryMessage):
            text = BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX
            out.append(UserMessage(content=[TextContent(text=text)], timestamp=m.timestamp))
        elif isinstance(m, CompactionSummaryMessage):
            text = COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX
            out.append(UserMessage(content=[TextContent(text=text)], timestamp=m.timestamp))
    return out


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
