"""Picking an executor by name: the local asyncio one by default, Dask's when asked for."""

from __future__ import annotations

from .dask_executor import DaskExecutor
from .executors import Executor, LocalExecutor


def executor_for(name: str | Executor | None, **options: object) -> Executor:
    """``None``/``"local"`` -> :class:`LocalExecutor`; ``"dask"`` -> a Dask executor (``address=`` a scheduler)."""
    if name is None or name == "local":
        return LocalExecutor()
    if name == "dask":
        return DaskExecutor(**options)  # type: ignore[arg-type]
    if isinstance(name, Executor):
        return name
    raise ValueError(f"unknown executor {name!r}; use 'local', 'dask' or an object with an async run(job) method")
