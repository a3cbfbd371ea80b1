"""Compaction and branch summaries as one part of the agent: the model call, the events, and the
automatic compaction before a prompt and after a run (pi-design §4.3, §7.4, §7.6).

The algorithms live in :mod:`pi_jupyter.compaction` and ask for summaries through a function;
here that function is the agent's own model (the same provider, key and abort signal). A
:class:`Compactor` keeps its own state (whether it is compacting, whether this prompt's
overflow recovery was used) and reaches the agent only through a
:class:`~pi_jupyter.agent.run_context.RunContext`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, cast

from ..compaction import (
    BranchSummaryResult,
    CompactionError,
    CompactionOutcome,
    CompactionResult,
    CompactionSettings,
    CompactionTrigger,
    CompactionWouldGrow,
    NothingToCompact,
    SummaryAborted,
    SummaryRequest,
    apply_checkout,
    check_shrinks,
    checkout_with_summary,
    compact,
    compaction_trigger,
    plan_checkout,
    prepare_compaction,
    settings_for,
)
from ..compaction.errors import nothing_to_compact_advice
from ..compaction.oversize import ContextTooLarge, diagnose, exceeds
from ..messages import ThinkingLevel
from ..providers.base import AbortSignal, LlmRequest, StreamOptions, final_message
from .events import AutoCompactionEndEvent, AutoCompactionStartEvent, SessionEvent
from .extensions import GuardError
from .run_context import RunContext

OVERFLOW_RETRY_FAILED = "Context overflow recovery failed after one compact-and-retry attempt"


class CompactionHooks(Protocol):
    """Who is asked before anything is summarized (the agent's extensions)."""

    def __len__(self) -> int:
        """How many may answer (0: nobody is asked, nothing is planned for them)."""
        ...

    async def decide(self, hook: str, request: Any) -> Any:
        """``before_compact`` / ``before_checkout``: :data:`~pi_jupyter.agent.extensions.CANCEL`, a summary, or ``None``."""
        ...


class CompactionCancelled(CompactionError):
    """An extension cancelled the compaction (or the summarized checkout); nothing was written."""


async def _ask(hooks: CompactionHooks, hook: str, request: Any) -> Any:
    """The extensions' answer; a guard that failed cancels (fails closed), with its error named."""
    try:
        return await hooks.decide(hook, request)
    except GuardError as exc:
        raise CompactionCancelled(str(exc)) from None


class Compactor:
    """Manual, automatic and overflow compaction, and summarized checkouts, for one agent.

    ``hooks`` are asked before anything is summarized (``None``: nobody).
    """

    def __init__(self, run: RunContext, hooks: CompactionHooks | None = None) -> None:
        self._run = run
        self._hooks = hooks
        self.compacting = False
        """True while a compaction (manual or automatic) is running."""
        self.overflow_attempted = False
        """True once this prompt's one compact-and-retry after a context overflow was used."""
        self.too_large: ContextTooLarge | None = None
        """Why this prompt's context cannot fit the window, when compaction found it could not help."""

    def new_prompt(self) -> None:
        """A new prompt starts: it gets its own overflow recovery."""
        self.overflow_attempted = False
        self.too_large = None

    def settings(self) -> CompactionSettings:
        """The compaction settings (pi's defaults unless set), fitted to the model's window.

        pi's defaults (keep 20,000 recent tokens, reserve 16,384) assume a large window; for a
        small model they are shrunk (:meth:`CompactionSettings.fit_to`), for manual and
        automatic compaction alike, so ``compact()`` on a 16k-window model has something to do.
        """
        return settings_for(self._run.settings.compaction, self._run.model.context_window)

    def summarizer(self, signal: AbortSignal | None = None) -> Callable[[SummaryRequest], Awaitable[Any]]:
        """``summarize(request) -> AssistantMessage`` asking the agent's model, abortable through ``signal``."""
        run = self._run

        async def summarize(request: SummaryRequest) -> Any:
            llm = LlmRequest(system_prompt=request.system_prompt, messages=[request.user_message()])
            model, level = run.model, run.thinking_level
            reasoning = cast(ThinkingLevel, level) if request.reasoning and model.reasoning and level != "off" else None
            options = StreamOptions(
                api_key=run.api_key(),
                reasoning=reasoning,
                max_tokens=request.max_tokens,
                session_id=run.session.id,
                signal=signal,
            )
            final = None
            async for event in run.stream_fn()(model, llm, options):
                message = final_message(event)
                if message is not None:
                    final = message
            return final

        return summarize

    async def _compact(self, settings: CompactionSettings, instructions: str | None, reason: str, signal: AbortSignal) -> Any:
        """Prepare, ask the extensions (``before_compact``), summarize, append; returns the :class:`CompactionOutcome`.

        Raises :class:`NothingToCompact`, :class:`CompactionCancelled` or a summary error; nothing
        is written then. An extension's summary is stored with ``fromHook: true``, as pi does.
        """
        session = self._run.session
        prep = prepare_compaction(session.raw_branch(), settings, cwd=getattr(session, "cwd", None) or None)
        decision = None
        if self._hooks is not None and len(self._hooks):
            request = {"reason": reason, "instructions": instructions, "preparation": prep}
            decision = await _ask(self._hooks, "before_compact", request)
        if decision is not None and not isinstance(decision, str):
            raise CompactionCancelled("compaction cancelled by an extension")
        if isinstance(decision, str):
            result = CompactionResult(summary=decision, first_kept_entry_id=prep.first_kept_entry_id, tokens_before=prep.tokens_before)
            check_shrinks(session.raw_branch(), result.summary, result.first_kept_entry_id)
            entry_id = session.append_compaction(result.summary, result.first_kept_entry_id, result.tokens_before, result.details, True)
        else:
            window = self._run.model.context_window
            if reason != "manual" and window and exceeds([*prep.messages_to_summarize, *prep.turn_prefix_messages], 2 * window):
                # twice the window by our estimate: the summary request cannot fit either. Say so now rather
                # than send the whole branch (a compaction asked for by hand is sent, as pi sends it)
                raise ContextTooLarge("summary", diagnose(session.raw_branch()), self._run.model.ref, window)
            result = await compact(prep, self.summarizer(signal), custom_instructions=instructions)
            entry_id = result.append_to(session)
        return CompactionOutcome(entry_id=entry_id, result=result, preparation=prep)

    async def compact(self, instructions: str | None, *, keep_recent_tokens: int | None = None) -> CompactionResult:
        """Manual compaction: prepare, extension veto or summary, else the summary from the model, then the entry."""
        settings = self.settings()
        if keep_recent_tokens is not None:
            settings = settings.model_copy(update={"keep_recent_tokens": keep_recent_tokens})
        self.compacting = True
        try:
            with self._run.abortable() as signal:
                outcome = await self._compact(settings, instructions, "manual", signal)
        finally:
            self.compacting = False
        self._run.emit(SessionEvent(action="compact", data={"entryId": outcome.entry_id, "tokensBefore": outcome.result.tokens_before}))
        return outcome.result

    async def summarize_branch_and_checkout(
        self, target: str | None, instructions: str | None, replace_instructions: bool, label: str | None
    ) -> str | None:
        """Check out ``target``, summarizing the branch left behind into a ``branch_summary`` entry.

        ``before_checkout`` hooks see ``{target, instructions, label, entries, commonAncestorId}``
        (the entries that would be summarized) and may cancel or supply the summary, which is then
        stored with ``fromHook: true``.
        """
        session = self._run.session
        with self._run.abortable() as signal:
            if self._hooks is not None and len(self._hooks):
                plan = plan_checkout(session, session.leaf_id, target)
                request = {
                    "target": target,
                    "instructions": instructions,
                    "label": label,
                    "entries": plan.entries_to_summarize,
                    "commonAncestorId": plan.common_ancestor_id,
                }
                decision = await _ask(self._hooks, "before_checkout", request)
                if decision is not None and not isinstance(decision, str):
                    raise CompactionCancelled("checkout cancelled by an extension")
                if isinstance(decision, str):
                    summary = BranchSummaryResult(summary=decision) if plan.entries_to_summarize and not plan.noop else None
                    apply_checkout(session, plan, summary, label=label, from_hook=True)
                    return session.leaf_id
            outcome = await checkout_with_summary(
                session,
                target,
                self.summarizer(signal),
                context_window=self._run.model.context_window,
                custom_instructions=instructions,
                replace_instructions=replace_instructions,
                label=label,
            )
            return outcome.new_leaf_id if outcome.summary_entry_id is None else session.leaf_id

    async def after_run(self, new_messages: list[Any]) -> list[Any] | None:
        """After a run: compact when the context nears the window or the model refused it (once per prompt).

        Returns the messages of the retried run after an overflow, else ``None``.
        """
        run = self._run
        if not any(getattr(m, "role", None) == "assistant" for m in new_messages):
            return None
        settings, trigger = self._check(skip_aborted=True)
        if trigger is None:
            return None
        overflow = trigger.reason == "overflow"
        if overflow and self.overflow_attempted:
            model = run.model
            size = diagnose(run.session.raw_branch())
            message = OVERFLOW_RETRY_FAILED
            if size.dominated(model.context_window):  # what is left after the compaction: name what makes it too long
                self.too_large = ContextTooLarge("entry", size, model.ref, model.context_window)
                message = f"{OVERFLOW_RETRY_FAILED}. {self.too_large}"
            run.emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=message))
            return None
        if not await self._auto(settings, trigger.reason, will_retry=overflow):
            return None
        if not overflow:
            return None
        self.overflow_attempted = True
        messages = run.messages
        if messages and getattr(messages[-1], "role", None) == "assistant" and messages[-1].stop_reason == "error":
            messages.pop()
        return await run.run_turn()

    async def before_prompt(self) -> None:
        """pi's check before a prompt (pi-design §4.3): compact first when the context already nears the window.

        This is what keeps the first request after a switch to a smaller model, or on a session
        reopened near its limit, from overflowing. An aborted last reply counts here, as in pi;
        nothing is retried, since no request has been refused yet.
        """
        settings, trigger = self._check(skip_aborted=False)
        if trigger is not None:
            await self._auto(settings, trigger.reason, will_retry=False)

    def _check(self, *, skip_aborted: bool) -> tuple[CompactionSettings, CompactionTrigger | None]:
        """The settings, and the reason to compact now (``None``: disabled, a read-only session, or no need)."""
        settings = self.settings()
        session, model = self._run.session, self._run.model
        if not settings.enabled or session.readonly:
            return settings, None
        trigger = compaction_trigger(
            session.raw_branch(),
            context_window=model.context_window,
            settings=settings,
            model=(model.provider, model.id),
            skip_aborted=skip_aborted,
        )
        return settings, trigger

    async def _auto(self, settings: CompactionSettings, reason: Literal["threshold", "overflow"], *, will_retry: bool) -> bool:
        """One automatic compaction with its start and end events; True when a compaction entry was written."""
        run = self._run
        run.emit(AutoCompactionStartEvent(reason=reason))
        self.compacting = True
        try:
            with run.abortable() as signal:
                outcome = await self._compact(settings, None, reason, signal)
        except (NothingToCompact, CompactionWouldGrow) as exc:
            # nothing to summarize, or a summary that would not make the context smaller: for a refused
            # request, name what makes the context too long (the entry to forget) where one entry does
            model = run.model
            advice = None if isinstance(exc, NothingToCompact) else f"Auto-compaction failed: {exc}"
            if reason == "overflow":
                size = diagnose(run.session.raw_branch())
                if size.dominated(model.context_window):
                    self.too_large = ContextTooLarge("entry", size, model.ref, model.context_window)
                    advice = str(self.too_large)
                elif isinstance(exc, NothingToCompact):
                    advice = nothing_to_compact_advice(model.ref, model.context_window, exc)
                else:
                    advice = f"Context overflow recovery failed: {exc}"
            run.emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=advice))
            return False
        except ContextTooLarge as exc:
            self.too_large = exc
            run.emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=str(exc)))
            return False
        except (SummaryAborted, CompactionCancelled):
            run.emit(AutoCompactionEndEvent(aborted=True, will_retry=False))
            return False
        except Exception as exc:  # noqa: BLE001 - reported on the event stream, the session is unchanged
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            run.emit(AutoCompactionEndEvent(aborted=False, will_retry=False, error_message=f"{prefix}: {exc}"))
            return False
        finally:
            self.compacting = False
        run.emit(AutoCompactionEndEvent(result=outcome.result.to_pi(), aborted=False, will_retry=will_retry))
        run.reload()
        return True
