"""A synthetic but faithful agent event stream (pi's order, §6.2) for widget tests and benchmarks.

Events are the real :mod:`pi_jupyter.agent.events` types carrying real provider events, built
the way the agent loop builds them: one partial ``AssistantMessage`` updated in place, a
``message_update`` per provider event, tool execution events, tool-result messages. Used by
the light tests, the browser test's notebook (imported from this folder) and the benchmark.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from pi_jupyter.agent.events import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pi_jupyter.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserMessage
from pi_jupyter.providers.base import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
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

ANSWER = """## Why the loss diverges

The learning rate is **too high** for this batch size: the update overshoots and the
loss grows instead of shrinking. Three things point to it:

1. the loss is fine for the first `200` steps, then *explodes*;
2. the gradient norm doubles every few steps;
3. halving `lr` makes the run stable.

| lr | final loss |
|---:|-----------:|
| 3e-3 | nan |
| 1e-3 | 0.42 |

```python
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=10_000)
```

Markup in model text stays text: <b>not bold</b> <img src=x onerror="window.__piav_xss=1">.
See [the PyTorch docs](https://pytorch.org/docs/stable/optim.html) for schedulers.
"""

THINKING = "The user asks about divergence. I should look at the training log first, then compare learning rates."


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (a token stream stand-in)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def assistant_events(
    plan: list[tuple[Any, ...]],
    *,
    model: str = "fake-model",
    provider: str = "offline",
    stop_reason: str = "stop",
    usage: Usage | None = None,
    pause: Callable[[], None] = lambda: None,
    stop: threading.Event | None = None,
) -> Iterator[Any]:
    """The events of one streamed assistant message.

    ``plan`` holds ``("thinking", [chunk, ...])``, ``("text", [chunk, ...])`` and
    ``("toolCall", id, name, arguments)`` blocks. ``pause()`` runs between deltas; when
    ``stop`` is set the message ends at once with ``stopReason: "aborted"``.
    """
    partial = AssistantMessage(api="fake", provider=provider, model=model)
    yield MessageStartEvent(message=partial)
    yield MessageUpdateEvent(message=partial, assistant_message_event=StartEvent(partial=partial))

    def upd(ev: Any) -> MessageUpdateEvent:
        return MessageUpdateEvent(message=partial, assistant_message_event=ev)

    aborted = False
    for block in plan:
        if aborted:
            break
        index = len(partial.content)
        kind = block[0]
        if kind == "text":
            partial.content.append(TextContent(text=""))
            yield upd(TextStartEvent(content_index=index, partial=partial))
            for piece in block[1]:
                if stop is not None and stop.is_set():
                    aborted = True
                    break
                partial.content[index].text += piece
                yield upd(TextDeltaEvent(content_index=index, delta=piece, partial=partial))
                pause()
            yield upd(TextEndEvent(content_index=index, content=partial.content[index].text, partial=partial))
        elif kind == "thinking":
            partial.content.append(ThinkingContent(thinking=""))
            yield upd(ThinkingStartEvent(content_index=index, partial=partial))
            for piece in block[1]:
                partial.content[index].thinking += piece
                yield upd(ThinkingDeltaEvent(content_index=index, delta=piece, partial=partial))
                pause()
            yield upd(ThinkingEndEvent(content_index=index, content=partial.content[index].thinking, partial=partial))
        elif kind == "toolCall":
            _, call_id, name, arguments = block
            call = ToolCall(id=call_id, name=name, arguments={})
            partial.content.append(call)
            yield upd(ToolCallStartEvent(content_index=index, partial=partial))
            for piece in chunks(json.dumps(arguments), 7):
                yield upd(ToolCallDeltaEvent(content_index=index, delta=piece, partial=partial))
                pause()
            call.arguments = dict(arguments)
            yield upd(ToolCallEndEvent(content_index=index, tool_call=call, partial=partial))
        else:
            raise ValueError(f"assistant_events: unknown block kind {kind!r}")
    final = partial.model_copy(deep=True)
    final.usage = usage or Usage(input=1200, output=340, total_tokens=1540)
    if aborted:
        final.stop_reason = "aborted"
        final.error_message = "Request was aborted"
        yield upd(ErrorEvent(reason="aborted", error=final))
    else:
        final.stop_reason = stop_reason  # type: ignore[assignment]
        yield upd(DoneEvent(reason=stop_reason, message=final))  # type: ignore[arg-type]
    yield MessageEndEvent(message=final)


def tool_events(call_id: str, name: str, args: dict[str, Any], outputs: list[str], *, is_error: bool = False, pause=lambda: None):
    """The events of one tool run: start, partial outputs, end, and its tool-result message."""
    yield ToolExecutionStartEvent(tool_call_id=call_id, tool_name=name, args=args)
    acc = ""
    for piece in outputs:
        acc += piece
        yield ToolExecutionUpdateEvent(
            tool_call_id=call_id, tool_name=name, args=args, partial_result={"content": [{"type": "text", "text": acc}]}
        )
        pause()
    result = {"content": [{"type": "text", "text": acc}], "details": {}}
    yield ToolExecutionEndEvent(tool_call_id=call_id, tool_name=name, result=result, is_error=is_error)
    msg = ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=acc)], is_error=is_error)
    yield MessageStartEvent(message=msg)
    yield MessageEndEvent(message=msg)


def full_run(
    *,
    prompt: str = "Why does the loss diverge?",
    answer: str = ANSWER,
    chunk: int = 3,
    delay: float = 0.0,
    stop: threading.Event | None = None,
) -> Iterator[Any]:
    """A whole run: prompt, thinking + a tool call, the tool's output, then a streamed Markdown answer."""

    def pause() -> None:
        if delay:
            time.sleep(delay)

    new: list[Any] = []
    yield AgentStartEvent()
    yield TurnStartEvent()
    user = UserMessage.text(prompt)
    new.append(user)
    yield MessageStartEvent(message=user)
    yield MessageEndEvent(message=user)
    args = {"command": "tail -n 3 train.log"}
    first = None
    for ev in assistant_events(
        [("thinking", chunks(THINKING, 6)), ("text", chunks("Let me look at the log.", 4)), ("toolCall", "call_1", "bash", args)],
        stop_reason="toolUse",
        pause=pause,
    ):
        first = ev.message if isinstance(ev, MessageEndEvent) else first
        yield ev
    new.append(first)
    log = ["step 200 loss 0.51\n", "step 210 loss 3.9\n", "step 220 loss nan\n"]
    for ev in tool_events("call_1", "bash", args, log, pause=lambda: time.sleep(delay * 10) if delay else None):
        if isinstance(ev, MessageEndEvent):
            new.append(ev.message)
        yield ev
    yield TurnEndEvent(message=first, tool_results=[new[-1]])
    yield TurnStartEvent()
    last = None
    for ev in assistant_events([("text", chunks(answer, chunk))], pause=pause, stop=stop):
        last = ev.message if isinstance(ev, MessageEndEvent) else last
        yield ev
    new.append(last)
    yield TurnEndEvent(message=last, tool_results=[])
    yield AgentEndEvent(messages=new)


def feed(view: Any, events: Iterator[Any]) -> threading.Thread:
    """Send ``events`` to ``view.handle`` from a background thread (as the agent's loop thread does)."""

    def run() -> None:
        for ev in events:
            view.handle(ev)

    thread = threading.Thread(target=run, name="fake-agent", daemon=True)
    thread.start()
    return thread
