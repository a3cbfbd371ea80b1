"""Replay per branch: a re-run serves each branch the answers recorded on *its* branch.

Today's replay provider picks, for a request, any recorded reply to the same conversation.
In a grid many branches share a conversation (the same prompt to two models, five repeats of
one prompt), so each new branch is served from the recorded branch of the same variant and
repeat: the recorded answers on that branch come first, the whole file only as a fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..providers.replay import ReplayProvider, conversation_key
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
        self._own: list[tuple[Any, Any, dict[str, Any]]] = []
        for entry in own:
            message = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                llm = session.context(entry.get("parentId")).llm()
                exact = conversation_key(llm)[self._skip_recorded :]
                loose = conversation_key(llm, with_tool_text=False)[self._skip_recorded :]
                self._own.append((exact, loose, message))

    def find(self, request: Any) -> tuple[dict[str, Any] | None, str | None]:
        """The recorded reply on this branch for the request, else whatever the whole file has."""
        key = conversation_key(request.messages)[self._skip_new :]
        for exact, _, message in reversed(self._own):
            if exact == key:
                return message, None
        loose = conversation_key(request.messages, with_tool_text=False)[self._skip_new :]
        for _, near, message in reversed(self._own):
            if near == loose:
                return message, None
        return super().find(request)


def branch_replay_stream(session: Session, start: str | None, leaf: str, new_start: str | None) -> Callable[..., Any]:
    """A ``stream(model, request, options)`` serving the recorded branch ending at ``leaf`` to a branch from ``new_start``."""
    provider = BranchReplay(session, start, leaf, new_start)

    def stream(model: Any, request: Any, options: Any = None) -> Any:
        return provider.stream(model, request, options)

    return stream
