"""Where to cut a branch: which recent entries a compaction keeps (pi-design §4.5).

The cut walks back from the newest entry adding up message sizes until ``keep_recent_tokens``
is reached, then moves to the nearest entry a context may start with (never a tool result,
which must follow its tool call). Cutting inside a turn (after the user's request, before
the turn's last reply) is a *split turn*: the turn's early part gets its own summary.

The default mode fixes pi-design §10 item 12; ``pi_compatible=True`` is pi 0.73.1 exactly:

* pi absorbs settings, label and other non-message entries in front of the cut, and only
  then asks "is the cut a user message?". A clean cut at a user message that follows a
  ``model_change`` or ``thinking_level_change`` is then taken for a split turn, and the
  whole previous turn becomes a "turn prefix". Here the turn is judged at the original cut.
* When the budget is crossed at a point after which no entry may start a context (a huge
  tool result at the end), pi falls back to keeping everything. Here the nearest valid cut
  before that point is taken, so the history before it can still be summarized.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from .entries import RawEntry, is_turn_start, role_of
from .tokens import Estimator, estimate_tokens_pi

FIX_SPLIT_TURN_TEST = "pi-10.12a"
"""Deviation code: the split-turn test is made at the cut, not after absorbing settings entries."""

FIX_CUT_FALLBACK = "pi-10.12b"
"""Deviation code: no valid cut after the budget crossing -> the nearest one before it (pi keeps everything)."""

_CUT_ROLES = frozenset({"bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant"})


class CutPoint(BaseModel):
    """The result of :func:`find_cut_point` (indices into the entries given).

    ``first_kept_index``: the first entry kept as it is. ``turn_start_index``: for a split
    turn, where the cut turn begins (else -1). ``deviations``: codes of the pi bugs whose fix
    changed this result (empty in ``pi_compatible`` mode and whenever pi would agree).
    """

    first_kept_index: int
    turn_start_index: int = -1
    is_split_turn: bool = False
    deviations: tuple[str, ...] = ()


def is_cut_point(entry: RawEntry) -> bool:
    """True for an entry a kept region may begin at (see :func:`find_valid_cut_points`)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return type(message) is dict and message.get("role") in _CUT_ROLES
    return kind == "branch_summary" or kind == "custom_message"


def find_valid_cut_points(entries: Sequence[RawEntry], start: int, end: int) -> list[int]:
    """Indices in ``[start, end)`` a kept region may begin at: user, assistant, bash and custom
    messages, summaries, ``custom_message`` and ``branch_summary`` entries (never tool results)."""
    return [i for i in range(start, end) if is_cut_point(entries[i])]


def find_turn_start_index(entries: Sequence[RawEntry], index: int, start: int) -> int:
    """The start of the turn containing ``entries[index]``: the nearest user or bash message,
    custom message or branch summary at or before ``index`` (not before ``start``); -1 if none."""
    for i in range(index, start - 1, -1):
        if is_turn_start(entries[i]):
            return i
    return -1


def find_cut_point(
    entries: Sequence[RawEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    *,
    pi_compatible: bool = False,
    estimator: Estimator = estimate_tokens_pi,
) -> CutPoint:
    """Choose the first kept entry in ``entries[start:end]`` so about ``keep_recent_tokens`` stay.

    pi's ``findCutPoint``; see the module doc for the two fixes of the default mode. Only
    ``message`` entries count towards the budget, as in pi.
    """
    # the valid cut points are looked for only near the budget crossing and at the start, so
    # the cost is the kept part of the branch, not the whole branch (pi lists them all)
    first = _next_point(entries, start, end)
    if first is None:
        return CutPoint(first_kept_index=start)
    deviations: list[str] = []
    cut = first
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        accumulated += estimator(message) if isinstance(message, dict) else 0
        if accumulated >= keep_recent_tokens:
            after = _next_point(entries, i, end)
            if after is not None:
                cut = after
            elif not pi_compatible:
                cut = _previous_point(entries, i, first)
                if cut != first:
                    deviations.append(FIX_CUT_FALLBACK)
            break
    original = cut
    while cut > start:
        kind = entries[cut - 1].get("type")
        if kind in ("compaction", "message"):
            break
        cut -= 1  # keep the settings, labels and private entries that lead up to the cut
    if pi_compatible:
        is_user = role_of(entries[cut]) == "user"
        turn_start = -1 if is_user else find_turn_start_index(entries, cut, start)
        return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=not is_user and turn_start != -1)
    if is_turn_start(entries[original]):
        if cut != original and find_turn_start_index(entries, cut, start) != -1:
            deviations.append(FIX_SPLIT_TURN_TEST)  # pi would call the previous turn a split-turn prefix
        return CutPoint(first_kept_index=cut, deviations=tuple(deviations))
    turn_start = find_turn_start_index(entries, original, start)
    return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=turn_start != -1, deviations=tuple(deviations))


def _next_point(entries: Sequence[RawEntry], index: int, end: int) -> int | None:
    """The first cut point at or after ``index`` (before ``end``), or ``None``."""
    for i in range(index, end):
        if is_cut_point(entries[i]):
            return i
    return None


def _previous_point(entries: Sequence[RawEntry], index: int, first: int) -> int:
    """The last cut point before ``index``: ``first`` (the range's first cut point) if none is after it."""
    for i in range(index - 1, first, -1):
        if is_cut_point(entries[i]):
            return i
    return first
