"""Running a tool's code on another thread's turn, and stopping it there: :class:`MainThreadJob`.

In a notebook the python tool's code runs where the user's cells run, the kernel's main thread,
so what it makes there (a ``sqlite3`` connection, thread-local settings such as numpy's error
state or a ``decimal`` context) is the user's in the next cell. The agent's loop runs on a thread
of its own; it hands the code to the main thread as a job, through a :class:`MainThread` the
notebook layer gives (``ctx.extra["main_thread"]``), and waits for it.

Stopping the code. Python code on the main thread is stopped the way the kernel's interrupt
stops a cell: a ``SIGINT`` sent to that thread wakes a blocking call (``time.sleep``, a socket
read) and runs a handler, which this job installs while the code runs. The handler raises
:class:`~pi_jupyter.agent.toolbox.python.PythonInterrupt` in the code for the job's own requests
(timeout, Stop), and for the user's interrupt too: the code stops, its output so far is kept,
and the interrupt is then handed to the handler that was there before (the waiting cell's), so
the run stops as an interrupted cell does. Code inside a long C call (a numpy operation) stops
when that call returns. Off the main thread (no notebook) the job falls back to an asynchronous
exception, which waits for the next bytecode.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, Protocol

__all__ = ["MainThread", "MainThreadJob", "async_raise"]

_LANDING_WAIT_S = 2.0  # how long a finished job waits for a signal it sent to arrive (it arrives at once)


class MainThread(Protocol):
    """Where jobs run: the notebook layer's dispatcher onto the kernel's main thread."""

    def submit(self, job: MainThreadJob) -> bool:
        """Queue ``job`` to run on the main thread; ``False`` when it cannot be taken (no kernel loop to run it)."""
        ...

    def busy_with(self) -> str:
        """What keeps the main thread from taking a queued job now: ``"a cell"``, ``"another python call"`` (``""``: nothing)."""
        ...


class MainThreadJob:
    """One piece of code to run on the main thread, which the agent's thread can wait for, cancel and interrupt.

    ``body(guard)`` does the work; it enters ``guard()`` around the part that may be
    interrupted (the code itself, not the bookkeeping around it). :attr:`done` is a future
    resolved when the job has ended or was cancelled before it started.
    """

    def __init__(
        self, body: Callable[[Callable[[], contextlib.AbstractContextManager[None]]], None], interrupt: type[BaseException]
    ) -> None:
        self._body = body
        self._interrupt = interrupt
        self._lock = threading.Lock()
        self.done: Future[None] = Future()
        self.queued_at = time.monotonic()
        self.started_at: float | None = None
        self.thread: int | None = None
        self.cancelled = False
        self.reason: str | None = None  # "timeout" / "aborted": the job's own request to stop
        self.user_interrupted = False  # the kernel's interrupt (SIGINT from outside) arrived while the code ran
        self.passes_on = False  # ... and the handler that was there before hears it after the job (a waiting cell's)
        self._in_code = False
        self._sent = 0
        self._landed = 0
        self._previous: Any = None
        self._handler_on = False  # this job's SIGINT handler is installed (on the main thread)

    # ------------------------------------------------------------ from the waiting (agent's) thread

    @property
    def started(self) -> bool:
        """True once the main thread has taken the job."""
        return self.started_at is not None

    def cancel(self) -> bool:
        """Drop the job if it has not started; True when it will not run."""
        with self._lock:
            if self.started_at is not None:
                return False
            self.cancelled = True
        if not self.done.done():
            self.done.set_result(None)
        return True

    def stop(self, reason: str) -> None:
        """Ask the running code to stop (``"timeout"``, ``"aborted"``); a job not yet started is cancelled instead."""
        if self.cancel():
            return
        with self._lock:
            if self.done.done() or self.thread is None:
                return
            if self.reason is None:
                self.reason = reason
            if not self._in_code:
                return  # between the code and its bookkeeping: nothing left to stop
            if self._handler_on:
                self._sent += 1
                signal.pthread_kill(self.thread, signal.SIGINT)  # wakes a blocking call; the handler raises
            else:
                async_raise(self.thread, self._interrupt)

    # ------------------------------------------------------------ on the main thread

    def run_here(self) -> bool:
        """Run the job in the calling thread (the dispatcher calls it on the main thread); False if it was cancelled."""
        with self._lock:
            if self.cancelled or self.started_at is not None:
                return False
            self.started_at = time.monotonic()
            self.thread = threading.get_ident()
        on_main = threading.current_thread() is threading.main_thread()
        try:
            if on_main:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
                self._handler_on = True
            try:
                self._body(self._guard)
            except self._interrupt:  # a stop request that landed outside the guarded part
                pass
            finally:
                with self._lock:
                    self._in_code = False
                if on_main:
                    self._let_signals_land()
                    signal.signal(signal.SIGINT, self._previous)
                    with self._lock:
                        self._handler_on = False
                    self.passes_on = self.user_interrupted and callable(self._previous)
        finally:
            if not self.done.done():
                self.done.set_result(None)
        return True

    def pass_on_interrupt(self) -> None:
        """After the job: hand the user's interrupt to the handler that was there before (the waiting cell's).

        A handler that raises (``KeyboardInterrupt`` from Python's default one) raises here,
        after :attr:`done` is resolved, so the tool's result is kept before the cell stops.
        """
        previous, self._previous = self._previous, None
        if self.passes_on and callable(previous):
            previous(signal.SIGINT, None)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        with self._lock:
            self._in_code = True
            stop_now = self.reason is not None  # asked to stop before the code began
        try:
            if stop_now:
                raise self._interrupt()
            yield
        finally:
            with self._lock:
                self._in_code = False

    def _on_sigint(self, _signum: int, _frame: Any) -> None:
        # No lock here: the handler runs between bytecodes of this same thread, which may hold it.
        if self._landed < self._sent:
            self._landed += 1
        else:
            self.user_interrupted = True
        if self._in_code:
            raise self._interrupt()

    def _let_signals_land(self) -> None:
        """Wait (briefly) until every SIGINT this job sent has reached its handler, before the old handler is back."""
        deadline = time.monotonic() + _LANDING_WAIT_S
        while self._landed < self._sent and time.monotonic() < deadline:
            time.sleep(0.001)  # a pending signal interrupts the sleep and runs the handler


def async_raise(thread_id: int, exc: type[BaseException]) -> bool:
    """Ask thread ``thread_id`` to raise ``exc`` at its next bytecode; True if the request was placed."""
    n = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))
    if n > 1:  # should never happen; undo rather than hit the wrong thread
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)
        return False
    return n == 1
