"""When a branch's context cannot fit the model's window, and why: the numbers that point at the fix.

Two cases compaction cannot repair, told at once instead of after a long summary request that
fails too:

* ``entry``: one entry of the context (a pasted prompt, a huge tool result) is what makes it too
  long (larger than the window, or most of the context). Compaction keeps the latest turns whole,
  so it cannot drop it; leaving that entry out of the context (a context edit) can.
* ``summary``: the older part of the branch is itself larger than the window, so the single
  request that would summarize it does not fit either (a long session never compacted).

:func:`diagnose` finds the biggest entry and the size of the branch (token estimates, one pass
over the branch); :class:`ContextTooLarge` carries them, with a message that names no interface
(the notebook, the shell and the RPC server each say how to act in their own terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .errors import CompactionError
from .projected import BranchProjection
from .tokens import estimate_tokens, estimate_tokens_pi

_KIND = {"user": "a user prompt", "toolResult": "a tool result", "assistant": "an answer", "custom": "an extension's message"}


@dataclass(frozen=True)
class Oversize:
    """How big a branch's context is, and its biggest entry (token estimates)."""

    tokens: int
    """The whole context."""
    entries: int
    """Entries on the branch."""
    compacted: bool
    """True when the branch has a compaction (the context starts from its summary)."""
    entry_id: str | None
    """The biggest entry of the context."""
    entry_tokens: int
    entry_role: str | None

    def dominated(self, window: int) -> bool:
        """True when the biggest entry is what makes the context too long: larger than the window, or most of a context near it."""
        if self.entry_id is None:
            return False
        return self.entry_tokens > window or (2 * self.entry_tokens >= self.tokens and 4 * self.entry_tokens >= window)

    @property
    def entry_kind(self) -> str:
        """What the biggest entry is, in words (``a user prompt``, ``a tool result``...)."""
        return _KIND.get(self.entry_role or "", "an entry")


def diagnose(path: Sequence[dict[str, Any]]) -> Oversize:
    """The size of the context of ``path`` (root-first entries) and its biggest entry.

    Counted as pi and most vendors' rules of thumb do (four characters a token), which is
    several times quicker than :func:`~.tokens.estimate_tokens` on a branch of 100k entries.
    """
    proj = BranchProjection(list(path))
    total = 0
    best_id, best_tokens, best_role = None, -1, None
    for j in range(len(proj)):
        messages = proj.messages(j)
        tokens = sum(estimate_tokens_pi(m) for m in messages)
        total += tokens
        if tokens > best_tokens:
            entry = proj.entry(j)
            best_id, best_tokens = entry.get("id"), tokens
            best_role = messages[0].get("role") if messages and isinstance(messages[0], dict) else None
    return Oversize(total, len(path), proj.compaction_head, best_id, max(best_tokens, 0), best_role)


def millions(tokens: int) -> str:
    """``25.2M`` above a million tokens, else ``251,571``."""
    return f"{tokens / 1e6:.1f}M" if tokens >= 1_000_000 else f"{tokens:,}"


class ContextTooLarge(CompactionError):
    """The context does not fit the model's window, and compaction cannot make it fit; nothing was written.

    ``reason``: ``entry`` (one entry makes the context too long) or ``summary`` (the part a
    compaction would summarize is larger than the window itself). ``size`` holds the numbers.
    """

    def __init__(self, reason: Literal["entry", "summary"], size: Oversize, model_ref: str, window: int) -> None:
        self.reason = reason
        self.size = size
        self.model_ref = model_ref
        self.window = window
        if reason == "entry":
            share = round(100 * size.entry_tokens / size.tokens) if size.tokens else 100
            text = (
                f"The context is too long for {model_ref} (window {window:,} tokens) and compaction cannot shorten it: "
                f"entry {size.entry_id} ({size.entry_kind}, about {millions(size.entry_tokens)} tokens, {share}% of the context) "
                "is kept whole with the latest turns. Leave that entry out of what the model sees (the file keeps it), "
                "or switch to a model with a larger window."
            )
        else:
            text = (
                f"The branch is about {millions(size.tokens)} tokens in {size.entries:,} entries"
                f"{'' if size.compacted else ', never compacted'}; {model_ref}'s window is {window:,} tokens, and compacting "
                "it means summarizing nearly all of that in one request, which does not fit either. "
                "Start a new session (or a new branch from an early entry) and bring what matters, "
                "or compact with a model whose window holds it."
            )
        super().__init__(text)


def exceeds(messages: Sequence[Any], window: int) -> bool:
    """True when ``messages`` (what a compaction would summarize) are estimated at more tokens than ``window``.

    Stops counting as soon as the window is passed, so a long branch costs no more than its window's worth.
    """
    total = 0
    for message in messages:
        total += estimate_tokens(message)
        if total > window:
            return True
    return False


__all__ = ["ContextTooLarge", "Oversize", "diagnose", "exceeds", "millions"]
