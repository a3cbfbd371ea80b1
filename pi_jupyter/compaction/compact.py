"""Generating a compaction's summary through a summarize function (pi-design §4.6, §4.9).

:func:`compact` turns a :class:`~pi_jupyter.compaction.CompactionPreparation` into a
:class:`CompactionResult` (the ``compaction`` entry to append): one summary request, or two
in parallel for a split turn, built with pi's exact prompts, then pi's merge and file tags.

Fixed in the default mode (``pi_compatible`` preparations keep pi's behaviour):

* pi-design §10 item 11: a split turn with no history before it got ``No prior history.``
  and *dropped the previous summary*; here the previous summary is carried over.
* §10 item 13: a summary that failed, was cut off (``length``), aborted or empty is an error
  and nothing is written; a conversation that serializes to nothing is never sent.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..session.usage import combine_usage, response_usage
from .errors import NothingToCompact
from .fileops import format_file_operations, no_file_details, strip_file_operations
from .prepare import FIX_NOTHING_TO_SUMMARIZE, NOTHING_TO_COMPACT, CompactionPreparation, prepare_compaction
from .prompts import (
    ADDITIONAL_FOCUS,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    SUMMARY_MAX_TOKENS_FACTOR,
    TURN_PREFIX_MAX_TOKENS_FACTOR,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from .request import Summarize, SummaryRequest, response_text
from .serialize import conversation_text
from .settings import CompactionSettings
from .shrink import check_shrinks

FIX_KEEP_PREVIOUS_SUMMARY = "pi-10.11"
"""Deviation code: a split turn with empty history carries the previous summary over."""

FIX_STRICT_SUMMARY = "pi-10.13b"
"""Deviation code (documentation only; it changes outcomes by raising): failed, truncated,
aborted or empty summaries are errors."""


class CompactionResult(BaseModel):
    """A finished compaction: what the ``compaction`` entry holds (pi's ``CompactionResult``).

    ``details`` is ``{"readFiles": [...], "modifiedFiles": [...]}``. ``deviations`` lists
    the codes of pi bugs whose fix changed the result (not stored in the entry).
    """

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, list[str]] = Field(default_factory=no_file_details)
    deviations: tuple[str, ...] = ()
    usage: dict[str, Any] | None = None
    """What the summary requests cost (pi 1.x stores it on the entry); not part of :meth:`to_pi`."""

    def append_to(self, session: Any, *, check: bool = True) -> str:
        """Append this result to ``session`` as a ``compaction`` entry (``fromHook: false``, as pi); returns its id.

        Raises :class:`~pi_jupyter.compaction.shrink.CompactionWouldGrow` (nothing written) when the
        summary would not make the context smaller (see :mod:`pi_jupyter.compaction.shrink`);
        ``check=False`` appends it anyway, as pi does (the ``pi_compatible`` modes).
        """
        if check:
            check_shrinks(session.raw_branch(), self.summary, self.first_kept_entry_id)
        return session.append_compaction(
            self.summary, self.first_kept_entry_id, self.tokens_before, self.details, from_hook=False, usage=self.usage
        )

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        # what ``%pi compact`` shows (the value stays the result): one line, not the summary's whole text
        p.text(
            f"compacted: {self.tokens_before:,} tokens before; kept from {self.first_kept_entry_id}; "
            f"the summary is {len(self.summary):,} characters (.summary holds it)"
        )

    def to_pi(self) -> dict[str, Any]:
        """pi's JSON shape: ``{summary, firstKeptEntryId, tokensBefore, details}``."""
        return {
            "summary": self.summary,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "details": self.details,
        }


def history_request(
    messages: Sequence[Any],
    *,
    reserve_tokens: int,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
    conversation: str | None = None,
) -> SummaryRequest:
    """The request pi's ``generateSummary`` sends: the conversation, the previous summary if any, the instructions.

    ``conversation`` is the already serialized text (to avoid serializing twice).
    """
    instructions = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        instructions = f"{instructions}{ADDITIONAL_FOCUS}{custom_instructions}"
    text = conversation if conversation is not None else conversation_text(messages)
    prompt = f"<conversation>\n{text}\n</conversation>\n\n"
    if previous_summary:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    prompt += instructions
    return SummaryRequest(
        kind="update" if previous_summary else "history",
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt_text=prompt,
        max_tokens=int(SUMMARY_MAX_TOKENS_FACTOR * reserve_tokens),
        reasoning=True,
    )


def turn_prefix_request(messages: Sequence[Any], *, reserve_tokens: int, conversation: str | None = None) -> SummaryRequest:
    """The request pi's ``generateTurnPrefixSummary`` sends for the early part of a split turn."""
    text = conversation if conversation is not None else conversation_text(messages)
    return SummaryRequest(
        kind="turn_prefix",
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt_text=f"<conversation>\n{text}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}",
        max_tokens=int(TURN_PREFIX_MAX_TOKENS_FACTOR * reserve_tokens),
        reasoning=True,
    )


def compaction_requests(preparation: CompactionPreparation, custom_instructions: str | None = None) -> list[SummaryRequest]:
    """The summary requests :func:`compact` will send for ``preparation`` (none when a summary is carried over)."""
    plan = _plan(preparation, custom_instructions)
    return [r for r in (plan.history, plan.prefix) if r is not None]


class _Plan(BaseModel):
    history: SummaryRequest | None = None
    history_text: str | None = None  # a fixed history summary (no request)
    prefix: SummaryRequest | None = None
    deviations: tuple[str, ...] = ()


def _plan(prep: CompactionPreparation, custom_instructions: str | None) -> _Plan:
    reserve = prep.settings.reserve_tokens
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)
    if prep.pi_compatible:
        prefix = turn_prefix_request(prep.turn_prefix_messages, reserve_tokens=reserve) if split else None
        if split and not prep.messages_to_summarize:
            return _Plan(history_text=NO_PRIOR_HISTORY, prefix=prefix)
        history = history_request(
            prep.messages_to_summarize,
            reserve_tokens=reserve,
            custom_instructions=custom_instructions,
            previous_summary=prep.previous_summary,
        )
        return _Plan(history=history, prefix=prefix)
    deviations = list(prep.deviations)
    history_conv = conversation_text(prep.messages_to_summarize)
    prefix_conv = conversation_text(prep.turn_prefix_messages) if split else ""
    if not history_conv and not prefix_conv:
        raise NothingToCompact("too_small", f"{NOTHING_TO_COMPACT}: the messages before the kept part have no text")
    if prep.messages_to_summarize and not history_conv:
        deviations.append(FIX_NOTHING_TO_SUMMARIZE)
    prefix = turn_prefix_request((), reserve_tokens=reserve, conversation=prefix_conv) if prefix_conv else None
    if history_conv:
        history = history_request(
            (),
            reserve_tokens=reserve,
            custom_instructions=custom_instructions,
            previous_summary=prep.previous_summary,
            conversation=history_conv,
        )
        return _Plan(history=history, prefix=prefix, deviations=tuple(deviations))
    if prep.previous_summary:
        # nothing new before the split turn: the previous summary is still the history (pi drops it)
        deviations.append(FIX_KEEP_PREVIOUS_SUMMARY)
        return _Plan(history_text=strip_file_operations(prep.previous_summary), prefix=prefix, deviations=tuple(deviations))
    return _Plan(history_text=NO_PRIOR_HISTORY, prefix=prefix, deviations=tuple(deviations))


