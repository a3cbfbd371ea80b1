"""A Dask ``distributed`` executor: branches run on workers that append to a shared session file.

Install the extra (``pip install 'pi-jupyter[dask]'``) and point it at a scheduler, or let it
start a ``LocalCluster`` on this machine (kept for the kernel's life and reused)::

    result = await experiment(session, prompt, vary=..., executor=DaskExecutor("tcp://scheduler:8786"))
    result = await experiment(session, prompt, vary=..., executor="dask")          # a LocalCluster

Each task runs one branch: the worker opens the session file (once per worker thread), reads
what others appended, runs the branch with its own :class:`~pi_jupyter.agent.Agent`, and
appends through the store, whose ``flock`` serializes every writer on every machine. The
file must therefore sit on a folder all workers share **with working ``flock``**: a local
disk (workers on one machine), NFSv4 (Linux maps ``flock`` to NFS byte-range locks), CephFS,
GPFS and Lustre (mounted with ``flock``) do; SMB/CIFS without ``nobrl``-free mounts, sshfs
and object-store mounts (s3fs, gcsfuse) do not, and must not be used. Before the first
branch, every worker is asked whether it sees the same file; one that does not is a one-line
error and nothing runs. API keys come from the workers' environment; nothing secret is sent
with a task. Calls to one provider share one rate limit and one ``Retry-After`` pause across
the cluster (:mod:`.cluster_limit`); scores are computed back in the kernel.

While the grid runs the kernel reads the file every second, so the live view shows each
remote branch's tokens, cost and answer as its messages land; Stop sets a ``distributed.Event``
that every worker's running branch watches (it is aborted, its partial answer kept).

A worker that dies mid-branch: its branch is **marked failed, never run again** (Dask would
otherwise retry the task elsewhere and pay for the branch twice, and a branch that took its
worker down would likely take the next one down too). The rerun Dask schedules finds the
branch's start in the file and only writes its end record (``failed``, "its worker was
lost"); if Dask gives up on the task, the kernel writes that record instead. The partial
entries stay in the file and the table agrees with it.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import time
from collections import deque
from functools import partial
from typing import Any

from .cluster_limit import ClusterLimiter
from .executors import Job
from .runner import BranchOutcome, BranchSpec

_local = threading.local()
_cluster_lock = threading.Lock()
_cluster: dict[str, Any] = {}

LOCAL_WORKERS = 4
"""At most this many worker processes in the LocalCluster ``executor="dask"`` starts (fewer on fewer cores)."""

LOST = "its worker was lost mid-branch; not run again (its partial entries are kept)"


class ExecutorError(ValueError):
    """The cluster cannot run the grid (no scheduler answers, a worker cannot see the session file): one line, nothing written."""


def local_cluster() -> Any:
    """A ``distributed.Client`` of this process's LocalCluster, started on first use and reused."""
    with _cluster_lock:
        client = _cluster.get("client")
        if client is not None and client.status == "running":
            return client
        from distributed import Client, LocalCluster

        from .variants import DEFAULT_CONCURRENCY

        workers = max(1, min(LOCAL_WORKERS, os.cpu_count() or 1))
        threads = -(-DEFAULT_CONCURRENCY // workers)  # a branch holds a thread while it waits on its model: room for the default
        cluster = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=":0", silence_logs=40)
        client = Client(cluster)
        _cluster.update(cluster=cluster, client=client)
        atexit.register(_close_local_cluster)
        return client


def _close_local_cluster() -> None:
    client, cluster = _cluster.pop("client", None), _cluster.pop("cluster", None)
    for thing in (client, cluster):
        try:
            if thing is not None:
                thing.close()
        except Exception:  # noqa: BLE001 - closing at exit: nothing to tell
            pass


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


