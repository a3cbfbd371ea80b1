"""Running agents from a kernel: one private event loop in a thread, blocking or in the background.

A ``%%pi`` cell blocks by default (DESIGN decision 5): it submits the run to the loop thread
and waits. In a kernel the cell awaits the run on the kernel's own loop
(:meth:`KernelRunner.wait_async`, see :mod:`.async_cell`), so the kernel still handles widget
messages (the Stop button) while the cell blocks; elsewhere it waits in short slices
(:meth:`KernelRunner.wait`). Either way the kernel's interrupt aborts the run, the partial
answer is persisted as ``aborted``, and the cell ends in a two-line :class:`RunStopped` error
(not a traceback through the threading machinery), so "Run All" stops as it does for any
interrupted cell; the kernel stays usable. ``--background`` returns a :class:`BackgroundRun`
at once: await it, or call ``result()`` / ``abort()``.

The loop thread is why the widget can stream while the cell is blocked: events are
produced there and ipykernel's iopub channel accepts messages from any thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_POLL_S = 0.05


class RunStopped(Exception):
    """A blocking run stopped by the user (interrupt or Stop): the cell ends in this short error.

    IPython shows :meth:`_render_traceback_` instead of a traceback.
    """

    def __init__(self, entry_id: str | None = None, reason: str = "interrupted", where: str | None = None) -> None:
        self.entry_id = entry_id
        self.reason = reason
        # ``where``: what became of the run when it is not one answer (a grid says how its branches ended)
        if where is None:
            where = f"the partial answer is kept as entry {entry_id} (stopReason aborted)" if entry_id else "nothing was answered yet"
        super().__init__(f"Run stopped ({reason}): {where}.")

    @classmethod
    def of(cls, result: Any, reason: str = "interrupted") -> RunStopped:
        """The error for a run that ended with ``result`` (a run result, an exception or ``None``)."""
        ids = getattr(result, "entry_ids", None) or []
        return cls(ids[-1] if ids else None, reason)

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[1;31mRunStopped\x1b[0m: {self}", "The cell ends in error so that Run All stops here; the kernel is ready."]


def _settle(future: concurrent.futures.Future[Any], grace_s: float) -> Any:
    """The run's result once it has wound down after an abort (``None`` if it failed or took too long)."""
    try:
        return future.result(timeout=grace_s)
    except concurrent.futures.TimeoutError:
        future.cancel()
    except BaseException:  # noqa: BLE001 - the run's own failure is reported by the run
        pass
    return None