async def compact(preparation: CompactionPreparation, summarize: Summarize, *, custom_instructions: str | None = None) -> CompactionResult:
    """Summarize what ``preparation`` says and return the ``compaction`` entry to append (pi's ``compact``).

    ``summarize`` is called once, or twice concurrently for a split turn (the turn's early
    part gets its own, smaller summary; pi's merge text joins them). If one request fails the
    other is cancelled. The read and modified file lists are appended to the summary with
    pi's tags. Raises :class:`~pi_jupyter.compaction.SummaryError` (and, in the default mode,
    :class:`~pi_jupyter.compaction.SummaryAborted` or
    :class:`~pi_jupyter.compaction.NothingToCompact`); nothing is written then.
    """
    plan = _plan(preparation, custom_instructions)
    strict = not preparation.pi_compatible
    jobs: list[Awaitable[str]] = []
    spent: list[dict[str, Any] | None] = []
    if plan.history is not None:
        jobs.append(_ask(summarize, plan.history, "Summarization", strict, spent))
    if plan.prefix is not None:
        jobs.append(_ask(summarize, plan.prefix, "Turn prefix summarization", strict, spent))
    texts = await _gather(jobs)
    history = (plan.history_text or "") if plan.history is None else texts.pop(0)  # a plan has one or the other
    summary = history if plan.prefix is None else f"{history}{SPLIT_TURN_SEPARATOR}{texts[0]}"
    read, modified = preparation.file_ops.lists()
    summary += format_file_operations(read, modified)
    return CompactionResult(
        summary=summary or "",
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={"readFiles": read, "modifiedFiles": modified},
        deviations=tuple(dict.fromkeys(plan.deviations)),
        usage=functools.reduce(combine_usage, spent, None),
    )


async def _ask(summarize: Summarize, request: SummaryRequest, what: str, strict: bool, spent: list[Any]) -> str:
    response = await summarize(request)
    spent.append(response_usage(response))
    return response_text(response, what=what, strict=strict, max_tokens=request.max_tokens)


async def _gather(jobs: list[Awaitable[str]]) -> list[str]:
    if len(jobs) <= 1:
        return [await job for job in jobs]
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class CompactionOutcome(BaseModel):
    """What :func:`compact_session` did: the entry it appended, the result, and the preparation."""

    model_config = {"arbitrary_types_allowed": True}

    entry_id: str
    result: CompactionResult
    preparation: CompactionPreparation


async def compact_session(
    session: Any,
    summarize: Summarize,
    *,
    settings: CompactionSettings | None = None,
    keep_recent_tokens: int | None = None,
    custom_instructions: str | None = None,
    pi_compatible: bool = False,
) -> CompactionOutcome:
    """Compact ``session``'s current branch and append the ``compaction`` entry (a manual ``/compact``).

    ``keep_recent_tokens`` overrides the settings' budget for this compaction. Raises
    :class:`~pi_jupyter.compaction.NothingToCompact` (with pi's messages), a summary error, or
    (unless ``pi_compatible``) :class:`~pi_jupyter.compaction.CompactionWouldGrow`; the session is
    unchanged then. Every original entry stays in the file: the rebuilt
    context becomes the summary plus the kept messages.
    """
    s = settings or CompactionSettings()
    if keep_recent_tokens is not None:
        s = s.model_copy(update={"keep_recent_tokens": keep_recent_tokens})
    prep = prepare_compaction(session.raw_branch(), s, pi_compatible=pi_compatible, cwd=getattr(session, "cwd", None) or None)
    result = await compact(prep, summarize, custom_instructions=custom_instructions)
    # pi writes a compaction that does not shrink the context; the pi-compatible modes do as pi does
    return CompactionOutcome(entry_id=result.append_to(session, check=not pi_compatible), result=result, preparation=prep)
