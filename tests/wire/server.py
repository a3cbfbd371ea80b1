"""A scripted HTTP server on 127.0.0.1 that speaks the vendors' real streaming wire formats.

The official ``openai`` and ``anthropic`` SDKs talk to it over real HTTP, so tests exercise
the SDKs' own request building, SSE decoding and error handling. Nothing is mocked.

Endpoints (``POST``)::

    /v1/chat/completions   OpenAI chat completions (SSE with ``data:`` lines and ``[DONE]``)
    /v1/messages           Anthropic messages (SSE with ``event:`` + ``data:`` lines)
    /v1/responses          OpenAI Responses (SSE with ``event:`` + ``data:`` lines)

Use::

    with WireServer() as server:                      # or the ``wire`` fixture (fixtures.py)
        server.queue("openai", openai_reply(text="Hello there", usage=dict(prompt_tokens=9)))
        server.queue("anthropic", anthropic_reply([text_block("Hi")]), http_error(429, "slow down"))
        client = AsyncOpenAI(base_url=server.openai_url, api_key="sk-test")   # .../v1
        client = AsyncAnthropic(base_url=server.anthropic_url, api_key="sk-ant-test")
        ...
        server.requests[-1].body["messages"]          # what the SDK sent (parsed JSON)
        server.requests[-1].headers["authorization"]  # header names are lower-case

Each endpoint has a FIFO queue of :class:`Reply` objects; every request pops one. With an
empty queue the server answers 500 with a message saying no reply was scripted, so a test
that sends more requests than it scripted fails with a readable error. ``queue_default``
sets a reply used whenever the queue is empty (e.g. for benchmarks).

Reply builders (all return a :class:`Reply`; ``.slow(s)`` waits ``s`` seconds before each
SSE event, ``.cut(n)`` drops the connection after ``n`` events without finishing the body,
``.late(s)`` waits ``s`` seconds before sending the status line)::

    openai_reply(text=None, reasoning=None, reasoning_field="reasoning_content",
                 tool_calls=[tool_call("read", {"path": "a.txt"}, id="call_1")],
                 finish_reason=None (inferred), usage={...}, pieces=3, model="gpt-test")
    anthropic_reply(blocks=[thinking_block("...", signature="sig"), redacted_block("data"),
                            text_block("..."), tool_use_block("read", {...}, id="toolu_1")],
                    stop_reason=None (inferred), usage={...}, pieces=3, model="claude-test")
    responses_reply(text=None, reasoning=None, tool_calls=[...], usage={...})
    http_error(status, message, kind="openai"|"anthropic", error_type=None, headers=None)
    raw_reply(body_bytes, status=200, content_type="text/event-stream")   # malformed SSE etc.
    sse(data, event=None)                                                 # one SSE frame

``GET /v1/models`` lists :attr:`WireServer.models` (set it to answer a probe of the server).

Recorded: :attr:`WireServer.requests` (every request: ``path``, ``headers``, ``body``),
:attr:`WireServer.disconnects` (how many streams the client closed before the server had
written everything; an abort that works shows up here). :meth:`WireServer.reset` empties
queues and records. Authentication: both ``Authorization: Bearer`` and ``x-api-key`` are
accepted; a test can require a key with ``server.require_key = "sk-..."`` (then a request
without it gets a 401 in the vendor's error shape).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDPOINTS = {
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/v1/responses": "responses",
    "/responses": "responses",
}


@dataclass
class Reply:
    """One scripted answer: a status, headers, and either SSE ``events`` or a plain ``body``."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    events: list[bytes] | None = None
    body: bytes | None = None
    delay_s: float = 0.0
    cut_after: int | None = None
    wait_s: float = 0.0

    def late(self, wait_s: float) -> Reply:
        """This reply with ``wait_s`` seconds before the status line (a server slow to answer)."""
        self.wait_s = wait_s
        return self

    def slow(self, delay_s: float) -> Reply:
        """This reply with ``delay_s`` seconds before each event."""
        self.delay_s = delay_s
        return self

    def cut(self, after: int) -> Reply:
        """This reply with the connection dropped after ``after`` events."""
        self.cut_after = after
        return self


