"""AgentView: a live notebook view of one agent's event stream (an anywidget).

The view turns agent events into compact items (:mod:`.agent_view_blocks`) and sends them
through its transport (:mod:`.agent_view_transport`: coalesced ops, rate-limited flushes,
snapshots; DESIGN decision 7). Its display bundle carries, besides the widget, the static
rendering of the same conversation (``text/html`` that survives sanitizers, ``text/markdown``,
``text/plain``) from :mod:`pi_jupyter.views.static_html`; :meth:`AgentView.final_bundle` is
that static rendering alone, which a finished run puts in place of the widget so the saved
notebook reads the same everywhere (DESIGN decision 6).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args

import anywidget
import traitlets

from ...agent.events import (
    AgentEndEvent,
    AgentStartEvent,
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    ExtensionErrorEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    SessionEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ...messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    as_message,
    text_of,
)
from ...messages.notebook_context import folded_body, folded_line
from ...messages.system import system_message_note
from ...providers.base import (
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
from ...views.static_html import Notice, RunStatus, render_html, render_markdown
from ...views.transcript import clip_middle, transcript_text
from ..agent_view_stop import RUNNING_STATES, StopButton
from .actions import ViewActions
from .blocks import MAX_LIVE_OUTPUT, MAX_OUTPUT, block_item, field, note_changed, output_text, pretty_args, usage_dict
from .step import StepControl
from .transport import Transport

_STATIC = Path(__file__).parent.parent / "static"
_ESM_PARTS = ("cell_insert.js", "agent_view_store.js", "agent_view_markdown.js", "agent_view_status.js", "agent_view.js")


def esm_source() -> str:
    """The widget's JavaScript module: its parts (cell insertion, store, Markdown, status line, view) joined in order."""
    return "\n".join((_STATIC / name).read_text(encoding="utf-8") for name in _ESM_PARTS)


ViewState = Literal["idle", "running", "streaming", "tool", "compacting", "retrying", "stopping", "done", "aborted", "error"]
"""What the status line says the agent is doing."""

_STATES: frozenset[str] = frozenset(get_args(ViewState))
PROMPT_KEPT = 4000
"""Characters of a prompt the Markdown and plain-text outputs keep (head and tail); the HTML output keeps it whole, folded."""
_RUNNING = RUNNING_STATES


