"""Running agents from a kernel: one private event loop in a thread, blocking or in the background.

A ``%%pi`` cell blocks by default (DESIGN decision 5): it submits the run to the loop thread
and waits, in short slices so that the kernel's interrupt (SIGINT, the notebook's stop
button) reaches the waiting main thread as ``KeyboardInterrupt``. The run is then aborted,
the partial answer persisted as ``aborted``, and the interrupt re-raised so "Run All" stops
like it does for any interrupted cell; the kernel stays usable. ``--background`` returns a
:class:`BackgroundRun` at once: await it, or call ``result()`` / ``abort()``.

The loop thread is why the widget can stream while the cell is blocked: events are
produced there and ipykernel's iopub channel accepts messages from any thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_POLL_S = 0.05


class KernelRunner:
    """A daemon thread running an asyncio loop for agent work."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._main_calls: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.Queue()
        self._waiting = 0

    @property
    def blocking(self) -> bool:
        """True while a cell's main thread waits for a run (so it can answer :meth:`ask_main`)."""
        return self._waiting > 0

    async def ask_main(self, fn: Callable[[], T]) -> T:
        """From the loop thread: run ``fn`` on the waiting main thread (e.g. ``input()``) and return its value.

        Raises ``RuntimeError`` when no cell is waiting (a background run cannot ask).
        """
        if not self.blocking:
            raise RuntimeError("no cell is waiting to answer (a background run cannot ask the user)")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._main_calls.put((fn, future))
        return await asyncio.wrap_future(future)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop, started on first use."""
        with self._lock:
            if self._loop is None or not self._loop.is_running():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="pi-jupyter-agents", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn: Callable[[], T]) -> T:
        """Run a plain function on the loop thread and wait for it."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return future.result()

    def wait(self, future: concurrent.futures.Future[T], on_interrupt: Callable[[], None], grace_s: float = 30.0) -> T:
        """Wait for ``future``; on ``KeyboardInterrupt`` call ``on_interrupt``, let the run finish, re-raise."""
        self._waiting += 1
        try:
            while True:
                try:
                    return future.result(timeout=_POLL_S)
                except concurrent.futures.TimeoutError:
                    self._serve_main_calls()
        except KeyboardInterrupt:
            on_interrupt()
            try:
                future.result(timeout=grace_s)
            except concurrent.futures.TimeoutError:
                future.cancel()
            except BaseException:  # noqa: BLE001 - the run's own failure is reported by the run
                pass
            raise
        finally:
            self._waiting -= 1

    def _serve_main_calls(self) -> None:
        while True:
            try:
                fn, answer = self._main_calls.get_nowait()
            except queue.Empty:
                return
            try:
                answer.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed back to the asking coroutine
                answer.set_exception(exc)
                if isinstance(exc, KeyboardInterrupt):
                    raise


class BackgroundRun:
    """A run started with ``--background``: ``await run``, ``run.result()``, ``run.abort()``, ``run.done``."""

    def __init__(self, future: concurrent.futures.Future[Any], abort: Callable[[], None], label: str) -> None:
        self._future = future
        self._abort = abort
        self.label = label

    @property
    def done(self) -> bool:
        """True once the run has finished (or failed)."""
        return self._future.done()

    def abort(self) -> None:
        """Stop the run; its partial answer is kept as ``aborted``."""
        self._abort()

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the run (``timeout`` seconds at most) and return its result."""
        return self._future.result(timeout=timeout)

    def __await__(self) -> Any:
        return asyncio.wrap_future(self._future).__await__()

    def add_done_callback(self, fn: Callable[[BackgroundRun], None]) -> None:
        """Call ``fn(self)`` when the run finishes."""
        self._future.add_done_callback(lambda _f: fn(self))

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        return f"<BackgroundRun {self.label} ({state}); await it, or .result(), .abort()>"
