"""The agent loop: call the model, run the tools it asks for, repeat, emitting one event stream.

The order of events is pi's (pi-design §6.2). Two deliberate differences: tool-result
messages are always emitted in the order of the tool calls, including calls that failed
before running (pi emits those first, §10 item 20); and a loop that is aborted between
steps ends with an ``aborted`` assistant message that goes through ``message_start`` /
``message_end`` like any other, so it is persisted (pi synthesizes one without
``message_end``, §10 item 18).

Every tool result is redacted (:func:`~pi_jupyter.agent.tools.redact_result`) before its
events are emitted and its message persisted: :func:`~pi_jupyter.agent.tools.run_tool`
redacts what a tool returns and every partial update, and a result an after-tool hook
returned, or one the loop made (a blocked or failed call), is redacted when it is finished
(a result that was redacted already is not scanned again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage, convert_to_llm
from ..providers.base import AbortSignal, LlmRequest, Model, StartEvent, StreamOptions, final_message
from ..providers.tool_args import invalid_arguments_error
from .events import (
    AgentEndEvent,
    AgentStartEvent,
    Event,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .tools import Tool, ToolContext, ToolResult, redact_result, run_tool

SKIPPED_FOR_STEERING = "Skipped due to queued user message."
ABORTED_TOOL_TEXT = "Tool execution was aborted."
TURN_LIMIT_TEXT = (
    "Turn limit reached: stopped after {n} turns while the model was still calling tools. "
    "Send a message to go on, or raise max_turns (0: no limit)."
)
"""The message of the reply that ends a run at the turn limit (its stop reason is ``error``)."""

StreamFn = Callable[[Model, LlmRequest, StreamOptions], Any]
"""``stream(model, request, options)`` returning an async iterator of assistant events."""


@dataclass
class BeforeToolCall:
    """What a before-tool hook sees. Return a :class:`ToolDecision` (or ``None`` to let it run)."""

    tool_call: ToolCall
    args: Any
    assistant_message: AssistantMessage
    tool: Tool[Any]


@dataclass
class ToolDecision:
    """A before-tool hook's answer: block the call with a reason, or replace its arguments."""

    block: bool = False
    reason: str | None = None
    args: dict[str, Any] | None = None


@dataclass
class AfterToolCall:
    """What an after-tool hook sees; it may return a new :class:`ToolResult` (or ``None``).

    ``result`` is already redacted; a result the hook returns is redacted too. Change a
    result by returning a new one: a result changed in place is not scanned again.
    """

    tool_call: ToolCall
    args: Any
    result: ToolResult
    assistant_message: AssistantMessage


@dataclass
class LoopConfig:
    """Everything one run of the loop needs; built by :class:`~pi_jupyter.agent.core.AgentCore`."""

    model: Model
    stream: StreamFn
    system_prompt: str | None = None
    tools: Sequence[Tool[Any]] = ()
    reasoning: str | None = None
    api_key: Callable[[], Any] | None = None
    session_id: str | None = None
    max_tokens: int | None = None
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    convert: Callable[[list[Any]], list[Any]] = convert_to_llm
    transform_context: Callable[[list[Any], AbortSignal], Awaitable[list[Any]] | list[Any]] | None = None
    before_tool_call: Callable[[BeforeToolCall], Awaitable[ToolDecision | None] | ToolDecision | None] | None = None
    after_tool_call: Callable[[AfterToolCall], Awaitable[ToolResult | None] | ToolResult | None] | None = None
    steering: Callable[[], list[Any]] = lambda: []
    follow_ups: Callable[[], list[Any]] = lambda: []
    cwd: str = "."
    session: Any = None
    tool_extra: dict[str, Any] = field(default_factory=dict)
    on_request: Callable[[LlmRequest], None] | None = None
    max_turns: int = 0
    """The most model calls in this run (0: no limit); see :data:`TURN_LIMIT_TEXT`."""


async def _maybe(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future) else value


