"""One rate limit for a whole Dask cluster: every worker's calls to a provider share it.

Each worker keeps its own :class:`~.limiter.RateLimiter` for the calls in flight; this adds
what must be shared: the start times of recent calls (for ``rate``, requests per second per
provider) and the pause after a rate-limit reply (``Retry-After``), held in a
``distributed.Variable`` on the scheduler and changed under a ``distributed.Lock``. So a
``Retry-After`` one worker hears pauses every worker, and the provider never sees more than
``rate`` calls a second from the grid, however many workers it runs on. Times are wall-clock
(``time.time``): workers on several machines need their clocks in step (NTP), as they are
on any cluster.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from .limiter import is_rate_limited, next_start, retry_after_of

DEFAULT_PAUSE_S = 1.0
"""How long every worker pauses after a rate-limit reply that named no ``Retry-After``."""

_PRIMITIVES: dict[tuple[str, int], tuple[Any, Any]] = {}
_PRIMITIVES_LOCK = threading.Lock()

STALE_S = 300.0
"""A call let through and never reported answered (its worker died) stops counting after this long."""


class ClusterLimiter:
    """The shared part of a grid's rate limit (see the module docstring); picklable, so tasks carry it to workers."""

    def __init__(self, name: str, rate: float | None = None) -> None:
        self.name = name
        self.rate = rate
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "rate": self.rate}  # a client does not travel: each worker binds its own

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state.get("rate"))  # type: ignore[misc]

    def bind(self, client: Any) -> ClusterLimiter:
        """Use ``client`` (a worker task's ``distributed.get_client()``) to reach the scheduler; returns self."""
        self._client = client
        return self

    def _primitives(self) -> tuple[Any, Any]:
        from distributed import Lock, Variable

        client = self._client
        key = (self.name, id(client))
        with _PRIMITIVES_LOCK:
            found = _PRIMITIVES.get(key)
            if found is None:
                # one per grid and client: each distributed Lock keeps a lease-refreshing timer running
                found = _PRIMITIVES[key] = (
                    Lock(f"{self.name}-lock", scheduler_rpc=client.scheduler, loop=client.loop),
                    Variable(self.name, client=client),
                )
        return found

    def start(self, client: Any) -> None:
        """Create the shared state (the kernel, before any task runs)."""
        from distributed import Variable

        Variable(self.name, client=client).set({})

    def stop(self, client: Any) -> None:
        """Remove the shared state (the kernel, when the grid ends)."""
        from distributed import Variable

        try:
            Variable(self.name, client=client).delete()
        except Exception:  # noqa: BLE001 - the scheduler may be gone already
            pass

    def _update(self, change: Callable[[dict[str, Any], float], float]) -> float:
        lock, variable = self._primitives()
        with lock:
            try:
                state = dict(variable.get(timeout=10) or {})
            except Exception:  # noqa: BLE001 - the kernel removed it: the grid is over
                state = {}
            wait = change(state, time.time())
            variable.set(state)
        return wait

    def reserve(self, provider: str, call: str) -> float:
        """Let the call ``call`` to ``provider`` through now (returns 0), or say how many seconds to wait first.

        As in :mod:`.limiter`, a call counts from now until :meth:`answered`, and for the window after.
        Without a rate only a pause can hold it: one read, no lock."""
        if not self.rate:
            try:
                state = self._primitives()[1].get(timeout=10) or {}
            except Exception:  # noqa: BLE001 - the kernel removed it: the grid is over
                return 0.0
            return float((state.get(provider) or {}).get("paused_until", 0.0)) - time.time()

        def change(state: dict[str, Any], now: float) -> float:
            mine = dict(state.get(provider) or {})
            calls = {k: v for k, v in (mine.get("calls") or {}).items() if (v[1] or v[0] + STALE_S) > now - STALE_S}
            times = [v[1] if v[1] is not None else (math.inf if now - v[0] < STALE_S else v[0] + STALE_S) for v in calls.values()]
            wait = max(float(mine.get("paused_until", 0.0)) - now, next_start(times, now, self.rate) if self.rate else 0.0)
            if wait <= 0:
                calls[call] = (now, None)
            mine["calls"] = calls
            state[provider] = mine
            return wait

        return self._update(change)

    def answered(self, provider: str, call: str) -> None:
        """The reply to ``call`` began: the provider counted it no later than now."""
        if not self.rate:
            return

        def change(state: dict[str, Any], now: float) -> float:
            mine = dict(state.get(provider) or {})
            calls = dict(mine.get("calls") or {})
            if call in calls and calls[call][1] is None:
                calls[call] = (calls[call][0], now)
            mine["calls"] = calls
            state[provider] = mine
            return 0.0

        self._update(change)

    def pause(self, provider: str, seconds: float) -> None:
        """Pause every worker's calls to ``provider`` for ``seconds``."""

        def change(state: dict[str, Any], now: float) -> float:
            mine = dict(state.get(provider) or {})
            mine["paused_until"] = max(float(mine.get("paused_until", 0.0)), now + seconds)
            state[provider] = mine
            return 0.0

        self._update(change)

    def wrap(self, stream: Callable[..., Any]) -> Callable[..., Any]:
        """A ``stream(model, request, options)`` that takes its start from the cluster and shares any pause it hears."""

        async def limited(model: Any, request: Any, options: Any = None) -> AsyncIterator[Any]:
            provider = getattr(model, "provider", None) or str(model).split("/", 1)[0]
            call = uuid.uuid4().hex
            while True:
                wait = await asyncio.to_thread(self.reserve, provider, call)
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            answered = False
            try:
                async for event in stream(model, request, options):
                    if not answered:
                        answered = True
                        await asyncio.to_thread(self.answered, provider, call)
                    if is_rate_limited(event):
                        retry_after = retry_after_of(event)
                        await asyncio.to_thread(self.pause, provider, DEFAULT_PAUSE_S if retry_after is None else retry_after)
                    yield event
            finally:
                if not answered:
                    await asyncio.to_thread(self.answered, provider, call)

        return limited
