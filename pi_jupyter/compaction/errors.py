"""Errors of compaction and branch summarization."""

from __future__ import annotations

from typing import Literal


class CompactionError(ValueError):
    """A compaction or branch summary could not be made; no entry was written.

    A :class:`ValueError`, like the other "this request cannot be done" errors, so the
    notebook magics and the RPC server report it as one line, not a traceback.
    """


class NothingToCompact(CompactionError):
    """There is nothing to summarize (pi's ``prepareCompaction`` returning ``undefined``).

    ``reason``: ``already_compacted`` (the branch ends with a compaction), ``too_small``
    (everything fits in the recent part, or what is left has no text), ``needs_migration``
    (the first kept entry has no id: an unmigrated version 1 file).
    """

    def __init__(self, reason: Literal["already_compacted", "too_small", "needs_migration"], message: str) -> None:
        super().__init__(message)
        self.reason = reason


class SummaryError(CompactionError):
    """The summarizer failed, stopped early (``length``) or returned no text."""


class SummaryAborted(CompactionError):
    """The summary request was aborted (``stopReason: "aborted"``)."""


_WHY = {
    "too_small": "everything before the latest turn is already summarized or kept, so the latest turn itself is too long",
    "already_compacted": "the branch already ends with a compaction",
}


def nothing_to_compact_advice(model_ref: str, context_window: int, error: NothingToCompact) -> str:
    """What to tell a user whose request overflowed the window when compaction found nothing to summarize."""
    why = _WHY.get(error.reason, str(error))
    return (
        f"The context is too long for {model_ref} (window {context_window:,} tokens) and nothing could be compacted: {why}. "
        "Shorten the last prompt or the tool output it produced, start a new branch from an earlier entry, "
        "or switch to a model with a larger context window."
    )
