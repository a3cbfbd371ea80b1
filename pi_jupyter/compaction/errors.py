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