async def run_loop(
    prompts: list[Any],
    history: list[Any],
    config: LoopConfig,
    emit: Callable[[Event], None],
    signal: AbortSignal,
    *,
    skip_initial_steering: bool = False,
) -> list[Any]:
    """Run the agent from ``history`` plus ``prompts`` until it stops; returns the new messages.

    ``history`` is extended in place with every message of the run. ``emit`` is called
    synchronously for every event. With no ``prompts`` this is pi's ``continue``: the last
    message of ``history`` must be a user, custom or tool-result message.
    """
    new_messages: list[Any] = list(prompts)
    emit(AgentStartEvent())
    emit(TurnStartEvent())
    for prompt in prompts:
        emit(MessageStartEvent(message=prompt))
        history.append(prompt)
        emit(MessageEndEvent(message=prompt))

    pending: list[Any] = [] if skip_initial_steering else list(config.steering())
    first_turn = True
    turns = 0
    while True:
        more_tools = True
        while more_tools or pending:
            if not first_turn:
                emit(TurnStartEvent())
            first_turn = False
            for message in pending:
                emit(MessageStartEvent(message=message))
                history.append(message)
                new_messages.append(message)
                emit(MessageEndEvent(message=message))
            pending = []

            if config.max_turns and turns >= config.max_turns:
                # error, not aborted: every view shows an error's message, and neither pi nor we send it back or retry it
                text = TURN_LIMIT_TEXT.format(n=turns)
                assistant = _synthetic(config.model, "error", text, history, emit)
            else:
                assistant = await _stream_assistant(history, config, emit, signal)
            turns += 1
            new_messages.append(assistant)
            if assistant.stop_reason in ("error", "aborted"):
                emit(TurnEndEvent(message=assistant, tool_results=[]))
                emit(AgentEndEvent(messages=new_messages))
                return new_messages

            calls = assistant.tool_calls
            results: list[ToolResultMessage] = []
            more_tools = bool(calls)
            if calls:
                results, skipped_for_steering = await _run_tools(calls, assistant, config, emit, signal)
                for result in results:
                    history.append(result)
                    new_messages.append(result)
                if skipped_for_steering:
                    pending = list(skipped_for_steering)
            emit(TurnEndEvent(message=assistant, tool_results=results))
            if not pending:
                pending = list(config.steering())
        follow = list(config.follow_ups())
        if follow:
            pending = follow
            continue
        break
    emit(AgentEndEvent(messages=new_messages))
    return new_messages


async def _stream_assistant(history: list[Any], config: LoopConfig, emit: Callable[[Event], None], signal: AbortSignal) -> AssistantMessage:
    model = config.model
    if signal.aborted:
        return _synthetic(model, "aborted", "Request was aborted", history, emit)
    messages = history
    if config.transform_context is not None:
        try:
            messages = await _maybe(config.transform_context(list(history), signal))
        except Exception as exc:  # noqa: BLE001 - a guard that failed: the request is not sent (fail closed)
            return _synthetic(model, "error", str(exc), history, emit)
    request = LlmRequest.model_construct(
        system_prompt=config.system_prompt,
        messages=config.convert(messages),
        tools=[t.spec() for t in config.tools],
    )
    if config.on_request is not None:
        config.on_request(request)
    key = config.api_key() if config.api_key is not None else None
    options = StreamOptions.model_construct(
        api_key=key,
        reasoning=config.reasoning,
        max_tokens=config.max_tokens,
        temperature=None,
        session_id=config.session_id,
        signal=signal,
        headers={},
        timeout_s=None,
        max_retry_delay_ms=60_000,
    )
    partial: AssistantMessage | None = None
    final: AssistantMessage | None = None
    started = False
    events: Any = None
    try:
        events = config.stream(model, request, options)
        async for event in events:
            if isinstance(event, StartEvent):
                partial = event.partial
                history.append(partial)
                started = True
                emit(MessageStartEvent.model_construct(type="message_start", message=partial))
                continue
            done = final_message(event)
            if done is not None:
                final = done
                break
            if started:
                emit(MessageUpdateEvent.fast(event.partial, event))
    except Exception as exc:  # noqa: BLE001 - a provider broke its no-raise contract
        final = _error_message(model, "aborted" if signal.aborted else "error", f"{type(exc).__name__}: {exc}", partial)
    finally:
        # Close the provider's stream now (its HTTP response with it), not whenever the
        # garbage collector gets to the suspended generator.
        await _close(events)
    if final is None:
        final = _error_message(model, "aborted" if signal.aborted else "error", "the provider stream ended without a result", partial)
    if started:
        history[-1] = final
    else:
        history.append(final)
        emit(MessageStartEvent(message=final))
    emit(MessageEndEvent(message=final))
    return final


