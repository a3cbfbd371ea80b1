"""Moving the leaf: checkout (persisted by a ``pi_jupyter.checkout`` marker entry) and branch summaries.

pi resumes a file at its last line, so a checkout appends a small ``custom`` marker whose parent
is the target; reopening the file, here or in pi, continues on that branch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..messages import WireModel
from .appending import SessionAppending
from .index import CHECKOUT_TYPE, RawEntry
from .report import SessionError


class SessionMoves(SessionAppending):
    """Checkout and branch summaries (a base of :class:`~pi_jupyter.session.Session`)."""

    branch_summarizer: Callable[..., Any] | None

    def branch_with_summary(
        self, from_id: str | None, summary: str, details: Any = None, from_hook: bool | None = None, usage: Any = None
    ) -> str:
        """Move the leaf to ``from_id`` and attach a ``branch_summary`` there (pi's ``branchWithSummary``)."""
        target = self.resolve(from_id) if from_id is not None else None

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {
                "type": "branch_summary",
                "id": eid,
                "parentId": target,
                "timestamp": ts,
                "fromId": target if target is not None else "root",
                "summary": summary,
            }
            if details is not None:
                entry["details"] = details
            if usage is not None:
                entry["usage"] = usage.to_dict() if isinstance(usage, WireModel) else usage
            if from_hook is not None:
                entry["fromHook"] = from_hook
            return entry

        return self._append(build)

    def checkout(self, target: str | None, *, summarize: bool = False, persist: bool = True, **summary_options: Any) -> str | None:
        """Move the leaf to ``target`` (an id, id prefix or label; ``None``: before the first entry).

        The move is persisted: a ``custom`` entry of type ``pi_jupyter.checkout`` is appended
        as a child of ``target``, so reopening the file, here or in pi (which resumes at the
        last line), continues on that branch. The marker adds nothing to the context.
        ``persist=False`` only moves the leaf in memory (use it when an append follows at once).

        ``summarize=True`` summarizes the branch being left into a ``branch_summary`` entry;
        that needs a model, so it works once an :class:`~pi_jupyter.Agent` is attached to this
        session (it sets :attr:`branch_summarizer`). Returns the new leaf id.
        """
        target_id = self.resolve(target) if target is not None else None
        if summarize:
            if self.branch_summarizer is None:
                raise SessionError("summarize=True needs a model: create an Agent for this session first (Agent(session))")
            return self.branch_summarizer(target_id, **summary_options)
        if summary_options:
            raise TypeError(f"unexpected options without summarize=True: {', '.join(summary_options)}")
        previous = self._index.leaf
        if target_id == previous and (self._leaf_saved or not persist):
            return previous
        with self._lock:
            if not persist or self._path is None:
                self._index.leaf = target_id
                self._leaf_saved = self._path is None
                return target_id
            if self._readonly:
                raise SessionError(f"{self._path}: opened read-only; a checkout is written to the file (use persist=False)")
            self._index.leaf = target_id
            try:
                # the marker is a child of the target; indexing it leaves the leaf on the target
                self.append_custom(CHECKOUT_TYPE, {"targetId": target_id, "fromId": previous})
            except BaseException:
                self._index.leaf = previous  # nothing was written: the leaf stays where the file says it is
                raise
        return self._index.leaf
