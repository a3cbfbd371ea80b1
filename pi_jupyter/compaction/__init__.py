"""Compaction and branch summaries: token estimates, cut points, summaries (pi-design §4, §5).

Everything works on the current branch as root-first entry dicts (``Session.raw_branch()``)
and asks for summaries through a :data:`Summarize` function it is handed, so this layer
imports no provider and no agent.

Compacting a branch::

    prep = prepare_compaction(session.raw_branch(), CompactionSettings(), cwd=session.cwd)
    result = await compact(prep, summarize)          # summarize(SummaryRequest) -> AssistantMessage
    result.append_to(session)                        # the compaction entry; nothing is deleted
    # or in one step: await compact_session(session, summarize, custom_instructions=...)

Leaving a branch with a summary::

    outcome = await checkout_with_summary(session, target, summarize, context_window=200_000)

Modes. The default chooses what to keep as current pi (1.6) does, on the branch's projection
(context edits applied; system messages count towards the kept part but are never cut points nor
summarized, the compaction entry carries the replayed prompt as ``systemMessage``; see
:mod:`.projected`), and fixes pi's bugs listed in pi-design §10 that pi 1.6 still has;
``pi_compatible="1.6"`` is pi 1.6 exactly, ``pi_compatible=True`` pi 0.73.1 exactly: the parity
tests compare each with that pi itself. Deviation codes (``pi-10.12a`` ...) on the results say
which fix changed a result.

Token estimates: pi's chars/4 (:func:`estimate_tokens_pi16`, :func:`estimate_tokens_pi073`;
:func:`estimate_tokens_pi` is the shared part) chooses cut points, so the same entries are kept
as in pi; :func:`estimate_tokens` (calibrated by character class, images counted everywhere)
sizes contexts for the compaction decision and branch-summary budgets.
"""

from .branch import (
    BranchEntries,
    BranchPreparation,
    BranchSummaryResult,
    branch_summary_request,
    collect_branch_entries,
    generate_branch_summary,
    prepare_branch_entries,
)
from .checkout import CheckoutOutcome, CheckoutPlan, apply_checkout, checkout_with_summary, plan_checkout
from .compact import (
    CompactionOutcome,
    CompactionResult,
    compact,
    compact_session,
    compaction_requests,
    history_request,
    turn_prefix_request,
)
from .cut import CutPoint, find_cut_point, find_turn_start_index, find_valid_cut_points
from .errors import CompactionError, NothingToCompact, SummaryAborted, SummaryError
from .fileops import FileOps, compute_file_lists, extract_file_ops, format_file_operations
from .prepare import CompactionPreparation, prepare_compaction
from .request import Summarize, SummaryKind, SummaryRequest, response_text
from .serialize import conversation_text, serialize_conversation, to_llm_dicts
from .settings import DEFAULT_CONTEXT_WINDOW, BranchSummarySettings, CompactionSettings, settings_for, should_compact
from .shrink import CompactionWouldGrow, check_shrinks
from .tokens import (
    ContextEstimate,
    branch_context_tokens,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_image_tokens,
    estimate_text_tokens,
    estimate_tokens,
    estimate_tokens_pi,
    estimate_tokens_pi073,
    estimate_tokens_pi16,
)
from .trigger import CompactionTrigger, compaction_trigger, is_context_overflow

__all__ = [
    "BranchEntries",
    "BranchPreparation",
    "BranchSummaryResult",
    "BranchSummarySettings",
    "CheckoutOutcome",
    "CheckoutPlan",
    "CompactionError",
    "CompactionOutcome",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CompactionTrigger",
    "CompactionWouldGrow",
    "ContextEstimate",
    "CutPoint",
    "DEFAULT_CONTEXT_WINDOW",
    "FileOps",
    "NothingToCompact",
    "Summarize",
    "SummaryAborted",
    "SummaryError",
    "SummaryKind",
    "SummaryRequest",
    "apply_checkout",
    "branch_context_tokens",
    "branch_summary_request",
    "calculate_context_tokens",
    "check_shrinks",
    "checkout_with_summary",
    "collect_branch_entries",
    "compact",
    "compact_session",
    "compaction_requests",
    "compaction_trigger",
    "compute_file_lists",
    "conversation_text",
    "estimate_context_tokens",
    "estimate_image_tokens",
    "estimate_text_tokens",
    "estimate_tokens",
    "estimate_tokens_pi",
    "estimate_tokens_pi073",
    "estimate_tokens_pi16",
    "extract_file_ops",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "format_file_operations",
    "generate_branch_summary",
    "history_request",
    "is_context_overflow",
    "plan_checkout",
    "prepare_branch_entries",
    "prepare_compaction",
    "response_text",
    "serialize_conversation",
    "settings_for",
    "should_compact",
    "to_llm_dicts",
    "turn_prefix_request",
]
