"""The provider contract: a model description, a request, and the stream of assistant events.

A provider turns ``(model, request, options)`` into an async stream of
:data:`AssistantEvent` objects, pi's ``AssistantMessageEvent`` protocol: ``start`` first,
then ``text_*`` / ``thinking_*`` / ``toolcall_*`` start, delta and end events, and finally
exactly one ``done`` (stop, length, toolUse) or ``error`` (error, aborted). A provider never
raises into the agent loop: every failure, including a missing key and a cancelled request,
ends the stream with an ``error`` event whose message has ``stop_reason`` ``"error"`` or
``"aborted"`` and a useful ``error_message``; partial content is kept.

Events carry ``partial``, the assistant message being built. It is one object updated in
place (not a copy per delta): consumers must treat it as read-only.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ..messages import AssistantMessage, Message, ThinkingLevel, ToolCall


class ModelCost(BaseModel):
    """Prices in US dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(BaseModel):
    """A model a provider can serve, with what the agent needs to know about it."""

    model_config = ConfigDict(frozen=True)

    id: str
    provider: str
    api: str
    name: str = ""
    base_url: str | None = None
    reasoning: bool = False
    supports_xhigh: bool = False
    input: tuple[Literal["text", "image"], ...] = ("text",)
    context_window: int = 128_000
    max_tokens: int = 16_384
    cost: ModelCost = Field(default_factory=ModelCost)
    headers: dict[str, str] = Field(default_factory=dict)
    compat: dict[str, Any] = Field(default_factory=dict)

    @property
    def ref(self) -> str:
        """``provider/id``, the string users type."""
        return f"{self.provider}/{self.id}"

    def __str__(self) -> str:
        return self.ref


class ToolSpec(BaseModel):
    """A tool as the model sees it: a name, a description and a JSON schema for the arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class LlmRequest(BaseModel):
    """What one model call carries (pi's ``Context``): system prompt, messages and tools."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    system_prompt: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)


class AbortSignal:
    """Set once to ask a running stream or tool to stop (pi's ``AbortSignal``)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None
        self._callbacks: list[Any] = []

    @property
    def aborted(self) -> bool:
        """True once :meth:`abort` was called."""
        return self._event.is_set()

    def abort(self, reason: str = "aborted") -> None:
        """Ask everyone holding this signal to stop. Call it on the loop that awaits :meth:`wait`."""
        if self._event.is_set():
            return
        self.reason = reason
        self._event.set()
        for cb in list(self._callbacks):
            try:
                cb()
            except Exception:  # noqa: BLE001 - an observer must not break the abort
                pass

    def on_abort(self, callback: Any) -> Any:
        """Call ``callback()`` when aborted (at once if already aborted).

        Returns a function that unregisters ``callback`` (a signal that outlives many
        requests must not collect one callback per request).
        """
        if self.aborted:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

        return unsubscribe

    async def wait(self) -> None:
        """Wait until aborted."""
        await self._event.wait()


class StreamOptions(BaseModel):
    """Per-call options. ``api_key`` is a ``SecretStr``: it never shows in a repr or a log."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    api_key: SecretStr | None = None
    reasoning: ThinkingLevel | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    session_id: str | None = None
    signal: AbortSignal | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float | None = None
    max_retry_delay_ms: int = 60_000


class _Event(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape of the event (camelCase keys)."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            key = camel_case(name)
            out[key] = value.to_dict() if hasattr(value, "to_dict") else value
        return out


class StartEvent(_Event):
    """The stream began; ``partial`` is the (empty) assistant message."""

    type: Literal["start"] = "start"
    partial: AssistantMessage


class TextStartEvent(_Event):
    """A text block opened at ``content_index``."""

    type: Literal["text_start"] = "text_start"
    content_index: int
    partial: AssistantMessage


class TextDeltaEvent(_Event):
    """More text for the block at ``content_index``."""

    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class TextEndEvent(_Event):
    """The text block at ``content_index`` is complete."""

    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage


class ThinkingStartEvent(_Event):
    """A thinking block opened."""

    type: Literal["thinking_start"] = "thinking_start"
    content_index: int
    partial: AssistantMessage


class ThinkingDeltaEvent(_Event):
    """More thinking."""

    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class ThinkingEndEvent(_Event):
    """The thinking block is complete."""

    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage


class ToolCallStartEvent(_Event):
    """A tool call opened."""

    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int
    partial: AssistantMessage


class ToolCallDeltaEvent(_Event):
    """A raw JSON fragment of the arguments; ``partial`` holds the best-effort parse so far."""

    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class ToolCallEndEvent(_Event):
    """The tool call is complete, with its parsed arguments."""

    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage


class DoneEvent(_Event):
    """The message is complete."""

    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(_Event):
    """The call failed or was aborted; ``error`` is the final message (partial content kept)."""

    type: Literal["error"] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage


AssistantEvent = Union[
    StartEvent,
    TextStartEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolCallStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    DoneEvent,
    ErrorEvent,
]
"""One event of a provider stream."""


@runtime_checkable
class Provider(Protocol):
    """Anything that can stream an assistant message for a model."""

    def stream(self, model: Model, request: LlmRequest, options: StreamOptions) -> AsyncIterator[AssistantEvent]:
        """Stream the reply to ``request``; must end with one ``done`` or ``error`` event and never raise."""
        ...


def camel_case(name: str) -> str:
    """``snake_case`` -> ``camelCase``: the one rule for pi's field names."""
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def final_message(event: AssistantEvent) -> AssistantMessage | None:
    """The final assistant message of a ``done`` or ``error`` event, else ``None``."""
    if isinstance(event, DoneEvent):
        return event.message
    if isinstance(event, ErrorEvent):
        return event.error
    return None
