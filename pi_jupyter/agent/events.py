"""Agent events: one typed stream that the widget, the JSON log, persistence and users consume.

Names and fields follow pi (``agent_start`` ... ``tool_execution_end``, plus the session's
``auto_compaction_*`` and ``auto_retry_*``). :meth:`AgentEvent.to_dict` gives pi's JSON-mode
shape. Unlike pi, ``message_update`` events are cheap: ``message`` is the partial message
object itself (not a copy), and the JSON form can leave it out (``delta_only=True``) so a
long stream is O(n), not O(n²).
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict

from ..messages import AssistantMessage, ToolCall, ToolResultMessage
from ..providers.base import (
    AssistantEvent,
    camel_case,  # one snake_case -> camelCase rule for every event
)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


class AgentEvent(BaseModel):
    """Base of every agent event."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    type: str

    def to_dict(self, delta_only: bool = False) -> dict[str, Any]:
        """pi's JSON-mode object for this event (camelCase keys, unset fields left out)."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is None:
                continue
            out[camel_case(name)] = _jsonable(value)
        return out


class AgentStartEvent(AgentEvent):
    """A run began."""

    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(AgentEvent):
    """A run ended; ``messages`` are all messages it added."""

    type: Literal["agent_end"] = "agent_end"
    messages: list[Any] = []


class TurnStartEvent(AgentEvent):
    """A turn (one model call and the tools it asked for) began."""

    type: Literal["turn_start"] = "turn_start"


class TurnEndEvent(AgentEvent):
    """A turn ended with ``message`` and the results of its tool calls."""

    type: Literal["turn_end"] = "turn_end"
    message: Any = None
    tool_results: list[ToolResultMessage] = []


class MessageStartEvent(AgentEvent):
    """A message began (user, custom and tool-result messages start and end at once)."""

    type: Literal["message_start"] = "message_start"
    message: Any


class MessageUpdateEvent(AgentEvent):
    """The streaming assistant message changed; ``assistant_message_event`` is the provider event."""

    type: Literal["message_update"] = "message_update"
    message: AssistantMessage
    assistant_message_event: AssistantEvent

    @classmethod
    def fast(cls, message: AssistantMessage, event: AssistantEvent) -> MessageUpdateEvent:
        """Build without validation: this is the per-delta hot path (about 1 µs instead of 20)."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "__dict__", {"type": "message_update", "message": message, "assistant_message_event": event})
        object.__setattr__(obj, "__pydantic_fields_set__", _UPDATE_FIELDS)
        object.__setattr__(obj, "__pydantic_extra__", None)
        object.__setattr__(obj, "__pydantic_private__", None)
        return obj

    def to_dict(self, delta_only: bool = False) -> dict[str, Any]:
        ev = self.assistant_message_event.to_dict()
        if delta_only:
            # pi 1.6's JSON/RPC shape (``toJsonEvent``): the usage so far, the event without its partial,
            # and a tool call's id and name on ``toolcall_start``
            ev.pop("partial", None)
            if ev.get("type") == "toolcall_start":
                index = ev.get("contentIndex")
                content = self.message.content
                block = content[index] if isinstance(index, int) and 0 <= index < len(content) else None
                if isinstance(block, ToolCall):
                    ev["id"], ev["toolName"] = block.id, block.name
            return {"type": self.type, "usage": self.message.usage.to_dict(), "assistantMessageEvent": ev}
        return {"type": self.type, "message": self.message.to_dict(), "assistantMessageEvent": ev}


_UPDATE_FIELDS = frozenset({"message", "assistant_message_event"})


class MessageEndEvent(AgentEvent):
    """A message is complete (persistence writes it now)."""

    type: Literal["message_end"] = "message_end"
    message: Any
    entry_id: str | None = None
    """The session entry the message was stored as (set by the persistence subscriber)."""

    def to_dict(self, delta_only: bool = False) -> dict[str, Any]:
        return {"type": self.type, "message": _jsonable(self.message)}


class ToolExecutionStartEvent(AgentEvent):
    """A tool call started."""

    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: Any = None


class ToolExecutionUpdateEvent(AgentEvent):
    """A running tool reported partial output."""

    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: Any = None
    partial_result: Any = None


class ToolExecutionEndEvent(AgentEvent):
    """A tool call finished; ``result`` is ``{content, details}``."""

    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: Any = None
    is_error: bool = False


class AutoCompactionStartEvent(AgentEvent):
    """Automatic compaction began (``threshold``: the context is nearly full; ``overflow``: the model refused it)."""

    type: Literal["auto_compaction_start"] = "auto_compaction_start"
    reason: Literal["threshold", "overflow"]


class AutoCompactionEndEvent(AgentEvent):
    """Automatic compaction ended."""

    type: Literal["auto_compaction_end"] = "auto_compaction_end"
    result: Any = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None


class AutoRetryStartEvent(AgentEvent):
    """A transient error; the call is retried after ``delay_ms``."""

    type: Literal["auto_retry_start"] = "auto_retry_start"
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    retry_after_ms: int | None = None
    """The wait the server asked for (its ``Retry-After``); ``delay_ms`` is it, capped by the retry settings."""


class AutoRetryEndEvent(AgentEvent):
    """Retrying ended (``success`` or gave up with ``final_error``)."""

    type: Literal["auto_retry_end"] = "auto_retry_end"
    success: bool
    attempt: int
    final_error: str | None = None


class ExtensionErrorEvent(AgentEvent):
    """An extension's hook raised; the run went on."""

    type: Literal["extension_error"] = "extension_error"
    extension_path: str
    event: str
    error: str


class SessionEvent(AgentEvent):
    """Something changed in the session outside a run (checkout, compaction, fork, label, model)."""

    type: Literal["session_event"] = "session_event"
    action: str
    data: dict[str, Any] = {}


class EntryAppendedEvent(AgentEvent):
    """An entry was written outside the message flow (an extension's ``custom`` entry, a context edit), as pi 1.6 announces it."""

    type: Literal["entry_appended"] = "entry_appended"
    entry: dict[str, Any]


Event = Union[
    AgentStartEvent,
    AgentEndEvent,
    TurnStartEvent,
    TurnEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    MessageEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolExecutionEndEvent,
    AutoCompactionStartEvent,
    AutoCompactionEndEvent,
    AutoRetryStartEvent,
    AutoRetryEndEvent,
    ExtensionErrorEvent,
    SessionEvent,
    EntryAppendedEvent,
]
"""Any event on an agent's stream."""
