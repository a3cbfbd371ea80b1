"""Capture ``print`` output of one thread without touching other threads' output.

``contextlib.redirect_stdout`` swaps ``sys.stdout`` for every thread, so the kernel's own
output (widgets, logs, other cells' threads) would leak into a tool result. Instead, while
any capture is active, ``sys.stdout``/``sys.stderr`` are routers that send writes from a
captured thread to its buffer and everything else to the stream that was there before.
The routers are removed when the last capture ends (if nobody replaced them meanwhile).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["ThreadCapture"]

_lock = threading.RLock()
_sinks: dict[int, Callable[[str, str], None]] = {}
_originals: dict[str, TextIO] = {}
_routers: dict[str, _Router] = {}


class _Router:
    """A text stream that dispatches by the writing thread."""

    def __init__(self, name: str, original: TextIO) -> None:
        self._name = name
        self._original = original

    def write(self, text: str) -> int:
        sink = _sinks.get(threading.get_ident())
        if sink is None:
            return self._original.write(text)
        sink(self._name, text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if threading.get_ident() not in _sinks:
            self._original.flush()

    def isatty(self) -> bool:
        return False if threading.get_ident() in _sinks else bool(getattr(self._original, "isatty", lambda: False)())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


def _install() -> None:
    for name in ("stdout", "stderr"):
        current = getattr(sys, name)
        if isinstance(current, _Router):
            continue
        _originals[name] = current
        router = _Router(name, current)
        _routers[name] = router
        setattr(sys, name, router)


def _uninstall() -> None:
    for name, router in list(_routers.items()):
        if getattr(sys, name) is router:
            setattr(sys, name, _originals[name])
        # Else someone wrapped our router; it keeps passing writes through, harmlessly.
        _routers.pop(name, None)
        _originals.pop(name, None)


class ThreadCapture:
    """Route ``sys.stdout``/``sys.stderr`` writes of the thread that calls :meth:`start` to ``sink(stream_name, text)``."""

    def __init__(self, sink: Callable[[str, str], None]) -> None:
        self._sink = sink
        self._ident: int | None = None

    def start(self) -> None:
        """Begin capturing the current thread."""
        with _lock:
            self._ident = threading.get_ident()
            _sinks[self._ident] = self._sink
            _install()

    def stop(self) -> None:
        """Stop capturing; the last capture to stop removes the routers."""
        with _lock:
            if self._ident is not None:
                _sinks.pop(self._ident, None)
                self._ident = None
            if not _sinks:
                _uninstall()

    def __enter__(self) -> ThreadCapture:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
