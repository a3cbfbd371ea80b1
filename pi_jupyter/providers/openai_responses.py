"""``openai-responses``: OpenAI's Responses API through the official ``openai`` SDK.

The built-in OpenAI models use it, as pi does: reasoning models return a summary of their
reasoning and an encrypted reasoning item that is sent back on the next turn, so a chain of
tool calls keeps its reasoning (chat completions drop it). The SDK (``AsyncOpenAI``) sends
the request and raises on HTTP errors; the SSE body is read directly (``orjson`` per event)
for the same reason as in :mod:`.openai_completions`.

What is stored, in pi's format, so a session replays here and in pi:

* a reasoning item becomes a thinking block whose text is the summary and whose
  ``thinking_signature`` is the whole item as JSON (with ``encrypted_content``);
* a message item becomes a text block whose ``text_signature`` is ``{"v": 1, "id": ...}``;
* a function call becomes a tool call whose id is ``"<call_id>|<item id>"``.

Requests are stateless (``store: false``, no ``previous_response_id``): the whole context
is sent each turn, as with every other provider, so checkout and fork need nothing special.
``Model.compat`` switches (snake_case keys): ``supports_store`` (send ``store: false``,
default on) and ``reasoning_summary`` (``"auto"``, ``"concise"``, ``"detailed"``, or
``None`` to ask for none; default ``"auto"``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ._stream import HttpAdapter, MessageBuilder, ProviderError, SseEvents
from .base import AssistantEvent, LlmRequest, Model, StreamOptions
from .normalize import same_model
from .openai_completions import clamp_effort, openai_client
from .text import sanitize_surrogates
from .transcript import wire_request

_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_STATUS = {"completed": "stop", "incomplete": "length", "failed": "error", "cancelled": "error", "in_progress": "stop", "queued": "stop"}


def normalize_tool_call_id(call_id: str, _model: Model | None = None, _source: AssistantMessage | None = None) -> str:
    """A ``call_id|item_id`` pair the Responses API accepts (at most 64 characters each, item id ``fc_...``)."""
    if "|" not in call_id:
        return _BAD_ID_CHARS.sub("_", call_id)[:64].rstrip("_") or "call"
    head, item = call_id.split("|", 1)
    head = _BAD_ID_CHARS.sub("_", head)[:64].rstrip("_") or "call"
    item = _BAD_ID_CHARS.sub("_", item)
    if not item.startswith("fc"):
        item = "fc_" + item
    return f"{head}|{item[:64].rstrip('_')}"


def _call_id(item: dict[str, Any]) -> str:
    call_id, item_id = item.get("call_id") or "", item.get("id") or ""
    return f"{call_id}|{item_id}" if item_id else call_id


def text_signature(item_id: str) -> str:
    """The ``text_signature`` pi writes for a message item (version 1: ``{"v":1,"id":...}``)."""
    return orjson.dumps({"v": 1, "id": item_id}).decode()


def _message_id(signature: str | None, index: int) -> str:
    # pi wrote the bare item id before the v1 JSON form; both are read.
    item_id = None
    if signature:
        if signature.startswith("{"):
            try:
                parsed = orjson.loads(signature)
                if isinstance(parsed, dict) and isinstance(parsed.get("id"), str):
                    item_id = parsed["id"]
            except orjson.JSONDecodeError:
                item_id = None
        else:
            item_id = signature
    if not item_id:
        return f"msg_{index}"
    if len(item_id) > 64:
        return "msg_" + hashlib.sha256(item_id.encode()).hexdigest()[:32]
    return item_id


def _user_content(blocks: list[Any], model: Model) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": sanitize_surrogates(block.text)})
        elif isinstance(block, ImageContent) and "image" in model.input:
            parts.append({"type": "input_image", "detail": "auto", "image_url": f"data:{block.mime_type};base64,{block.data}"})
    return parts


def _assistant_items(msg: AssistantMessage, model: Model, index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    # Another OpenAI model's function-call item ids were paired with reasoning we cannot send.
    foreign = not same_model(msg, model)
    skipped_reasoning = False
    for block in msg.content:
        if isinstance(block, ThinkingContent):
            reasoning = None
            if block.thinking_signature and not foreign:
                try:
                    reasoning = orjson.loads(block.thinking_signature)
                except orjson.JSONDecodeError:
                    reasoning = None
            if isinstance(reasoning, dict) and reasoning.get("type") == "reasoning":
                items.append(reasoning)
            else:
                skipped_reasoning = True
        elif isinstance(block, TextContent):
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": sanitize_surrogates(block.text), "annotations": []}],
                    "status": "completed",
                    "id": _message_id(block.text_signature, index),
                }
            )
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            item: dict[str, Any] = {"type": "function_call", "call_id": call_id, "name": block.name}
            if item_id and not ((foreign or skipped_reasoning) and item_id.startswith("fc_")):
                item["id"] = item_id
            item["arguments"] = orjson.dumps(block.arguments).decode()
            items.append(item)
    return items


def convert_input(model: Model, request: LlmRequest) -> list[dict[str, Any]]:
    """The ``input`` array of a Responses request (after :func:`transform_messages`)."""
    items: list[dict[str, Any]] = []
    if request.system_prompt:
        items.append({"role": "developer" if model.reasoning else "system", "content": sanitize_surrogates(request.system_prompt)})
    for index, msg in enumerate(wire_request(request, model, normalize_tool_call_id).messages):  # what %pi context counts
        if isinstance(msg, UserMessage):
            if isinstance(msg.content, str):
                items.append({"role": "user", "content": [{"type": "input_text", "text": sanitize_surrogates(msg.content)}]})
            else:
                parts = _user_content(msg.content, model)
                if parts:
                    items.append({"role": "user", "content": parts})
        elif isinstance(msg, AssistantMessage):
            items.extend(_assistant_items(msg, model, index))
        elif isinstance(msg, ToolResultMessage):
            text = "\n".join(b.text for b in msg.content if isinstance(b, TextContent))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": msg.tool_call_id.split("|", 1)[0],
                    "output": sanitize_surrogates(text or "(see attached image)"),
                }
            )
            images = [b for b in msg.content if isinstance(b, ImageContent)]
            if images and "image" in model.input:
                parts = [{"type": "input_text", "text": "Attached image(s) from tool result:"}, *_user_content(images, model)]
                items.append({"role": "user", "content": parts})
    return items


def build_params(model: Model, request: LlmRequest, options: StreamOptions) -> dict[str, Any]:
    """The keyword arguments of ``responses.create``."""
    compat = model.compat
    kwargs: dict[str, Any] = {"model": model.id, "input": convert_input(model, request), "stream": True}
    if compat.get("supports_store", True):
        kwargs["store"] = False
    if options.session_id:
        kwargs["prompt_cache_key"] = options.session_id
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens > 0 else None)
    if max_tokens:
        kwargs["max_output_tokens"] = max_tokens
    if options.temperature is not None:
        kwargs["temperature"] = options.temperature
    if request.tools:
        kwargs["tools"] = [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
            for t in request.tools
        ]
    if model.reasoning:
        # Stateless requests get the reasoning back only as encrypted content.
        kwargs["include"] = ["reasoning.encrypted_content"]
        effort = options.reasoning if options.reasoning and options.reasoning != "off" else None
        if effort:
            reasoning: dict[str, Any] = {"effort": clamp_effort(model, effort)}
            summary = compat.get("reasoning_summary", "auto")
            if summary:
                reasoning["summary"] = summary
            kwargs["reasoning"] = reasoning
    return kwargs


def _usage(b: MessageBuilder, raw: dict[str, Any]) -> None:
    # input_tokens includes the tokens read from and written to the cache; pi's input is the rest.
    details = raw.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    tokens_in = max(0, (raw.get("input_tokens") or 0) - cached - written)
    b.set_usage(tokens_in, raw.get("output_tokens") or 0, cached, written, raw.get("total_tokens") or None)


def _failure(response: dict[str, Any]) -> str:
    error = response.get("error") or {}
    if error:
        return f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}"
    reason = (response.get("incomplete_details") or {}).get("reason")
    return f"incomplete: {reason}" if reason else "The response failed without details"


class OpenAIResponsesProvider(HttpAdapter):
    """The ``openai-responses`` provider (OpenAI's Responses API through the ``openai`` SDK)."""

    api = "openai-responses"

    def make_client(self, model: Model, key: str, headers: dict[str, str], timeout_s: float | None) -> Any:
        """An ``AsyncOpenAI`` client for ``model.base_url`` with retries off."""
        return openai_client(model, key, headers, timeout_s)

    def explain(self, model: Model, exc: BaseException, message: str) -> str:
        """A 404 from an OpenAI-compatible server: it has no Responses API; say how to use chat completions."""
        if getattr(exc, "status_code", None) != 404 or model.base_url is None:
            return message  # no base URL is OpenAI's own API, which has the Responses API: the 404 is about the model
        return (
            f"{message} (POST {model.base_url.rstrip('/')}/responses: this server has no OpenAI Responses API, which "
            f"{model.provider}/{model.id} uses as a model of the built-in table; for an OpenAI-compatible server use chat "
            f"completions: name a model id the table does not know (e.g. local/{model.id} with the same base URL) or "
            f"register_model(openai_compatible(URL, {model.id!r})))"
        )

    async def open(self, client: Any, model: Model, request: LlmRequest, options: StreamOptions) -> Any:
        """POST ``/responses`` with ``stream: true``; the SDK raises on an HTTP error."""
        stream = await client.responses.create(**build_params(model, request, options))
        return stream.response

    async def consume(self, sse: SseEvents, b: MessageBuilder, request: LlmRequest) -> AsyncIterator[AssistantEvent]:
        """Turn Responses stream events into assistant events."""
        open_items: dict[Any, tuple[int, dict[str, Any]]] = {}  # output_index -> (content index, item)
        finished = False
        loads = orjson.loads
        async for name, data in sse:
            try:
                ev = loads(data)
            except orjson.JSONDecodeError:
                raise ProviderError(f"Malformed stream from the server: could not parse SSE event {name!r}: {data[:200]!r}") from None
            if not isinstance(ev, dict):
                continue
            kind = ev.get("type") or name
            if kind == "response.output_text.delta" or kind == "response.refusal.delta":
                entry = open_items.get(ev.get("output_index"))
                if entry is not None and isinstance(b.blocks[entry[0]], TextContent):
                    yield b.text_delta(entry[0], ev.get("delta") or "")
            elif kind == "response.reasoning_summary_text.delta":
                entry = open_items.get(ev.get("output_index"))
                if entry is not None and isinstance(b.blocks[entry[0]], ThinkingContent):
                    yield b.thinking_delta(entry[0], ev.get("delta") or "")
            elif kind == "response.reasoning_summary_part.done":
                entry = open_items.get(ev.get("output_index"))
                if entry is not None and isinstance(b.blocks[entry[0]], ThinkingContent):
                    yield b.thinking_delta(entry[0], "\n\n")
            elif kind == "response.function_call_arguments.delta":
                entry = open_items.get(ev.get("output_index"))
                if entry is not None and isinstance(b.blocks[entry[0]], ToolCall):
                    yield b.toolcall_delta(entry[0], ev.get("delta") or "")
            elif kind == "response.output_item.added":
                item = ev.get("item") or {}
                itype = item.get("type")
                out: AssistantEvent
                if itype == "reasoning":
                    index, out = b.thinking_start(None)
                elif itype == "message":
                    index, out = b.text_start()
                elif itype == "function_call":
                    index, out = b.toolcall_start(_call_id(item), item.get("name") or "")
                    if item.get("arguments"):
                        b.toolcall_delta(index, item["arguments"])
                else:
                    continue  # built-in tool items (web search...) are not ours to show
                open_items[ev.get("output_index")] = (index, item)
                yield out
            elif kind == "response.output_item.done":
                entry = open_items.pop(ev.get("output_index"), None)
                if entry is None:
                    continue
                index, _ = entry
                item = ev.get("item") or {}
                block = b.blocks[index]
                if isinstance(block, ThinkingContent):
                    summary = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
                    block.__dict__["thinking"] = "\n\n".join(summary)
                    if summary or item.get("encrypted_content"):
                        block.__dict__["thinking_signature"] = orjson.dumps(item).decode()
                    yield b.thinking_end(index)
                elif isinstance(block, TextContent):
                    parts = item.get("content") or []
                    if parts:
                        block.__dict__["text"] = "".join(p.get("text") or p.get("refusal") or "" for p in parts if isinstance(p, dict))
                    if item.get("id"):
                        block.__dict__["text_signature"] = text_signature(item["id"])
                    yield b.text_end(index)
                else:
                    if not b.tool_args_text(index) and item.get("arguments"):
                        b.toolcall_delta(index, item["arguments"])
                    if item.get("call_id"):
                        block.__dict__["id"] = _call_id(item)
                    yield b.toolcall_end(index)
            elif kind in ("response.completed", "response.incomplete"):
                finished = True
                resp = ev.get("response") or {}
                if resp.get("usage"):
                    _usage(b, resp["usage"])
                stop = _STATUS.get(resp.get("status") or ("completed" if kind == "response.completed" else "incomplete"), "stop")
                if stop == "stop" and any(isinstance(x, ToolCall) for x in b.blocks):
                    stop = "toolUse"
                b.message.stop_reason = stop  # type: ignore[assignment]
            elif kind == "response.failed":
                resp = ev.get("response") or {}
                if resp.get("usage"):
                    _usage(b, resp["usage"])
                raise ProviderError(_failure(resp))
            elif kind == "error":
                code = ev.get("code") or (ev.get("error") or {}).get("code")
                message = ev.get("message") or (ev.get("error") or {}).get("message") or "unknown error"
                raise ProviderError(f"Stream error from the server: {code + ': ' if code else ''}{message}")
        if not finished:
            raise ProviderError("Connection error: the stream ended before response.completed")
        for index, _ in open_items.values():
            yield b.end(index)
