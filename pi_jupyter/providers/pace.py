"""Playback timing for replays: a pace, a clock that does not drift, and step mode's gate.

A replay performed for a class streams each recorded reply over the time it took when it was
recorded (from the session file's own timestamps), divided by the **pace**: ``"1x"`` is the
recorded pace, ``"2x"`` twice as fast, ``"instant"`` no waiting at all (tests, grids).

:class:`Pacer` schedules every event at an offset from one start time on the monotonic clock,
so a late wake-up never delays the events after it: drift does not build up over a long reply.
:class:`StepGate` holds a replay before each tool call and each branch point of the recording
until :meth:`StepGate.go` is called (a button in the notebook's view, or any code).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

DEFAULT_CHARS_PER_SECOND = 200.0
"""The pace of a reply whose recording has no usable times (about what a fast model streams)."""

INSTANT = ("instant", "none", "0", "0x", "off")


def parse_pace(value: str | float | None) -> float | None:
    """A pace as a speed factor: ``"2x"`` -> 2.0, ``"0.5x"`` -> 0.5, ``1`` -> 1.0; ``"instant"`` or ``None`` -> ``None``.

    Raises ``ValueError`` with a one-line reason for anything else.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"pace: {value!r} is not a speed; use e.g. 1x, 2x, 0.5x or instant")
    if isinstance(value, (int, float)):
        factor = float(value)
    else:
        text = str(value).strip().lower()
        if text in INSTANT:
            return None
        try:
            factor = float(text[:-1] if text.endswith("x") else text)
        except ValueError:
            raise ValueError(f"pace: {value!r} is not a speed; use e.g. 1x, 2x, 0.5x or instant") from None
    if factor != factor or factor in (float("inf"), float("-inf")) or factor < 0:
        raise ValueError(f"pace: {value!r} is not a speed; use e.g. 1x, 2x, 0.5x or instant")
    return None if factor == 0 else factor


def pace_text(pace: float | None) -> str:
    """``2x``, ``0.5x`` or ``instant``."""
    return "instant" if pace is None else f"{pace:g}x"


class Pacer:
    """Waits until recorded offsets, divided by the pace, have passed since :meth:`start`.

    Every wait is computed from the one start time, not from the previous wake-up, so the
    lateness of one event is not carried into the next. ``log`` (a list) receives
    ``(target, actual)`` monotonic times of every wait, for measuring drift.
    """

    def __init__(
        self, pace: float | None, *, log: list[tuple[float, float]] | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.pace = pace
        self.log = log
        self._clock = clock
        self._start = clock()

    def start(self) -> None:
        """Offsets count from now."""
        self._start = self._clock()

    def hold(self, seconds: float) -> None:
        """Shift the schedule by ``seconds`` (the time spent paused in step mode)."""
        self._start += seconds

    async def at(self, offset_s: float, signal: Any = None) -> None:
        """Return when ``offset_s`` recorded seconds (at the pace) have passed since :meth:`start`, or when ``signal`` aborts."""
        if self.pace is None:
            return
        target = self._start + offset_s / self.pace
        delay = target - self._clock()
        if delay > 0:
            if signal is not None:
                waiter = asyncio.ensure_future(signal.wait())
                try:
                    await asyncio.wait({waiter}, timeout=delay)
                finally:
                    waiter.cancel()
            else:
                await asyncio.sleep(delay)
        if self.log is not None:
            self.log.append((target, self._clock()))


@dataclass(frozen=True)
class Pause:
    """Where step mode holds a replay: before a tool call, or at a branch point of the recording."""

    kind: Literal["tool_call", "branch_point"]
    text: str


class StepGate:
    """Step mode: :meth:`wait` holds a replay until :meth:`go` is called (from any thread).

    ``on_pause(callback)`` is told each :class:`Pause` as it starts (show a button);
    ``on_resume(callback)`` when it ends. A replay given no gate never stops.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self._early = False
        self._pause_callbacks: list[Callable[[Pause], Any]] = []
        self._resume_callbacks: list[Callable[[], Any]] = []
        self.paused: Pause | None = None
        """The pause being held, or ``None``."""

    def on_pause(self, callback: Callable[[Pause], Any]) -> Callable[[Pause], Any]:
        """Call ``callback(pause)`` when a pause starts; returns it."""
        self._pause_callbacks.append(callback)
        return callback

    def on_resume(self, callback: Callable[[], Any]) -> Callable[[], Any]:
        """Call ``callback()`` when a pause ends; returns it."""
        self._resume_callbacks.append(callback)
        return callback

    def go(self) -> None:
        """End the current pause (safe from any thread); a go before any pause is kept for the next one."""
        with self._lock:
            waiter = self._waiter
            if waiter is None:
                self._early = True
                return
        loop, event = waiter
        loop.call_soon_threadsafe(event.set)

    async def wait(self, pause: Pause, signal: Any = None) -> float:
        """Hold until :meth:`go` (or ``signal`` aborts); returns the seconds held."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        with self._lock:
            if self._early:
                self._early = False
                return 0.0
            self._waiter = (loop, event)
        began = time.monotonic()
        self.paused = pause
        _call_all(self._pause_callbacks, pause)
        try:
            waits = {asyncio.ensure_future(event.wait())}
            if signal is not None:
                waits.add(asyncio.ensure_future(signal.wait()))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
        finally:
            with self._lock:
                self._waiter = None
            self.paused = None
            _call_all(self._resume_callbacks)
        return time.monotonic() - began


def _call_all(callbacks: list[Callable[..., Any]], *args: Any) -> None:
    for cb in list(callbacks):
        try:
            cb(*args)
        except Exception:  # noqa: BLE001 - a view that fails must not stop the replay
            pass


__all__ = ["DEFAULT_CHARS_PER_SECOND", "Pacer", "Pause", "StepGate", "pace_text", "parse_pace"]
