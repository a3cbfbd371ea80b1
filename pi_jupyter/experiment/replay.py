"""Replay per branch: a re-run serves each branch the answers recorded on *its* branch.

The replay provider picks, for a request, the latest recorded reply to the same conversation
that agrees with the request's variant. In a grid many branches share a conversation (the same
prompt to two models, five repeats of one prompt), so each new branch is served from the recorded branch of the same variant and
repeat: the recorded answers on that branch come first, the whole file only as a fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..messages.text import ms_from_iso
from ..providers.replay import ReplayProvider
from ..providers.replay_records import Choice, Recorded, conversation_key
from ..session import Session


class BranchReplay(ReplayProvider):
    """A :class:`ReplayProvider` that prefers the assistant messages of one recorded branch."""

    def __init__(self, session: Session, start: str | None, leaf: str, new_start: str | None = None) -> None:
        if session.path is None:
            raise ValueError("replay needs a session file (an in-memory session has no recording to replay)")
        super().__init__(session.path)
        path = session.raw_branch(leaf)
        ids = [e["id"] for e in path]
        own = path[ids.index(start) + 1 :] if start in ids else path
        # conversations are compared from the branch's start on: the recorded grid may have
        # started from another node (a re-run notebook, a script run again on the same file)
        self._skip_recorded = len(conversation_key(session.context(start).llm())) if start else 0
        self._skip_new = len(conversation_key(session.context(new_start).llm())) if new_start else 0
        self._own: list[Recorded] = []
        for order, entry in enumerate(own):
            message = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                llm = session.context(entry.get("parentId")).llm()
                exact = conversation_key(llm)[self._skip_recorded :]
                loose = conversation_key(llm, with_tool_text=False)[self._skip_recorded :]
                started = message.get("timestamp")
                self._own.append(
                    Recorded(
                        entry_id=str(entry.get("id")),
                        order=order,
                        key=exact,
                        loose=loose,
                        message=message,
                        started_ms=started if isinstance(started, int) and not isinstance(started, bool) else None,
                        ended_ms=ms_from_iso(entry.get("timestamp")),
                    )
                )

    def choose(self, request: Any, options: Any = None, model: Any = None) -> Choice | str:
        """The recorded reply on this branch for the request, else whatever the whole file has."""
        key = conversation_key(request.messages)[self._skip_new :]
        for record in reversed(self._own):
            if record.key == key:
                return Choice(record=record, timing=record)
        loose = conversation_key(request.messages, with_tool_text=False)[self._skip_new :]
        for record in reversed(self._own):
            if record.loose == loose:
                return Choice(record=record, timing=record)
        return super().choose(request, options, model)


def branch_replay_stream(session: Session, start: str | None, leaf: str, new_start: str | None) -> Callable[..., Any]:
    """A ``stream(model, request, options)`` serving the recorded branch ending at ``leaf`` to a branch from ``new_start``."""
    provider = BranchReplay(session, start, leaf, new_start)

    def stream(model: Any, request: Any, options: Any = None) -> Any:
        return provider.stream(model, request, options)

    return stream
