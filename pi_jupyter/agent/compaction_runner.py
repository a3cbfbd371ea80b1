"""Compaction and branch summaries for an :class:`~pi_jupyter.agent.Agent`: the model call, the
events, and the automatic compaction after a run (pi-design §4.3, §7.4, §7.6).

The algorithms live in :mod:`pi_jupyter.compaction` and ask for summaries through a function;
here that function is the agent's own model (the same provider, key and abort signal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..compaction import (
    CompactionSettings,
    NothingToCompact,
    SummaryAborted,
    SummaryRequest,
    checkout_with_summary,
    compaction_trigger,
)
from ..compaction import compact_session as _compact_session
from ..providers.base import AbortSignal, LlmRequest, StreamOptions, final_message
from .events import AutoCompactionEndEvent, AutoCompactionStartEvent, SessionEvent

if TYPE_CHECKING:  # pragma: no cover
    from .agent import Agent

OVERFLOW_RETRY_FAILED = "Context overflow recovery failed after one compact-and-retry attempt"


class CompactionCancelled(Exception):
    """An extension cancelled the compaction (or the summarized checkout)."""


def settings_of(agent: Agent) -> CompactionSettings:
    """The agent's compaction settings (pi's defaults unless set)."""
    s = agent.settings.compaction
    return s if isinstance(s, CompactionSettings) else CompactionSettings()


def model_summarizer(agent: Agent, signal: AbortSignal | None = None) -> Any:
    """``summarize(request) -> AssistantMessage`` asking the agent's model, abortable through ``signal``."""
    from .. import providers

    async def summarize(request: SummaryRequest) -> Any:
        llm = LlmRequest(system_prompt=request.system_prompt, messages=[request.user_message()])
        reasoning = agent.thinking_level if request.reasoning and agent.model.reasoning and agent.thinking_level != "off" else None
        options = StreamOptions(
            api_key=agent.api_key(),
            reasoning=reasoning,
            max_tokens=request.max_tokens,
            session_id=agent.session.id,
            signal=signal,
        )
        stream = agent._stream or providers.stream
        final = None
        async for event in stream(agent.model, llm, options):
            message = final_message(event)
            if message is not None:
                final = message
        return final

    return summarize


async def compact_session(agent: Agent, instructions: str | None, *, keep_recent_tokens: int | None = None) -> Any:
    """Manual compaction: extension veto or summary, then the summary from the model, then the entry."""
    from ..compaction import CompactionResult, prepare_compaction

    signal = AbortSignal()
    agent._signal = signal
    agent._compacting = True
    try:
        decision = await agent.extensions.decide("before_compact", {"instructions": instructions}) if len(agent.extensions) else None
        if decision is not None and not isinstance(decision, str):
            raise CompactionCancelled("compaction cancelled by an extension")
        if isinstance(decision, str):
            settings = settings_of(agent)
            if keep_recent_tokens is not None:
                settings = settings.model_copy(update={"keep_recent_tokens": keep_recent_tokens})
            prep = prepare_compaction(agent.session.raw_branch(), settings, cwd=agent.cwd)
            result = CompactionResult(summary=decision, first_kept_entry_id=prep.first_kept_entry_id, tokens_before=prep.tokens_before)
            entry_id = agent.session.append_compaction(
                result.summary, result.first_kept_entry_id, result.tokens_before, result.details, True
            )
        else:
            outcome = await _compact_session(
                agent.session,
                model_summarizer(agent, signal),
                settings=settings_of(agent),
                keep_recent_tokens=keep_recent_tokens,
                custom_instructions=instructions,
            )
            result, entry_id = outcome.result, outcome.entry_id
    finally:
        agent._compacting = False
        agent._signal = None
    agent._emit(SessionEvent(action="compact", data={"entryId": entry_id, "tokensBefore": result.tokens_before}))
    return result


async def summarize_branch_and_checkout(
    agent: Agent, target: str | None, instructions: str | None, replace_instructions: bool, label: str | None
) -> str | None:
    """Check out ``target``, summarizing the branch left behind into a ``branch_summary`` entry."""
    signal = AbortSignal()
    agent._signal = signal
    try:
        request = {"target": target, "instructions": instructions, "label": label}
        decision = await agent.extensions.decide("before_checkout", request) if len(agent.extensions) else None
        if decision is not None and not isinstance(decision, str):
            raise CompactionCancelled("checkout cancelled by an extension")
        if isinstance(decision, str):
            from ..compaction import apply_checkout, plan_checkout

            plan = plan_checkout(agent.session, agent.session.leaf_id, target)
            apply_checkout(agent.session, plan, decision if plan.entries_to_summarize else None, label=label)
            return agent.session.leaf_id
        outcome = await checkout_with_summary(
            agent.session,
            target,
            model_summarizer(agent, signal),
            context_window=agent.model.context_window,
            custom_instructions=instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        return outcome.new_leaf_id if outcome.summary_entry_id is None else agent.session.leaf_id
    finally:
        agent._signal = None


async def auto_compact(agent: Agent, new_messages: list[Any]) -> list[Any] | None:
    """After a run: compact when the context nears the window or the model refused it (once per prompt).

    Returns the messages of the retried run after an overflow, else ``None``.
    """
    settings = settings_of(agent)
    if not settings.enabled or agent.session.readonly:
        return None
    if not any(getattr(m, "role", None) == "assistant" for m in new_messages):
        return None
    trigger = compaction_trigger(
        agent.session.raw_branch(),
        context_window=agent.model.context_window,
        settings=settings.fit_to(agent.model.context_window),
        model=(agent.model.provider, agent.model.id),
    )
    if trigger is None:
        return None
    overflow = trigger.reason == "overflow"
    if overflow and agent._overflow_attempted:
        agent._emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=OVERFLOW_RETRY_FAILED))
        return None
    agent._emit(AutoCompactionStartEvent(reason=trigger.reason))
    signal = AbortSignal()
    agent._signal = signal
    agent._compacting = True
    try:
        outcome = await _compact_session(
            agent.session, model_summarizer(agent, signal), settings=settings.fit_to(agent.model.context_window)
        )
    except NothingToCompact:
        agent._emit(AutoCompactionEndEvent(aborted=False, will_retry=False))
        return None
    except SummaryAborted:
        agent._emit(AutoCompactionEndEvent(aborted=True, will_retry=False))
        return None
    except Exception as exc:  # noqa: BLE001 - reported on the event stream, the session is unchanged
        prefix = "Context overflow recovery failed" if overflow else "Auto-compaction failed"
        agent._emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=f"{prefix}: {exc}"))
        return None
    finally:
        agent._signal = None
        agent._compacting = False
    agent._emit(AutoCompactionEndEvent(result=outcome.result.to_pi(), aborted=False, will_retry=overflow))
    agent.reload()
    if not overflow:
        return None
    agent._overflow_attempted = True
    if agent.messages and getattr(agent.messages[-1], "role", None) == "assistant" and agent.messages[-1].stop_reason == "error":
        agent.messages.pop()
    return await agent._run_once([], False)
