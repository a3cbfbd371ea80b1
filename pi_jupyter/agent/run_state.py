"""``RunState``: whether an agent is running, the abort signal of what it is doing, and what the run wrote.

``Agent.abort()`` may come from any thread (a notebook's Stop button, a signal handler); the
signal it trips belongs to the run's event loop, so it is handed over to that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..providers.base import AbortSignal
from .result import AgentBusyError


class RunState:
    """One agent's run: started and finished once per prompt, aborted from anywhere."""

    def __init__(self) -> None:
        self.running = False
        """True while a run (including its retries and compactions) is going on."""
        self.abort_requested = False
        """True once ``abort()`` was called during the current run; it holds until the run ends."""
        self.entry_ids: list[str] = []
        """Ids of the entries persisted in the current run, oldest first."""
        self.signal: AbortSignal | None = None
        """The signal of the model call, compaction or summary under way."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Begin a run on the running event loop; :class:`AgentBusyError` when one is going on."""
        with self._lock:
            if self.running:
                raise AgentBusyError("the agent is already running: use steer() or follow_up(), or wait for it")
            self.running = True
            self.abort_requested = False
        self.entry_ids.clear()
        self._loop = asyncio.get_running_loop()

    def finish(self) -> None:
        """End the run (whatever happened in it)."""
        self.signal = None
        self.running = False

    def turn_signal(self) -> AbortSignal:
        """A fresh signal for one more turn of the loop, already tripped if an abort was asked for."""
        self.signal = AbortSignal()
        if self.abort_requested:
            self.signal.abort()
        return self.signal

    @contextmanager
    def abortable(self) -> Iterator[AbortSignal]:
        """A fresh signal that :meth:`abort` reaches while the block runs (a compaction, a summary)."""
        signal = AbortSignal()
        self.signal = signal
        try:
            yield signal
        finally:
            self.signal = None

    def abort(self) -> None:
        """Trip the current signal, from any thread; the request holds for the rest of the run."""
        signal, loop = self.signal, self._loop
        if self.running:
            self.abort_requested = True
        if signal is None:
            return
        if loop is not None and loop.is_running():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                loop.call_soon_threadsafe(signal.abort)
                return
        signal.abort()
