"""Shared machinery of the streaming adapters: the partial message, events, errors, abort.

:class:`MessageBuilder` owns the one :class:`AssistantMessage` a stream builds. It is
updated in place (no copy per delta): text is appended straight into the block's
``__dict__``, which skips pydantic's attribute hook, the hot path of every delta.

:class:`HttpAdapter` is the template both SDK adapters fill in: open the request (raced
against the :class:`AbortSignal`), then read the response body as SSE. The SSE reader and the
response are closed when the stream ends, however it ends (also when its consumer stops
early), not left to the garbage collector. An abort closes the
HTTP response from the signal's callback, which makes the pending read fail at once: one
callback per request, nothing per chunk. Every failure ends the stream with an ``error``
event; nothing is raised into the caller except task cancellation.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from pydantic import SecretStr

from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, Usage
from ..messages.overflow import OVERFLOW_PATTERNS
from .base import (
    AbortSignal,
    AssistantEvent,
    DoneEvent,
    ErrorEvent,
    LlmRequest,
    Model,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .cost import calculate_cost
from .keys import env_api_key, env_key_names, scrub
from .partial_json import StreamingJson
from .retry_after import note_retry_after
from .tool_args import INVALID_KEY, strict_arguments
from .transcript import collapse_request

ABORTED_TEXT = "Request was aborted"

SseEvents = AsyncIterator[tuple[str | None, bytes]]
"""What :func:`iter_sse` yields: ``(event name or None, data)`` per server-sent event."""


class ProviderError(Exception):
    """A failure with a message fit for ``errorMessage`` (raised and caught inside a provider)."""


class Aborted(Exception):
    """The signal fired."""


class MessageBuilder:
    """Builds one assistant message in place and makes the matching events."""

    __slots__ = ("model", "message", "blocks", "_json", "started")

    def __init__(self, model: Model, *, api: str | None = None) -> None:
        self.model = model
        self.message = AssistantMessage(api=api or model.api, provider=model.provider, model=model.id, usage=Usage(), stop_reason="stop")
        self.blocks: list[Any] = self.message.content
        self._json: dict[int, StreamingJson] = {}
        self.started = False

    # -- lifecycle

    def start(self) -> StartEvent:
        """The ``start`` event (once)."""
        self.started = True
        return StartEvent(partial=self.message)

    def done(self) -> DoneEvent:
        """The final ``done`` event; ``stop_reason`` must be stop, length or toolUse."""
        self._strip()
        return DoneEvent(reason=self.message.stop_reason, message=self.message)  # type: ignore[arg-type]

    def fail(self, reason: str, error_message: str) -> ErrorEvent:
        """The final ``error`` event, ``reason`` ``"error"`` or ``"aborted"``; partial content is kept."""
        self._strip()
        self.message.stop_reason = reason  # type: ignore[assignment]
        self.message.error_message = error_message
        return ErrorEvent(reason=reason, error=self.message)  # type: ignore[arg-type]

    def _strip(self) -> None:
        # Tool calls still open (a cut stream) keep their best-effort arguments.
        for index, acc in self._json.items():
            block = self.blocks[index]
            block.__dict__["arguments"] = acc.parse()
        self._json.clear()

    # -- text

    def text_start(self) -> tuple[int, TextStartEvent]:
        """Open a text block; returns its index and the event."""
        self.blocks.append(TextContent(text=""))
        index = len(self.blocks) - 1
        return index, TextStartEvent(content_index=index, partial=self.message)

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        """Append ``delta`` to text block ``index``."""
        d = self.blocks[index].__dict__
        d["text"] += delta
        return TextDeltaEvent(content_index=index, delta=delta, partial=self.message)

    def text_end(self, index: int) -> TextEndEvent:
        """Close text block ``index``."""
        return TextEndEvent(content_index=index, content=self.blocks[index].text, partial=self.message)

    # -- thinking

    def thinking_start(
        self, signature: str | None = None, *, thinking: str = "", redacted: bool | None = None
    ) -> tuple[int, ThinkingStartEvent]:
        """Open a thinking block."""
        self.blocks.append(ThinkingContent(thinking=thinking, thinking_signature=signature, redacted=redacted))
        index = len(self.blocks) - 1
        return index, ThinkingStartEvent(content_index=index, partial=self.message)

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        """Append ``delta`` to thinking block ``index``."""
        d = self.blocks[index].__dict__
        d["thinking"] += delta
        return ThinkingDeltaEvent(content_index=index, delta=delta, partial=self.message)

    def add_signature(self, index: int, fragment: str) -> None:
        """Append to the thinking block's signature (Anthropic streams it in pieces)."""
        d = self.blocks[index].__dict__
        d["thinking_signature"] = (d.get("thinking_signature") or "") + fragment

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        """Close thinking block ``index``."""
        return ThinkingEndEvent(content_index=index, content=self.blocks[index].thinking, partial=self.message)

    # -- tool calls

    def toolcall_start(self, call_id: str, name: str, arguments: dict[str, Any] | None = None) -> tuple[int, ToolCallStartEvent]:
        """Open a tool call."""
        self.blocks.append(ToolCall(id=call_id, name=name, arguments=dict(arguments or {})))
        index = len(self.blocks) - 1
        self._json[index] = StreamingJson()
        return index, ToolCallStartEvent(content_index=index, partial=self.message)

    def toolcall_delta(self, index: int, fragment: str) -> ToolCallDeltaEvent:
        """Add a raw JSON fragment of the arguments; ``arguments`` becomes the best-effort parse."""
        acc = self._json.get(index)
        if acc is not None and fragment:
            acc.feed(fragment)
            self.blocks[index].__dict__["arguments"] = acc.parse()
        return ToolCallDeltaEvent(content_index=index, delta=fragment, partial=self.message)

    def toolcall_end(self, index: int) -> ToolCallEndEvent:
        """Close the tool call with its final arguments, parsed strictly (see :mod:`.tool_args`)."""
        block = self.blocks[index]
        acc = self._json.pop(index, None)
        if acc is not None and acc.text:
            # strict at the end: a cut or damaged text is never "repaired" into a call that runs
            arguments, problem = strict_arguments(acc.text)
            block.__dict__["arguments"] = arguments if problem is None else {}
            if problem is not None:
                block.__pydantic_extra__[INVALID_KEY] = acc.text
        return ToolCallEndEvent(content_index=index, tool_call=block, partial=self.message)

    def end(self, index: int) -> TextEndEvent | ThinkingEndEvent | ToolCallEndEvent:
        """Close block ``index`` with the end event of its kind."""
        block = self.blocks[index]
        if isinstance(block, TextContent):
            return self.text_end(index)
        if isinstance(block, ThinkingContent):
            return self.thinking_end(index)
        return self.toolcall_end(index)

    def tool_args_text(self, index: int) -> str:
        """The raw argument text received so far for tool call ``index``."""
        acc = self._json.get(index)
        return acc.text if acc is not None else ""

    # -- stop reason

    def set_stop(self, reason: str, table: dict[str, str], field: str) -> None:
        """Map the vendor's ``reason`` (its ``field``, e.g. ``finish_reason``) through ``table``; an unknown one is an error."""
        stop = table.get(reason)
        if stop is None:
            self.message.stop_reason = "error"
            self.message.error_message = f"Provider {field}: {reason}"
        else:
            self.message.stop_reason = stop  # type: ignore[assignment]

    # -- usage

    def set_usage(self, input: int, output: int, cache_read: int = 0, cache_write: int = 0, total: int | None = None) -> None:
        """Set the token counts and recompute the cost."""
        u = self.message.usage
        d = u.__dict__
        d["input"], d["output"], d["cache_read"], d["cache_write"] = input, output, cache_read, cache_write
        d["total_tokens"] = total if total else input + output + cache_read + cache_write
        calculate_cost(self.model, u)