class KernelRunner:
    """A daemon thread running an asyncio loop for agent work."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._main_calls: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.Queue()
        self._waiting = 0
        self._wake = threading.Event()  # set when a call for the main thread is queued, or a waited run ends
        self._async_wakers: set[Callable[..., None]] = set()  # the same, for waiters on the kernel's loop
        self._servers: list[Callable[[], None]] = []  # more work a waiting main thread does (python-tool jobs)

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
        return await asyncio.wrap_future(self.post_main(fn))

    def post_main(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """From any thread: have ``fn`` run by the main thread while it waits for a run (:meth:`wait`, :meth:`wait_async`)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._main_calls.put((fn, future))
        self.wake()
        return future

    def add_server(self, serve: Callable[[], None]) -> None:
        """Have a waiting main thread call ``serve()`` each time it is woken (:meth:`wake`), in the waiting cell's context."""
        if serve not in self._servers:
            self._servers.append(serve)

    def wake(self) -> None:
        """From any thread: wake the main thread if it waits for a run, so it serves what was queued for it."""
        self._wake.set()
        for poke in list(self._async_wakers):
            poke()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Count the calling (main) thread as waiting for agent work while the block runs: it serves :meth:`post_main`."""
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1

    def block_on(self, future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
        """Wait for ``future`` on the main thread, serving what is queued for it meanwhile (e.g. ``BackgroundRun.result()``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        future.add_done_callback(lambda _f: self._wake.set())
        with self.waiting():
            while not future.done():
                left = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
                if left <= 0:
                    raise concurrent.futures.TimeoutError()
                self._wake.wait(left)  # woken at once by work for the main thread, or by the end of the run
                self._wake.clear()
                self._serve_main_calls()
        return future.result()

    async def serve_until(self, future: concurrent.futures.Future[Any]) -> None:
        """On the kernel's loop: wait until ``future`` is done, serving what is queued for the main thread meanwhile."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def poke(*_args: Any) -> None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the kernel's loop is closed: nobody waits any more
                pass

        future.add_done_callback(poke)
        self._async_wakers.add(poke)
        try:
            with self.waiting():
                while not future.done():
                    try:
                        await asyncio.wait_for(wake.wait(), _POLL_S)
                    except asyncio.TimeoutError:
                        pass
                    wake.clear()
                    self._serve_main_calls()
        finally:
            self._async_wakers.discard(poke)

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

    def wait(
        self,
        future: concurrent.futures.Future[T],
        on_interrupt: Callable[[], None],
        grace_s: float = 30.0,
        stopped_error: Callable[[Any, str], RunStopped] = RunStopped.of,
    ) -> T:
        """Wait for ``future``; on ``KeyboardInterrupt`` call ``on_interrupt``, let the run wind down, raise :class:`RunStopped`.

        ``stopped_error(result, reason)`` makes that error from the wound-down run's result.
        """
        try:
            return self.block_on(future)
        except KeyboardInterrupt:
            on_interrupt()
            raise stopped_error(_settle(future, grace_s), "interrupted") from None

    async def wait_async(
        self,
        future: concurrent.futures.Future[T],
        on_interrupt: Callable[[], None],
        grace_s: float = 30.0,
        stopped_error: Callable[[Any, str], RunStopped] = RunStopped.of,
    ) -> T:
        """:meth:`wait` for a coroutine on the kernel's loop: the loop keeps serving the kernel (widget messages) meanwhile.

        The kernel turns an interrupt of an awaiting cell into cancellation; either way the
        run is aborted and :class:`RunStopped` raised.
        """
        try:
            await self.serve_until(future)
        except (asyncio.CancelledError, KeyboardInterrupt):
            on_interrupt()
            raise stopped_error(_settle(future, grace_s), "interrupted") from None
        return future.result()

    def _serve_main_calls(self) -> None:
        for serve in list(self._servers):
            serve()
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


class PendingRun:
    """A blocking run its cell has yet to wait for: synchronously (:meth:`wait`) or on the kernel's loop (:meth:`wait_async`).

    ``finish(result)`` gives the cell's value; ``stopped()`` says whether the user pressed
    Stop, in which case the cell ends in :class:`RunStopped` as an interrupted cell does
    (``stopped_error(result, reason)`` makes that error; default :meth:`RunStopped.of`).
    """

    def __init__(
        self,
        runner: KernelRunner,
        future: concurrent.futures.Future[Any],
        abort: Callable[[], None],
        finish: Callable[[Any], Any],
        stopped: Callable[[], bool] = lambda: False,
        stopped_error: Callable[[Any, str], RunStopped] = RunStopped.of,
    ) -> None:
        self._error = stopped_error
        self._runner = runner
        self._future = future
        self._abort = abort
        self._finish = finish
        self._stopped = stopped

    def wait(self) -> Any:
        """Block the calling thread until the run ends; returns the cell's value."""
        return self._done(self._runner.wait(self._future, on_interrupt=self._abort, stopped_error=self._error))

    async def wait_async(self) -> Any:
        """Await the run on the running loop (the kernel keeps handling messages); returns the cell's value."""
        return self._done(await self._runner.wait_async(self._future, on_interrupt=self._abort, stopped_error=self._error))

    def _done(self, result: Any) -> Any:
        if self._stopped():
            raise self._error(result, "Stop was pressed")
        return self._finish(result)


class BackgroundRun:
    """A run started with ``--background``: ``await run``, ``run.result()``, ``run.abort()``, ``run.done``."""

    def __init__(
        self,
        future: concurrent.futures.Future[Any],
        abort: Callable[[], None],
        label: str,
        stopped: Callable[[], bool] | None = None,
        runner: KernelRunner | None = None,
    ) -> None:
        self._future = future
        self._abort = abort
        self.label = label
        self._was_stopped = stopped  # for a run whose result does not say (a grid's result has no stop reason)
        self._runner = runner  # a cell that waits for the run lends the main thread to its python calls

    @property
    def done(self) -> bool:
        """True once the run has finished (or failed)."""
        return self._future.done()

    def abort(self) -> None:
        """Stop the run; its partial answer is kept as ``aborted``."""
        self._abort()

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the run (``timeout`` seconds at most) and return its result.

        On the kernel's main thread the wait runs the agent's python calls meanwhile (they run
        there, where the user's cells run), so waiting for a run never blocks the run.
        """
        if self._runner is not None and threading.current_thread() is threading.main_thread():
            return self._runner.block_on(self._future, timeout)
        return self._future.result(timeout=timeout)

    def __await__(self) -> Any:
        return self._wait().__await__()

    async def _wait(self) -> Any:
        if self._runner is not None and threading.current_thread() is threading.main_thread():
            await self._runner.serve_until(self._future)  # the awaiting cell lends the main thread to the run's python calls
        return await asyncio.wrap_future(self._future)

    def add_done_callback(self, fn: Callable[[BackgroundRun], None]) -> None:
        """Call ``fn(self)`` when the run finishes."""
        self._future.add_done_callback(lambda _f: fn(self))

    def _ipython_display_(self) -> None:
        # shown with a display id, so the line says "stopped" or "done" once the run ends instead of "running" forever
        from IPython.display import display

        handle = display({"text/plain": repr(self)}, raw=True, display_id=True)
        if handle is not None:
            self.add_done_callback(lambda run: handle.update({"text/plain": repr(run)}, raw=True))

    def __repr__(self) -> str:
        if not self.done:
            state = "running"
        else:  # only once done: _stopped waits for the future
            stopped = self._was_stopped() if self._was_stopped is not None else _stopped(self._future)
            state = "stopped" if stopped else "done"
        return f"<BackgroundRun {self.label} ({state}); await it, or .result(), .abort()>"


def _stopped(future: concurrent.futures.Future[Any]) -> bool:
    if future.cancelled():
        return True
    if future.exception() is not None:
        return False
    return getattr(future.result(), "stop_reason", None) == "aborted"
