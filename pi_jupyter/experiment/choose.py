"""Picking an executor by name: the local asyncio one by default, Dask's when asked for."""

from __future__ import annotations

from .dask_executor import DaskExecutor
from .executors import Executor, LocalExecutor

SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")


def executor_for(name: str | Executor | None, **options: object) -> Executor:
    """``None``/``"local"`` -> :class:`LocalExecutor`; ``"dask"`` -> Dask on this machine's LocalCluster (started
    once, reused; ``address=`` a scheduler instead); ``"tcp://host:8786"`` -> Dask at that scheduler."""
    if name is None or name == "local":
        return LocalExecutor()
    if name == "dask":
        return DaskExecutor(**options)  # type: ignore[arg-type]
    if isinstance(name, str) and name.startswith(SCHEMES):
        return DaskExecutor(name, **options)  # type: ignore[arg-type]
    if isinstance(name, Executor):
        return name
    raise ValueError(
        f"unknown executor {name!r}; use 'local', 'dask', a scheduler address (tcp://host:8786) or an object with an async run(job) method"
    )
