"""The replay provider: serves the assistant messages recorded in a session file.

A notebook recorded once with a real model re-runs anywhere without a key::

    provider = ReplayProvider("recorded.jsonl")
    agent = Agent(session, model=provider.model)      # or model=replay_model("recorded.jsonl")

For each request it finds the recorded assistant message that answered *the same
conversation*: the sequence of user texts and tool results so far (assistant messages are
what replay itself serves, so they are not compared). Every assistant entry of the
recorded tree, on every branch, is a candidate; its conversation is the rebuilt context of
its parent entry (compaction summaries included). When several match, a complete reply is
preferred over a failed one, then the one on the recording's current branch, then the
latest. Tool results are compared by text first; if nothing matches, by tool name only
(tool output such as dates or temp paths may differ between runs).

The recorded message is streamed as deltas (text and thinking in pieces, tool-call
arguments as JSON fragments) with the recorded content, provider, model and token counts;
its cost is 0 (nothing was spent). A recorded failure is replayed as that failure.

Summarization requests (compaction, branch summaries) are answered from the recording's
``compaction`` and ``branch_summary`` entries: the one whose branch's user texts best
appear in the request's ``<conversation>``.

When the conversation diverges from every recorded path, the reply is an error message
that names the recording, the message number where it diverged, and both sides.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage, message_from_dict, text_of
from ..messages.types import StopReason
from ._stream import MessageBuilder
from .base import AssistantEvent, LlmRequest, Model, StreamOptions
from .offline import is_summary_request, json_pieces, text_pieces

_FINISHED: dict[str, StopReason] = {"stop": "stop", "length": "length", "toolUse": "toolUse"}
"""The stop reasons of a reply that ended normally, as a recording may hold them."""

REPLAY_API = "replay"
_SPLIT_TURN = "\n\n---\n\n**Turn Context (split turn):**\n\n"
_FILE_OPS = re.compile(r"\n\n<(?:read-files|modified-files)>.*\Z", re.DOTALL)

Key = tuple[tuple[Any, ...], ...]


def replay_model(session_path: str | os.PathLike[str], *, context_window: int = 200_000, max_tokens: int = 32_000) -> Model:
    """A :class:`Model` that replays ``session_path`` (``provider="replay"``)."""
    path = os.path.abspath(os.fspath(session_path))
    return Model(
        id=os.path.basename(path),
        provider="replay",
        api=REPLAY_API,
        name=f"Replay of {os.path.basename(path)}",
        reasoning=True,
        context_window=context_window,
        max_tokens=max_tokens,
        compat={"session_path": path, "no_api_key": True},
    )


def conversation_key(messages: list[Any], *, with_tool_text: bool = True) -> Key:
    """What replay compares: user texts and tool results, in order (assistant messages left out)."""
    key: list[tuple[Any, ...]] = []
    for m in messages:
        if isinstance(m, dict):
            m = message_from_dict(m)
        if isinstance(m, UserMessage):
            key.append(("user", text_of(m.content).strip()))
        elif isinstance(m, ToolResultMessage):
            key.append(("toolResult", m.tool_name, m.text.strip() if with_tool_text else None))
    return tuple(key)


def _describe(item: tuple[Any, ...] | None) -> str:
    if item is None:
        return "nothing more"
    text = item[-1] if item[-1] is not None else ""
    text = " ".join(str(text).split())
    if len(text) > 80:
        text = text[:80] + "…"
    if item[0] == "user":
        return f"user message {text!r}"
    return f"tool result of {item[1]!r}: {text!r}"


@dataclass
class _Record:
    entry_id: str
    order: int
    key: Key
    loose: Key
    message: dict[str, Any]
    on_leaf_path: bool


@dataclass
class _Summary:
    entry_id: str
    order: int
    summary: str
    user_texts: list[str]


class ReplayProvider:
    """Serve recorded assistant messages from the session file at ``session_path``."""

    api = REPLAY_API

    def __init__(self, session_path: str | os.PathLike[str]) -> None:
        self.path = os.path.abspath(os.fspath(session_path))
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"replay: no session file at {self.path}")
        self._records: list[_Record] | None = None
        self._summaries: list[_Summary] = []

    def __repr__(self) -> str:
        return f"ReplayProvider({self.path!r})"

    @property
    def model(self) -> Model:
        """The :class:`Model` to hand to the agent (see :func:`replay_model`)."""
        return replay_model(self.path)

    def _load(self) -> list[_Record]:
        if self._records is not None:
            return self._records
        from ..session import Session

        session = Session.open(self.path, readonly=True)
        try:
            leaf_path = set(session.branch_ids()) if session.leaf_id else set()
            records: list[_Record] = []
            summaries: list[_Summary] = []
            for order, entry in enumerate(session.raw_entries()):
                kind = entry.get("type")
                if kind == "message" and (entry.get("message") or {}).get("role") == "assistant":
                    llm = session.context(entry.get("parentId")).llm()
                    records.append(
                        _Record(
                            entry_id=entry["id"],
                            order=order,
                            key=conversation_key(llm),
                            loose=conversation_key(llm, with_tool_text=False),
                            message=entry["message"],
                            on_leaf_path=entry["id"] in leaf_path,
                        )
                    )
                elif kind in ("compaction", "branch_summary") and entry.get("summary"):
                    llm = session.context(entry.get("parentId")).llm()
                    users = [text_of(m.content).strip() for m in llm if isinstance(m, UserMessage)]
                    summaries.append(_Summary(entry["id"], order, entry["summary"], [u for u in users if u]))
        finally:
            session.close()
        self._records = records
        self._summaries = summaries
        return records

    def find(self, request: LlmRequest) -> tuple[dict[str, Any] | None, str | None]:
        """``(recorded message dict, None)`` for the request, or ``(None, why it diverged)``."""
        records = self._load()
        key = conversation_key(request.messages)
        matches = [r for r in records if r.key == key]
        if not matches:
            loose = conversation_key(request.messages, with_tool_text=False)
            matches = [r for r in records if r.loose == loose]
        if matches:
            best = max(matches, key=lambda r: (r.message.get("stopReason") not in ("error", "aborted"), r.on_leaf_path, r.order))
            return best.message, None
        return None, self._divergence(key, records)

    def _divergence(self, key: Key, records: list[_Record]) -> str:
        name = os.path.basename(self.path)
        if not records:
            return f"replay: the recording {name} has no assistant messages to replay"
        best_n, best = -1, records[0]
        for r in records:
            n = 0
            for a, b in zip(key, r.key, strict=False):
                if a != b:
                    break
                n += 1
            if n > best_n or (n == best_n and len(r.key) > len(best.key)):
                best_n, best = n, r
        ours = key[best_n] if best_n < len(key) else None
        theirs = best.key[best_n] if best_n < len(best.key) else None
        if theirs is None:
            return (
                f"replay: the conversation diverged from the recording {name} after message {best_n}: "
                f"the request goes on with {_describe(ours)}, but the recording has no reply for it"
            )
        return (
            f"replay: the conversation diverged from the recording {name} at message {best_n + 1}: "
            f"the request has {_describe(ours)} where the recording has {_describe(theirs)}"
        )

    def _find_summary(self, request: LlmRequest) -> str | None:
        self._load()
        if not self._summaries:
            return None
        prompt = ""
        for m in reversed(request.messages):
            if isinstance(m, UserMessage):
                prompt = text_of(m.content)
                break
        conversation = prompt.split("</conversation>", 1)[0]
        best = max(self._summaries, key=lambda s: (sum(1 for u in s.user_texts if u[:200] in conversation), -s.order))
        summary = _FILE_OPS.sub("", best.summary)
        if _SPLIT_TURN in summary:
            history, prefix = summary.split(_SPLIT_TURN, 1)
            return prefix if "## Original Request" in prompt else history
        return summary

    async def stream(self, model: Model, request: LlmRequest, options: StreamOptions | None = None) -> AsyncIterator[AssistantEvent]:
        """Stream the recorded reply for ``request``; a divergence is an error message. Never raises."""
        options = options or StreamOptions()
        b = MessageBuilder(model)
        signal = options.signal
        yield b.start()
        try:
            if is_summary_request(request):
                summary = self._find_summary(request)
                if summary is None:
                    yield b.fail("error", f"replay: the recording {os.path.basename(self.path)} has no summary to replay")
                    return
                recorded: dict[str, Any] = {"content": [{"type": "text", "text": summary}], "stopReason": "stop"}
            else:
                found, why = self.find(request)
                if found is None:
                    yield b.fail("error", why or "replay: no recorded reply")
                    return
                recorded = found
            msg = b.message
            for attr, key in (("api", "api"), ("provider", "provider"), ("model", "model")):
                if recorded.get(key):
                    msg.__dict__[attr] = recorded[key]
            u = recorded.get("usage") or {}
            b.set_usage(u.get("input", 0), u.get("output", 0), u.get("cacheRead", 0), u.get("cacheWrite", 0), u.get("totalTokens"))
            msg.usage.cost.__dict__.update(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, total=0.0)
            ev: AssistantEvent
            for block in AssistantMessage.from_wire({"role": "assistant", "content": recorded.get("content") or []}).content:
                if signal is not None and signal.aborted:
                    yield b.fail("aborted", "Request was aborted")
                    return
                if isinstance(block, TextContent):
                    index, ev = b.text_start()
                    if block.text_signature is not None:
                        b.blocks[index].__dict__["text_signature"] = block.text_signature
                    yield ev
                    for piece in text_pieces(block.text):
                        yield b.text_delta(index, piece)
                    yield b.text_end(index)
                elif isinstance(block, ThinkingContent):
                    if block.redacted:
                        index, ev = b.thinking_start(block.thinking_signature, thinking=block.thinking, redacted=True)
                        yield ev
                    else:
                        index, ev = b.thinking_start(block.thinking_signature)
                        yield ev
                        for piece in text_pieces(block.thinking):
                            yield b.thinking_delta(index, piece)
                    yield b.thinking_end(index)
                elif isinstance(block, ToolCall):
                    index, ev = b.toolcall_start(block.id, block.name)
                    if block.thought_signature is not None:
                        b.blocks[index].__dict__["thought_signature"] = block.thought_signature
                    yield ev
                    for piece in json_pieces(json.dumps(block.arguments, ensure_ascii=False)):
                        yield b.toolcall_delta(index, piece)
                    yield b.toolcall_end(index)
            stop = recorded.get("stopReason") or "stop"
            if stop in ("error", "aborted"):
                yield b.fail(stop, recorded.get("errorMessage") or f"replay: the recorded reply ended with {stop}")
                return
            reason = _FINISHED.get(stop) if isinstance(stop, str) else None
            if reason is None:  # a recording edited by hand: say so rather than pass it on
                yield b.fail("error", f"replay: the recorded reply has an unknown stopReason {stop!r}")
                return
            msg.stop_reason = reason
            yield b.done()
        except Exception as exc:  # noqa: BLE001 - never raise into the loop
            yield b.fail("error", f"replay failed: {type(exc).__name__}: {exc}")
