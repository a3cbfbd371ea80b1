"""The wait a server asks for before a retry (``Retry-After``), read from a failed request.

A 429 or 503 often says how long to wait: ``retry-after-ms`` (milliseconds; OpenAI and
Anthropic send it), or ``Retry-After`` (seconds, or an HTTP date). The adapters put the
wait on the failed assistant message, under :data:`RETRY_AFTER_KEY` (in milliseconds; pi
ignores the field), and the agent's retry waits that long instead of its own backoff, up
to its cap.
"""

from __future__ import annotations

import math
import time
from email.utils import parsedate_to_datetime
from typing import Any

RETRY_AFTER_KEY = "retryAfterMs"
"""The assistant-message field holding the wait the server asked for, in milliseconds."""

_MAX_MS = 24 * 3600 * 1000  # a day: anything longer is a server's mistake, not a wait


def retry_after_ms_of(exc: BaseException) -> int | None:
    """The wait (ms) an HTTP error's response asks for, or ``None`` when it asks for none (or nonsense)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return _clean(float(ms))
        value = headers.get("retry-after")
        if value is None:
            return None
        value = value.strip()
        try:
            return _clean(float(value) * 1000)
        except ValueError:
            when = parsedate_to_datetime(value)  # an HTTP date
            return _clean((when.timestamp() - time.time()) * 1000)
    except (TypeError, ValueError, OverflowError):
        return None


def _clean(ms: float) -> int | None:
    if not math.isfinite(ms):
        return None
    return int(min(max(ms, 0.0), _MAX_MS))


def note_retry_after(message: Any, exc: BaseException) -> None:
    """Put the wait ``exc``'s response asks for on the failed ``message`` (nothing when it asks for none)."""
    ms = retry_after_ms_of(exc)
    extra = getattr(message, "__pydantic_extra__", None)
    if ms is not None and extra is not None:
        extra[RETRY_AFTER_KEY] = ms


def retry_after_ms(message: Any) -> int | None:
    """The wait (ms) the server asked for before retrying this failed assistant message, if it asked."""
    extra = getattr(message, "__pydantic_extra__", None) or {}
    value = extra.get(RETRY_AFTER_KEY)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return int(value)
