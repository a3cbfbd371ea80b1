"""Preparing a compaction: what to summarize, what to keep (pi-design §4.4; pi 1.6, or pi 0.73.1 on request).

:func:`prepare_compaction` takes the current branch (root-first entry dicts, as
``Session.raw_branch()`` returns them) and decides, without calling any model, which
messages the summary must cover and which entry is the first one kept. Its cost is
proportional to the branch, never to the file.

Like pi (0.73.1 and 1.6), the range starts at the previous compaction's first kept entry, so what the
previous compaction kept is either summarized again (with the previous summary as the
starting point) or kept again: nothing it kept is lost (pi-design §10 item 10 was a bug of
older pi versions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..session.rebuild import context_from_path
from .cut import CutPoint, find_cut_point
from .entries import RawEntry, RawMessage, as_dicts, latest_compaction_index, message_for_compaction
from .errors import NothingToCompact
from .fileops import FILE_TOOL_NAMES, FileOps, extract_file_ops
from .projected import BranchProjection, find_projected_cut_point, projected_context_tokens, summarized
from .settings import CompactionSettings
from .tokens import Estimator, context_tokens, estimate_context_tokens, estimate_tokens, estimate_tokens_pi073, estimate_tokens_pi16

PI_073 = "0.73.1"
PI_16 = "1.6"

FIX_NOTHING_TO_SUMMARIZE = "pi-10.13a"
"""Deviation code: an empty summary input is "nothing to compact", not a request with an empty conversation."""

ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"


class CompactionPreparation(BaseModel):
    """Everything :func:`~pi_jupyter.compaction.compact` needs, decided without a model call.

    Message lists hold the raw message dicts (pi's shapes: custom messages and branch
    summaries appear as ``custom`` / ``branchSummary`` messages). Indices refer to the
    branch that was given. ``deviations`` lists the codes of the pi bugs whose fix changed
    this preparation (always empty with ``pi_compatible``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    first_kept_entry_id: str
    first_kept_index: int
    boundary_start: int
    cut: CutPoint
    messages_to_summarize: list[RawMessage]
    turn_prefix_messages: list[RawMessage]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None = None
    previous_details: Any = None
    file_ops: FileOps
    settings: CompactionSettings
    pi_compatible: bool = False
    deviations: tuple[str, ...] = ()


def prepare_compaction(
    branch: Sequence[Any],
    settings: CompactionSettings | None = None,
    *,
    pi_compatible: bool | str = False,
    estimator: Estimator | None = None,
    cwd: str | None = None,
) -> CompactionPreparation:
    """Decide what a compaction of ``branch`` summarizes and keeps (pi's ``prepareCompaction``).

    Raises :class:`~pi_jupyter.compaction.NothingToCompact` with pi's messages when the
    branch ends with a compaction (``"Already compacted"``) or when nothing would be
    summarized (``"Nothing to compact (session too small)"``; pi sends the model an empty
    conversation then, pi-design §10 item 13).

    ``estimator`` sizes messages for the cut; the default is pi's ``chars / 4`` in every mode
    (:func:`estimate_tokens_pi16`; :func:`estimate_tokens_pi073` for 0.73.1), so the same entries are kept as pi keeps.
    ``tokens_before`` is :func:`branch_context_tokens` with our estimator (pi: the last usage
    even if it predates the previous compaction, plus chars/4). ``cwd`` (the session's
    working directory) normalizes the file lists. ``pi_compatible=True`` (or ``"0.73.1"``) reproduces
    pi 0.73.1 exactly, bugs included (see :mod:`pi_jupyter.compaction.cut`); ``"1.6"`` is pi 1.6
    exactly. The default chooses as pi 1.6 does, on the branch's projection (context edits, system
    messages; see :mod:`pi_jupyter.compaction.projected`), with the fix of ``pi-10.12a``.
    """
    s = settings or CompactionSettings()
    entries: list[RawEntry] = as_dicts(branch)
    if entries and entries[-1].get("type") == "compaction":
        raise NothingToCompact("already_compacted", ALREADY_COMPACTED)
    if pi_compatible is not True and pi_compatible != PI_073:
        return _prepare_projected(entries, s, exact=pi_compatible == PI_16, estimator=estimator or estimate_tokens_pi16, cwd=cwd)
    pi_compatible = True  # from here on: pi 0.73.1 exactly
    prev_at = latest_compaction_index(entries)
    previous_summary: str | None = None
    previous_details: Any = None
    boundary_start = 0
    if prev_at >= 0:
        prev = entries[prev_at]
        previous_summary = prev.get("summary")
        if not prev.get("fromHook"):
            previous_details = prev.get("details")
        kept_id = prev.get("firstKeptEntryId")
        boundary_start = next((i for i, e in enumerate(entries) if e.get("id") == kept_id), prev_at + 1)
    boundary_end = len(entries)
    if pi_compatible:
        tokens_before = estimate_context_tokens(context_from_path(entries)["messages"], estimate_tokens_pi073).tokens
    else:
        tokens_before = context_tokens(entries, estimate_tokens).tokens
    if boundary_start >= boundary_end:
        raise NothingToCompact("too_small", NOTHING_TO_COMPACT)
    cut = find_cut_point(
        entries,
        boundary_start,
        boundary_end,
        s.keep_recent_tokens,
        pi_compatible=pi_compatible,
        estimator=estimator or estimate_tokens_pi073,
    )
    first = entries[cut.first_kept_index] if cut.first_kept_index < len(entries) else None
    first_id = first.get("id") if first is not None else None
    if not first_id:
        raise NothingToCompact("needs_migration", "the first kept entry has no id: migrate the session file to version 3")
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    ops = FileOps()
    ops.add_details(previous_details)
    to_summarize = _messages(entries, boundary_start, history_end, ops, pi_compatible, cwd)
    prefix = _messages(entries, cut.turn_start_index, cut.first_kept_index, ops, pi_compatible, cwd) if cut.is_split_turn else []
    deviations = list(cut.deviations)
    if not pi_compatible and not to_summarize and not prefix:
        raise NothingToCompact("too_small", NOTHING_TO_COMPACT)
    return CompactionPreparation.model_construct(
        first_kept_entry_id=first_id,
        first_kept_index=cut.first_kept_index,
        boundary_start=boundary_start,
        cut=cut,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        previous_details=previous_details,
        file_ops=ops,
        settings=s,
        pi_compatible=pi_compatible,
        deviations=tuple(deviations),
    )


def _messages(entries: list[RawEntry], start: int, end: int, ops: FileOps, pi_compatible: bool, cwd: str | None) -> list[RawMessage]:
    # one pass over the range: the messages, and the file operations of their tool calls
    out: list[RawMessage] = []
    add = out.append
    for i in range(start, end):
        entry = entries[i]
        if entry.get("type") == "message":
            message = entry.get("message")  # the common case, inlined: this loop runs over the whole range
        else:
            message = message_for_compaction(entry)
        if type(message) is dict:
            add(message)
            if message.get("role") == "assistant" and type(content := message.get("content")) is list:
                for block in content:
                    if type(block) is dict and block.get("type") == "toolCall":
                        name = block.get("name")
                        if type(name) is str and name.lower() in FILE_TOOL_NAMES:
                            extract_file_ops(message, ops, pi_compatible=pi_compatible, cwd=cwd)
                            break
    return out


def _prepare_projected(
    entries: list[RawEntry], s: CompactionSettings, *, exact: bool, estimator: Estimator, cwd: str | None
) -> CompactionPreparation:
    """pi 1.6's ``prepareCompaction`` (see :mod:`.projected`); indices are mapped back to ``entries``."""
    proj = BranchProjection(entries)
    previous_summary: str | None = None
    previous_details: Any = None
    boundary_start = 0
    if proj.compaction_head and proj.messages(0):  # the latest compaction leads the projection (unless edited away)
        prev = proj.entry(0)
        previous_summary = prev.get("summary")
        if not prev.get("fromHook"):
            previous_details = prev.get("details")
        boundary_start = 1
    if exact:
        tokens_before = projected_context_tokens(proj, entries, estimate_tokens_pi16)
    else:
        tokens_before = context_tokens(entries, estimate_tokens).tokens
    cut = find_projected_cut_point(proj, boundary_start, len(proj), s.keep_recent_tokens, exact=exact, estimator=estimator)
    first = proj.entry(cut.first_kept_index) if cut.first_kept_index < len(proj) else None
    first_id = first.get("id") if first is not None else None
    if not first_id:
        raise NothingToCompact("too_small", NOTHING_TO_COMPACT)
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    ops = FileOps()
    ops.add_details(previous_details)

    def file_ops(message: RawMessage) -> None:
        if _calls_file_tool(message):
            extract_file_ops(message, ops, pi_compatible=exact, cwd=cwd)

    to_summarize = summarized(proj, boundary_start, history_end, file_ops)
    prefix = summarized(proj, cut.turn_start_index, cut.first_kept_index, file_ops) if cut.is_split_turn else []
    if not to_summarize and not prefix:
        raise NothingToCompact("too_small", NOTHING_TO_COMPACT)

    def at(j: int) -> int:  # a projection index as an index of ``entries``
        return proj.positions[j] if 0 <= j < len(proj) else (len(entries) if j >= 0 else -1)

    branch_cut = CutPoint(
        first_kept_index=at(cut.first_kept_index),
        turn_start_index=at(cut.turn_start_index),
        is_split_turn=cut.is_split_turn,
        deviations=cut.deviations,
    )
    return CompactionPreparation.model_construct(
        first_kept_entry_id=first_id,
        first_kept_index=branch_cut.first_kept_index,
        boundary_start=at(boundary_start),
        cut=branch_cut,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        previous_details=previous_details,
        file_ops=ops,
        settings=s,
        pi_compatible=exact,
        deviations=tuple(cut.deviations),
    )


def _calls_file_tool(message: RawMessage) -> bool:
    content = message.get("content")
    if type(content) is not list:
        return False
    for block in content:
        if type(block) is dict and block.get("type") == "toolCall":
            name = block.get("name")
            if type(name) is str and name.lower() in FILE_TOOL_NAMES:
                return True
    return False
