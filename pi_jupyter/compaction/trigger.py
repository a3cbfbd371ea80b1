"""When to compact automatically: context overflow errors and the threshold (pi-design §4.3).

The agent calls :func:`compaction_trigger` after a run (and before a prompt) and runs the
compaction, the events and the retry itself; this module only decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..messages.overflow import is_context_overflow
from .entries import as_dicts
from .settings import CompactionSettings, should_compact
from .tokens import Estimator, context_tokens, estimate_tokens


class CompactionTrigger(BaseModel):
    """Why automatic compaction should run now.

    ``overflow``: the model refused the context (compact, then retry the request);
    ``threshold``: the context is nearly full (compact; the user continues). ``entry_id``
    is the assistant message that was judged; ``context_tokens`` the size that was compared
    (``None`` for an overflow).
    """

    reason: Literal["overflow", "threshold"]
    entry_id: str
    context_tokens: int | None = None


def compaction_trigger(
    branch: Sequence[Any],
    *,
    context_window: int,
    settings: CompactionSettings | None = None,
    model: tuple[str, str] | None = None,
    skip_aborted: bool = True,
    estimator: Estimator = estimate_tokens,
) -> CompactionTrigger | None:
    """Decide, as pi's ``_checkCompaction`` does, whether the branch needs compacting now.

    ``branch`` is the current branch, root first; the last assistant message on it is the one
    judged. ``model`` is the current ``(provider, model_id)``: an overflow error from another
    model does not count (``None``: do not check). ``skip_aborted=False`` is pi's check
    before a prompt, which also judges an aborted reply.

    Differences from pi: a message is stale (ignored) when the latest compaction on the
    branch comes after it *in the tree*, not when its clock time is earlier (pi compares the
    provider's timestamp with the compaction's wall-clock time). The threshold is checked
    against the last usage reported after the latest compaction plus :func:`estimate_tokens`
    of everything that followed it (pi: the reply's own usage, or for an error reply the
    last usage plus chars/4). A ``context_edit`` after the judged reply makes its overflow stale
    (the user forgot or edited what was too long): the edited context is estimated and judged
    by the threshold instead, so a forget that fixed an overflow does not start a compaction.
    """
    s = settings or CompactionSettings()
    if not s.enabled:
        return None
    entries = as_dicts(branch)
    at = -1
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "assistant":
            at = i
            break
    if at < 0:
        return None
    entry = entries[at]
    message = entry["message"]
    if skip_aborted and message.get("stopReason") == "aborted":
        return None
    if any(e.get("type") == "compaction" for e in entries[at + 1 :]):
        return None  # the reply predates the latest compaction
    # a context edit after the reply (``%pi forget``, an edit) changed what the next request sends: the
    # model's refusal and its usage describe a context that is no longer sent, so the size is estimated again
    edited = any(e.get("type") == "context_edit" for e in entries[at + 1 :])
    same_model = model is None or (message.get("provider") == model[0] and message.get("model") == model[1])
    if same_model and not edited and is_context_overflow(message, context_window):
        return CompactionTrigger(reason="overflow", entry_id=entry["id"])
    estimate = context_tokens(entries, estimator)
    if estimate.last_usage_index is None and not edited:
        return None  # no usage reported since the last compaction: nothing reliable to compare
    if should_compact(estimate.tokens, context_window, s):
        return CompactionTrigger(reason="threshold", entry_id=entry["id"], context_tokens=estimate.tokens)
    return None
