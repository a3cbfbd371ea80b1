"""Automatic retry of transient provider errors (pi's auto-retry), as one part of the agent.

A failed reply whose error looks transient (:data:`RETRYABLE`) is asked for again after an
exponential backoff (:func:`retry_delay`). Unlike pi, the new reply is a sibling of the failed
one in the tree, not its child, so the failure stays in the file and out of the context.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from ..messages import AssistantMessage
from ..providers.overflow import is_context_overflow
from ..providers.retry_after import retry_after_ms
from .events import AutoRetryEndEvent, AutoRetryStartEvent, Event
from .run_context import RunContext
from .settings import RetrySettings

RETRYABLE = re.compile(
    r"overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|"
    r"server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|"
    r"websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|"
    r"socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay|"
    r"malformed stream",
    re.IGNORECASE,
)
"""Error messages worth retrying: pi's list, and a stream whose event the server cut in half ("Malformed
stream from the server", said alike by the three wire APIs), which is as transient as a dropped connection."""


def is_retryable(message: AssistantMessage, context_window: int | None) -> bool:
    """True for an error reply worth asking again (transient; a context overflow is compaction's job)."""
    if message.stop_reason != "error" or not message.error_message:
        return False
    if is_context_overflow(message, context_window):
        return False
    return bool(RETRYABLE.search(message.error_message))


def retry_delay(attempt: int, error: AssistantMessage, settings: RetrySettings) -> int:
    """Milliseconds to wait before retry number ``attempt`` (1-based) after the failed reply ``error``.

    The server's ``Retry-After`` (read by the provider) beats our backoff, up to ``max_delay_ms``.
    """
    asked = retry_after_ms(error)
    if asked is not None:
        return min(asked, settings.max_delay_ms)
    return settings.base_delay_ms * 2 ** (attempt - 1)


class Retry:
    """The retry state of one agent: the attempt under way and the backoff sleep ``abort()`` cuts short."""

    def __init__(self, run: RunContext) -> None:
        self._run = run
        self.attempt = 0
        """The retry under way (0: none)."""
        self._sleep: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def after_event(self, event: Event) -> None:
        """pi: the first reply after a retry that is not an error ends the retry at once.

        Not when the whole run ends: a later failure in a long tool loop starts again at attempt 1.
        """
        if not self.attempt or event.type != "message_end":
            return
        message = event.message
        if getattr(message, "role", None) == "assistant" and message.stop_reason not in ("error", "aborted"):
            attempt, self.attempt = self.attempt, 0
            self._run.emit(AutoRetryEndEvent(success=True, attempt=attempt))

    def cancel(self) -> None:
        """Cut a backoff sleep short (from any thread); the retry then ends as cancelled."""
        sleep, loop = self._sleep, self._loop
        if sleep is not None and loop is not None:
            loop.call_soon_threadsafe(sleep.set)

    async def after_run(self, new_messages: list[Any]) -> list[Any] | None:
        """Retry the run's failed last reply if it is worth it; returns the retried turn's messages, else ``None``."""
        run = self._run
        last = next((m for m in reversed(new_messages) if getattr(m, "role", None) == "assistant"), None)
        settings = run.settings.retry
        if last is None or not is_retryable(last, run.model.context_window):
            # a successful reply has already ended the retry (in after_event, at its message_end)
            self.attempt = 0
            return None
        if not settings.enabled:
            return None
        if run.abort_requested:
            if self.attempt > 0:
                run.emit(AutoRetryEndEvent(success=False, attempt=self.attempt, final_error="Retry cancelled"))
            self.attempt = 0
            return None
        self.attempt += 1
        if self.attempt > settings.max_retries:
            run.emit(AutoRetryEndEvent(success=False, attempt=self.attempt - 1, final_error=last.error_message))
            self.attempt = 0
            return None
        delay = retry_delay(self.attempt, last, settings)
        run.emit(
            AutoRetryStartEvent(
                attempt=self.attempt,
                max_attempts=settings.max_retries,
                delay_ms=delay,
                error_message=last.error_message or "Unknown error",
                retry_after_ms=retry_after_ms(last),
            )
        )
        if run.messages and run.messages[-1] is last:
            run.messages.pop()
        failed_entry = run.run_entry_ids[-1] if run.run_entry_ids else None
        if await self._wait(delay / 1000):
            attempt, self.attempt = self.attempt, 0
            run.emit(AutoRetryEndEvent(success=False, attempt=attempt, final_error="Retry cancelled"))
            return None
        session = run.session
        if failed_entry is not None and failed_entry in session:
            session.checkout(session.raw_entry(failed_entry).get("parentId"), persist=False)
        return await run.run_turn()

    async def _wait(self, seconds: float) -> bool:
        """Sleep the backoff; True when it was cancelled (by ``abort()``)."""
        self._loop = asyncio.get_running_loop()
        self._sleep = asyncio.Event()
        if self._run.abort_requested:  # asked while the start event was being handled
            self._sleep.set()
        try:
            await asyncio.wait_for(self._sleep.wait(), timeout=seconds)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            self._sleep = None