def resolve_api_key(model: Model, options: StreamOptions, *, required: bool = True) -> SecretStr | None:
    """``options.api_key``, else the provider's environment variable; a clear error when required and missing."""
    if options.api_key is not None and options.api_key.get_secret_value():
        return options.api_key
    key = env_api_key(model.provider)
    if key is None and model.compat.get("api_key_env"):
        import os

        value = os.environ.get(model.compat["api_key_env"])
        key = SecretStr(value) if value else None
    if key is None and model.compat.get("no_api_key"):
        return SecretStr("not-needed")
    if key is None and required:
        names = (model.compat["api_key_env"],) if model.compat.get("api_key_env") else env_key_names(model.provider)
        raise ProviderError(f"No API key for provider {model.provider!r}: set {' or '.join(names)} or pass api_key")
    return key


async def race_abort(coro: Any, signal: AbortSignal | None) -> Any:
    """Await ``coro``; if ``signal`` fires first, cancel it and raise :class:`Aborted`."""
    if signal is None:
        return await coro
    if signal.aborted:
        coro.close()
        raise Aborted
    task = asyncio.ensure_future(coro)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        waiter.cancel()
        raise
    if task.done():
        waiter.cancel()
        await asyncio.wait((waiter,))  # gone before we go on, not a task left pending
        return task.result()
    task.cancel()
    try:
        await task
    except BaseException:  # noqa: BLE001 - the cancelled request's outcome does not matter
        pass
    raise Aborted