async def _close(events: Any) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:  # noqa: BLE001 - a provider's cleanup failure does not change the answer
        pass


def _error_message(model: Model, reason: str, text: str, partial: AssistantMessage | None) -> AssistantMessage:
    content = list(partial.content) if partial is not None else []
    return AssistantMessage(
        content=content,
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=partial.usage if partial is not None else Usage(),
        stop_reason=reason,  # type: ignore[arg-type]
        error_message=text,
    )


def _synthetic(model: Model, reason: str, text: str, history: list[Any], emit: Callable[[Event], None]) -> AssistantMessage:
    message = _error_message(model, reason, text, None)
    history.append(message)
    emit(MessageStartEvent(message=message))
    emit(MessageEndEvent(message=message))
    return message


@dataclass
class _Outcome:
    call: ToolCall
    result: ToolResult
    tool: Tool[Any] | None = None
    args: Any = None
    task: asyncio.Task[None] | None = None
    finished: bool = False
    partial: ToolResult | None = None
    """The last partial result the tool reported (kept when the call is cancelled)."""


async def _run_tools(
    calls: list[ToolCall],
    assistant: AssistantMessage,
    config: LoopConfig,
    emit: Callable[[Event], None],
    signal: AbortSignal,
) -> tuple[list[ToolResultMessage], list[Any]]:
    """Run one assistant message's tool calls; ``tool_execution_end`` is emitted as each call
    finishes, the tool-result messages afterwards in the order of the calls."""
    tools = {t.name: t for t in config.tools}
    outcomes: list[_Outcome] = []
    steering: list[Any] = []
    sequential = config.tool_execution == "sequential"
    for index, call in enumerate(calls):
        emit(ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
        outcome = await _prepare(call, tools, assistant, config)
        outcomes.append(outcome)
        if outcome.tool is None:
            _finish(outcome, emit)
            continue
        if sequential:
            outcome.task = asyncio.ensure_future(_execute(outcome, assistant, config, emit, signal))
            await _await_tools([outcome], emit, signal)
            steering = list(config.steering())
            if steering:
                for rest in calls[index + 1 :]:
                    emit(ToolExecutionStartEvent(tool_call_id=rest.id, tool_name=rest.name, args=rest.arguments))
                    skipped = _Outcome(rest, ToolResult.error(SKIPPED_FOR_STEERING))
                    _finish(skipped, emit)
                    outcomes.append(skipped)
                break
    if not sequential:
        running = [o for o in outcomes if o.tool is not None]
        for outcome in running:
            outcome.task = asyncio.ensure_future(_execute(outcome, assistant, config, emit, signal))
        await _await_tools(running, emit, signal)
    messages: list[ToolResultMessage] = []
    for outcome in outcomes:
        message = ToolResultMessage(
            tool_call_id=outcome.call.id,
            tool_name=outcome.call.name,
            content=list(outcome.result.content),
            details=outcome.result.details,
            is_error=outcome.result.is_error,
        )
        emit(MessageStartEvent(message=message))
        emit(MessageEndEvent(message=message))
        messages.append(message)
    return messages, steering


async def _prepare(call: ToolCall, tools: dict[str, Tool[Any]], assistant: AssistantMessage, config: LoopConfig) -> _Outcome:
    tool = tools.get(call.name)
    if tool is None:
        return _Outcome(call, ToolResult.error(f"Tool {call.name} not found"))
    damaged = invalid_arguments_error(call)
    if damaged is not None:
        return _Outcome(call, ToolResult.error(damaged))
    raw_args = call.arguments
    if config.before_tool_call is not None:
        try:
            decision = await _maybe(config.before_tool_call(BeforeToolCall(call, raw_args, assistant, tool)))
        except Exception as exc:  # noqa: BLE001 - a hook's failure blocks the call, visibly
            return _Outcome(call, ToolResult.error(f"{type(exc).__name__}: {exc}"))
        if decision is not None:
            if decision.block:
                return _Outcome(call, ToolResult.error(decision.reason or "Tool execution was blocked"))
            if decision.args is not None:
                raw_args = decision.args
    return _Outcome(call, ToolResult(), tool=tool, args=raw_args)


async def _execute(
    outcome: _Outcome, assistant: AssistantMessage, config: LoopConfig, emit: Callable[[Event], None], signal: AbortSignal
) -> None:
    call = outcome.call
    assert outcome.tool is not None

    def update(partial: ToolResult) -> None:
        if not outcome.finished:
            outcome.partial = partial
            emit(
                ToolExecutionUpdateEvent(
                    tool_call_id=call.id, tool_name=call.name, args=call.arguments, partial_result=_result_dict(partial)
                )
            )

    ctx = ToolContext(tool_call_id=call.id, signal=signal, cwd=config.cwd, update=update, session=config.session, extra=config.tool_extra)
    outcome.result = await run_tool(outcome.tool, outcome.args if isinstance(outcome.args, dict) else {}, ctx)
    if config.after_tool_call is not None:
        try:
            replaced = await _maybe(config.after_tool_call(AfterToolCall(call, outcome.args, outcome.result, assistant)))
        except Exception as exc:  # noqa: BLE001
            replaced = ToolResult.error(f"{type(exc).__name__}: {exc}")
        if replaced is not None:
            outcome.result = replaced
    _finish(outcome, emit)


async def _await_tools(outcomes: list[_Outcome], emit: Callable[[Event], None], signal: AbortSignal) -> None:
    """Wait for the tool tasks; when aborted, give them a moment to stop, then cancel the rest."""
    tasks = {o.task for o in outcomes if o.task is not None}
    if tasks:
        abort_wait = asyncio.ensure_future(signal.wait())
        try:
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending | {abort_wait}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(abort_wait)
                if abort_wait in done:
                    if pending:
                        _, still = await asyncio.wait(pending, timeout=0.5)
                        for late in still:
                            late.cancel()
                        await asyncio.gather(*still, return_exceptions=True)
                    break
        finally:
            abort_wait.cancel()
    for outcome in outcomes:
        task, outcome.task = outcome.task, None
        if outcome.finished or task is None:
            continue
        if task.cancelled():
            outcome.result = _aborted(outcome.partial)
        elif task.exception() is not None:
            exc = task.exception()
            outcome.result = ToolResult.error(f"{type(exc).__name__}: {exc}")
        _finish(outcome, emit)


def _aborted(partial: ToolResult | None) -> ToolResult:
    """The result of a call cancelled after an abort: what it had reported so far (as Stop leaves it), then the notice."""
    shown = partial.text_content.rstrip("\n") if partial is not None else ""
    return ToolResult.error(f"{shown}\n\n{ABORTED_TOOL_TEXT}" if shown.strip() else ABORTED_TOOL_TEXT)


def _result_dict(result: ToolResult) -> dict[str, Any]:
    """A tool result in pi's shape (``{content, details}``), as tool events carry it."""
    out: dict[str, Any] = {"content": [b.to_dict() for b in result.content]}
    if result.details is not None:
        out["details"] = result.details
    return out


def _finish(outcome: _Outcome, emit: Callable[[Event], None]) -> None:
    outcome.finished = True
    # run_tool's result passes unchanged; a hook's result, or one the loop made, is redacted here.
    outcome.result = redact_result(outcome.result)
    result = _result_dict(outcome.result)
    emit(
        ToolExecutionEndEvent(
            tool_call_id=outcome.call.id,
            tool_name=outcome.call.name,
            result=result,
            is_error=outcome.result.is_error,
        )
    )


def user_message(text: str, images: list[Any] | None = None) -> UserMessage:
    """A user message as pi's prompt builds it (text block first, then images)."""
    return UserMessage.text(text, images)


__all__ = [
    "ABORTED_TOOL_TEXT",
    "TURN_LIMIT_TEXT",
    "AfterToolCall",
    "BeforeToolCall",
    "LoopConfig",
    "SKIPPED_FOR_STEERING",
    "StreamFn",
    "ToolDecision",
    "run_loop",
    "user_message",
]

_ = TextContent  # re-exported for hooks that build results
