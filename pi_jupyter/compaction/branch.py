"""Branch summaries: what was done on a branch that is being left (pi-design §5).

Moving the leaf to another entry (``Session.checkout``) leaves a branch behind. With a
summary, the entries from the old leaf back to the common ancestor are summarized (newest
first, as many as fit the model's window), and the summary is attached where the
conversation goes on, so the model knows what was tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..session.index import EntryIndex
from ..session.projection import apply_edit
from ..session.usage import response_usage
from .entries import RawEntry, RawMessage, as_dicts, message_for_branch_summary
from .errors import SummaryAborted, SummaryError
from .fileops import FileOps, extract_file_ops, format_file_operations, no_file_details
from .prompts import (
    ADDITIONAL_FOCUS,
    BRANCH_SUMMARY_MAX_TOKENS,
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    NO_CONTENT_TO_SUMMARIZE,
    NO_SUMMARY_GENERATED,
    SUMMARIZATION_SYSTEM_PROMPT,
)
from .request import Summarize, SummaryRequest, response_text
from .serialize import conversation_text
from .settings import DEFAULT_CONTEXT_WINDOW, BranchSummarySettings
from .tokens import Estimator, estimate_tokens, estimate_tokens_pi073

FIX_ALL_FILE_OPS = "pi-branch-fileops"
"""Deviation code: files touched by messages that did not fit the budget are still listed (pi drops them)."""


class BranchEntries(BaseModel):
    """The entries of a branch being left, oldest first, and the common ancestor (``None``: none)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    entries: list[RawEntry]
    common_ancestor_id: str | None = None


def tree_access(source: Any) -> tuple[Callable[[str], list[RawEntry]], Callable[[str], RawEntry | None]]:
    """``(path_of, entry_of)`` for a ``Session`` or an ``EntryIndex``: root-first paths and entries by exact id."""
    if isinstance(source, EntryIndex):
        return source.path, source.by_id.get
    if hasattr(source, "raw_branch") and hasattr(source, "raw_entry"):

        def path_of(eid: str) -> list[RawEntry]:
            return source.raw_branch(eid) if eid in source else []

        def entry_of(eid: str) -> RawEntry | None:
            return source.raw_entry(eid) if eid in source else None

        return path_of, entry_of
    raise TypeError(f"expected a Session or an EntryIndex, got {type(source).__name__}")


def collect_branch_entries(source: Any, old_leaf: str | None, target: str | None) -> BranchEntries:
    """pi's ``collectEntriesForBranchSummary``: the entries after the common ancestor on the old branch.

    The common ancestor is the deepest entry on both the old leaf's path and the target's
    path (the target itself if it lies on the old path). A target that descends from the old
    leaf leaves nothing behind. ``target=None`` (before the first entry) leaves the whole old
    branch. O(depth), with pi's cycle guard replaced by a clear error (``CycleError``).
    """
    if not old_leaf:
        return BranchEntries(entries=[], common_ancestor_id=None)
    path_of, _ = tree_access(source)
    old_path = path_of(old_leaf)
    positions = {e.get("id"): i for i, e in enumerate(old_path)}
    ancestor: str | None = None
    if target is not None:
        for entry in reversed(path_of(target)):
            if entry.get("id") in positions:
                ancestor = entry["id"]
                break
    start = positions[ancestor] + 1 if ancestor is not None else 0
    return BranchEntries.model_construct(entries=old_path[start:], common_ancestor_id=ancestor)


