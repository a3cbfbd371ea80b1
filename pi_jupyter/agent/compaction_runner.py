"""Compaction and branch summaries for an :class:`~pi_jupyter.agent.Agent`: the model call, the
events, and the automatic compaction after a run (pi-design §4.3, §7.4, §7.6).

The algorithms live in :mod:`pi_jupyter.compaction` and ask for summaries through a function;
here that function is the agent's own model (the same provider, key and abort signal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..compaction import (
    BranchSummaryResult,
    CompactionError,
    CompactionOutcome,
    CompactionResult,
    CompactionSettings,
    CompactionTrigger,
    NothingToCompact,
    SummaryAborted,
    SummaryRequest,
    apply_checkout,
    checkout_with_summary,
    compact,
    compaction_trigger,
    plan_checkout,
    prepare_compaction,
)
from ..compaction.errors import nothing_to_compact_advice
from ..providers.base import AbortSignal, LlmRequest, StreamOptions, final_message
from .events import AutoCompactionEndEvent, AutoCompactionStartEvent, SessionEvent

if TYPE_CHECKING:  # pragma: no cover
    from .agent import Agent

OVERFLOW_RETRY_FAILED = "Context overflow recovery failed after one compact-and-retry attempt"


class CompactionCancelled(CompactionError):
    """An extension cancelled the compaction (or the summarized checkout); nothing was written."""


def settings_of(agent: Agent) -> CompactionSettings:
    """The agent's compaction settings (pi's defaults unless set), fitted to the model's window.

    pi's defaults (keep 20,000 recent tokens, reserve 16,384) assume a large window; for a
    small model they are shrunk (:meth:`CompactionSettings.fit_to`), for manual and
    automatic compaction alike, so ``compact()`` on a 16k-window model has something to do.
    """
    s = agent.settings.compaction
    s = s if isinstance(s, CompactionSettings) else CompactionSettings()
    window = agent.model.context_window
    return s.fit_to(window) if window and window > 0 else s


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


async def _compact(agent: Agent, settings: CompactionSettings, instructions: str | None, reason: str, signal: AbortSignal) -> Any:
    """Prepare, ask the extensions (``before_compact``), summarize, append; returns the :class:`CompactionOutcome`.

    Raises :class:`NothingToCompact`, :class:`CompactionCancelled` or a summary error; nothing
    is written then. An extension's summary is stored with ``fromHook: true``, as pi does.
    """
    session = agent.session
    prep = prepare_compaction(session.raw_branch(), settings, cwd=getattr(session, "cwd", None) or None)
    decision = None
    if len(agent.extensions):
        request = {"reason": reason, "instructions": instructions, "preparation": prep}
        decision = await agent.extensions.decide("before_compact", request)
    if decision is not None and not isinstance(decision, str):
        raise CompactionCancelled("compaction cancelled by an extension")
    if isinstance(decision, str):
        result = CompactionResult(summary=decision, first_kept_entry_id=prep.first_kept_entry_id, tokens_before=prep.tokens_before)
        entry_id = session.append_compaction(result.summary, result.first_kept_entry_id, result.tokens_before, result.details, True)
    else:
        result = await compact(prep, model_summarizer(agent, signal), custom_instructions=instructions)
        entry_id = result.append_to(session)
    return CompactionOutcome(entry_id=entry_id, result=result, preparation=prep)


async def compact_session(agent: Agent, instructions: str | None, *, keep_recent_tokens: int | None = None) -> Any:
    """Manual compaction: prepare, extension veto or summary, else the summary from the model, then the entry."""
    settings = settings_of(agent)
    if keep_recent_tokens is not None:
        settings = settings.model_copy(update={"keep_recent_tokens": keep_recent_tokens})
    signal = AbortSignal()
    agent._signal = signal
    agent._compacting = True
    try:
        outcome = await _compact(agent, settings, instructions, "manual", signal)
    finally:
        agent._compacting = False
        agent._signal = None
    agent._emit(SessionEvent(action="compact", data={"entryId": outcome.entry_id, "tokensBefore": outcome.result.tokens_before}))
    return outcome.result


async def summarize_branch_and_checkout(
    agent: Agent, target: str | None, instructions: str | None, replace_instructions: bool, label: str | None
) -> str | None:
    """Check out ``target``, summarizing the branch left behind into a ``branch_summary`` entry.

    ``before_checkout`` hooks see ``{target, instructions, label, entries, commonAncestorId}``
    (the entries that would be summarized) and may cancel or supply the summary, which is then
    stored with ``fromHook: true``.
    """
    signal = AbortSignal()
    agent._signal = signal
    try:
        session = agent.session
        if len(agent.extensions):
            plan = plan_checkout(session, session.leaf_id, target)
            request = {
                "target": target,
                "instructions": instructions,
                "label": label,
                "entries": plan.entries_to_summarize,
                "commonAncestorId": plan.common_ancestor_id,
            }
            decision = await agent.extensions.decide("before_checkout", request)
            if decision is not None and not isinstance(decision, str):
                raise CompactionCancelled("checkout cancelled by an extension")
            if isinstance(decision, str):
                summary = BranchSummaryResult(summary=decision) if plan.entries_to_summarize and not plan.noop else None
                apply_checkout(session, plan, summary, label=label, from_hook=True)
                return session.leaf_id
        outcome = await checkout_with_summary(
            session,
            target,
            model_summarizer(agent, signal),
            context_window=agent.model.context_window,
            custom_instructions=instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        return outcome.new_leaf_id if outcome.summary_entry_id is None else session.leaf_id
    finally:
        agent._signal = None


async def auto_compact(agent: Agent, new_messages: list[Any]) -> list[Any] | None:
    """After a run: compact when the context nears the window or the model refused it (once per prompt).

    Returns the messages of the retried run after an overflow, else ``None``.
    """
    if not any(getattr(m, "role", None) == "assistant" for m in new_messages):
        return None
    settings, trigger = _check(agent, skip_aborted=True)
    if trigger is None:
        return None
    overflow = trigger.reason == "overflow"
    if overflow and agent._overflow_attempted:
        agent._emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=OVERFLOW_RETRY_FAILED))
        return None
    if not await _auto(agent, settings, trigger.reason, will_retry=overflow):
        return None
    if not overflow:
        return None
    agent._overflow_attempted = True
    if agent.messages and getattr(agent.messages[-1], "role", None) == "assistant" and agent.messages[-1].stop_reason == "error":
        agent.messages.pop()
    return await agent._run_once([], False)


async def compact_before_prompt(agent: Agent) -> None:
    """pi's check before a prompt (pi-design §4.3): compact first when the context already nears the window.

    This is what keeps the first request after a switch to a smaller model, or on a session
    reopened near its limit, from overflowing. An aborted last reply counts here, as in pi;
    nothing is retried, since no request has been refused yet.
    """
    settings, trigger = _check(agent, skip_aborted=False)
    if trigger is not None:
        await _auto(agent, settings, trigger.reason, will_retry=False)


def _check(agent: Agent, *, skip_aborted: bool) -> tuple[CompactionSettings, CompactionTrigger | None]:
    """The settings, and the reason to compact now (``None``: disabled, a read-only session, or no need)."""
    settings = settings_of(agent)
    if not settings.enabled or agent.session.readonly:
        return settings, None
    trigger = compaction_trigger(
        agent.session.raw_branch(),
        context_window=agent.model.context_window,
        settings=settings,
        model=(agent.model.provider, agent.model.id),
        skip_aborted=skip_aborted,
    )
    return settings, trigger


async def _auto(agent: Agent, settings: CompactionSettings, reason: str, *, will_retry: bool) -> bool:
    """One automatic compaction with its start and end events; True when a compaction entry was written."""
    agent._emit(AutoCompactionStartEvent(reason=reason))
    signal = AbortSignal()
    agent._signal = signal
    agent._compacting = True
    try:
        outcome = await _compact(agent, settings, None, reason, signal)
    except NothingToCompact as exc:
        advice = nothing_to_compact_advice(agent.model.ref, agent.model.context_window, exc) if reason == "overflow" else None
        agent._emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=advice))
        return False
    except (SummaryAborted, CompactionCancelled):
        agent._emit(AutoCompactionEndEvent(aborted=True, will_retry=False))
        return False
    except Exception as exc:  # noqa: BLE001 - reported on the event stream, the session is unchanged
        prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
        agent._emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=f"{prefix}: {exc}"))
        return False
    finally:
        agent._signal = None
        agent._compacting = False
    agent._emit(AutoCompactionEndEvent(result=outcome.result.to_pi(), aborted=False, will_retry=will_retry))
    agent.reload()
    return True
