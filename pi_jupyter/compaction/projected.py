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

from ..session.index import K_COMPACTION, K_OTHER, KINDS
from ..session.projection import BranchProjection, entry_messages
from .cut import FIX_SPLIT_TURN_TEST, CutPoint
from .tokens import Estimator, estimate_tokens_pi16

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


def _has_role(messages: list[Any], roles: frozenset[str]) -> bool:
    return any(type(m) is dict and m.get("role") in roles for m in messages)


def _is_point(proj: BranchProjection, j: int) -> bool:
    return proj.kind(j) != K_COMPACTION and _has_role(proj.messages(j), _CUT_ROLES)


def _turn_start(proj: BranchProjection, j: int) -> bool:
    return proj.kind(j) != K_COMPACTION and _has_role(proj.messages(j), _TURN_ROLES)


def _turn_start_index(proj: BranchProjection, index: int, start: int) -> int:
    for j in range(index, start - 1, -1):
        if _turn_start(proj, j):
            return j
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
    proj: BranchProjection,
    start: int,
    end: int,
    keep_recent_tokens: int,
    *,
    exact: bool = False,
    estimator: Estimator = estimate_tokens_pi16,
) -> CutPoint:
    """pi 1.6's ``findProjectedCutPoint`` on a projection (indices into it).

    pi lists every cut point first; here they are looked for only at the start, near the budget
    crossing and before it, so the cost is the kept part of the branch.
    """
    first = next((j for j in range(start, end) if _is_point(proj, j)), None)
    if first is None:
        return CutPoint(first_kept_index=start)
    accumulated = 0
    exceeded = False
    cut = first
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimator(m) for m in proj.messages(i) if type(m) is dict)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            after = next((j for j in range(i, end) if _is_point(proj, j)), None)
            cut = after if after is not None else next(j for j in range(i - 1, start - 1, -1) if _is_point(proj, j))
            break
    if exceeded and _recovery_suffix(proj, cut + 1, end):
        cut += 1
    original = cut
    while cut > start:
        if proj.kind(cut - 1) == K_COMPACTION or proj.messages(cut - 1):
            break
        cut -= 1  # settings, labels and edits that lead up to the cut are kept with it
    if exact:
        starts = _turn_start(proj, cut)
        turn_start = -1 if starts else _turn_start_index(proj, cut, start)
        return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=not starts and turn_start != -1)
    if _turn_start(proj, original):
        deviations = (FIX_SPLIT_TURN_TEST,) if cut != original and _turn_start_index(proj, cut, start) != -1 else ()
        return CutPoint(first_kept_index=cut, deviations=deviations)
    turn_start = _turn_start_index(proj, original, start)
    return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=turn_start != -1)


def _recovery_suffix(proj: BranchProjection, start: int, end: int) -> bool:
    """A closed suffix of entries the edits omitted, with an omitted assistant attempt (pi 1.6's recovery rule)."""
    if not proj.edits:
        return False  # nothing is omitted without an edit

    def omitted(j: int) -> bool:
        return _intrinsically_visible(proj.entry(j)) and not proj.messages(j)

    suffix = range(start, end)
    omitted_ids = {proj.entry(j).get("id") for j in suffix if omitted(j)}
    for j in suffix:
        entry = proj.entry(j)
        if entry.get("type") == "context_edit" and entry.get("replacement") is not None and entry.get("targetId") not in omitted_ids:
            return False
    if not any(_is_assistant(proj.entry(j)) and omitted(j) for j in suffix):
        return False
    return all(proj.kind(j) != K_COMPACTION and (not _intrinsically_visible(proj.entry(j)) or omitted(j)) for j in suffix)


def projected_context_tokens(proj: BranchProjection, branch: list[dict[str, Any]], estimator: Estimator = estimate_tokens_pi16) -> int:
    """pi 1.6's ``estimateProjectedContextTokens``: the last usage, unless a later edit or compaction made it stale."""
    from ..messages.system import current_system_message
    from .tokens import estimate_context_tokens

    owners = [j for j in range(len(proj)) for _ in proj.messages(j)]
    messages = [m for j in range(len(proj)) for m in proj.messages(j)]
    estimate = estimate_context_tokens([m for m in messages if type(m) is dict], estimator, skip_zero=True)
    if estimate.last_usage_index is not None:
        usage_entry = proj.entry(owners[estimate.last_usage_index]).get("id")
        at = next((i for i, e in enumerate(branch) if e.get("id") == usage_entry), -1) if usage_entry else -1
        stale = next((i for i in range(len(branch) - 1, -1, -1) if branch[i].get("type") in ("context_edit", "compaction")), -1)
        if at > stale:
            return estimate.tokens
    head = current_system_message(messages)
    tokens = estimator(head) if head is not None else 0
    return tokens + sum(estimator(m) for m in messages if not _is_system(m))


def summarized(proj: BranchProjection, start: int, end: int, on_assistant: Any = None) -> list[dict[str, Any]]:
    """The messages of context entries ``start:end`` a summary covers: no compaction, no system messages (prompt state).

    ``on_assistant(message)`` is called for each assistant message with a tool call (the file operations).
    """
    out: list[dict[str, Any]] = []
    add = out.append
    path, positions, plain = proj.path, proj.positions, not proj.edits
    for j in range(start, end):  # this loop runs over everything summarized: the common case is inlined
        entry = path[positions[j]]
        kind = entry.get("type")
        if kind == "message" and plain:
            message = entry.get("message")
            if type(message) is dict and message.get("content") is not None:
                role = message.get("role")
                if role == "assistant":
                    if on_assistant is not None:
                        on_assistant(message)
                elif role == "system":
                    continue
                add(message)
                continue
        if kind != "compaction":
            for m in proj.messages(j):
                if not _is_system(m):
                    add(m)
                    if on_assistant is not None and type(m) is dict and m.get("role") == "assistant":
                        on_assistant(m)
    return out


__all__ = ["BranchProjection", "find_projected_cut_point", "projected_context_tokens", "summarized"]