def close_on_abort(signal: AbortSignal | None, response: Any) -> Any:
    """Close ``response`` (an ``httpx2.Response``) when ``signal`` fires; returns an unsubscribe function."""
    if signal is None:
        return lambda: None
    loop = asyncio.get_running_loop()
    pending: list[Any] = []

    def fire() -> None:
        def close() -> None:
            pending.append(loop.create_task(response.aclose()))

        try:
            loop.call_soon_threadsafe(close)
        except RuntimeError:  # the loop is closed: nothing left to stop
            pass

    unsubscribe = signal.on_abort(fire)
    return unsubscribe if callable(unsubscribe) else (lambda: None)


def describe_error(exc: BaseException, secrets: list[Any]) -> str:
    """A one-line ``errorMessage`` for ``exc``: HTTP status and the server's message where there is one."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        body = getattr(exc, "body", None)
        message = _server_message(body)
        if not message:
            response = getattr(exc, "response", None)
            text = ""
            try:
                text = response.text if response is not None else ""
            except Exception:  # noqa: BLE001 - an unread streaming body
                text = ""
            message = text.strip()[:2000]
        text = f"{status} {message}" if message else f"{status} status code (no body)"
    elif isinstance(exc, ProviderError):
        text = str(exc)
    else:
        kind = type(exc).__name__
        if kind == "APITimeoutError" or "Timeout" in kind:
            text = "Request timed out"
        elif kind == "APIConnectionError":
            cause = exc.__cause__ or exc.__context__
            text = f"Connection error: {cause}" if cause and str(cause) else "Connection error"
        elif kind in ("RemoteProtocolError", "ReadError", "ProtocolError", "StreamError", "ConnectError", "ReadTimeout"):
            text = f"Connection error: {exc}" if str(exc) else f"Connection error: {kind}"
        else:
            text = f"{kind}: {exc}" if str(exc) else kind
    return scrub(text, secrets)


def _server_message(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message")
            if isinstance(msg, str) and msg:
                # an overflow code (context_length_exceeded) says what a free-form message may not: keep it
                code = err.get("code")
                if isinstance(code, str) and code not in msg and any(p.search(code) for p in OVERFLOW_PATTERNS):
                    return f"{msg} ({code})"
                return msg
        elif isinstance(err, str) and err:
            return err
        msg = body.get("message") or body.get("detail")
        if isinstance(msg, str):
            return msg
    elif isinstance(body, str):
        return body
    return ""


async def iter_sse(chunks: AsyncIterator[bytes]) -> AsyncGenerator[tuple[str | None, bytes], None]:
    """Server-sent events from a byte stream: ``(event name or None, data)`` per event.

    Closing this generator closes ``chunks``.
    """
    try:
        buf = b""
        event: str | None = None
        data: list[bytes] = []
        async for chunk in chunks:
            buf = buf + chunk if buf else chunk
            if b"\n" not in buf:
                continue
            lines = buf.split(b"\n")
            buf = lines.pop()
            for line in lines:
                if line.endswith(b"\r"):
                    line = line[:-1]
                if not line:
                    if data:
                        yield event, data[0] if len(data) == 1 else b"\n".join(data)
                    event, data = None, []
                    continue
                if line[0] == 58:  # ":" comment / keep-alive
                    continue
                name, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"data":
                    data.append(value)
                elif name == b"event":
                    event = value.decode()
        if buf.strip():
            name, _, value = buf.partition(b":")
            if name == b"data":
                data.append(value[1:] if value[:1] == b" " else value)
        if data:
            yield event, b"\n".join(data)
    finally:
        # Close the source too: a reader that stops early (``[DONE]``, an error) must not leave
        # the HTTP body generator to the garbage collector, which closes it at a random time.
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


class HttpAdapter:
    """Base of the SDK adapters: subclasses build the request and read the SSE events."""

    api: str = ""

    def __init__(self) -> None:
        # One SDK client per (event loop, settings): connection pools belong to one loop.
        self._clients: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()

    def client_for(self, model: Model, key: SecretStr | None, options: StreamOptions) -> Any:
        """A cached SDK client for these settings on the running loop."""
        loop = asyncio.get_running_loop()
        headers = {**model.headers, **options.headers}
        cache_key = (model.base_url, key.get_secret_value() if key else None, tuple(sorted(headers.items())), options.timeout_s)
        per_loop = self._clients.setdefault(loop, {})
        client = per_loop.get(cache_key)
        if client is None:
            client = self.make_client(model, key.get_secret_value() if key else "", headers, options.timeout_s)
            per_loop[cache_key] = client
        return client

    def make_client(self, model: Model, key: str, headers: dict[str, str], timeout_s: float | None) -> Any:  # pragma: no cover
        """Build the SDK client (``max_retries=0``: retrying is the agent's job)."""
        raise NotImplementedError

    async def open(self, client: Any, model: Model, request: LlmRequest, options: StreamOptions) -> Any:  # pragma: no cover
        """Send the request; return the ``httpx2.Response`` whose body is the SSE stream."""
        raise NotImplementedError

    def explain(self, model: Model, exc: BaseException, message: str) -> str:
        """The ``errorMessage`` for ``exc`` (already described as ``message``); adapters add what the user can do."""
        return message

    def consume(self, sse: SseEvents, b: MessageBuilder, request: LlmRequest) -> AsyncIterator[AssistantEvent]:  # pragma: no cover
        """Read the body's SSE events, update ``b`` and yield events; raise :class:`ProviderError` on protocol errors."""
        raise NotImplementedError

    async def stream(self, model: Model, request: LlmRequest, options: StreamOptions | None = None) -> AsyncIterator[AssistantEvent]:
        """Stream the reply to ``request``; ends with one ``done`` or ``error`` event and never raises."""
        options = options or StreamOptions()
        request = collapse_request(request)  # pi 1.x system messages: one prompt, one tool list
        b = MessageBuilder(model, api=self.api)
        signal = options.signal
        secrets: list[Any] = [options.api_key]
        response = events = sse = None
        unsubscribe = None
        try:
            key = resolve_api_key(model, options)
            secrets.append(key)
            client = self.client_for(model, key, options)
            response = await race_abort(self.open(client, model, request, options), signal)
            unsubscribe = close_on_abort(signal, response)
            yield b.start()
            sse = iter_sse(response.aiter_bytes())
            events = self.consume(sse, b, request)
            async for event in events:
                yield event
            if signal is not None and signal.aborted:
                raise Aborted
            if b.message.stop_reason in ("error", "aborted"):
                raise ProviderError(b.message.error_message or "The provider reported an error")
            yield b.done()
        except Exception as exc:  # noqa: BLE001 - the contract: every failure becomes an error event
            if not b.started:
                yield b.start()
            if isinstance(exc, Aborted) or (signal is not None and signal.aborted):
                yield b.fail("aborted", ABORTED_TEXT)
            else:
                failed = b.fail("error", self.explain(model, exc, describe_error(exc, secrets)))
                note_retry_after(b.message, exc)
                yield failed
        finally:
            if unsubscribe is not None:
                unsubscribe()
            for reader in (events, sse):  # the adapter's reader, then the SSE parser (which closes the body's iterator)
                if isinstance(reader, AsyncGenerator):  # every adapter's consume is an async generator
                    try:
                        await reader.aclose()
                    except Exception:  # noqa: BLE001
                        pass
            if response is not None:
                try:
                    await response.aclose()
                except Exception:  # noqa: BLE001
                    pass
