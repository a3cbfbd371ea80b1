"""Messages: what the agent and the model exchange, in pi's JSON shape.

Three roles go to a model (``user``, ``assistant``, ``toolResult``); four more belong to the
agent and are translated by :func:`~pi_jupyter.messages.convert_to_llm` before a request
(``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary``). A message of a
role this version does not know is kept as :class:`OpaqueMessage` and never sent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, TypeAdapter, ValidationError

from .base import WIRE, WireModel
from .content import ContentBlock, ImageContent, TextContent, ThinkingContent, ToolCall, UserContent
from .text import json_type, now_ms

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
"""Why an assistant message ended."""

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
"""How hard a reasoning model is asked to think."""

THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


class Cost(WireModel):
    """Cost of one response in US dollars."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(WireModel):
    """Token counts reported by the provider, and their cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)

    def context_tokens(self) -> int:
        """Tokens this request occupied in the context window (pi's ``calculateContextTokens``)."""
        return self.total_tokens or (self.input + self.output + self.cache_read + self.cache_write)


class UserMessage(WireModel):
    """What the user (or a program on the user's behalf) says.

    ``timestamp`` is ``None`` (written ``null``) where no time is known: a summary whose entry
    has no valid time (pi's ``NaN``, which ``JSON.stringify`` writes as ``null``), or a file
    that holds ``null``.
    """

    _keep_none = frozenset({"timestamp"})

    role: Literal["user"] = "user"
    content: str | list[UserContent] = ""
    timestamp: int | None = Field(default_factory=now_ms)

    @classmethod
    def text(cls, text: str, images: list[ImageContent] | None = None) -> UserMessage:
        """A user message the way pi's prompt writes it: a text block first, images after."""
        blocks: list[Any] = [TextContent(text=text)]
        blocks.extend(images or [])
        return cls(content=blocks)


class AssistantMessage(WireModel):
    """A model's reply: text, thinking and tool calls, with usage and the reason it stopped."""

    role: Literal["assistant"] = "assistant"
    content: list[ContentBlock] = Field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)

    @property
    def text(self) -> str:
        """The text blocks joined with newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def thinking(self) -> str:
        """The thinking blocks joined with newlines."""
        return "\n".join(b.thinking for b in self.content if isinstance(b, ThinkingContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls, in the order the model made them."""
        return [b for b in self.content if isinstance(b, ToolCall)]


class ToolResultMessage(WireModel):
    """The outcome of one tool call. ``details`` is for people and programs, not the model."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str = ""
    content: list[UserContent] = Field(default_factory=list)
    details: Any = None
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


class BashExecutionMessage(WireModel):
    """A shell command the user ran themselves (pi's ``!cmd``); shown to the model as text."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str = ""
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    timestamp: int = Field(default_factory=now_ms)
    exclude_from_context: bool | None = None


class CustomMessage(WireModel):
    """A message from an extension that the model does see (stored as ``custom_message``)."""

    role: Literal["custom"] = "custom"
    custom_type: str = ""
    content: str | list[UserContent] = ""
    display: bool | None = None
    details: Any = None
    timestamp: int | None = Field(default_factory=now_ms)


class BranchSummaryMessage(WireModel):
    """A summary of a branch the conversation came back from (from a ``branch_summary`` entry)."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str = ""
    from_id: str = ""
    timestamp: int | None = None


class CompactionSummaryMessage(WireModel):
    """The summary that stands in for compacted history (from a ``compaction`` entry)."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str = ""
    tokens_before: int = 0
    timestamp: int | None = None


class SystemMessage(WireModel):
    """The system prompt and tool set as pi 1.x records them in the transcript.

    The current prompt and tools are the replay of every system message on the branch
    (:func:`~pi_jupyter.messages.system.current_system_message`): ``content`` is appended,
    ``sections`` are set by name (``None`` removes one), ``tools_added``/``tools_removed``
    change the tool set. ``content`` may be ``None`` in a file; it is read as empty.
    """

    role: Literal["system"] = "system"
    content: str | list[TextContent] | None = ""
    sections: dict[str, str | None] | None = None
    tools_added: list[dict[str, Any]] | None = None
    tools_removed: list[dict[str, Any]] | None = None
    timestamp: int | None = Field(default_factory=now_ms)


class OpaqueMessage(WireModel):
    """A message of a role this version does not know, or one whose fields do not have the
    types its role asks for (an odd file); kept as read.

    An unknown role is never sent to a model; :func:`~pi_jupyter.messages.convert_to_llm`
    reads a known role's message as well as it can (see :mod:`pi_jupyter.messages.lenient`).
    ``role`` is whatever the file holds (usually a string).
    """

    _keep_none = frozenset({"role"})  # a role of null is kept as read

    role: Any = ""


MESSAGE_ROLES = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "toolResult": ToolResultMessage,
    "bashExecution": BashExecutionMessage,
    "custom": CustomMessage,
    "branchSummary": BranchSummaryMessage,
    "compactionSummary": CompactionSummaryMessage,
    "system": SystemMessage,
}


def _role_kind(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return role if isinstance(role, str) and role in MESSAGE_ROLES else "opaque"


AgentMessage = Annotated[
    Union[
        Annotated[UserMessage, Tag("user")],
        Annotated[AssistantMessage, Tag("assistant")],
        Annotated[ToolResultMessage, Tag("toolResult")],
        Annotated[BashExecutionMessage, Tag("bashExecution")],
        Annotated[CustomMessage, Tag("custom")],
        Annotated[BranchSummaryMessage, Tag("branchSummary")],
        Annotated[CompactionSummaryMessage, Tag("compactionSummary")],
        Annotated[SystemMessage, Tag("system")],
        Annotated[OpaqueMessage, Tag("opaque")],
    ],
    Discriminator(_role_kind),
]
"""Any message the agent keeps in its context."""

Message = Union[UserMessage, AssistantMessage, ToolResultMessage, SystemMessage]
"""A message a model understands (the output of ``convert_to_llm``); system messages are pi 1.x's."""

_agent_message = TypeAdapter(AgentMessage)


def message_from_dict(data: dict[str, Any]) -> Any:
    """Validate one message dict; a message that does not validate is kept as :class:`OpaqueMessage`.

    Never raises for a dict, whatever its values; anything else is a ``TypeError``.
    """
    if not isinstance(data, dict):
        raise TypeError(f"a message is a JSON object, not a JSON {json_type(data)}")
    try:
        return _agent_message.validate_python(data, context=WIRE)
    except ValidationError:
        return OpaqueMessage.model_validate(data, context=WIRE)


def messages_from_dicts(items: list[dict[str, Any]]) -> list[Any]:
    """Validate a list of message dicts (see :func:`message_from_dict`)."""
    return [message_from_dict(m) for m in items]


def as_message(value: Any) -> Any:
    """Accept a message model or a pi-shaped dict and return a model."""
    if isinstance(value, WireModel):
        return value
    if isinstance(value, dict):
        return message_from_dict(value)
    raise TypeError(f"expected a message model or dict, got {type(value).__name__}")


__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Cost",
    "CustomMessage",
    "Message",
    "OpaqueMessage",
    "StopReason",
    "SystemMessage",
    "THINKING_LEVELS",
    "ThinkingLevel",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "as_message",
    "message_from_dict",
    "messages_from_dicts",
]
