"""A Dask ``distributed`` executor: branches run on workers that append to a shared session file.

Install the extra (``pip install 'pi-jupyter[dask]'``) and point it at a scheduler::

    result = await experiment(session, prompt, vary=..., executor=DaskExecutor("tcp://scheduler:8786"))

Each task runs one branch: the worker opens the session file (once per worker thread), reads
what others appended, runs the branch with its own :class:`~pi_jupyter.agent.Agent`, and
appends through the store, whose ``flock`` serializes every writer on every machine. The
file must therefore sit on a folder all workers share **with working ``flock``**: a local
disk (workers on one machine), NFSv4 (Linux maps ``flock`` to NFS byte-range locks), CephFS,
GPFS and Lustre (mounted with ``flock``) do; SMB/CIFS without ``nobrl``-free mounts, sshfs
and object-store mounts (s3fs, gcsfuse) do not, and must not be used. API keys come from
the workers' environment; nothing secret is sent with a task. The rate limiter is per worker
thread (calls to one provider are limited per worker, not across the cluster); scores are
computed back in the kernel.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any

from .executors import Job
from .runner import BranchOutcome, BranchSpec

_local = threading.local()


def _worker_session(path: str) -> Any:
    from ..session import Session

    cache: dict[str, Any] = getattr(_local, "sessions", None) or {}
    _local.sessions = cache
    session = cache.get(path)
    if session is None:
        session = cache[path] = Session.open(path)
    else:
        session.refresh()
    return session


def run_on_worker(path: str, spec_data: dict[str, Any]) -> dict[str, Any]:
    """The task a worker runs: one branch on the shared session file; returns the outcome as a dict."""
    from .. import providers
    from .limiter import RateLimiter
    from .runner import run_branch

    spec = BranchSpec.model_validate(spec_data)
    session = _worker_session(path)
    limiter = getattr(_local, "limiter", None) or RateLimiter()
    _local.limiter = limiter
    outcome = asyncio.run(run_branch(session, spec, stream=limiter.wrap(providers.stream)))
    session.sync()
    return outcome.model_dump()


class DaskExecutor:
    """Run branches on a Dask cluster: ``client`` (a ``distributed.Client``) or ``address`` of a scheduler."""

    def __init__(self, address: str | None = None, *, client: Any = None) -> None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ImportError("the Dask executor needs the 'dask' extra: pip install 'pi-jupyter[dask]'") from None
        self._client = client
        self._address = address

    async def run(self, job: Job) -> None:
        """Submit branches in grid order, at most ``job.concurrency`` at once; collect outcomes as they finish."""
        from distributed import Client, wait

        if job.session_path is None:
            raise ValueError("the Dask executor needs a session file on a shared folder (not an in-memory session)")
        client = self._client or Client(self._address)
        pending = deque(job.specs)
        running: dict[Any, BranchSpec] = {}
        try:
            while pending or running:
                while pending and len(running) < job.concurrency:
                    spec = pending.popleft()
                    reason = job.skip_reason(spec)
                    if reason is not None:
                        job.skip(spec, reason)
                        continue
                    job.launched(spec)
                    future = client.submit(run_on_worker, job.session_path, spec.model_dump(), pure=False)
                    running[future] = spec
                if not running:
                    continue
                done = await asyncio.to_thread(lambda: wait(list(running), return_when="FIRST_COMPLETED").done)
                for future in done:
                    spec = running.pop(future)
                    try:
                        outcome = BranchOutcome.model_validate(future.result())
                    except Exception as exc:  # noqa: BLE001 - a lost worker is a failed branch, not a failed grid
                        outcome = BranchOutcome(index=spec.variant.index, state="failed", error=f"worker: {type(exc).__name__}: {exc}")
                    await job.finished(outcome)
        finally:
            if self._client is None:
                client.close()
