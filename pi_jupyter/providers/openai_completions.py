"""``openai-completions``: OpenAI chat completions, and every server that speaks them.

Works through the official ``openai`` SDK (``AsyncOpenAI``), so any OpenAI-compatible
server is reached by ``Model.base_url``: llama.cpp's ``llama-server``, Ollama, vLLM, LM
Studio, OpenRouter, Groq... The SDK sends the request and raises on HTTP errors; the SSE
body is read directly (``orjson`` per chunk) because the SDK's typed chunk objects cost
more per delta than everything else in the loop together.

Reasoning arrives as ``reasoning_content`` (llama.cpp, DeepSeek), ``reasoning`` or
``reasoning_text`` (others): the first non-empty field becomes a thinking block whose
``thinking_signature`` records the field name, so a later turn sends it back in the same
field. Per-server quirks are switched in ``Model.compat`` (snake_case keys):

===================================  ==========================================================
``supports_developer_role``          system prompt as ``developer`` for reasoning models (OpenAI)
``supports_reasoning_effort``        send ``reasoning_effort`` for the thinking level
``thinking_format``                  ``"openai"`` (``reasoning_effort``), ``"openrouter"``
                                     (``reasoning: {effort}``), ``"qwen"`` (``enable_thinking``),
                                     ``"qwen-chat-template"`` (``chat_template_kwargs``)
``max_tokens_field``                 ``"max_completion_tokens"`` (OpenAI) or ``"max_tokens"``
``supports_usage_in_streaming``      ask for usage with ``stream_options.include_usage``
``supports_store``                   send ``store: false``
``supports_strict_mode``             send ``strict: false`` in tool definitions
``requires_tool_result_name``        tool messages carry ``name``
``requires_assistant_after_tool_result``  bridge a tool result and a user message
``requires_thinking_as_text``        replay thinking as text
===================================  ==========================================================
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ._stream import HttpAdapter, MessageBuilder, ProviderError, SseEvents
from .base import AssistantEvent, LlmRequest, Model, StreamOptions
from .text import sanitize_surrogates
from .transcript import wire_request

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


def compat_of(model: Model) -> dict[str, Any]:
    """The resolved compatibility switches for ``model`` (defaults from provider and URL)."""
    url = model.base_url or ""
    is_openai = model.provider == "openai" or "api.openai.com" in url
    is_openrouter = model.provider == "openrouter" or "openrouter.ai" in url
    detected: dict[str, Any] = {
        "supports_developer_role": is_openai,
        "supports_reasoning_effort": model.provider not in ("xai", "zai", "moonshotai"),
        "thinking_format": "openrouter" if is_openrouter else "openai",
        "max_tokens_field": "max_completion_tokens" if is_openai else "max_tokens",
        "supports_usage_in_streaming": True,
        "supports_store": is_openai,
        "supports_strict_mode": model.provider not in ("moonshotai",),
        "requires_tool_result_name": False,
        "requires_assistant_after_tool_result": False,
        "requires_thinking_as_text": False,
    }
    detected.update({k: v for k, v in model.compat.items() if v is not None})
    return detected


def normalize_tool_call_id(call_id: str, model: Model, _source: AssistantMessage | None = None) -> str:
    """An id OpenAI accepts: Responses-style ``call|item`` ids are cut to the call part; at most 40 characters for OpenAI."""
    if "|" in call_id:
        head = call_id.split("|", 1)[0]
        return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in head)[:40]
    if model.provider == "openai" and len(call_id) > 40:
        return call_id[:40]
    return call_id


def convert_messages(model: Model, request: LlmRequest, compat: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``messages`` array of a chat-completions request (after :func:`transform_messages`)."""
    params: list[dict[str, Any]] = []
    messages: list[Any] = wire_request(request, model, normalize_tool_call_id).messages  # what %pi context and the lens count
    if request.system_prompt:
        role = "developer" if model.reasoning and compat["supports_developer_role"] else "system"
        params.append({"role": role, "content": sanitize_surrogates(request.system_prompt)})
    last_role: str | None = None
    i = 0
    while i < len(messages):
        msg = messages[i]
        if compat["requires_assistant_after_tool_result"] and last_role == "toolResult" and isinstance(msg, UserMessage):
            params.append({"role": "assistant", "content": "I have processed the tool results."})
        if isinstance(msg, UserMessage):
            if isinstance(msg.content, str):
                params.append({"role": "user", "content": sanitize_surrogates(msg.content)})
            else:
                parts: list[dict[str, Any]] = []
                for block in msg.content:
                    if isinstance(block, TextContent):
                        parts.append({"type": "text", "text": sanitize_surrogates(block.text)})
                    elif isinstance(block, ImageContent):
                        parts.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
                if parts:
                    params.append({"role": "user", "content": parts})
            last_role = "user"
        elif isinstance(msg, AssistantMessage):
            out: dict[str, Any] = {"role": "assistant", "content": "" if compat["requires_assistant_after_tool_result"] else None}
            text = "".join(sanitize_surrogates(b.text) for b in msg.content if isinstance(b, TextContent) and b.text.strip())
            thinking = [b for b in msg.content if isinstance(b, ThinkingContent) and b.thinking.strip() and not b.redacted]
            if thinking and compat["requires_thinking_as_text"]:
                joined = "\n\n".join(sanitize_surrogates(b.thinking) for b in thinking)
                out["content"] = joined + text if not text else [{"type": "text", "text": joined}, {"type": "text", "text": text}]
            else:
                if text:
                    out["content"] = text
                field = thinking[0].thinking_signature if thinking else None
                if field in REASONING_FIELDS:
                    out[field] = "\n".join(b.thinking for b in thinking)
            calls = [b for b in msg.content if isinstance(b, ToolCall)]
            if calls:
                out["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": orjson.dumps(c.arguments).decode()}}
                    for c in calls
                ]
            content = out.get("content")
            if not content and not calls:
                i += 1
                continue
            params.append(out)
            last_role = "assistant"
        elif isinstance(msg, ToolResultMessage):
            images: list[dict[str, Any]] = []
            while i < len(messages) and isinstance(messages[i], ToolResultMessage):
                tr = messages[i]
                text = "\n".join(b.text for b in tr.content if isinstance(b, TextContent))
                entry: dict[str, Any] = {
                    "role": "tool",
                    "content": sanitize_surrogates(text or "(see attached image)"),
                    "tool_call_id": tr.tool_call_id,
                }
                if compat["requires_tool_result_name"] and tr.tool_name:
                    entry["name"] = tr.tool_name
                params.append(entry)
                if "image" in model.input:
                    for block in tr.content:
                        if isinstance(block, ImageContent):
                            images.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
                i += 1
            if images:
                if compat["requires_assistant_after_tool_result"]:
                    params.append({"role": "assistant", "content": "I have processed the tool results."})
                params.append({"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images]})
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        i += 1
    return params


def clamp_effort(model: Model, level: str) -> str:
    """``level`` as an OpenAI reasoning effort: ``xhigh`` becomes ``high`` where the model lacks it."""
    if level == "xhigh" and not model.supports_xhigh:
        return "high"
    return level


def build_params(model: Model, request: LlmRequest, options: StreamOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(sdk_kwargs, extra_body)`` for ``chat.completions.create``."""
    compat = compat_of(model)
    kwargs: dict[str, Any] = {"model": model.id, "messages": convert_messages(model, request, compat), "stream": True}
    extra: dict[str, Any] = {}
    if compat["supports_usage_in_streaming"]:
        kwargs["stream_options"] = {"include_usage": True}
    if compat["supports_store"]:
        kwargs["store"] = False
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens > 0 else None)
    if max_tokens:
        kwargs[compat["max_tokens_field"]] = max_tokens
    if options.temperature is not None:
        kwargs["temperature"] = options.temperature
    if request.tools:
        tools = []
        for t in request.tools:
            fn: dict[str, Any] = {"name": t.name, "description": t.description, "parameters": t.parameters}
            if compat["supports_strict_mode"]:
                fn["strict"] = False
            tools.append({"type": "function", "function": fn})
        kwargs["tools"] = tools
    elif any(isinstance(m, ToolResultMessage) or (isinstance(m, AssistantMessage) and m.tool_calls) for m in request.messages):
        kwargs["tools"] = []  # some proxies insist on ``tools`` once the history has tool calls
    effort = options.reasoning if options.reasoning and options.reasoning != "off" else None
    if model.reasoning:
        fmt = compat["thinking_format"]
        if fmt == "openrouter":
            extra["reasoning"] = {"effort": clamp_effort(model, effort)} if effort else {"effort": "none"}
        elif fmt == "qwen":
            extra["enable_thinking"] = bool(effort)
        elif fmt == "qwen-chat-template":
            extra["chat_template_kwargs"] = {"enable_thinking": bool(effort), "preserve_thinking": True}
        elif effort and compat["supports_reasoning_effort"]:
            kwargs["reasoning_effort"] = clamp_effort(model, effort)
    return kwargs, extra


_STOP = {"stop": "stop", "end": "stop", "length": "length", "function_call": "toolUse", "tool_calls": "toolUse"}


def _usage(b: MessageBuilder, raw: dict[str, Any]) -> None:
    prompt = raw.get("prompt_tokens") or 0
    details = raw.get("prompt_tokens_details") or {}
    reported_cached = details.get("cached_tokens")
    if reported_cached is None:
        reported_cached = raw.get("prompt_cache_hit_tokens") or 0
    cache_write = details.get("cache_write_tokens") or 0
    # Some servers count this request's cache writes inside cached_tokens.
    cache_read = max(0, reported_cached - cache_write) if cache_write > 0 else reported_cached
    tokens_in = max(0, prompt - cache_read - cache_write)
    out = raw.get("completion_tokens") or 0
    b.set_usage(tokens_in, out, cache_read, cache_write)


def openai_client(model: Model, key: str, headers: dict[str, str], timeout_s: float | None) -> Any:
    """An ``AsyncOpenAI`` client for ``model.base_url``; retries are off (retrying is the agent's job)."""
    from openai import AsyncOpenAI

    kwargs: dict[str, Any] = {
        "api_key": key or "not-needed",
        "base_url": model.base_url,
        "max_retries": 0,
        "default_headers": headers or None,
    }
    if timeout_s is not None:
        kwargs["timeout"] = timeout_s
    return AsyncOpenAI(**kwargs)


class OpenAICompletionsProvider(HttpAdapter):
    """The ``openai-completions`` provider (OpenAI chat completions through the ``openai`` SDK)."""

    api = "openai-completions"

    def make_client(self, model: Model, key: str, headers: dict[str, str], timeout_s: float | None) -> Any:
        """An ``AsyncOpenAI`` client for ``model.base_url`` with retries off."""
        return openai_client(model, key, headers, timeout_s)

    async def open(self, client: Any, model: Model, request: LlmRequest, options: StreamOptions) -> Any:
        """POST ``/chat/completions`` with ``stream: true``; the SDK raises on an HTTP error."""
        kwargs, extra = build_params(model, request, options)
        if extra:
            kwargs["extra_body"] = extra
        stream = await client.chat.completions.create(**kwargs)
        return stream.response

    async def consume(self, sse: SseEvents, b: MessageBuilder, request: LlmRequest) -> AsyncIterator[AssistantEvent]:
        """Turn chat-completion chunks into events."""
        text_index = -1
        thinking_index = -1
        calls: dict[Any, int] = {}  # stream index (or id) -> content index
        open_blocks: list[int] = []
        ev: AssistantEvent
        finished = False
        done_marker = False
        loads = orjson.loads
        async for _event, data in sse:
            if data[:6] == b"[DONE]":
                done_marker = True
                break
            try:
                chunk = loads(data)
            except orjson.JSONDecodeError:
                raise ProviderError(f"Malformed stream from the server: could not parse SSE data {data[:200]!r}") from None
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk and chunk["error"]:
                err = chunk["error"]
                message = err.get("message") if isinstance(err, dict) else str(err)
                raise ProviderError(f"Stream error from the server: {message or err}")
            usage = chunk.get("usage")
            if usage:
                _usage(b, usage)
            choices = chunk.get("choices")
            if not choices:
                continue
            choice = choices[0]
            if not usage and choice.get("usage"):
                _usage(b, choice["usage"])
            reason = choice.get("finish_reason")
            if reason:
                finished = True
                b.set_stop(reason, _STOP, "finish_reason")
            delta = choice.get("delta")
            if not delta:
                continue
            content = delta.get("content")
            if content:
                if text_index < 0:
                    text_index, ev = b.text_start()
                    open_blocks.append(text_index)
                    yield ev
                yield b.text_delta(text_index, content)
            for field in REASONING_FIELDS:
                value = delta.get(field)
                if value and isinstance(value, str):
                    if thinking_index < 0:
                        thinking_index, ev = b.thinking_start(field)
                        open_blocks.append(thinking_index)
                        yield ev
                    yield b.thinking_delta(thinking_index, value)
                    break
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                for tc in tool_calls:
                    key = tc.get("index")
                    if key is None:
                        key = tc.get("id")
                    fn = tc.get("function") or {}
                    index = calls.get(key)
                    if index is None and tc.get("id") is not None:
                        index = calls.get(tc["id"])
                    if index is None:
                        index, ev = b.toolcall_start(tc.get("id") or "", fn.get("name") or "")
                        calls[key] = index
                        open_blocks.append(index)
                        yield ev
                    block = b.blocks[index]
                    if not block.id and tc.get("id"):
                        block.__dict__["id"] = tc["id"]
                    if not block.name and fn.get("name"):
                        block.__dict__["name"] = fn["name"]
                    yield b.toolcall_delta(index, fn.get("arguments") or "")
        if not finished and not done_marker:
            raise ProviderError("Connection error: the stream ended before the response was complete")
        for index in open_blocks:
            yield b.end(index)
