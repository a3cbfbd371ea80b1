"""A compaction never makes the context larger.

A compaction replaces the history before its first kept entry with a summary. When the summary
is longer than what it replaces (a short history, a model that writes at length, an extension's
summary), appending it would make every later request larger, and the tree would show a
compaction "216.8k → ≈259.0k tokens". So before a compaction entry is written, the context the
branch rebuilds to now and the one it would rebuild to with the compaction are measured with the
same estimate (:func:`~pi_jupyter.compaction.estimate_tokens` over the rebuilt messages, never a
reported usage on one side and an estimate on the other); if the second is not smaller, the
compaction is refused with :class:`CompactionWouldGrow` and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..session.context_edits import system_snapshot
from ..session.rebuild import context_from_path
from .entries import as_dicts
from .errors import CompactionError
from .tokens import estimate_tokens


class CompactionWouldGrow(CompactionError):
    """The compaction's summary and kept entries would not make the context smaller; nothing was written."""

    def __init__(self, before: int, after: int) -> None:
        self.before = before
        self.after = after
        super().__init__(
            f"compaction refused: its summary with the entries it keeps comes to ≈{after:,} tokens, "
            f"not less than the ≈{before:,} tokens the context holds now, so nothing was written"
        )


def rebuilt_tokens(path: Sequence[Any]) -> int:
    """The estimated size of the context a root-first path of entries rebuilds to (no usage figures)."""
    return sum(estimate_tokens(m) for m in context_from_path(as_dicts(path))["messages"] if isinstance(m, dict))


def check_shrinks(branch: Sequence[Any], summary: str, first_kept_entry_id: str) -> tuple[int, int]:
    """``(before, after)`` estimated tokens of the context without and with this compaction on ``branch``.

    Raises :class:`CompactionWouldGrow` when ``after >= before``.
    """
    entries = as_dicts(branch)
    messages = context_from_path(entries)["messages"]
    before = sum(estimate_tokens(m) for m in messages if isinstance(m, dict))
    probe: dict[str, Any] = {
        "type": "compaction",
        "id": "\x00probe",
        "parentId": entries[-1].get("id") if entries else None,
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id,
    }
    snapshot = system_snapshot([m for m in messages if isinstance(m, dict)], "1970-01-01T00:00:00.000Z")
    if snapshot is not None:  # the entry will carry the replayed prompt, as the system messages before it did
        probe["systemMessage"] = snapshot
    after = rebuilt_tokens([*entries, probe])
    if after >= before:
        raise CompactionWouldGrow(before, after)
    return before, after