class BranchPreparation(BaseModel):
    """What a branch summary covers: messages oldest first, the files touched, and their estimated size."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: list[RawMessage]
    file_ops: FileOps
    total_tokens: int = 0
    deviations: tuple[str, ...] = ()


def prepare_branch_entries(
    entries: Sequence[Any],
    token_budget: int = 0,
    *,
    pi_compatible: bool = False,
    estimator: Estimator | None = None,
    cwd: str | None = None,
) -> BranchPreparation:
    """pi's ``prepareBranchEntries``: the newest messages of ``entries`` that fit ``token_budget`` (0: no limit).

    Tool results are skipped (the tool call says what was done). When the next message does
    not fit, the walk stops, except that an earlier compaction or branch summary is still
    taken while the total is under 90% of the budget. File lists start from earlier pi
    branch summaries' ``details``. Sizes use :func:`estimate_tokens` by default, since they
    must fit a real window (``pi_compatible``: pi's chars/4); the default also lists files
    touched by messages that did not fit, which pi leaves out.
    """
    items = as_dicts(entries)
    size = estimator or (estimate_tokens_pi073 if pi_compatible else estimate_tokens)
    ops = FileOps()
    for entry in items:
        if entry.get("type") == "branch_summary" and not entry.get("fromHook"):
            ops.add_details(entry.get("details"))
    # pi 1.6: the latest context edit of an entry applies (a dropped entry is not summarized); pi 0.73.1 knew none
    edits = {} if pi_compatible else {e["targetId"]: e for e in items if e.get("type") == "context_edit" and type(e.get("targetId")) is str}
    messages: list[RawMessage] = []
    total = 0
    stopped_at = -1
    for i in range(len(items) - 1, -1, -1):
        entry = items[i]
        message = _edited(entry, edits) if edits else message_for_branch_summary(entry)
        if not isinstance(message, dict):
            continue
        extract_file_ops(message, ops, pi_compatible=pi_compatible, cwd=cwd)
        tokens = size(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.append(message)
                total += tokens
            stopped_at = i
            break
        messages.append(message)
        total += tokens
    messages.reverse()
    deviations: tuple[str, ...] = ()
    if not pi_compatible and stopped_at > 0:
        before = (len(ops.read), len(ops.written), len(ops.edited))
        for entry in items[:stopped_at]:
            extract_file_ops(_edited(entry, edits) if edits else message_for_branch_summary(entry), ops, cwd=cwd)
        if before != (len(ops.read), len(ops.written), len(ops.edited)):
            deviations = (FIX_ALL_FILE_OPS,)
    return BranchPreparation.model_construct(messages=messages, file_ops=ops, total_tokens=total, deviations=deviations)


def _edited(entry: RawEntry, edits: dict[str, RawEntry]) -> RawMessage | None:
    """What a message or custom message entry gives a branch summary after its latest edit (pi 1.6's ``getMessageFromEntry``)."""
    message = message_for_branch_summary(entry)
    entry_id = entry.get("id")
    edit = edits.get(entry_id) if isinstance(entry_id, str) else None
    if edit is None or message is None or entry.get("type") not in ("message", "custom_message"):
        return message
    edited = apply_edit([message], edit)
    return edited[0] if edited else None


def branch_summary_request(
    messages: Sequence[Any],
    *,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    conversation: str | None = None,
) -> SummaryRequest:
    """The request pi's ``generateBranchSummary`` sends (2048 output tokens, no reasoning).

    ``custom_instructions`` are added as "Additional focus", or replace pi's instructions
    with ``replace_instructions``.
    """
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}{ADDITIONAL_FOCUS}{custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    text = conversation if conversation is not None else conversation_text(messages)
    return SummaryRequest(
        kind="branch",
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt_text=f"<conversation>\n{text}\n</conversation>\n\n{instructions}",
        max_tokens=BRANCH_SUMMARY_MAX_TOKENS,
        reasoning=False,
    )


class BranchSummaryResult(BaseModel):
    """A finished branch summary: the ``branch_summary`` entry's ``summary`` and ``details``."""

    summary: str
    details: dict[str, list[str]] = Field(default_factory=no_file_details)
    deviations: tuple[str, ...] = ()
    usage: dict[str, Any] | None = None
    """What the summary request cost (pi 1.x stores it on the ``branch_summary`` entry)."""


async def generate_branch_summary(
    entries: Sequence[Any],
    summarize: Summarize,
    *,
    context_window: int | None = None,
    settings: BranchSummarySettings | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    pi_compatible: bool = False,
    cwd: str | None = None,
) -> BranchSummaryResult | None:
    """Summarize the entries of a branch being left (pi's ``generateBranchSummary``).

    The messages that fit ``context_window - reserve_tokens`` are serialized and sent with
    pi's prompt (in the default mode the reserve is fitted to small windows,
    :meth:`BranchSummarySettings.fit_to`); the summary is pi's preamble, the text, and the
    file tags. Returns ``None`` when there is nothing to summarize (pi stores the text
    ``No content to summarize`` instead, and does so with ``pi_compatible``). An error reply raises
    :class:`~pi_jupyter.compaction.SummaryError`, an aborted one
    :class:`~pi_jupyter.compaction.SummaryAborted`; in the default mode a cut-off or empty
    summary is an error too (pi stores the preamble alone).
    """
    s = settings or BranchSummarySettings()
    window = context_window or DEFAULT_CONTEXT_WINDOW
    if not pi_compatible:
        s = s.fit_to(window)  # pi: a window of 16k or less means no budget at all (the request overflows)
    budget = window - s.reserve_tokens
    prep = prepare_branch_entries(entries, budget, pi_compatible=pi_compatible, cwd=cwd)
    read, modified = prep.file_ops.lists()
    details = {"readFiles": read, "modifiedFiles": modified}
    if not prep.messages:
        if pi_compatible:
            return BranchSummaryResult(summary=NO_CONTENT_TO_SUMMARIZE, details={"readFiles": [], "modifiedFiles": []})
        return None
    conversation = conversation_text(prep.messages)
    if not conversation and not pi_compatible:
        return None
    request = branch_summary_request(
        (), custom_instructions=custom_instructions, replace_instructions=replace_instructions, conversation=conversation
    )
    response = await summarize(request)
    data = response.to_dict() if hasattr(response, "to_dict") else response
    stop = data.get("stopReason") if isinstance(data, dict) else None
    if stop == "aborted":
        raise SummaryAborted("Branch summarization was aborted")
    if stop == "error":
        raise SummaryError(data.get("errorMessage") or "Summarization failed")
    text = response_text(data, what="Branch summarization", strict=not pi_compatible, max_tokens=request.max_tokens)
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read, modified)
    return BranchSummaryResult(
        summary=summary or NO_SUMMARY_GENERATED, details=details, deviations=prep.deviations, usage=response_usage(data)
    )
