"""``BranchSession``: one session file, many leaves: what lets sibling branches run at once.

A :class:`~pi_jupyter.session.Session` has one leaf, and every append becomes its child. An
experiment runs many :class:`~pi_jupyter.agent.Agent` objects on one session, each growing its
own branch, so each agent gets a ``BranchSession``: a view of the shared session with a leaf
of its own. Reads pass the view's leaf explicitly; an append moves the shared leaf to the
view's leaf, appends, and moves it back, all in one synchronous step under a lock, so no
other branch (or thread) sees the shared leaf move. The appends themselves go through the
store as always (its file lock serializes writers, here and in other processes).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..session import Session

_locks: weakref.WeakKeyDictionary[Session, threading.RLock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()
_CURRENT: Any = object()


def _lock_for(session: Session) -> threading.RLock:
    with _locks_guard:
        lock = _locks.get(session)
        if lock is None:
            lock = _locks[session] = threading.RLock()
        return lock


class BranchSession:
    """A view of ``session`` whose leaf is its own (starting at ``leaf``).

    It offers what an :class:`~pi_jupyter.agent.Agent` uses of a session; any other public
    attribute is the shared session's. Checkouts only move the view's leaf (they are never
    written: where the notebook continues is the experiment's decision, made once at the end).
    """

    def __init__(self, session: Session, leaf: str | None) -> None:
        self.shared = session
        self._leaf = leaf
        self._lock = _lock_for(session)
        self.branch_summarizer: Callable[..., Any] | None = None

    # -- the leaf
    @property
    def leaf_id(self) -> str | None:
        """This branch's leaf."""
        return self._leaf

    def checkout(self, target: str | None, *, summarize: bool = False, persist: bool = True, **options: Any) -> str | None:
        """Move this branch's leaf (in memory only)."""
        if summarize:
            raise NotImplementedError("a branch of an experiment cannot summarize on checkout")
        self._leaf = self.shared.resolve(target) if target is not None else None
        return self._leaf

    # -- reads at this branch's leaf
    def context(self, leaf: str | None = _CURRENT) -> Any:
        """The rebuilt context at this branch's leaf (or at ``leaf``)."""
        return self.shared.context(self._leaf if leaf is _CURRENT else leaf)

    def raw_branch(self, leaf: str | None = _CURRENT) -> list[dict[str, Any]]:
        """The entry dicts from the root to this branch's leaf (or to ``leaf``)."""
        return self.shared.raw_branch(self._leaf if leaf is _CURRENT else leaf)

    def branch(self, leaf: str | None = _CURRENT) -> list[Any]:
        """The entries from the root to this branch's leaf, as models."""
        return self.shared.branch(self._leaf if leaf is _CURRENT else leaf)

    def branch_ids(self, leaf: str | None = _CURRENT) -> list[str]:
        """The ids from the root to this branch's leaf."""
        return self.shared.branch_ids(self._leaf if leaf is _CURRENT else leaf)

    def fork(self, entry_id: str | None = _CURRENT, **options: Any) -> Session:
        """A new session file holding this branch (see :meth:`Session.fork`)."""
        return self.shared.fork(self._leaf if entry_id is _CURRENT else entry_id, **options)

    # -- appends below this branch's leaf
    def _append(self, fn: Callable[[], str]) -> str:
        shared = self.shared
        with self._lock:
            saved = shared.leaf_id
            if saved != self._leaf:
                shared.checkout(self._leaf, persist=False)
            try:
                entry_id = fn()
                self._leaf = shared.leaf_id
            finally:
                if shared.leaf_id != saved:
                    shared.checkout(saved, persist=False)
        return entry_id

    def append_message(self, message: Any) -> str:
        """Append a message below this branch's leaf."""
        return self._append(lambda: self.shared.append_message(message))

    def append_custom(self, custom_type: str, data: Any = None) -> str:
        """Append a ``custom`` entry below this branch's leaf."""
        return self._append(lambda: self.shared.append_custom(custom_type, data))

    def append_custom_message(self, custom_type: str, content: Any, display: bool | None = True, details: Any = None) -> str:
        """Append a ``custom_message`` entry below this branch's leaf."""
        return self._append(lambda: self.shared.append_custom_message(custom_type, content, display=display, details=details))

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model change on this branch."""
        return self._append(lambda: self.shared.append_model_change(provider, model_id))

    def append_thinking_level_change(self, level: str) -> str:
        """Record a thinking level change on this branch."""
        return self._append(lambda: self.shared.append_thinking_level_change(level))

    def append_compaction(self, *args: Any, **kwargs: Any) -> str:
        """Record a compaction on this branch."""
        return self._append(lambda: self.shared.append_compaction(*args, **kwargs))

    def branch_with_summary(self, *args: Any, **kwargs: Any) -> str:
        """Attach a branch summary (moves this branch's leaf)."""
        return self._append(lambda: self.shared.branch_with_summary(*args, **kwargs))

    def carry_context_edits(self) -> list[str]:
        """Carry the file's latest context edits onto this branch (see :meth:`Session.carry_context_edits`)."""
        carried: list[str] = []

        def carry() -> str:
            carried.extend(self.shared.carry_context_edits())
            return carried[-1] if carried else ""

        self._append(carry)
        return carried

    def label(self, target: str, label: str | None) -> str:
        """Label an entry (the label entry goes below this branch's leaf)."""
        return self._append(lambda: self.shared.label(target, label))

    def sync(self) -> None:
        """Nothing: the agent syncs after each run, which for a thousand branches is a thousand
        fsyncs on the event loop; the experiment syncs the shared session once when the grid ends
        (appends still follow the session's durability setting)."""

    # -- everything else is the shared session's
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.shared, name)

    def __len__(self) -> int:
        return len(self.shared)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.shared

    def __repr__(self) -> str:
        return f"<BranchSession of {self.shared!r} at {self._leaf}>"
