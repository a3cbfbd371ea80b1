"""The replay provider: serves the assistant messages recorded in a session file.

A notebook recorded once with a real model re-runs anywhere without a key::

    provider = ReplayProvider("recorded.jsonl")
    agent = Agent(session, model=provider.model)      # or model=replay_model("recorded.jsonl")

For each request it serves the recorded reply to *the same conversation* that agrees with
the request's variant (thinking level, model, tools), the latest of them: see
:mod:`.replay_records` for the rule. When the recording lacks the variant asked for, the
nearest reply is served and a note says so (``on_note``, ``notes``).

**As a performance.** With a ``pace`` (``"1x"``: as recorded, ``"2x"``, ``"0.5x"``; the
default ``None`` is instant) each reply streams over the time it took when recorded, from the
session file's own timestamps (pi writes them: the message's ``timestamp`` when the request
started, the entry's when it was written), so any pi session plays. A reply without usable
times plays at :data:`~.pace.DEFAULT_CHARS_PER_SECOND`, and a note says so. With a
:class:`~.pace.StepGate` (``step=``) the replay holds before each tool call and at each branch
point of the recording until the gate's ``go()``::

    gate = StepGate()
    player = ReplayProvider("recorded.jsonl", pace="2x", step=gate)
    agent = Agent(session, model=player.model, stream=player.stream)

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
import logging
import os
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, UserMessage, text_of
from ..messages.types import StopReason
from ._stream import MessageBuilder
from .base import AssistantEvent, LlmRequest, Model, StreamOptions
from .offline import is_summary_request, json_pieces, text_pieces
from .pace import DEFAULT_CHARS_PER_SECOND, Pacer, Pause, StepGate, parse_pace
from .replay_records import Choice, Recorded, Recording, Summary, Variant, choose, conversation_key, divergence, load_recording

_FINISHED: dict[str, StopReason] = {"stop": "stop", "length": "length", "toolUse": "toolUse"}
"""The stop reasons of a reply that ended normally, as a recording may hold them."""

REPLAY_API = "replay"
_SPLIT_TURN = "\n\n---\n\n**Turn Context (split turn):**\n\n"
_FILE_OPS = re.compile(r"\n\n<(?:read-files|modified-files)>.*\Z", re.DOTALL)
_log = logging.getLogger("pi_jupyter.replay")


def replay_model(
    session_path: str | os.PathLike[str], *, pace: str | float | None = None, context_window: int = 200_000, max_tokens: int = 32_000
) -> Model:
    """A :class:`Model` that replays ``session_path`` (``provider="replay"``), at ``pace`` (default: instant)."""
    path = os.path.abspath(os.fspath(session_path))
    return Model(
        id=os.path.basename(path),
        provider="replay",
        api=REPLAY_API,
        name=f"Replay of {os.path.basename(path)}",
        reasoning=True,
        context_window=context_window,
        max_tokens=max_tokens,
        compat={"session_path": path, "no_api_key": True, "pace": parse_pace(pace)},
    )


class ReplayProvider:
    """Serve recorded assistant messages from the session file at ``session_path``.

    ``pace``: a speed factor (``"1x"`` as recorded, ``"2x"``; ``None``: instant, unless the
    model asks for one); ``step``: a :class:`~.pace.StepGate` that holds the replay before
    each tool call and branch point; ``on_note(line)``: told what the recording lacks (a
    variant, timestamps) once per distinct line (default: the ``pi_jupyter.replay`` logger);
    ``drift_log``: a list that receives ``(target, actual)`` times of every paced event.
    """

    api = REPLAY_API

    def __init__(
        self,
        session_path: str | os.PathLike[str],
        *,
        pace: str | float | None = None,
        step: StepGate | None = None,
        on_note: Callable[[str], Any] | None = None,
        drift_log: list[tuple[float, float]] | None = None,
    ) -> None:
        self.path = os.path.abspath(os.fspath(session_path))
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"replay: no session file at {self.path}")
        self.pace = parse_pace(pace)
        self.step = step
        self.on_note = on_note
        self.notes: list[str] = []
        """What the recording lacked, one line each, in order (see ``on_note``)."""
        self.drift_log = drift_log
        self._records: list[Recorded] | None = None
        self._index: Recording | None = None
        self._summaries: list[Summary] = []

    def __repr__(self) -> str:
        return f"ReplayProvider({self.path!r})"

    @property
    def model(self) -> Model:
        """The :class:`Model` to hand to the agent (see :func:`replay_model`)."""
        return replay_model(self.path, pace=self.pace)

    def _load(self) -> list[Recorded]:
        if self._records is None:
            self._records, self._summaries = load_recording(self.path)
            self._index = Recording(self._records)
        return self._records

    def _note(self, text: str) -> None:
        if text in self.notes:
            return
        self.notes.append(text)
        if self.on_note is not None:
            self.on_note(text)
        else:
            _log.warning(text)

    def choose(self, request: LlmRequest, options: StreamOptions | None = None, model: Model | None = None) -> Choice | str:
        """The recorded reply for ``request`` (a :class:`~.replay_records.Choice`), or why there is none."""
        records = self._load()
        assert self._index is not None
        wanted = Variant(
            thinking=(options.reasoning if options is not None else None) or "off",
            model=model.ref if model is not None and model.api != REPLAY_API else None,
            tools=frozenset(t.name for t in request.tools),
        )
        found = choose(self._index, request.messages, wanted, os.path.basename(self.path))
        if found is None:
            return divergence(self.path, conversation_key(request.messages), records)
        return found

    def find(self, request: LlmRequest, options: StreamOptions | None = None) -> tuple[dict[str, Any] | None, str | None]:
        """``(recorded message dict, None)`` for the request, or ``(None, why it diverged)``."""
        found = self.choose(request, options)
        return (None, found) if isinstance(found, str) else (found.record.message, None)

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
        """Stream the recorded reply for ``request`` at the pace, held by the step gate; a divergence is an error. Never raises."""
        options = options or StreamOptions()
        b = MessageBuilder(model)
        signal = options.signal
        pace = self.pace if self.pace is not None else model.compat.get("pace")
        pacer = Pacer(pace if isinstance(pace, (int, float)) and pace > 0 else None, log=self.drift_log)
        yield b.start()
        try:
            duration_s: float | None = 0.0
            if is_summary_request(request):
                summary = self._find_summary(request)
                if summary is None:
                    yield b.fail("error", f"replay: the recording {os.path.basename(self.path)} has no summary to replay")
                    return
                recorded: dict[str, Any] = {"content": [{"type": "text", "text": summary}], "stopReason": "stop"}
            else:
                found = self.choose(request, options, model)
                if isinstance(found, str):
                    yield b.fail("error", found)
                    return
                if found.note:
                    self._note(found.note)
                recorded = found.record.message
                duration_ms = found.timing.duration_ms
                duration_s = duration_ms / 1000 if duration_ms is not None else None
                if found.alternatives and self.step is not None:
                    pacer.hold(await self.step.wait(_branch_pause(found.alternatives), signal))
            msg = b.message
            for attr, key in (("api", "api"), ("provider", "provider"), ("model", "model")):
                if recorded.get(key):
                    msg.__dict__[attr] = recorded[key]
            u = recorded.get("usage") or {}
            b.set_usage(u.get("input", 0), u.get("output", 0), u.get("cacheRead", 0), u.get("cacheWrite", 0), u.get("totalTokens"))
            msg.usage.cost.__dict__.update(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, total=0.0)
            blocks = AssistantMessage.from_wire({"role": "assistant", "content": recorded.get("content") or []}).content
            plan = _plan(blocks)
            total = sum(len(p) for _, pieces in plan for p in pieces) or 1
            pacer.start()  # the recorded reply's time counts from here, not from the search for it
            if duration_s is None:
                duration_s = total / DEFAULT_CHARS_PER_SECOND
                if pacer.pace is not None:
                    self._note(
                        f"replay: {os.path.basename(self.path)} has no times for some replies; "
                        f"they play at the default pace ({DEFAULT_CHARS_PER_SECOND:g} characters a second)"
                    )
            per_char = duration_s / total
            done = 0
            ev: AssistantEvent
            for block, pieces in plan:
                if signal is not None and signal.aborted:
                    yield b.fail("aborted", "Request was aborted")
                    return
                await pacer.at(done * per_char, signal)
                if isinstance(block, TextContent):
                    index, ev = b.text_start()
                    if block.text_signature is not None:
                        b.blocks[index].__dict__["text_signature"] = block.text_signature
                    yield ev
                    for piece in pieces:
                        done += len(piece)
                        await pacer.at(done * per_char, signal)
                        yield b.text_delta(index, piece)
                    yield b.text_end(index)
                elif isinstance(block, ThinkingContent):
                    if block.redacted:
                        index, ev = b.thinking_start(block.thinking_signature, thinking=block.thinking, redacted=True)
                        yield ev
                    else:
                        index, ev = b.thinking_start(block.thinking_signature)
                        yield ev
                        for piece in pieces:
                            done += len(piece)
                            await pacer.at(done * per_char, signal)
                            yield b.thinking_delta(index, piece)
                    yield b.thinking_end(index)
                elif isinstance(block, ToolCall):
                    if self.step is not None:
                        pacer.hold(await self.step.wait(_TOOL_PAUSE, signal))
                        if signal is not None and signal.aborted:
                            continue  # the check at the top of the loop ends the stream as aborted
                    index, ev = b.toolcall_start(block.id, block.name)
                    if block.thought_signature is not None:
                        b.blocks[index].__dict__["thought_signature"] = block.thought_signature
                    yield ev
                    for piece in pieces:
                        done += len(piece)
                        await pacer.at(done * per_char, signal)
                        yield b.toolcall_delta(index, piece)
                    yield b.toolcall_end(index)
            if signal is not None and signal.aborted:
                yield b.fail("aborted", "Request was aborted")
                return
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


_TOOL_PAUSE = Pause("tool_call", "The agent is about to call a tool. What will it do?")


def _branch_pause(others: int) -> Pause:
    other = "another answer" if others == 1 else f"{others} other answers"
    return Pause("branch_point", f"A branch point: the recording has {other} here; this replay plays the latest. Which would you pick?")


def _plan(blocks: list[Any]) -> list[tuple[Any, list[str]]]:
    """Each block with the pieces it streams in (text and thinking by words, tool arguments as JSON fragments)."""
    out: list[tuple[Any, list[str]]] = []
    for block in blocks:
        if isinstance(block, TextContent):
            out.append((block, text_pieces(block.text)))
        elif isinstance(block, ThinkingContent):
            out.append((block, [] if block.redacted else text_pieces(block.thinking)))
        elif isinstance(block, ToolCall):
            out.append((block, json_pieces(json.dumps(block.arguments, ensure_ascii=False))))
    return out


__all__ = ["REPLAY_API", "ReplayProvider", "conversation_key", "replay_model"]
