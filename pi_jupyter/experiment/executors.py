"""Executors: where the branches of a grid run. The interface, and the local asyncio one.

An executor gets a :class:`Job` and runs its branches, asking the job before each launch
(the budget or a Stop may say no) and telling it each outcome. The local executor runs them
as asyncio tasks in this process (model calls are I/O-bound, so one kernel drives hundreds
at once); :class:`~pi_jupyter.experiment.dask_executor.DaskExecutor` sends them to Dask workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from .runner import BranchOutcome, BranchSpec


class Job(Protocol):
    """What an executor is given (implemented by :class:`~pi_jupyter.experiment.core.Experiment`)."""

    specs: list[BranchSpec]
    concurrency: int
    rate_limit: float | None
    """Requests per second to each provider for the whole grid (``None``: no limit)."""

    @property
    def session_path(self) -> str | None:
        """The session file the branches append to (``None`` for a session held in memory)."""

    def skip_reason(self, spec: BranchSpec) -> str | None:
        """Why ``spec`` must not be launched now (budget spent, stopped), or ``None`` to launch it."""

    def skip(self, spec: BranchSpec, reason: str) -> None:
        """Record that ``spec`` was not run."""

    def launched(self, spec: BranchSpec) -> None:
        """``spec`` is starting (on a worker, for a remote executor)."""

    def run_here(self, spec: BranchSpec) -> Awaitable[BranchOutcome]:
        """Run ``spec`` in this process (the local path)."""

    async def finished(self, outcome: BranchOutcome) -> None:
        """A branch ended (its entries are in the session file)."""

    @property
    def stopped(self) -> bool:
        """True once Stop was pressed: running branches are to be aborted (a remote executor passes it on)."""

    def watch(self) -> None:
        """Update the running branches' live state from the session file (a remote executor calls it while it waits)."""


@runtime_checkable
class Executor(Protocol):
    """Runs the branches of a job; :class:`LocalExecutor` is the default.

    It may also have ``prepare(job)`` (called before anything is written: a check that fails
    there leaves the session untouched) and ``close()`` (called when the grid ends).
    """

    async def run(self, job: Job) -> None:
        """Run every branch of ``job`` (or skip it when the job says so)."""


class LocalExecutor:
    """Branches as asyncio tasks in this process, at most ``job.concurrency`` at once, launched in grid order."""

    async def run(self, job: Job) -> None:
        """Run the job's branches here."""
        gate = asyncio.Semaphore(job.concurrency)  # FIFO: branches start in grid order

        async def one(spec: BranchSpec) -> None:
            async with gate:
                reason = job.skip_reason(spec)
                if reason is not None:
                    job.skip(spec, reason)
                    return
                job.launched(spec)
                outcome = await job.run_here(spec)
                await job.finished(outcome)

        await asyncio.gather(*(one(spec) for spec in job.specs))


Runner = Callable[[BranchSpec], Awaitable[BranchOutcome]]
