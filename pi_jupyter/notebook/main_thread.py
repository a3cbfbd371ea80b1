"""The kernel's main thread as the place the agent's python code runs (:class:`KernelMainThread`).

The agent's loop runs on a thread of its own (:mod:`.runner`); the python tool hands its code
here as a :class:`~pi_jupyter.agent.toolbox.main_thread.MainThreadJob`, and the job runs on the
main thread, where the user's cells run, at the first moment the main thread is free for it:

- a cell that waits for a run (a blocking ``%%pi`` cell, awaiting on the kernel's loop or
  waiting synchronously; ``await run`` or ``run.result()`` of a background run) runs the job
  itself, inside the cell;
- a ``--background`` run while no cell runs: the job is a callback of the kernel's loop, at
  once, in a copy of the context the last cell ended with;
- a ``--background`` run while the user's cell runs: the job waits for the cell to end (the
  tool's card says so after a second), and runs before the next cell.

Settings kept in context variables (numpy's error state, the ``decimal`` context) are the
user's too. ipykernel runs plain cells in one lasting context and each cell that awaits (a
blocking ``%%pi`` cell is one) in a copy of it, so what the code sets there would end with the
cell: the variables a job set are set again in the lasting context when the cell ends
(``post_run_cell``, which ipykernel runs there), and at the start of the next cell when the job
ran between cells; a value the user's own cell set meanwhile is never overwritten.

Jobs run one at a time, in the order they came: the calls of several agents, and of a grid's
branches, take turns. Where no kernel loop is known and no cell waits (a terminal IPython
between prompts) :meth:`KernelMainThread.submit` declines, and the tool runs the code on a
worker thread as in a plain script.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import threading
from typing import Any

from ..agent.toolbox.main_thread import MainThreadJob
from .runner import KernelRunner

__all__ = ["KernelMainThread"]

_RETRY_S = 0.05  # how often jobs that wait for a user's cell look again
_KERNEL_VARS = frozenset({"parent_header", "shell_parent", "shell_parent_ident"})  # ipykernel's own: never carried over
_CHANGED_IN_PLACE = frozenset({"decimal_context"})  # settings objects code changes without setting the variable
_UNSET = object()


class KernelMainThread:
    """Runs python-tool jobs on the kernel's main thread (``tool_extra["main_thread"]``)."""

    def __init__(self, runner: KernelRunner, shell: Any) -> None:
        self._runner = runner
        self._shell = shell
        self._kernel = getattr(shell, "kernel", None) if shell is not None else None
        self._loop = _kernel_loop(self._kernel)
        self._pending: collections.deque[MainThreadJob] = collections.deque()
        self._lock = threading.Lock()
        self._current: MainThreadJob | None = None
        self._retrying = False
        self._context: contextvars.Context | None = None  # a copy of the context the last cell ended with
        self._carried: dict[contextvars.ContextVar[Any], Any] = {}  # context variables jobs set, for the lasting context
        self._applied: dict[contextvars.ContextVar[Any], Any] = {}  # their values before this cell's start set them
        runner.add_server(self._serve)
        events = getattr(shell, "events", None)
        if events is not None:
            events.register("pre_run_cell", self._carry_over)
            events.register("post_run_cell", self._remember_context)

    def close(self) -> None:
        """Stop following the shell's cells (``%unload_ext``)."""
        events = getattr(self._shell, "events", None)
        for name, fn in (("pre_run_cell", self._carry_over), ("post_run_cell", self._remember_context)):
            try:
                if events is not None:
                    events.unregister(name, fn)
            except ValueError:
                pass

    # ------------------------------------------------------------ from the agent's thread

    def submit(self, job: MainThreadJob) -> bool:
        """Queue ``job`` for the main thread (see the module notes); ``False`` when nothing there can run it."""
        loop = self._loop if self._loop is not None and not self._loop.is_closed() else None
        if loop is None and not self._runner.blocking:
            return False
        with self._lock:
            self._pending.append(job)
        self._runner.wake()  # a cell that waits runs it
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._from_loop)
            except RuntimeError:  # the kernel's loop has closed: only a waiting cell can run it
                pass
        return True

    def busy_with(self) -> str:
        """What keeps a queued job from starting: ``"a cell"``, ``"another python call"`` or ``""``."""
        if self._current is not None:
            return "another python call"
        if self._cell_running():
            return "a cell"
        return ""

    # ------------------------------------------------------------ on the main thread

    def _serve(self) -> None:
        """Run the queued jobs, in the calling (waiting) cell's own context."""
        while (job := self._next()) is not None:
            self._run(job)

    def _from_loop(self, retry: bool = False) -> None:
        """A callback of the kernel's loop: run the queued jobs now, or look again once the user's cell has ended."""
        if retry:
            self._retrying = False
        if not self._pending:
            return
        if self._runner.blocking or self._cell_running():  # the waiting cell serves them, or they wait for the cell
            if not self._retrying and self._loop is not None:
                self._retrying = True  # one look-again at a time, however many jobs wait
                self._loop.call_later(_RETRY_S, self._from_loop, True)
            return
        context = (self._context or contextvars.copy_context()).copy()
        try:
            context.run(self._serve)
        except KeyboardInterrupt:  # the interrupt was for the code, which has stopped; the loop must go on
            pass
        self._context = context  # the next background job starts where this one left the settings

    def _next(self) -> MainThreadJob | None:
        with self._lock:
            while self._pending:
                job = self._pending.popleft()
                if not job.started and not job.done.done():
                    return job
        return None

    def _run(self, job: MainThreadJob) -> None:
        """Run ``job`` here, note the context variables it set, then pass the user's interrupt on (into the waiting cell)."""
        self._current = job
        before = dict(contextvars.copy_context().items())
        try:
            ran = job.run_here()
        finally:
            self._current = None
            for var, value in contextvars.copy_context().items():
                changed = before.get(var, _UNSET) is not value or var.name in _CHANGED_IN_PLACE
                if changed and var.name not in _KERNEL_VARS:
                    self._carried[var] = value
        if ran:
            job.pass_on_interrupt()

    def _carry_over(self, *_args: Any) -> None:
        """``pre_run_cell``: what background jobs set since the last cell holds in this one."""
        self._applied = {var: var.get(_UNSET) for var in self._carried}
        for var, value in self._carried.items():
            var.set(value)

    def _remember_context(self, *_args: Any) -> None:
        """``post_run_cell`` (in the kernel's lasting context): the jobs' settings land there, and background jobs start from it."""
        carried, self._carried = self._carried, {}
        applied, self._applied = self._applied, {}
        for var, value in carried.items():
            if var in applied and var.get(_UNSET) is not applied[var] and var.get(_UNSET) is not value:
                continue  # the cell set it itself after the job: the user's value stands
            var.set(value)
        self._context = contextvars.copy_context()

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
