"""The kernel's main thread as the place the agent's python code runs (:class:`KernelMainThread`).

The agent's loop runs on a thread of its own (:mod:`.runner`); the python tool hands its code
here as a :class:`~pi_jupyter.agent.toolbox.main_thread.MainThreadJob`, and the job runs on the
main thread, where the user's cells run, at the first moment the main thread is free for it:

- a blocking ``%%pi`` cell waits for its run: awaiting on the kernel's loop (ipykernel 7), the
  job is a callback of that loop; waiting synchronously (older kernels, ``%autoawait`` off, a
  terminal IPython), the waiting cell runs it (:meth:`KernelRunner.post_main`);
- a ``--background`` run, while no cell runs: a callback of the kernel's loop, at once;
- a ``--background`` run while the user's cell runs: the job waits for the cell to end (the
  tool's card says so after a second), and runs before the next cell;
- a cell that waits for a background run (``await run``, ``run.result()``) lends it the main
  thread, as a blocking ``%%pi`` cell does.

Jobs run one at a time, in the order they came: the calls of a grid's branches take turns. Where
no kernel loop is known and no cell waits (a terminal IPython between prompts) :meth:`submit`
declines, and the tool runs the code on a worker thread as in a plain script.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ..agent.toolbox.main_thread import MainThreadJob
from .runner import KernelRunner

__all__ = ["KernelMainThread"]

_RETRY_S = 0.05  # how often a job that waits for a user's cell looks again


class KernelMainThread:
    """Runs python-tool jobs on the kernel's main thread (``tool_extra["main_thread"]``)."""

    def __init__(self, runner: KernelRunner, shell: Any) -> None:
        self._runner = runner
        self._kernel = getattr(shell, "kernel", None) if shell is not None else None
        self._loop = _kernel_loop(self._kernel)
        self._current: MainThreadJob | None = None

    def submit(self, job: MainThreadJob) -> bool:
        """Queue ``job`` for the main thread (see the module notes); ``False`` when nothing there can run it."""
        loop = self._loop if self._loop is not None and not self._loop.is_closed() else None
        blocking = self._runner.blocking
        if loop is None and not blocking:
            return False
        if blocking or loop is None:
            self._runner.post_main(lambda: self._run(job))  # a cell waiting synchronously runs it
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._from_loop, job)
            except RuntimeError:  # the kernel's loop has closed: a waiting cell is the only way left
                if not blocking:
                    return False
        return True

    def busy_with(self) -> str:
        """What keeps a queued job from starting: ``"a cell"``, ``"another python call"`` or ``""``."""
        if self._current is not None:
            return "another python call"
        if self._cell_running():
            return "a cell"
        return ""

    def _run(self, job: MainThreadJob) -> None:
        """On the main thread: run ``job`` unless it has run or was cancelled, then pass the user's interrupt on."""
        self._current = job
        try:
            ran = job.run_here()
        finally:
            self._current = None
        if ran:
            job.pass_on_interrupt()  # may raise KeyboardInterrupt into the waiting cell, which stops its run

    def _from_loop(self, job: MainThreadJob) -> None:
        """A callback of the kernel's loop: run ``job`` now, or look again once the user's cell has ended."""
        if job.started or job.done.done():
            return
        if self._cell_running() and not self._runner.blocking:
            assert self._loop is not None
            self._loop.call_later(_RETRY_S, self._from_loop, job)
            return
        try:
            self._run(job)
        except KeyboardInterrupt:  # the interrupt was for the code, which has stopped; the loop must go on
            pass

    def _cell_running(self) -> bool:
        """True while the kernel executes a cell (ipykernel 7 holds its main lock meanwhile)."""
        lock = getattr(self._kernel, "_main_asyncio_lock", None)
        return bool(lock is not None and lock.locked())


def _kernel_loop(kernel: Any) -> asyncio.AbstractEventLoop | None:
    """The asyncio loop the kernel's main thread runs (``None`` outside a kernel)."""
    io_loop = getattr(kernel, "io_loop", None)
    loop = getattr(io_loop, "asyncio_loop", None)
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop
    if threading.current_thread() is threading.main_thread():
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None
    return None