def session_identity(path: str) -> str:
    """What a worker must find at ``path``: the session's id (its header line), or why it cannot."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(65536)
    except FileNotFoundError:
        return "no such file there"
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    import json

    try:
        header = json.loads(first)
    except ValueError:
        return "the file there is not a session file"
    return f"session {header.get('id')}" if isinstance(header, dict) else "the file there is not a session file"


def run_on_worker(path: str, spec_data: dict[str, Any], limiter: ClusterLimiter | None = None, stop: str | None = None) -> dict[str, Any]:
    """The task a worker runs: one branch on the shared session file; returns the outcome as a dict.

    A branch the file shows as started already (its worker died and Dask scheduled it again)
    is not run again: its end record is written (failed, :data:`LOST`) and that is the outcome."""
    from .. import providers
    from .limiter import RateLimiter
    from .runner import mark_lost, run_branch

    spec = BranchSpec.model_validate(spec_data)
    if not os.path.exists(path):
        where = _worker_address()
        error = f"worker {where} cannot see the session file {path}; the session folder must be shared with every worker"
        return BranchOutcome(index=spec.variant.index, state="skipped", error=error).model_dump()
    session = _worker_session(path)
    from .records import started_branch

    if started_branch(session, spec.start, spec.experiment, spec.variant.index) is not None:
        leaf = mark_lost(session, spec, LOST)
        session.sync()
        return BranchOutcome(index=spec.variant.index, state="failed", leaf=leaf, error=LOST).model_dump()
    client = _worker_client()
    event = _stop_event(stop, client)
    if event is not None and event.is_set():
        return BranchOutcome(index=spec.variant.index, state="skipped", error="stopped").model_dump()
    local = getattr(_local, "limiter", None) or RateLimiter()
    _local.limiter = local
    stream = providers.stream
    if limiter is not None and client is not None:
        stream = limiter.bind(client).wrap(stream)

    async def main() -> BranchOutcome:
        aborts: list[Any] = []
        watcher = asyncio.ensure_future(_watch_stop(event, aborts)) if event is not None else None
        try:
            return await run_branch(session, spec, stream=local.wrap(stream), register_abort=aborts.append)
        finally:
            if watcher is not None:
                watcher.cancel()

    outcome = asyncio.run(main())
    session.sync()
    return outcome.model_dump()


def _worker_client() -> Any:
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "?"


def _stop_event(name: str | None, client: Any) -> Any:
    if name is None or client is None:
        return None
    from distributed import Event

    return Event(name, client=client)


async def _watch_stop(event: Any, aborts: list[Any]) -> None:
    """Abort the branch once the kernel's Stop sets the grid's event."""
    while True:
        await asyncio.sleep(0.5)
        if await asyncio.to_thread(event.is_set):
            for abort in aborts:
                abort()
            return


class DaskExecutor:
    """Run branches on a Dask cluster: ``client`` (a ``distributed.Client``), the ``address`` of a
    scheduler (``tcp://host:8786``), or neither for this machine's LocalCluster (started once, reused).

    ``connect_timeout``: seconds to wait for the scheduler. ``rate``: requests per second per
    provider for the whole cluster (``None``: no rate; a ``Retry-After`` still pauses every worker).
    """

    def __init__(self, address: str | None = None, *, client: Any = None, connect_timeout: float = 10.0, rate: float | None = None) -> None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ImportError("the Dask executor needs the 'dask' extra: pip install 'pi-jupyter[dask]'") from None
        self._client = client
        self._own: Any = None
        self._address = address
        self._timeout = connect_timeout
        self.rate = rate
        self._checked: set[str] = set()

    def connect(self) -> Any:
        """The client (connected on first use); a scheduler that does not answer is an :class:`ExecutorError`."""
        if self._client is not None:
            return self._client
        if self._own is None:
            if not self._address:
                self._own = local_cluster()
                return self._own
            from distributed import Client

            try:
                self._own = Client(self._address, timeout=self._timeout)
            except (OSError, TimeoutError, ValueError) as exc:
                reason = "no Dask scheduler answered there" if not isinstance(exc, ValueError) else str(exc).splitlines()[0]
                raise ExecutorError(f"--executor {self._address}: {reason} within {self._timeout:g} s") from None
        return self._own

    def prepare(self, job: Job) -> None:
        """Before anything is written: connect, and check that every worker sees the session file."""
        if job.session_path is None:
            raise ExecutorError("--executor dask: the session is in memory; Dask workers need a session file on a folder they all share")
        client = self.connect()
        path = os.path.abspath(job.session_path)
        if path in self._checked:
            return
        here = session_identity(path)
        seen = client.run(session_identity, path)
        for worker, theirs in sorted(seen.items()):
            if theirs != here:
                raise ExecutorError(
                    f"--executor: worker {worker} cannot see the session file {path} ({theirs}); "
                    "put the session on a folder every worker shares (see the manual, Experiments: Beyond one machine)"
                )
        self._checked.add(path)

    def close(self) -> None:
        """Close a connection this executor opened (the shared LocalCluster stays for the next grid)."""
        if self._own is not None and self._address:
            self._own.close()
            self._own = None

    async def run(self, job: Job) -> None:
        """Submit branches in grid order, at most ``job.concurrency`` at once; collect outcomes as they finish,
        reading the file each second for the live view and passing Stop on to the workers."""
        await asyncio.to_thread(self.prepare, job)
        client = self.connect()
        path = os.path.abspath(str(job.session_path))
        grid = job.specs[0].experiment if job.specs else "empty"
        limiter = ClusterLimiter(f"pi-limit-{grid}", self.rate if self.rate is not None else job.rate_limit)
        stop = f"pi-stop-{grid}"
        await asyncio.to_thread(limiter.start, client)
        loop = asyncio.get_running_loop()
        ended: asyncio.Queue[Any] = asyncio.Queue()
        pending = deque(job.specs)
        running: dict[Any, BranchSpec] = {}
        stop_sent = False
        watched = time.monotonic()
        try:
            while pending or running:
                while pending and len(running) < job.concurrency:
                    spec = pending.popleft()
                    reason = job.skip_reason(spec)
                    if reason is not None:
                        job.skip(spec, reason)
                        continue
                    job.launched(spec)
                    future = client.submit(run_on_worker, path, spec.model_dump(), limiter, stop, pure=False, retries=0)
                    future.add_done_callback(partial(_tell, loop, ended))
                    running[future] = spec
                if not running:
                    continue
                try:
                    future = await asyncio.wait_for(ended.get(), 1.0)
                except asyncio.TimeoutError:
                    future = None
                if job.stopped and not stop_sent:
                    from distributed import Event

                    await asyncio.to_thread(Event(stop, client=client).set)
                    stop_sent = True
                if time.monotonic() - watched >= 1.0:  # the live view: at most once a second, however busy
                    await asyncio.to_thread(job.watch)
                    watched = time.monotonic()
                if future is None or future not in running:
                    continue
                spec = running.pop(future)
                await job.finished(await asyncio.to_thread(_outcome, future, spec))
        finally:
            if running:  # interrupted: branches not yet started must not run for a grid nobody waits on
                await asyncio.to_thread(client.cancel, list(running))
            await asyncio.to_thread(limiter.stop, client)
            if stop_sent:
                from distributed import Event

                await asyncio.to_thread(Event(stop, client=client).clear)


def _tell(loop: asyncio.AbstractEventLoop, ended: asyncio.Queue[Any], future: Any) -> None:
    """Hand a finished task to the grid's loop (from Dask's thread); a loop already closed (the grid was interrupted) has nobody to tell."""
    try:
        loop.call_soon_threadsafe(ended.put_nowait, future)
    except RuntimeError:
        pass


def _outcome(future: Any, spec: BranchSpec) -> BranchOutcome:
    """A finished task's outcome; a task that did not return (its worker died, Dask gave up) is a lost branch."""
    try:
        return BranchOutcome.model_validate(future.result())
    except Exception as exc:  # noqa: BLE001 - a lost worker is a failed branch, not a failed grid
        name = type(exc).__name__
        error = (
            LOST
            if name in ("KilledWorker", "CommClosedError", "CancelledError", "FutureCancelledError")
            else f"on the worker: {name}: {exc}"
        )
        return BranchOutcome(index=spec.variant.index, state="failed", error=error[:500], lost=True)
