"""Preparing a compaction as pi 1.6 does: on the branch's projection (context edits and system messages).

pi 1.6's ``prepareCompaction`` chooses the cut on ``buildSessionProjection`` entries: the
latest compaction, the entries it keeps (without their system messages: its snapshot stands for
them), everything after it; each entry with what it gives the model after context edits.
So an entry removed by an edit is no cut point, a system message counts towards the kept budget
(its text and tool declarations) but is never a cut point nor summarized (the next compaction
entry carries the replayed prompt as ``systemMessage``), and custom messages and branch
summaries count too. A suffix holding only an omitted (edited away) assistant attempt moves the
cut past it.

The default mode keeps one fix over pi 1.6 (``pi-10.12a``: a clean cut at a turn's start that
follows settings entries is not a split turn); ``exact=True`` is pi 1.6 as it is.
"""

from __future__ import annotations

from typing import Any

from ..session.index import K_OTHER, KINDS
from ..session.projection import entry_messages, projected_entries
from .cut import FIX_SPLIT_TURN_TEST, CutPoint
from .tokens import Estimator, estimate_tokens_pi16

Projected = list[tuple[dict[str, Any], list[dict[str, Any]]]]

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


def _is_compaction(item: tuple[dict[str, Any], list[Any]]) -> bool:
    return item[0].get("type") == "compaction"


def _has_role(messages: list[Any], roles: frozenset[str]) -> bool:
    return any(type(m) is dict and m.get("role") in roles for m in messages)


def _turn_start(item: tuple[dict[str, Any], list[Any]]) -> bool:
    return not _is_compaction(item) and _has_role(item[1], _TURN_ROLES)


def _turn_start_index(proj: Projected, index: int, start: int) -> int:
    for i in range(index, start - 1, -1):
        if _turn_start(proj[i]):
            return i
    return -1


def _is_assistant(entry: dict[str, Any]) -> bool:
    message = entry.get("message") if entry.get("type") == "message" else None
    return type(message) is dict and message.get("role") == "assistant"


def _is_system(message: Any) -> bool:
    return type(message) is dict and message.get("role") == "system"


def _intrinsically_visible(entry: dict[str, Any]) -> bool:
    # what the entry gives without its edit (pi's sessionEntryToContextMessages)
    kind = entry.get("type")
    if kind == "context_edit":
        return False
    return bool(entry_messages(entry, KINDS.get(kind, K_OTHER) if type(kind) is str else K_OTHER, True))


def find_projected_cut_point(
    proj: Projected, start: int, end: int, keep_recent_tokens: int, *, exact: bool = False, estimator: Estimator = estimate_tokens_pi16
) -> CutPoint:
    """pi 1.6's ``findProjectedCutPoint`` on projected entries (indices into ``proj``)."""
    points = [i for i in range(start, end) if not _is_compaction(proj[i]) and _has_role(proj[i][1], _CUT_ROLES)]
    if not points:
        return CutPoint(first_kept_index=start)
    accumulated = 0
    exceeded = False
    cut = points[0]
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimator(m) for m in proj[i][1] if type(m) is dict)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            cut = next((c for c in points if c >= i), points[-1])
            break
    if exceeded and _recovery_suffix(proj[cut + 1 : end]):
        cut += 1
    original = cut
    while cut > start:
        previous = proj[cut - 1]
        if _is_compaction(previous) or previous[1]:
            break
        cut -= 1  # settings, labels and edits that lead up to the cut are kept with it
    if exact or cut >= end:
        starts = cut < end and _turn_start(proj[cut])
        turn_start = -1 if starts else _turn_start_index(proj, min(cut, end - 1), start)
        return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=not starts and turn_start != -1)
    if _turn_start(proj[original]):
        deviations = (FIX_SPLIT_TURN_TEST,) if cut != original and _turn_start_index(proj, cut, start) != -1 else ()
        return CutPoint(first_kept_index=cut, deviations=deviations)
    turn_start = _turn_start_index(proj, original, start)
    return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=turn_start != -1)


def _recovery_suffix(suffix: Projected) -> bool:
    """A closed suffix of entries the edits omitted, with an omitted assistant attempt (pi 1.6's recovery rule)."""

    def omitted(item: tuple[dict[str, Any], list[Any]]) -> bool:
        return _intrinsically_visible(item[0]) and not item[1]

    omitted_ids = {item[0].get("id") for item in suffix if omitted(item)}
    for entry, _ in suffix:
        if entry.get("type") == "context_edit" and entry.get("replacement") is not None and entry.get("targetId") not in omitted_ids:
            return False
    has_attempt = any(
        entry.get("type") == "message"
        and type(entry.get("message")) is dict
        and entry["message"].get("role") == "assistant"
        and omitted((entry, msgs))
        for entry, msgs in suffix
    )
    return has_attempt and all(not _is_compaction(item) and (not _intrinsically_visible(item[0]) or omitted(item)) for item in suffix)


def projected_context_tokens(proj: Projected, branch: list[dict[str, Any]], estimator: Estimator = estimate_tokens_pi16) -> int:
    """pi 1.6's ``estimateProjectedContextTokens``: the last usage, unless a later edit or compaction made it stale."""
    from ..messages.system import current_system_message
    from .tokens import estimate_context_tokens

    messages = [m for _, msgs in proj for m in msgs]
    estimate = estimate_context_tokens([m for m in messages if type(m) is dict], estimator, skip_zero=True)
    if estimate.last_usage_index is not None:
        seen = 0
        usage_entry = None
        for entry, msgs in proj:
            if estimate.last_usage_index < seen + len(msgs):
                usage_entry = entry.get("id")
                break
            seen += len(msgs)
        at = next((i for i, e in enumerate(branch) if e.get("id") == usage_entry), -1) if usage_entry else -1
        stale = next((i for i in range(len(branch) - 1, -1, -1) if branch[i].get("type") in ("context_edit", "compaction")), -1)
        if at > stale:
            return estimate.tokens
    head = current_system_message(messages)
    tokens = estimator(head) if head is not None else 0
    return tokens + sum(estimator(m) for m in messages if not _is_system(m))


def summarized(proj: Projected, start: int, end: int) -> list[dict[str, Any]]:
    """The messages of ``proj[start:end]`` a summary covers: no compaction, no system messages (prompt state)."""
    return [
        m for item in proj[start:end] if not _is_compaction(item) for m in item[1] if not (type(m) is dict and m.get("role") == "system")
    ]


__all__ = ["find_projected_cut_point", "projected_context_tokens", "projected_entries", "summarized"]
