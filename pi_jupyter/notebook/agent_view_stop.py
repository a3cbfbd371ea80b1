"""The Stop button of an AgentView: what it calls, and hearing it while the main thread is busy.

A mixin of :class:`~pi_jupyter.notebook.agent_view.view.AgentView` (the view owns the state). A click
sends ``{"type": "stop"}``; the callbacks registered with :meth:`StopButton.on_stop` run when the
message is handled on the kernel's main thread. Those registered with ``any_thread=True`` (such
as ``Agent.abort``) run as soon as the kernel reads the message, even while the main thread runs
the agent's python code (see :mod:`.early_stop`), and are not called a second time when the
message reaches the main thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .early_stop import hear_stop_early

RUNNING_STATES = frozenset({"running", "streaming", "tool", "compacting", "retrying", "stopping"})
"""The states in which Stop has something to stop."""


class StopButton:
    """Stop: its callbacks, the early hearing of its message, and whether it was pressed."""

    _lock: threading.RLock
    _state: str
    _snapshot_dirty: bool

    def _init_stop(self) -> None:
        self._stop_callbacks: list[Callable[[], Any]] = []
        self._early_callbacks: list[Callable[[], Any]] = []  # of those, the ones safe on any thread
        self._heard_early = False  # the Stop on its way to the main thread has been acted on already
        self._stop_requested = False
        hear_stop_early(self, self._on_early_stop)

    def on_stop(self, callback: Callable[[], Any], *, any_thread: bool = False) -> Callable[[], Any]:
        """Register ``callback()`` for the Stop button; returns it (usable as a decorator).

        The callback runs on the kernel's main thread when the click arrives there, that is
        once the main thread is free (an awaiting ``%%pi`` cell frees it; code the agent runs
        there does not); hand work for the agent's loop over with ``loop.call_soon_threadsafe``.
        With ``any_thread=True`` (a callback safe to call from any thread, such as
        ``Agent.abort``) it runs as soon as the click reaches the kernel, on the thread that
        reads it, even while the main thread runs the agent's code. Registering the same
        callback twice keeps one.
        """
        if not callable(callback):
            raise TypeError(f"AgentView.on_stop: expected a callable, got {type(callback).__name__}")
        with self._lock:
            if callback not in self._stop_callbacks:
                self._stop_callbacks.append(callback)
            if any_thread and callback not in self._early_callbacks:
                self._early_callbacks.append(callback)
        return callback

    @property
    def stop_requested(self) -> bool:
        """True once Stop was pressed during the current run."""
        return self._stop_requested

    def _on_early_stop(self) -> None:
        """On the kernel's shell channel thread, as the click is read: stop now with the callbacks safe there."""
        with self._lock:
            if not self._early_callbacks or self._state not in RUNNING_STATES:
                return  # the message's usual way handles it (a notice, or nothing to stop)
            self._heard_early = True
            self._pressed()
            callbacks = list(self._early_callbacks)
        self._call(callbacks)

    def _on_stop_msg(self) -> None:
        """The Stop message, handled on the main thread."""
        with self._lock:
            heard, self._heard_early = self._heard_early, False
            if not self._stop_callbacks:
                note = "Stop is not connected to this run; interrupt the kernel instead."
                self._add({"kind": "notice", "tone": "warn", "text": note})  # type: ignore[attr-defined]
                self._snapshot_dirty = True
                self._after_event()  # type: ignore[attr-defined]
                return
            if self._state in RUNNING_STATES:
                self._pressed()
            callbacks = [cb for cb in self._stop_callbacks if not (heard and cb in self._early_callbacks)]
        self._call(callbacks)

    def _pressed(self) -> None:
        self._stop_requested = True
        self._set_state("stopping")  # type: ignore[attr-defined]
        self._after_event()  # type: ignore[attr-defined]

    def _call(self, callbacks: list[Callable[[], Any]]) -> None:
        for cb in callbacks:
            try:
                cb()
            except Exception as exc:  # noqa: BLE001 - shown in the view instead of lost in the kernel log
                with self._lock:
                    note = f"Stop handler failed: {type(exc).__name__}: {exc}"
                    self._add({"kind": "notice", "tone": "error", "text": note})  # type: ignore[attr-defined]
                    self._snapshot_dirty = True
                    self._after_event()  # type: ignore[attr-defined]


__all__ = ["RUNNING_STATES", "StopButton"]
