"""One rate limiter per provider, shared by every branch of a grid.

Each model call waits at its provider's gate. A rate-limit reply (HTTP 429, "rate limit",
"overloaded"; also timeouts, refused connections and 502-504, the signs of a server at its
limit) closes the gate for the ``Retry-After`` seconds the provider sent (or an
exponential pause when it sent none) and halves how many calls may be in flight; each
success lets one more through again (additive increase, multiplicative decrease). So a
burst of 429s slows the whole grid instead of failing branches one by one; the agent's own
retry then finds the gate open once the provider is ready.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
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


class _Gate:
    def __init__(self, limit: int) -> None:
        self.max = limit
        self.limit = limit
        self.in_flight = 0
        self.paused_until = 0.0
        self.strikes = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.rate_limited = 0


class RateLimiter:
    """Per-provider gates: at most ``limit`` calls in flight each, paused after a rate-limit reply."""

    def __init__(self, limit: int = 1_000_000, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = max(1, limit)
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

    async def acquire(self, provider: str) -> None:
        """Wait until a call to ``provider`` may start."""
        gate = self._gate(provider)
        while True:
            wait = gate.paused_until - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if gate.in_flight < gate.limit:
                gate.in_flight += 1
                return
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
            await self.acquire(provider)
            limited_by: tuple[bool, float | None] = (False, None)
            try:
                async for event in stream(model, request, options):
                    if is_rate_limited(event):
                        limited_by = (True, retry_after_of(event))
                    yield event
            finally:
                self.release(provider, rate_limited=limited_by[0], retry_after=limited_by[1])

        return limited
