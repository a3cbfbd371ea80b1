"""JavaScript-compatible string and time helpers.

pi measures strings in UTF-16 code units (``String.length``) and writes timestamps with
``Date.toISOString()``; reproducing both exactly keeps token estimates, truncation and
files identical to pi's.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone


def js_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as JavaScript's ``String.length``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` with UTF-16 offsets (a surrogate pair may be cut, as in JS)."""
    if text.isascii():
        return text[start:end]
    data = text.encode("utf-16-le", "surrogatepass")
    stop = None if end is None else end * 2
    return data[start * 2 : stop].decode("utf-16-le", "surrogatepass")


def now_ms() -> int:
    """Milliseconds since the epoch, as ``Date.now()`` (message timestamps)."""
    return time.time_ns() // 1_000_000


def iso_from_ms(ms: int) -> str:
    """``new Date(ms).toISOString()``: always milliseconds, always ``Z``."""
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def now_iso() -> str:
    """The current time as ``new Date().toISOString()`` (entry timestamps)."""
    return iso_from_ms(now_ms())


def ms_from_iso(value: object) -> int | None:
    """``new Date(value).getTime()`` for the ISO strings pi writes; ``None`` when invalid (NaN)."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    try:
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        # JS parses a date-time without offset as local time; date-only forms as UTC.
        dt = dt.astimezone() if "T" in text else dt.replace(tzinfo=timezone.utc)
    return _exact_ms(dt)


def _exact_ms(dt: datetime) -> int:
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    delta = dt - epoch
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
