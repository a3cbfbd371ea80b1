"""Helpers for tests that drive providers against the wire server."""

from __future__ import annotations

import asyncio
from typing import Any

from pi_jupyter.messages import AssistantMessage, UserMessage
from pi_jupyter.providers import AbortSignal, LlmRequest, Model, ModelCost, StreamOptions, final_message, stream

from .server import WireServer


def wire_model(
    server: WireServer, api: str = "openai-completions", *, id: str | None = None, provider: str | None = None, **fields: Any
) -> Model:
    """A :class:`Model` whose ``base_url`` is the wire server, the way a user configures a custom endpoint."""
    if api == "anthropic-messages":
        base = server.anthropic_url
        provider = provider or "anthropic"
        id = id or "claude-test"
    else:
        base = server.openai_url
        provider = provider or "openai"
        id = id or "gpt-test"
    fields.setdefault("cost", ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75))
    return Model(id=id, provider=provider, api=api, base_url=base, **fields)


def user_request(text: str = "Hello", **fields: Any) -> LlmRequest:
    """A request with one user message."""
    return LlmRequest(messages=[UserMessage.text(text)], **fields)


async def acollect(model: Model | str, request: LlmRequest, options: StreamOptions | None = None) -> tuple[list[Any], AssistantMessage]:
    """All events of one stream and the final message."""
    events = [e async for e in stream(model, request, options)]
    final = final_message(events[-1])
    assert final is not None, f"stream did not end with done/error: {[e.type for e in events]}"
    return events, final


def collect(model: Model | str, request: LlmRequest, options: StreamOptions | None = None) -> tuple[list[Any], AssistantMessage]:
    """:func:`acollect` in a fresh event loop."""
    return asyncio.run(acollect(model, request, options))


def abort_mid_stream(model: Model | str, request: LlmRequest, options: StreamOptions, after_events: int = 1) -> list[Any]:
    """All events of a stream whose signal fires at the first text delta after ``after_events`` events."""
    signal = AbortSignal()
    options = options.model_copy(update={"signal": signal})

    async def main() -> list[Any]:
        events = []
        async for e in stream(model, request, options):
            events.append(e)
            if e.type == "text_delta" and len(events) >= after_events:
                signal.abort()
        return events

    return asyncio.run(main())


def sent_since(server: WireServer) -> str:
    """Every request body ``server`` received since the last call, as one JSON text (then forgotten)."""
    import json

    bodies = json.dumps([r.body for r in server.requests], ensure_ascii=False)
    server.requests.clear()
    return bodies
