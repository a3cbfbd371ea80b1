"""Neutral message and content types, ``convert_to_llm`` and the wire constants.

The bottom layer: it imports nothing else from pi_jupyter.

Names are imported from their modules on first use, so importing one module of this package
(its text helpers, say) does not import the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers; at run time names load on first use
    from .base import WireModel
    from .content import ContentBlock, ImageContent, OpaqueContent, TextContent, ThinkingContent, ToolCall, text_of
    from .convert import bash_execution_to_text, convert_to_llm
    from .text import iso_from_ms, js_len, js_slice, ms_from_iso, now_iso, now_ms
    from .types import (
        THINKING_LEVELS,
        AgentMessage,
        AssistantMessage,
        BashExecutionMessage,
        BranchSummaryMessage,
        CompactionSummaryMessage,
        Cost,
        CustomMessage,
        Message,
        OpaqueMessage,
        StopReason,
        SystemMessage,
        ThinkingLevel,
        ToolResultMessage,
        Usage,
        UserMessage,
        as_message,
        message_from_dict,
        messages_from_dicts,
    )
    from .wire import (
        BRANCH_SUMMARY_PREFIX,
        BRANCH_SUMMARY_SUFFIX,
        COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
    )

_WHERE: dict[str, str] = {
    "WireModel": "base",
    "ContentBlock": "content",
    "ImageContent": "content",
    "OpaqueContent": "content",
    "TextContent": "content",
    "ThinkingContent": "content",
    "ToolCall": "content",
    "text_of": "content",
    "bash_execution_to_text": "convert",
    "convert_to_llm": "convert",
    "iso_from_ms": "text",
    "js_len": "text",
    "js_slice": "text",
    "ms_from_iso": "text",
    "now_iso": "text",
    "now_ms": "text",
    "THINKING_LEVELS": "types",
    "AgentMessage": "types",
    "AssistantMessage": "types",
    "BashExecutionMessage": "types",
    "BranchSummaryMessage": "types",
    "CompactionSummaryMessage": "types",
    "Cost": "types",
    "CustomMessage": "types",
    "Message": "types",
    "OpaqueMessage": "types",
    "StopReason": "types",
    "SystemMessage": "types",
    "ThinkingLevel": "types",
    "ToolResultMessage": "types",
    "Usage": "types",
    "UserMessage": "types",
    "as_message": "types",
    "message_from_dict": "types",
    "messages_from_dicts": "types",
    "BRANCH_SUMMARY_PREFIX": "wire",
    "BRANCH_SUMMARY_SUFFIX": "wire",
    "COMPACTION_SUMMARY_PREFIX": "wire",
    "COMPACTION_SUMMARY_SUFFIX": "wire",
}
"""Public name -> the module of this package that defines it."""


__getattr__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "CompactionSummaryMessage",
    "ContentBlock",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "Message",
    "OpaqueContent",
    "OpaqueMessage",
    "StopReason",
    "SystemMessage",
    "THINKING_LEVELS",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "WireModel",
    "as_message",
    "bash_execution_to_text",
    "convert_to_llm",
    "iso_from_ms",
    "js_len",
    "js_slice",
    "message_from_dict",
    "messages_from_dicts",
    "ms_from_iso",
    "now_iso",
    "now_ms",
    "text_of",
]
