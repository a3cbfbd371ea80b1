"""One rate limiter per provider, shared by every branch of a grid.

Each model call waits at its provider's gate. A rate-limit reply (HTTP 429, "rate limit",
"overloaded"; also timeouts, refused connections and 502-504, the signs of a server at its
limit) closes the gate for the ``Retry-After`` seconds the provider sent (or an
exponential pause when it sent none) and halves how many calls may be in flight; each
success lets one more through again (additive increase, multiplicative decrease). So a
burst of 429s slows the whole grid instead of failing branches one by one; the agent's own
retry then finds the gate open once the provider is ready.

``rate`` (requests per second per provider, e.g. a provider's published limit) also spaces
the calls: at most ``ceil(rate)`` in any window of ``ceil(rate) / rate`` seconds (plus
:data:`SLACK_S`). The provider counts a request when it arrives, which is some time after the
call was let through (a new connection, a busy machine) and before its reply starts; so a
call counts from when it was let through until its reply's first event, and for the window
after that. The provider then never counts more than the limit, whatever the delays. On a
Dask cluster the same rule and the same pause hold for the whole cluster (:mod:`.cluster_limit`).
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

_RATE_LIMITED = re.compile(r"\b429\b|rate.?limit|too many requests|overloaded|\b529\b", re.IGNORECASE)
_STRAINED = re.compile(r"timed? ?out|timeout|connection.?(?:error|refused|reset)|\b50[234]\b|service.?unavailable", re.IGNORECASE)
"""A server that stops answering in time or refuses connections is overloaded too: fewer calls, a short pause."""
_RETRY_AFTER = re.compile(r"retry.?after\D{0,5}(\d+(?:\.\d+)?)", re.IGNORECASE)
MAX_PAUSE_S = 120.0


def retry_after_of(event: Any) -> float | None:
    """The ``Retry-After`` seconds an error event carries, if any (read defensively: providers may not set it)."""
    for holder in (event, getattr(event, "error", None)):
        value = getattr(holder, "retry_after", None)
        if isinstance(value, (int, float)) and value >= 0:
            return float(value)
    message = getattr(getattr(event, "error", None), "error_message", None) or ""
    match = _RETRY_AFTER.search(message)
    return float(match.group(1)) if match else None


def is_rate_limited(event: Any) -> bool:
    """True for an error event that says the provider is rate limiting us (or is overloaded: timeouts, refused connections, 502-504)."""
    if getattr(event, "type", None) != "error" or getattr(event, "reason", None) != "error":
        return False
    message = getattr(getattr(event, "error", None), "error_message", None) or ""
    return bool(_RATE_LIMITED.search(message) or _STRAINED.search(message))


SLACK_S = 0.1
"""Added to a rate's window: requests started a window apart may reach the server a little closer together."""


def window_of(rate: float) -> tuple[int, float]:
    """A rate as (calls, seconds): at most ``calls`` may start in any window of ``seconds`` (slack included)."""
    calls = max(1, math.ceil(rate))
    return calls, calls / rate + SLACK_S


POLL_S = 0.05
"""How often a call waiting for an unanswered call's slot looks again."""


def next_start(times: Sequence[float], now: float, rate: float) -> float:
    """Seconds to wait before one more call may start (0: now), given when recent calls were answered
    (``math.inf`` for a call let through and not answered yet: it may reach the provider any moment)."""
    calls, seconds = window_of(rate)
    recent = sorted(t for t in times if t > now - seconds)
    if len(recent) < calls:
        return 0.0
    oldest = recent[-calls]
    return POLL_S if math.isinf(oldest) else oldest + seconds - now


class _Gate:
    def __init__(self, limit: int) -> None:
        self.max = limit
        self.limit = limit
        self.in_flight = 0
        self.paused_until = 0.0
        self.strikes = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.rate_limited = 0
        self.calls: deque[list[float]] = deque(maxlen=1024)
        """For ``rate``: each recent call's ``[answered at]`` (``inf`` until its reply's first event)."""


class RateLimiter:
    """Per-provider gates: at most ``limit`` calls in flight each, at most ``rate`` starts a second
    (``None``: no limit), paused after a rate-limit reply."""

    def __init__(self, limit: int = 1_000_000, *, rate: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = max(1, limit)
        self._rate = rate
        self._gates: dict[str, _Gate] = {}
        self._clock = clock

    def _gate(self, provider: str) -> _Gate:
        gate = self._gates.get(provider)
        if gate is None:
            gate = self._gates[provider] = _Gate(self._limit)
        return gate

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per provider: current in-flight limit, calls in flight, rate-limit replies seen, seconds paused."""
        now = self._clock()
        return {
            p: {"limit": g.limit, "in_flight": g.in_flight, "rate_limited": g.rate_limited, "paused_s": max(0.0, g.paused_until - now)}
            for p, g in self._gates.items()
        }

    async def acquire(self, provider: str) -> list[float]:
        """Wait until a call to ``provider`` may start; returns its slot (set ``slot[0]`` to the time its reply began)."""
        gate = self._gate(provider)
        while True:
            now = self._clock()
            wait = max(gate.paused_until - now, next_start([c[0] for c in gate.calls], now, self._rate) if self._rate else 0.0)
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if gate.in_flight < gate.limit:
                gate.in_flight += 1
                slot = [math.inf]
                gate.calls.append(slot)
                return slot
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            gate.waiters.append(fut)
            try:
                await fut
            finally:
                if fut in gate.waiters:
                    gate.waiters.remove(fut)

    def release(self, provider: str, *, rate_limited: bool = False, retry_after: float | None = None) -> None:
        """A call ended; after a rate-limit reply, pause the provider and let fewer calls through."""
        gate = self._gate(provider)
        gate.in_flight = max(0, gate.in_flight - 1)
        if rate_limited:
            gate.rate_limited += 1
            now = self._clock()
            if now >= gate.paused_until:  # calls already in flight when the gate closed are one burst: one strike
                gate.strikes += 1
                gate.limit = max(1, gate.limit // 2)
            pause = retry_after if retry_after is not None else 0.5 * 2 ** (gate.strikes - 1)
            gate.paused_until = max(gate.paused_until, now + min(pause, MAX_PAUSE_S))
        else:
            gate.strikes = 0
            gate.limit = min(gate.max, gate.limit + 1)
        free = gate.limit - gate.in_flight
        while free > 0 and gate.waiters:
            fut = gate.waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    def wrap(self, stream: Callable[..., Any]) -> Callable[..., Any]:
        """A ``stream(model, request, options)`` that waits at the model's provider gate around ``stream``."""

        async def limited(model: Any, request: Any, options: Any = None) -> AsyncIterator[Any]:
            provider = getattr(model, "provider", None) or str(model).split("/", 1)[0]
            slot = await self.acquire(provider)
            limited_by: tuple[bool, float | None] = (False, None)
            try:
                async for event in stream(model, request, options):
                    if math.isinf(slot[0]):
                        slot[0] = self._clock()  # the provider has the request by now
                    if is_rate_limited(event):
                        limited_by = (True, retry_after_of(event))
                    yield event
            finally:
                if math.isinf(slot[0]):
                    slot[0] = self._clock()
                self.release(provider, rate_limited=limited_by[0], retry_after=limited_by[1])

        return limited
