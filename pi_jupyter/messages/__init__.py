"""Neutral message and content types, ``convert_to_llm`` and the wire constants.

The bottom layer: it imports nothing else from pi_jupyter.
"""

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