@dataclass
class RecordedRequest:
    """A request the server received: path, lower-cased headers, parsed JSON body."""

    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE frame; ``data`` is JSON-encoded unless it is a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return (head + f"data: {text}\n\n").encode()


def _pieces(text: str, n: int) -> list[str]:
    if not text:
        return []
    n = max(1, min(n, len(text)))
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------- OpenAI chat completions


def tool_call(name: str, arguments: Any, id: str | None = None) -> dict[str, Any]:
    """A tool call for :func:`openai_reply`, :func:`responses_reply`; ``arguments`` a dict or a raw JSON string."""
    return {"name": name, "arguments": arguments, "id": id}


def openai_reply(
    text: str | None = None,
    *,
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    pieces: int = 3,
    model: str = "gpt-test",
    done: bool = True,
) -> Reply:
    """An OpenAI chat-completions stream: reasoning, then text, then tool calls, then usage.

    ``usage`` is OpenAI's shape (``prompt_tokens``, ``completion_tokens``, ``total_tokens``,
    ``prompt_tokens_details: {cached_tokens}``); it is sent in a final chunk with empty
    ``choices`` as ``stream_options.include_usage`` does. ``done=False`` leaves out ``[DONE]``.
    """
    base = {"id": "chatcmpl-wire", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    for part in _pieces(reasoning or "", pieces):
        events.append(chunk({reasoning_field: part}))
    for part in _pieces(text or "", pieces):
        events.append(chunk({"content": part}))
    for i, call in enumerate(tool_calls or []):
        args = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
        cid = call.get("id") or f"call_{i}"
        events.append(
            chunk({"tool_calls": [{"index": i, "id": cid, "type": "function", "function": {"name": call["name"], "arguments": ""}}]})
        )
        for part in _pieces(args, pieces):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    events.append(chunk({}, finish_reason))
    if usage is not None:
        events.append(sse({**base, "choices": [], "usage": usage}))
    if done:
        events.append(b"data: [DONE]\n\n")
    return Reply(events=events, headers={"content-type": "text/event-stream"})


# ---------------------------------------------------------------- Anthropic messages


def text_block(text: str) -> dict[str, Any]:
    """A text content block for :func:`anthropic_reply`."""
    return {"type": "text", "text": text}


def thinking_block(thinking: str, signature: str = "sig-wire") -> dict[str, Any]:
    """A signed thinking block for :func:`anthropic_reply`."""
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def redacted_block(data: str) -> dict[str, Any]:
    """A redacted thinking block (opaque ``data``) for :func:`anthropic_reply`."""
    return {"type": "redacted_thinking", "data": data}


def tool_use_block(name: str, arguments: Any, id: str = "toolu_wire") -> dict[str, Any]:
    """A tool-use block for :func:`anthropic_reply`; ``arguments`` a dict or a raw JSON string."""
    return {"type": "tool_use", "name": name, "input": arguments, "id": id}


def anthropic_reply(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    pieces: int = 3,
    model: str = "claude-test",
    ping: bool = True,
    stop: bool = True,
) -> Reply:
    """An Anthropic messages stream with the given content blocks.

    ``usage`` is Anthropic's shape (``input_tokens``, ``output_tokens``,
    ``cache_read_input_tokens``, ``cache_creation_input_tokens``): input and cache counts go
    in ``message_start``, ``output_tokens`` in ``message_delta``. ``stop=False`` leaves out
    ``message_stop`` (a stream that ends early).
    """
    usage = dict(usage or {"input_tokens": 10, "output_tokens": 5})
    start_usage = {k: v for k, v in usage.items() if k != "output_tokens"}
    start_usage["output_tokens"] = 1

    def ev(kind: str, payload: dict[str, Any]) -> bytes:
        return sse({"type": kind, **payload}, event=kind)

    events = [
        ev(
            "message_start",
            {
                "message": {
                    "id": "msg_wire",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                }
            },
        )
    ]
    if ping:
        events.append(ev("ping", {}))
    for i, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            events.append(ev("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            for part in _pieces(block["text"], pieces):
                events.append(ev("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": part}}))
        elif kind == "thinking":
            events.append(ev("content_block_start", {"index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            for part in _pieces(block["thinking"], pieces):
                events.append(ev("content_block_delta", {"index": i, "delta": {"type": "thinking_delta", "thinking": part}}))
            if block.get("signature"):
                events.append(
                    ev("content_block_delta", {"index": i, "delta": {"type": "signature_delta", "signature": block["signature"]}})
                )
        elif kind == "redacted_thinking":
            events.append(ev("content_block_start", {"index": i, "content_block": {"type": "redacted_thinking", "data": block["data"]}}))
        elif kind == "tool_use":
            events.append(
                ev(
                    "content_block_start",
                    {"index": i, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}},
                )
            )
            args = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            for part in _pieces(args, pieces):
                events.append(ev("content_block_delta", {"index": i, "delta": {"type": "input_json_delta", "partial_json": part}}))
        else:
            raise ValueError(f"anthropic_reply: unknown block type {kind!r}")
        events.append(ev("content_block_stop", {"index": i}))
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    events.append(
        ev(
            "message_delta",
            {"delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": usage.get("output_tokens", 0)}},
        )
    )
    if stop:
        events.append(ev("message_stop", {}))
    return Reply(events=events, headers={"content-type": "text/event-stream"})


# ---------------------------------------------------------------- OpenAI Responses


def responses_reply(
    text: str | None = None,
    *,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    status: str = "completed",
    pieces: int = 3,
    model: str = "gpt-test",
) -> Reply:
    """An OpenAI Responses stream: a reasoning item (summary), a message item, function calls.

    ``usage`` is the Responses shape (``input_tokens``, ``output_tokens``, ``total_tokens``,
    ``input_tokens_details: {cached_tokens}``). ``status="incomplete"`` ends with
    ``response.incomplete`` and ``incomplete_details.reason = "max_output_tokens"``.
    """
    seq = iter(range(1, 10_000))
    events: list[bytes] = []

    def ev(kind: str, payload: dict[str, Any]) -> None:
        events.append(sse({"type": kind, "sequence_number": next(seq), **payload}, event=kind))

    resp = {
        "id": "resp_wire",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    ev("response.created", {"response": resp})
    output: list[dict[str, Any]] = []
    idx = 0
    if reasoning is not None:
        item = {"type": "reasoning", "id": "rs_wire", "summary": [], "encrypted_content": "enc-wire"}
        ev("response.output_item.added", {"output_index": idx, "item": item})
        ev(
            "response.reasoning_summary_part.added",
            {"item_id": "rs_wire", "output_index": idx, "summary_index": 0, "part": {"type": "summary_text", "text": ""}},
        )
        for part in _pieces(reasoning, pieces):
            ev("response.reasoning_summary_text.delta", {"item_id": "rs_wire", "output_index": idx, "summary_index": 0, "delta": part})
        ev(
            "response.reasoning_summary_part.done",
            {"item_id": "rs_wire", "output_index": idx, "summary_index": 0, "part": {"type": "summary_text", "text": reasoning}},
        )
        done_item = {**item, "summary": [{"type": "summary_text", "text": reasoning}]}
        ev("response.output_item.done", {"output_index": idx, "item": done_item})
        output.append(done_item)
        idx += 1
    if text is not None:
        item = {"type": "message", "id": "msg_wire", "role": "assistant", "status": "in_progress", "content": []}
        ev("response.output_item.added", {"output_index": idx, "item": item})
        ev(
            "response.content_part.added",
            {
                "item_id": "msg_wire",
                "output_index": idx,
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            },
        )
        for part in _pieces(text, pieces):
            ev(
                "response.output_text.delta",
                {"item_id": "msg_wire", "output_index": idx, "content_index": 0, "delta": part, "logprobs": []},
            )
        ev("response.output_text.done", {"item_id": "msg_wire", "output_index": idx, "content_index": 0, "text": text, "logprobs": []})
        done_item = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        ev("response.output_item.done", {"output_index": idx, "item": done_item})
        output.append(done_item)
        idx += 1
    for i, call in enumerate(tool_calls or []):
        args = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
        cid = call.get("id") or f"call_{i}"
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": cid, "name": call["name"], "arguments": "", "status": "in_progress"}
        ev("response.output_item.added", {"output_index": idx, "item": item})
        for part in _pieces(args, pieces):
            ev("response.function_call_arguments.delta", {"item_id": f"fc_{i}", "output_index": idx, "delta": part})
        ev("response.function_call_arguments.done", {"item_id": f"fc_{i}", "output_index": idx, "arguments": args})
        done_item = {**item, "arguments": args, "status": "completed"}
        ev("response.output_item.done", {"output_index": idx, "item": done_item})
        output.append(done_item)
        idx += 1
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, **(usage or {})}
    usage["input_tokens_details"] = {"cached_tokens": 0, "cache_write_tokens": 0, **usage.get("input_tokens_details", {})}
    usage.setdefault("output_tokens_details", {"reasoning_tokens": 0})
    final = {**resp, "status": status, "output": output, "usage": usage}
    if status == "incomplete":
        final["incomplete_details"] = {"reason": "max_output_tokens"}
        ev("response.incomplete", {"response": final})
    else:
        ev("response.completed", {"response": final})
    return Reply(events=events, headers={"content-type": "text/event-stream"})


# ---------------------------------------------------------------- errors and raw bodies


def http_error(
    status: int, message: str, kind: str = "openai", error_type: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """A non-2xx JSON error in the vendor's shape (``kind`` ``"openai"`` or ``"anthropic"``)."""
    if kind == "anthropic":
        etype = error_type or {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        body = {"type": "error", "error": {"type": etype, "message": message}}
    else:
        etype = error_type or {400: "invalid_request_error", 401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
        body = {"error": {"message": message, "type": etype, "param": None, "code": etype}}
    return Reply(status=status, body=json.dumps(body).encode(), headers={"content-type": "application/json", **(headers or {})})


def raw_reply(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> Reply:
    """Exactly ``body`` as the response (for malformed SSE or odd servers)."""
    return Reply(status=status, body=body, headers={"content-type": content_type})


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
        pass

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        models = self.server.owner.models
        if path in ("/v1/models", "/models") and models:  # what a probe of an OpenAI-compatible server asks first
            self._send_json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in models]})
            return
        self._send_json(404, {"error": {"message": f"wire server: no GET {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner: WireServer = self.server.owner
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        recorded = RecordedRequest(path=path, headers=headers, body=body, raw=raw)
        owner._record(recorded)
        kind = ENDPOINTS.get(path)
        if kind is None:
            self._send_json(404, {"error": {"message": f"wire server: unknown endpoint POST {path}"}})
            return
        if owner.require_key is not None:
            auth = headers.get("authorization", "")
            given = auth[7:] if auth.lower().startswith("bearer ") else headers.get("x-api-key", "")
            if given != owner.require_key:
                reply = http_error(
                    401,
                    "invalid x-api-key" if kind == "anthropic" else "Incorrect API key provided",
                    kind="anthropic" if kind == "anthropic" else "openai",
                )
                self._send(reply)
                return
        reply = owner._next(kind, path, recorded)
        self._send(reply)

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(Reply(status=status, body=json.dumps(payload).encode(), headers={"content-type": "application/json"}))

    def _send(self, reply: Reply) -> None:
        owner: WireServer = self.server.owner
        try:
            if reply.wait_s:
                time.sleep(reply.wait_s)
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            if reply.events is None:
                data = reply.body or b""
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                return
            self.send_header("transfer-encoding", "chunked")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            self.wfile.flush()
            for i, frame in enumerate(reply.events):
                if reply.cut_after is not None and i >= reply.cut_after:
                    # Drop the connection in the middle of the body (no terminating chunk).
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                if reply.delay_s and self._client_gone(reply.delay_s):
                    raise BrokenPipeError("the client closed the stream")
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            with owner._changed:
                owner.disconnects += 1
                owner._changed.notify_all()
            self.close_connection = True

    def _client_gone(self, wait_s: float) -> bool:
        """Wait ``wait_s`` seconds between two pieces, or less: True as soon as the client closes the connection
        (a closed socket reads as end of file), so a stream the client abandons is counted when it happens."""
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                ready, _, _ = select.select([self.connection], [], [], left)
                if not ready:
                    return False
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except OSError:
                return True
            time.sleep(min(left, 0.01))  # bytes from the client mid-stream (none expected): wait on
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: WireServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops a kept-alive connection is normal, not worth a traceback.
        pass


class WireServer:
    """The scripted server; see the module docstring. Starts on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queues: dict[str, deque[Reply]] = {"openai": deque(), "anthropic": deque(), "responses": deque()}
        self._defaults: dict[str, Reply] = {}
        self._responders: dict[str, Any] = {}
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self.require_key: str | None = None
        self.models: list[str] = []
        """Model ids ``GET /v1/models`` lists (none: that request is a 404, as before)."""
        self._thread = threading.Thread(target=self._server.serve_forever, name="wire-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (the Anthropic SDK's ``base_url``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """``URL/v1``, the OpenAI SDK's ``base_url``."""
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:
        """``URL``, the Anthropic SDK's ``base_url``."""
        return self.url

    def queue(self, kind: str, *replies: Reply) -> WireServer:
        """Add replies for endpoint ``kind`` (``"openai"``, ``"anthropic"`` or ``"responses"``)."""
        if kind not in self._queues:
            raise ValueError(f"unknown endpoint kind {kind!r}; use one of {sorted(self._queues)}")
        with self._lock:
            self._queues[kind].extend(replies)
        return self

    def queue_default(self, kind: str, reply: Reply | None) -> None:
        """Serve ``reply`` whenever the queue of ``kind`` is empty (``None`` removes it)."""
        with self._lock:
            if reply is None:
                self._defaults.pop(kind, None)
            else:
                self._defaults[kind] = reply

    def respond_with(self, kind: str, responder: Any) -> None:
        """When the queue of ``kind`` is empty, answer with ``responder(request) -> Reply``
        (``request`` is the :class:`RecordedRequest`); ``None`` removes it. For replies that
        depend on what was asked, e.g. a summary when the request is a summarization prompt."""
        with self._lock:
            if responder is None:
                self._responders.pop(kind, None)
            else:
                self._responders[kind] = responder

    def pending(self, kind: str) -> int:
        """How many scripted replies of ``kind`` are still unused."""
        with self._lock:
            return len(self._queues[kind])

    def requests_to(self, kind: str) -> list[RecordedRequest]:
        """The recorded requests that went to endpoint ``kind``."""
        with self._lock:
            return [r for r in self.requests if ENDPOINTS.get(r.path) == kind]

    def reset(self) -> None:
        """Forget queued replies, defaults, recorded requests, disconnects, ``require_key`` and ``models``."""
        with self._lock:
            for q in self._queues.values():
                q.clear()
            self._defaults.clear()
            self._responders.clear()
            self.requests.clear()
            self.disconnects = 0
            self.require_key = None
            self.models = []

    def wait_for_disconnects(self, n: int = 1, timeout_s: float = 60.0) -> bool:
        """Wait until the server saw ``n`` client disconnects mid-stream (True), woken by each one as it happens;
        ``timeout_s`` only bounds a wait for disconnects that never come (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.disconnects >= n, timeout_s)

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WireServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, kind: str, path: str, request: RecordedRequest | None = None) -> Reply:
        with self._lock:
            q = self._queues[kind]
            if q:
                return q.popleft()
            responder = self._responders.get(kind)
            if kind in self._defaults and responder is None:
                return self._defaults[kind]
        if responder is not None:
            return responder(request)
        shape = "anthropic" if kind == "anthropic" else "openai"
        return http_error(500, f"wire server: no scripted reply left for POST {path}", kind=shape)
