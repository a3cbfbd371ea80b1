"""``RunContext``: the narrow face an :class:`~pi_jupyter.agent.Agent` shows its parts.

Compaction, extensions and retry each keep their own state; what they need of the agent and
of the run going on is this protocol, and nothing else: the session and model, publishing an
event, an abort signal that ``Agent.abort()`` reaches, running one more turn, queueing a
steering message. The agent hands them an object implementing it, so none of them reads or
writes the agent's private attributes, and each can be driven alone by a small stand-in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from pydantic import SecretStr

from ..providers.base import AbortSignal, Model
from ..session import Session
from .events import Event
from .settings import AgentSettings

StreamFn = Callable[..., AsyncIterator[Any]]
"""``stream(model, request, options)``: the provider call (default :func:`pi_jupyter.providers.stream`)."""


class RunContext(Protocol):
    """What a part of the agent may use of it: read the state, publish events, run, steer."""

    @property
    def session(self) -> Session:
        """The session store the agent works on."""
        ...

    @property
    def model(self) -> Model:
        """The current model."""
        ...

    @property
    def thinking_level(self) -> str:
        """The current thinking level (``"off"`` when none)."""
        ...

    @property
    def settings(self) -> AgentSettings:
        """The agent's settings (retry, compaction, queues)."""
        ...

    @property
    def messages(self) -> list[Any]:
        """The messages of the current context (the list the next turn starts from)."""
        ...

    @property
    def is_running(self) -> bool:
        """True while a run (including its retries) is going on."""
        ...

    @property
    def abort_requested(self) -> bool:
        """True once ``abort()`` was called during the current run."""
        ...

    @property
    def run_entry_ids(self) -> Sequence[str]:
        """Ids of the entries persisted so far in the current run, oldest first."""
        ...

    def api_key(self) -> SecretStr | None:
        """The key for the current model (never logged)."""
        ...

    def stream_fn(self) -> StreamFn:
        """The provider stream function model calls go through."""
        ...

    def emit(self, event: Event) -> None:
        """Publish ``event`` to every subscriber (persistence first)."""
        ...

    def abortable(self) -> AbstractContextManager[AbortSignal]:
        """A fresh :class:`AbortSignal` that ``Agent.abort()`` reaches while the block runs."""
        ...

    async def run_turn(self) -> list[Any]:
        """Run the loop once more from the current messages; returns the new messages."""
        ...

    def queue_steering(self, message: Any) -> None:
        """Deliver ``message`` to the running loop before its next model call."""
        ...

    def reload(self) -> None:
        """Rebuild the messages from the session's current branch."""
        ...