class AgentView(StepControl, StopButton, ViewActions, Transport, anywidget.AnyWidget):
    """A live view of an agent run: streamed Markdown, thinking, tool cards, notices, status, Stop.

    Feed it every event of the agent (``agent.subscribe(view.handle)``); ``handle`` may be
    called from any thread. ``on_stop`` registers what the Stop button does. The display
    bundle carries the static rendering too; call ``display_handle.update(view.final_bundle(),
    raw=True)`` at the end of a run so the saved notebook holds the final conversation, drawn
    without the widget.
    """

    _esm = esm_source()
    _css = _STATIC / "agent_view.css"

    title = traitlets.Unicode("").tag(sync=True)
    """Shown in the header."""
    transcript: traitlets.List[Any] = traitlets.List().tag(sync=True)
    """Snapshot of every item (compact dicts the frontend renders), written at message boundaries."""
    transcript_seq = traitlets.Int(0).tag(sync=True)
    """Sequence number of the last op folded into ``transcript``."""
    status = traitlets.Dict().tag(sync=True)
    """Model, state, tokens, cost and elapsed time for the status line."""
    scale = traitlets.Float(1.0).tag(sync=True)
    """Type size factor (``%config PiMagics.scale``: 1.5 for a projector)."""

    def __init__(
        self,
        title: str = "",
        model: Any = None,
        *,
        max_rate: float = 30.0,
        snapshot_rate: float = 4.0,
        **kwargs: Any,
    ) -> None:
        """Create an empty view. ``model`` is a ``provider/id`` string or a Model (shown in the status line).

        ``max_rate`` bounds the live messages per second; ``snapshot_rate`` bounds the
        transcript snapshots per second (a snapshot re-sends the whole transcript).
        """
        if max_rate <= 0 or snapshot_rate <= 0:
            raise ValueError(f"AgentView: max_rate and snapshot_rate must be positive, got {max_rate} and {snapshot_rate}")
        self._lock = threading.RLock()
        self._interval = 1.0 / max_rate
        self._snapshot_interval = 1.0 / snapshot_rate
        self._seq = 0
        self._ids = itertools.count(1)
        self._items: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._calls: dict[str, dict[str, Any]] = {}  # tool call id -> its block (inside an item)
        self._chunks: dict[int, list[str]] = {}  # id(block) -> text parts not yet joined
        self._open_blocks: dict[int, dict[str, Any]] = {}
        self._current: dict[str, Any] | None = None  # the assistant item being streamed
        self._messages: list[Any] = []  # final messages, for the Markdown transcript
        self._footer = ("", "")
        self._sequence: list[Any] = []  # final messages and notice items, in order (the static rendering)
        self._pending: list[dict[str, Any]] = []
        self._notices: dict[str, dict[str, Any]] = {}  # "compaction" / "retry" -> the live notice
        self._tool_started: dict[str, float] = {}
        self._last_flush = 0.0
        self._last_snapshot = 0.0
        self._scheduled_due: float | None = None
        self._snapshot_dirty = False
        self._status_dirty = False
        self._after_compaction = "running"  # the state a compaction hands back (see _on_compaction_start)
        self._state: str = "idle"
        self._note = ""
        self._model = str(model) if model is not None else ""
        self._tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self._cost = 0.0
        self._elapsed_done = 0.0
        self._run_started: float | None = None
        self._last_stop_reason: str | None = None
        self._force = False
        self._init_actions()
        self._init_step()
        super().__init__(title=str(title), status=self._status_dict(), **kwargs)
        self.on_msg(self._on_frontend_msg)
        self._init_stop()  # after the comm exists: Stop is heard on the thread that reads it

    # ------------------------------------------------------------------ public API

    def handle(self, event: Any) -> None:
        """Consume one agent event (any :data:`pi_jupyter.agent.events.Event`); safe from any thread."""
        kind = getattr(event, "type", None)
        if not isinstance(kind, str):
            raise TypeError(f"AgentView.handle: expected an agent event, got {type(event).__name__}")
        with self._lock:
            method = self._HANDLERS.get(type(event))
            if method is not None:
                method(self, event)
            self._after_event()

    def set_status(self, state: ViewState | None = None, *, model: str | None = None, note: str | None = None) -> None:
        """Change the status line: ``state`` (e.g. ``"done"``), the ``model`` shown, a short ``note``."""
        if state is not None and state not in _STATES:
            raise ValueError(f"AgentView.set_status: unknown state {state!r}; expected one of {sorted(_STATES)}")
        with self._lock:
            if state is not None:
                self._set_state(state)
            if model is not None:
                self._model = str(model)
            if note is not None:
                self._note = note
            self._status_dirty = True
            self._after_event()

    def notice(self, text: str, tone: Literal["info", "warn", "error"] = "info") -> None:
        """Add a line to the conversation (live, and in the static rendering where it happened), e.g. what a prompt filled in."""
        with self._lock:
            self._add({"kind": "notice", "tone": tone, "text": str(text)})
            self._snapshot_dirty = True
            self._after_event()

    def flush(self) -> None:
        """Send everything pending now, snapshot included (the rate limits are skipped once)."""
        with self._lock:
            self._flush_locked(force=True)

    @property
    def messages(self) -> list[Any]:
        """The final messages seen so far (``message_end``), in order."""
        with self._lock:
            return list(self._messages)

    @property
    def state(self) -> str:
        """The state the status line shows (``"streaming"``, ``"done"``, ...)."""
        return self._state

    def run_status(self) -> RunStatus:
        """The status line as data (model, state, tokens, cost, seconds, note)."""
        with self._lock:
            return RunStatus(
                model=self._model,
                state=self._state,
                input_tokens=self._tokens["input"],
                output_tokens=self._tokens["output"],
                cost=self._cost,
                seconds=round(self._elapsed(), 1),
                note=self._note,
            )

    def static_items(self) -> list[Any]:
        """What happened so far, in order: the final messages and the notices (for the static rendering)."""
        with self._lock:
            return [Notice(text=i["text"], tone=i.get("tone", "info")) if isinstance(i, dict) else i for i in self._sequence]

    def markdown(self) -> str:
        """The conversation so far as Markdown (what nbconvert's markdown export and a text frontend show)."""
        text = render_markdown(self.static_items(), status=self.run_status(), title=self.title, max_prompt=PROMPT_KEPT)
        return text + ("\n" + self._footer[1] + "\n" if self._footer[1] else "")

    def html(self) -> str:
        """The conversation so far as sanitizer-safe HTML (what a reopened notebook, nbconvert and GitHub show)."""
        items = self.static_items()
        return render_html(
            items, status=self.run_status(), title=self.title, scale=self.scale, footer=self._footer[0],
            entry_ids=self._static_entry_ids(items), forgotten=self.forgotten, actions=self._actions, turn=True,
        )  # fmt: skip

    def text(self) -> str:
        """The conversation so far as plain text."""
        with self._lock:
            head = f"{self.title}\n\n" if self.title else ""
            return head + transcript_text(self._messages, max_prompt=PROMPT_KEPT) + "\n" + self.run_status().line()

    def set_footer(self, html: str, markdown: str) -> None:
        """Add trusted ``html`` (and its ``markdown``) after the status line of the static rendering (e.g. sibling answers)."""
        self._footer = (html, markdown)

    def static_bundle(self) -> dict[str, Any]:
        """The static rendering alone: ``text/html``, ``text/markdown``, ``text/plain`` (no widget)."""
        return {"text/html": self.html(), "text/markdown": self.markdown(), "text/plain": self.text()}

    def bundle(self) -> dict[str, Any]:
        """The live display data (widget view plus the static rendering) for ``display_handle.update(bundle, raw=True)``."""
        repr_bundle = self._repr_mimebundle_  # ipywidgets sets it to None when the widget is closed
        result = repr_bundle() if callable(repr_bundle) else None
        if result is None:
            return self.static_bundle()
        return result[0]

    def final_bundle(self) -> dict[str, Any]:
        """What a finished run leaves in the notebook: the static rendering, without the widget.

        JupyterLab draws a widget-view output before any other type in the bundle and shows
        "Error displaying widget: model not found" once the kernel that held the model is gone
        (widget state is not saved by default), so a finished run replaces its live output with
        this bundle through its display id.
        """
        self.flush()
        return self.static_bundle()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        result = super()._repr_mimebundle_(**kwargs)
        if result is None:
            return None
        data, metadata = result if isinstance(result, tuple) else (result, {})
        self.flush()  # so the widget state saved with the notebook is complete
        data = dict(data)
        data.update(self.static_bundle())
        # the types a saved notebook keeps when the widget state is not saved (see save_hook)
        metadata = {**metadata, "pi_jupyter": {"durable": ["text/html", "text/markdown", "text/plain"]}}
        return data, metadata

    # ------------------------------------------------------------------ events

    def _on_agent_start(self, event: AgentStartEvent) -> None:
        self._run_started = time.monotonic()
        self._stop_requested = False
        self._last_stop_reason = None
        self._set_state("running")

    def _on_agent_end(self, event: AgentEndEvent) -> None:
        if self._run_started is not None:
            self._elapsed_done += time.monotonic() - self._run_started
            self._run_started = None
        for m in reversed(event.messages or []):
            if field(m, "role") == "assistant":
                self._last_stop_reason = field(m, "stop_reason", "stopReason", default=self._last_stop_reason)
                break
        reason = self._last_stop_reason
        self._set_state("aborted" if reason == "aborted" else "error" if reason == "error" else "done")
        self._current = None
        self._force = True

    def _on_message_start(self, event: MessageStartEvent) -> None:
        if field(event.message, "role") != "assistant":
            return  # other roles start and end at once: shown at message_end
        # Blocks come from the stream events, not from ``message``: it is the partial message
        # itself, which may already hold later text if events are delivered late.
        self._current = self._add({"kind": "assistant", "model": field(event.message, "model", default=""), "blocks": []})
        self._set_state("streaming")

    def _on_message_update(self, event: MessageUpdateEvent) -> None:
        ev = event.assistant_message_event
        kind = ev.type
        item = self._current
        if item is None:
            item = self._current = self._add({"kind": "assistant", "model": event.message.model, "blocks": []})
            self._set_state("streaming")
        if isinstance(ev, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
            index = ev.content_index
            block = self._block_at(item, index, kind)
            self._append_delta(item, index, block, ev.delta)
        elif isinstance(ev, (TextStartEvent, ThinkingStartEvent, ToolCallStartEvent)):
            index = ev.content_index
            block = self._block_at(item, index, kind)
            if isinstance(ev, ToolCallStartEvent):
                partial = ev.partial.content[index] if index < len(ev.partial.content) else None
                if isinstance(partial, ToolCall):
                    block.update(id=partial.id, name=partial.name)
                    self._calls[partial.id] = block
            self._op("blk", i=item["id"], b=index, block=dict(block))
        elif isinstance(ev, (TextEndEvent, ThinkingEndEvent)):
            index = ev.content_index
            block = self._block_at(item, index, kind)
            self._finish_block(item, index, block, ev.content)
        elif isinstance(ev, ToolCallEndEvent):
            index = ev.content_index
            block = self._block_at(item, index, kind)
            self._close_block(block)
            final = block_item(ev.tool_call)
            block.update(final)
            self._calls[ev.tool_call.id] = block
            self._op("blk", i=item["id"], b=index, block=dict(block))

    def _on_message_end(self, event: MessageEndEvent) -> None:
        msg = as_message(event.message)
        self._messages.append(msg)
        self._sequence.append(msg)
        self._snapshot_dirty = True
        if isinstance(msg, AssistantMessage):
            self._end_assistant(msg)
        elif isinstance(msg, ToolResultMessage):
            block = self._calls.get(msg.tool_call_id)
            output = clip_middle(output_text(msg), MAX_OUTPUT)
            if block is None:
                block = self._standalone_call(msg.tool_call_id, msg.tool_name, None)
            x = dict(block.get("x") or {})
            x.update(status="error" if msg.is_error else "done", output=output)
            note_changed(x, msg.details)
            if x != block.get("x"):  # afterToolCall may have changed the result
                block["x"] = x
                self._op("x", c=msg.tool_call_id, x=dict(x))
        elif isinstance(msg, UserMessage):
            images = 0 if isinstance(msg.content, str) else sum(1 for b in msg.content if isinstance(b, ImageContent))
            self._add({"kind": "user", "text": text_of(msg.content, "\n"), "images": images})
        elif isinstance(msg, CustomMessage):
            if msg.display is not False and (fold := folded_line(msg.custom_type, msg.content)) is not None:
                self._add({"kind": "summary", "label": fold, "text": folded_body(text_of(msg.content))})  # one line, the rest a click away
            elif msg.display is not False:
                self._add({"kind": "custom", "customType": msg.custom_type, "text": text_of(msg.content, "\n")})
        elif isinstance(msg, BashExecutionMessage):
            self._add({"kind": "bash", "command": msg.command, "output": clip_middle(msg.output, MAX_OUTPUT), "exitCode": msg.exit_code})
        elif isinstance(msg, CompactionSummaryMessage):
            self._add({"kind": "summary", "label": f"Compaction summary ({msg.tokens_before:,} tokens before)", "text": msg.summary})
        elif isinstance(msg, BranchSummaryMessage):
            self._add({"kind": "summary", "label": "Branch summary", "text": msg.summary})
        elif field(msg, "role") == "system":  # pi 1.x: the prompt and tools recorded in the transcript
            self._sequence.pop()  # the notice below stands for it
            self._add({"kind": "notice", "tone": "info", "text": system_message_note(msg)})
        else:
            self._sequence.pop()  # the notice below stands for it
            self._add({"kind": "notice", "tone": "info", "text": f"[{field(msg, 'role', default='unknown')} message]"})
        self._note_entry(msg, event.entry_id)

    def _end_assistant(self, msg: AssistantMessage) -> None:
        item = self._current
        self._current = None
        self._last_stop_reason = msg.stop_reason
        for key in self._tokens:
            self._tokens[key] += usage_dict(msg)[key]
        self._cost += msg.usage.cost.total
        if msg.model:
            self._model = f"{msg.provider}/{msg.model}" if msg.provider else msg.model
        self._status_dirty = True
        blocks = [block_item(b) for b in msg.content]
        meta = {"model": msg.model, "stopReason": msg.stop_reason, "usage": usage_dict(msg)}
        if msg.error_message:
            meta["errorMessage"] = msg.error_message
        if item is None:
            item = self._add({"kind": "assistant", "blocks": blocks, **meta})
        else:
            for block in item["blocks"]:
                self._close_block(block)
            old = [{k: v for k, v in b.items() if k != "x"} for b in item["blocks"]]
            same = old == blocks
            # Keep execution state already attached to a call block.
            for new, prev in zip(blocks, item["blocks"], strict=False):
                if "x" in prev and new.get("id") == prev.get("id"):
                    new["x"] = prev["x"]
            item["blocks"] = blocks
            item.update(meta)
            if same:
                self._op("meta", i=item["id"], m=meta)
            else:
                self._op("set", item=dict(item))
        for block in item["blocks"]:
            if block.get("type") == "toolCall":
                self._calls[block["id"]] = block
        if msg.stop_reason in ("error", "aborted"):
            self._set_state("error" if msg.stop_reason == "error" else "aborted")

    def _on_tool_start(self, event: ToolExecutionStartEvent) -> None:
        block = self._calls.get(event.tool_call_id)
        if block is None:
            block = self._standalone_call(event.tool_call_id, event.tool_name, event.args)
        self._tool_started[event.tool_call_id] = time.monotonic()
        block["x"] = {"status": "running", "output": ""}
        self._op("x", c=event.tool_call_id, x=dict(block["x"]))
        self._set_state("tool")

    def _on_tool_update(self, event: ToolExecutionUpdateEvent) -> None:
        block = self._calls.get(event.tool_call_id) or self._standalone_call(event.tool_call_id, event.tool_name, event.args)
        text = output_text(event.partial_result)
        if len(text) > MAX_LIVE_OUTPUT:
            text = "…" + text[-MAX_LIVE_OUTPUT:]
        block["x"] = {"status": "running", "output": text}
        last = self._pending[-1] if self._pending else None
        if last is not None and last["o"] == "x" and last["c"] == event.tool_call_id:
            self._seq += 1
            last.update(s=self._seq, x=dict(block["x"]))
        else:
            self._op("x", c=event.tool_call_id, x=dict(block["x"]))

    def _on_tool_end(self, event: ToolExecutionEndEvent) -> None:
        block = self._calls.get(event.tool_call_id) or self._standalone_call(event.tool_call_id, event.tool_name, None)
        started = self._tool_started.pop(event.tool_call_id, None)
        x: dict[str, Any] = {
            "status": "error" if event.is_error else "done",
            "output": clip_middle(output_text(event.result), MAX_OUTPUT),
        }
        if started is not None:
            x["ms"] = round((time.monotonic() - started) * 1000)
        note_changed(x, field(event.result, "details"))
        block["x"] = x
        self._op("x", c=event.tool_call_id, x=dict(x))
        self._snapshot_dirty = True
        if not self._tool_started and self._state == "tool":
            self._set_state("running")

    def _on_compaction_start(self, event: AutoCompactionStartEvent) -> None:
        why = "the context is nearly full" if event.reason == "threshold" else "the model refused the context as too long"
        self._notices["compaction"] = self._add({"kind": "notice", "tone": "info", "active": True, "text": f"Compacting context: {why}…"})
        # after a finished run (an overflow recovery that fails comes after agent_end), its outcome stands again
        self._after_compaction = self._state if self._run_started is None and self._state not in _RUNNING else "running"
        self._set_state("compacting")

    def _on_compaction_end(self, event: AutoCompactionEndEvent) -> None:
        if event.aborted:
            text, tone = "Compaction aborted.", "warn"
        elif event.error_message:
            text, tone = f"Compaction failed: {event.error_message}", "error"
        else:
            before = field(event.result, "tokens_before", "tokensBefore")
            spent = field(field(event.result, "usage", default=None) or {}, "cost", default=None)
            if isinstance(field(spent, "total"), (int, float)):  # pi 1.x: what the summary cost counts too
                self._cost += field(spent, "total")
                self._status_dirty = True
            text, tone = "Context compacted" + (f" ({before:,} tokens before)." if isinstance(before, int) else "."), "info"
            if event.will_retry:
                text += " Retrying the request."
        self._update_notice("compaction", text, tone)
        self._snapshot_dirty = True
        if self._state == "compacting":
            self._set_state(self._after_compaction)

    def _on_retry_start(self, event: AutoRetryStartEvent) -> None:
        asked = "" if event.retry_after_ms is None else f" (the server asked for {event.retry_after_ms / 1000:g} s)"
        text = f"Retrying (attempt {event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:.1f} s{asked}: {event.error_message}"
        if "retry" in self._notices and self._notices["retry"].get("active"):
            self._update_notice("retry", text, "warn", active=True)
        else:
            self._notices["retry"] = self._add({"kind": "notice", "tone": "warn", "active": True, "text": text})
        self._set_state("retrying")

    def _on_retry_end(self, event: AutoRetryEndEvent) -> None:
        if event.success:
            self._update_notice("retry", f"Retry succeeded (attempt {event.attempt}).", "info")
        else:
            self._update_notice("retry", f"Retry gave up after attempt {event.attempt}: {event.final_error or 'unknown error'}", "error")
        self._snapshot_dirty = True
        if self._state == "retrying":
            self._set_state("running")

    def _on_extension_error(self, event: ExtensionErrorEvent) -> None:
        self._add({"kind": "notice", "tone": "error", "text": f"Extension {event.extension_path} failed in {event.event}: {event.error}"})
        self._snapshot_dirty = True

    def _on_session_event(self, event: SessionEvent) -> None:
        detail = ", ".join(f"{k}={v}" for k, v in (event.data or {}).items() if isinstance(v, (str, int, float, bool)))
        self._add({"kind": "notice", "tone": "info", "text": f"Session: {event.action}" + (f" ({detail})" if detail else "")})
        self._snapshot_dirty = True

    def _ignore(self, event: Any) -> None:
        pass

    _HANDLERS: dict[type, Callable[[AgentView, Any], None]] = {
        AgentStartEvent: _on_agent_start,
        AgentEndEvent: _on_agent_end,
        TurnStartEvent: _ignore,
        TurnEndEvent: _ignore,
        MessageStartEvent: _on_message_start,
        MessageUpdateEvent: _on_message_update,
        MessageEndEvent: _on_message_end,
        ToolExecutionStartEvent: _on_tool_start,
        ToolExecutionUpdateEvent: _on_tool_update,
        ToolExecutionEndEvent: _on_tool_end,
        AutoCompactionStartEvent: _on_compaction_start,
        AutoCompactionEndEvent: _on_compaction_end,
        AutoRetryStartEvent: _on_retry_start,
        AutoRetryEndEvent: _on_retry_end,
        ExtensionErrorEvent: _on_extension_error,
        SessionEvent: _on_session_event,
    }

    def _standalone_call(self, call_id: str, name: str, args: Any) -> dict[str, Any]:
        """A tool card for a call no assistant message of this view announced."""
        block = {"type": "toolCall", "id": call_id, "name": name, "text": pretty_args(args)}
        self._add({"kind": "tool", "blocks": [block]})
        block = self._items[-1]["blocks"][0]
        self._calls[call_id] = block
        return block

    # ------------------------------------------------------------------ status

    def _set_state(self, state: str) -> None:
        if self._stop_requested and state in ("running", "streaming", "tool"):
            state = "stopping"
        if state != self._state:
            self._state = state
            self._status_dirty = True

    def _elapsed(self) -> float:
        return self._elapsed_done + (time.monotonic() - self._run_started if self._run_started is not None else 0.0)

    def _status_dict(self) -> dict[str, Any]:
        return {
            "state": self._state,
            "running": self._state in _RUNNING,
            "model": self._model,
            "tokens": dict(self._tokens),
            "cost": self._cost,
            "elapsedMs": round(self._elapsed() * 1000),
            "note": self._note,
        }

    # ------------------------------------------------------------------ from the browser

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        self._on_step_msg(kind)  # a browser shows this view; "go" ends a replay's pause
        if kind == "sync":
            with self._lock:
                self.send(self._sync_reply(content.get("seq")))
        elif kind == "forget":
            self._on_forget_msg(content)
        elif kind == "stop":
            self._on_stop_msg()


__all__ = ["AgentView", "ViewState"]
