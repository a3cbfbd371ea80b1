"""``anthropic-messages``: Anthropic's Messages API through the official ``anthropic`` SDK.

The SDK (``AsyncAnthropic``) sends the request and raises on HTTP errors; the SSE body is
read directly and parsed with ``orjson`` (the SDK's typed events cost more per delta than
the rest of the loop). Thinking is kept so a later turn replays validly: signed thinking
keeps its ``thinking_signature``; redacted thinking becomes a thinking block with
``redacted=True``, the opaque payload in ``thinking_signature`` and the text
``"[Reasoning redacted]"``, and is sent back as ``redacted_thinking``. Prompt caching marks
the system prompt, the last tool and the last user block (``cache_control: ephemeral``),
as pi does; ``Model.compat["cache"] = False`` turns that off.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import orjson

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ._stream import HttpAdapter, MessageBuilder, ProviderError, SseEvents
from .base import AssistantEvent, LlmRequest, Model, StreamOptions
from .text import sanitize_surrogates
from .transcript import wire_request

REDACTED_TEXT = "[Reasoning redacted]"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_STOP = {"end_turn": "stop", "max_tokens": "length", "tool_use": "toolUse", "pause_turn": "stop", "stop_sequence": "stop"}


def normalize_tool_call_id(call_id: str, _model: Model | None = None, _source: AssistantMessage | None = None) -> str:
    """An id Anthropic accepts: ``^[a-zA-Z0-9_-]+$``, at most 64 characters."""
    return _BAD_ID_CHARS.sub("_", call_id)[:64]


def supports_adaptive_thinking(model_id: str) -> bool:
    """Opus 4.6+/Sonnet 4.6 decide how long to think themselves (``thinking: adaptive``)."""
    return any(tag in model_id for tag in ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6"))


def _tool_result_content(content: list[Any]) -> Any:
    if not any(isinstance(b, ImageContent) for b in content):
        return sanitize_surrogates("\n".join(b.text for b in content if isinstance(b, TextContent)))
    blocks: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            blocks.append({"type": "text", "text": sanitize_surrogates(b.text)})
        elif isinstance(b, ImageContent):
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}})
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def convert_messages(model: Model, request: LlmRequest, cache: bool = True) -> list[dict[str, Any]]:
    """The ``messages`` array of a Messages request (after :func:`transform_messages`)."""
    params: list[dict[str, Any]] = []
    messages: list[Any] = wire_request(request, model, normalize_tool_call_id).messages  # what %pi context and the lens count
    i = 0
    while i < len(messages):
        msg = messages[i]
        if isinstance(msg, UserMessage):
            if isinstance(msg.content, str):
                if msg.content.strip():
                    params.append({"role": "user", "content": sanitize_surrogates(msg.content)})
            else:
                blocks: list[dict[str, Any]] = []
                for b in msg.content:
                    if isinstance(b, TextContent):
                        if b.text.strip():
                            blocks.append({"type": "text", "text": sanitize_surrogates(b.text)})
                    elif isinstance(b, ImageContent):
                        blocks.append({"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}})
                if blocks:
                    params.append({"role": "user", "content": blocks})
        elif isinstance(msg, AssistantMessage):
            blocks = []
            for b in msg.content:
                if isinstance(b, TextContent):
                    if b.text.strip():
                        blocks.append({"type": "text", "text": sanitize_surrogates(b.text)})
                elif isinstance(b, ThinkingContent):
                    if b.redacted:
                        blocks.append({"type": "redacted_thinking", "data": b.thinking_signature or ""})
                    elif not b.thinking.strip():
                        continue
                    elif not b.thinking_signature or not b.thinking_signature.strip():
                        # Unsigned thinking (an aborted stream, another vendor) is replayed as text.
                        blocks.append({"type": "text", "text": sanitize_surrogates(b.thinking)})
                    else:
                        blocks.append({"type": "thinking", "thinking": sanitize_surrogates(b.thinking), "signature": b.thinking_signature})
                elif isinstance(b, ToolCall):
                    blocks.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.arguments or {}})
            if blocks:
                params.append({"role": "assistant", "content": blocks})
        elif isinstance(msg, ToolResultMessage):
            results = []
            while i < len(messages) and isinstance(messages[i], ToolResultMessage):
                tr = messages[i]
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": tr.tool_call_id,
                        "content": _tool_result_content(tr.content),
                        "is_error": tr.is_error,
                    }
                )
                i += 1
            params.append({"role": "user", "content": results})
            continue
        i += 1
    if cache and params and params[-1]["role"] == "user":
        last = params[-1]
        if isinstance(last["content"], list):
            block = last["content"][-1]
            if block.get("type") in ("text", "image", "tool_result"):
                block["cache_control"] = {"type": "ephemeral"}
        elif isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": {"type": "ephemeral"}}]
    return params


def build_params(model: Model, request: LlmRequest, options: StreamOptions) -> dict[str, Any]:
    """Keyword arguments for ``messages.create``."""
    cache = model.compat.get("cache", True)
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens > 0 else 4096)
    params: dict[str, Any] = {"model": model.id, "messages": convert_messages(model, request, cache), "stream": True}
    if request.system_prompt:
        block: dict[str, Any] = {"type": "text", "text": sanitize_surrogates(request.system_prompt)}
        if cache:
            block["cache_control"] = {"type": "ephemeral"}
        params["system"] = [block]
    level = options.reasoning if options.reasoning and options.reasoning != "off" else None
    thinking = bool(model.reasoning and level)
    if options.temperature is not None and not thinking:
        params["temperature"] = options.temperature
    if request.tools:
        tools = []
        for n, t in enumerate(request.tools):
            schema = t.parameters or {}
            tool: dict[str, Any] = {
                "name": t.name,
                "description": t.description,
                "input_schema": {"type": "object", "properties": schema.get("properties", {}), "required": schema.get("required", [])},
            }
            if cache and n == len(request.tools) - 1:
                tool["cache_control"] = {"type": "ephemeral"}
            tools.append(tool)
        params["tools"] = tools
    if model.reasoning:
        if thinking and supports_adaptive_thinking(model.id):
            params["thinking"] = {"type": "adaptive"}
            effort = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level or "", "high")
            if level == "xhigh":
                effort = "max" if ("opus-4-6" in model.id or "opus-4.6" in model.id) else "xhigh"
            params["extra_body"] = {"output_config": {"effort": effort}}
        elif thinking:
            budget = _THINKING_BUDGETS[level or "medium"]
            # pi's adjustment: room for the thinking budget on top of the answer.
            total = min(max_tokens + budget, model.max_tokens) if model.max_tokens else max_tokens + budget
            if total <= budget:
                budget = max(0, total - 1024)
            max_tokens = total
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        else:
            params["thinking"] = {"type": "disabled"}
    params["max_tokens"] = max_tokens
    return params


class AnthropicMessagesProvider(HttpAdapter):
    """The ``anthropic-messages`` provider (Anthropic Messages through the ``anthropic`` SDK)."""

    api = "anthropic-messages"

    def make_client(self, model: Model, key: str, headers: dict[str, str], timeout_s: float | None) -> Any:
        """An ``AsyncAnthropic`` client for ``model.base_url`` with retries off."""
        from anthropic import AsyncAnthropic

        kwargs: dict[str, Any] = {"api_key": key, "max_retries": 0, "default_headers": headers or None}
        if model.base_url:
            kwargs["base_url"] = model.base_url
        if timeout_s is not None:
            kwargs["timeout"] = timeout_s
        return AsyncAnthropic(**kwargs)

    async def open(self, client: Any, model: Model, request: LlmRequest, options: StreamOptions) -> Any:
        """POST ``/v1/messages`` with ``stream: true``; the SDK raises on an HTTP error."""
        params = build_params(model, request, options)
        if params.get("thinking", {}).get("type") == "enabled":
            params["extra_headers"] = {"anthropic-beta": INTERLEAVED_THINKING_BETA}
        stream = await client.messages.create(**params)
        return stream.response

    async def consume(self, sse: SseEvents, b: MessageBuilder, request: LlmRequest) -> AsyncIterator[AssistantEvent]:
        """Turn Messages stream events into events."""
        by_index: dict[int, int] = {}  # Anthropic block index -> content index
        saw_start = saw_stop = False
        loads = orjson.loads
        usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        async for name, data in sse:
            if name == "error":
                try:
                    err = loads(data).get("error", {})
                    message = f"{err.get('type', 'error')}: {err.get('message', '')}"
                except (orjson.JSONDecodeError, AttributeError):
                    message = data.decode(errors="replace")
                raise ProviderError(f"Stream error from the server: {message}")
            if name == "ping":
                continue
            try:
                ev = loads(data)
            except orjson.JSONDecodeError:
                raise ProviderError(f"Malformed stream from the server: could not parse SSE event {name!r}: {data[:200]!r}") from None
            kind = ev.get("type") if isinstance(ev, dict) else None
            if kind == "content_block_delta":
                index = by_index.get(ev.get("index", -1))
                if index is None:
                    continue
                delta = ev.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "text_delta":
                    yield b.text_delta(index, delta.get("text", ""))
                elif dtype == "thinking_delta":
                    yield b.thinking_delta(index, delta.get("thinking", ""))
                elif dtype == "input_json_delta":
                    yield b.toolcall_delta(index, delta.get("partial_json", ""))
                elif dtype == "signature_delta":
                    b.add_signature(index, delta.get("signature", ""))
            elif kind == "content_block_start":
                block = ev.get("content_block") or {}
                btype = block.get("type")
                out: AssistantEvent
                if btype == "text":
                    index, out = b.text_start()
                elif btype == "thinking":
                    index, out = b.thinking_start("")
                elif btype == "redacted_thinking":
                    index, out = b.thinking_start(block.get("data", ""), thinking=REDACTED_TEXT, redacted=True)
                elif btype == "tool_use":
                    index, out = b.toolcall_start(block.get("id", ""), block.get("name", ""), block.get("input") or {})
                else:
                    continue
                by_index[ev.get("index", -1)] = index
                yield out
            elif kind == "content_block_stop":
                index = by_index.pop(ev.get("index", -1), None)
                if index is not None:
                    yield b.end(index)
            elif kind == "message_start":
                saw_start = True
                u = (ev.get("message") or {}).get("usage") or {}
                usage = {
                    "input": u.get("input_tokens") or 0,
                    "output": u.get("output_tokens") or 0,
                    "cache_read": u.get("cache_read_input_tokens") or 0,
                    "cache_write": u.get("cache_creation_input_tokens") or 0,
                }
                b.set_usage(**usage)
            elif kind == "message_delta":
                reason = (ev.get("delta") or {}).get("stop_reason")
                if reason:
                    b.set_stop(reason, _STOP, "stop_reason")
                u = ev.get("usage") or {}
                # Proxies may leave out counts here; keep those from message_start.
                for ours, theirs in (
                    ("input", "input_tokens"),
                    ("output", "output_tokens"),
                    ("cache_read", "cache_read_input_tokens"),
                    ("cache_write", "cache_creation_input_tokens"),
                ):
                    if u.get(theirs) is not None:
                        usage[ours] = u[theirs]
                b.set_usage(**usage)
            elif kind == "message_stop":
                saw_stop = True
        if not saw_start:
            raise ProviderError("Malformed stream from the server: no message_start event")
        if not saw_stop:
            raise ProviderError("Connection error: the stream ended before message_stop")
