"""Step mode in an AgentView: a replay held before a tool call or a branch point, and "Go on ▶".

A mixin of :class:`~pi_jupyter.notebook.agent_view.view.AgentView` (the view owns the state). A
held replay shows a notice with a button; its click sends ``{"type": "go"}``, and the callback
registered with :meth:`StepControl.on_go` lets the replay go on. The notice stays in the
transcript (and in the static rendering that replaces the widget) as a mark of where the
class was asked to guess. Any message from the browser also tells the view that a browser
shows it (:attr:`StepControl.shown`): without one (nbclient, papermill) nobody can press the
button, and the caller plays through instead of waiting forever.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

GO_LABEL = "Go on ▶"


class StepControl:
    """Pauses with a "Go on ▶" button, and whether any browser shows the view."""

    _lock: threading.RLock
    _snapshot_dirty: bool
    _force: bool

    def _init_step(self) -> None:
        self._go_callback: Callable[[], Any] | None = None
        self._step_item: dict[str, Any] | None = None
        self._shown = threading.Event()

    @property
    def shown(self) -> threading.Event:
        """Set once a browser has drawn this view (it sent a message); ``wait(seconds)`` to give one time to."""
        return self._shown

    def on_go(self, callback: Callable[[], Any]) -> Callable[[], Any]:
        """Register what "Go on ▶" does; returns it. It runs on the kernel's thread that hears the browser."""
        if not callable(callback):
            raise TypeError(f"AgentView.on_go: expected a callable, got {type(callback).__name__}")
        self._go_callback = callback
        return callback

    def pause(self, text: str) -> None:
        """Show ``text`` with a "Go on ▶" button (one pause at a time)."""
        with self._lock:
            self._end_pause()
            self._step_item = self._add({"kind": "notice", "tone": "info", "step": True, "waiting": True, "text": "Paused: " + text})  # type: ignore[attr-defined]
            self._snapshot_dirty = True
            self._force = True
            self._after_event()  # type: ignore[attr-defined]

    def resume(self) -> None:
        """End the pause: the notice stays, its button goes."""
        with self._lock:
            self._end_pause()
            self._force = True
            self._after_event()  # type: ignore[attr-defined]

    def note(self, text: str, tone: str = "warn") -> None:
        """Add a line to the transcript (what a replay's recording lacks, for example)."""
        with self._lock:
            self._add({"kind": "notice", "tone": tone, "text": text})  # type: ignore[attr-defined]
            self._snapshot_dirty = True
            self._after_event()  # type: ignore[attr-defined]

    def _end_pause(self) -> None:
        item = self._step_item
        if item is not None and item.get("waiting"):
            item["waiting"] = False
            self._op("set", item=dict(item))  # type: ignore[attr-defined]
            self._snapshot_dirty = True
        self._step_item = None

    def _on_step_msg(self, kind: Any) -> None:
        """Every browser message: the view is shown; ``go`` ends the pause."""
        self._shown.set()
        if kind != "go":
            return
        callback = self._go_callback
        if callback is not None:
            callback()


__all__ = ["GO_LABEL", "StepControl"]
