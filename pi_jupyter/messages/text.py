"""JavaScript-compatible string and time helpers.

pi measures strings in UTF-16 code units (``String.length``) and writes timestamps with
``Date.toISOString()``; reproducing both exactly keeps token estimates, truncation and
files identical to pi's.
"""

from __future__ import annotations

import json
import math
import time
from datetime import datetime, timedelta, timezone
from typing import Any


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


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_from_ms(ms: int) -> str:
    """``new Date(ms).toISOString()``: always milliseconds, always ``Z``.

    Years 1 to 9999 only (``ValueError`` or ``OverflowError`` beyond, as ``toISOString``
    throws for an invalid date); the same on every platform, whatever its ``time_t``.
    """
    ms = int(ms)
    dt = _EPOCH + timedelta(milliseconds=ms)
    return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{ms % 1000:03d}Z"


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
        dt = _local(dt) if "T" in text else dt.replace(tzinfo=timezone.utc)
    return _exact_ms(dt)


def _local(dt: datetime) -> datetime:
    """A naive date-time read as local time (the local offset of a nearby year at the calendar's edges)."""
    try:
        return dt.astimezone()
    except (OverflowError, ValueError, OSError):
        # year 1 or 9999 shifted by the local offset leaves datetime's range (JavaScript's does not)
        near = dt.replace(year=2 if dt.year < 5000 else 9998)
        try:
            offset = near.astimezone().utcoffset() or timedelta(0)
        except (OverflowError, ValueError, OSError):
            offset = timedelta(0)
        return dt.replace(tzinfo=timezone(offset))


def _exact_ms(dt: datetime) -> int:
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    delta = dt - epoch
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


_MAX_SAFE = 2**53


def js_number(x: float) -> str:
    """``String(x)`` for a JavaScript number: ``1``, ``0.1``, ``1e-7``, ``1e+21``, ``NaN``, ``Infinity``."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < _MAX_SAFE:
        return str(int(x))
    sign = "-" if x < 0 else ""
    mant, _, e = repr(abs(x)).partition("e")  # Python's repr is the shortest round trip, as JavaScript's
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    lead = len(whole.lstrip("0")) if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), lead + (int(e) if e else 0)  # x = 0.DIGITS * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + body


def _number(value: int | float) -> str:
    if isinstance(value, int) and abs(value) <= _MAX_SAFE:
        return str(value)
    try:
        return js_number(float(value))
    except OverflowError:  # an integer beyond any double: JavaScript reads it as Infinity
        return "Infinity" if value > 0 else "-Infinity"


def js_string(value: Any) -> str:
    """``String(value)`` for a value read from JSON, as pi's string concatenation writes it.

    ``null`` is ``"null"``, numbers are written as JavaScript writes them, arrays are their
    items joined with commas (``null`` items empty), and objects are ``"[object Object]"``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def json_type(value: Any) -> str:
    """The JSON type of a value read from JSON (``null``, ``boolean``, ``number``, ``string``, ``array``, ``object``),
    for messages about a value of the wrong type; another Python value gives its class name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def display_text(value: Any) -> str:
    """A value of any JSON type as text for people: a string as it is, ``null`` as nothing,
    a number or boolean as JavaScript writes it, and an array or object as compact JSON.

    For a field that should hold a string and holds something else (an odd file): the value
    is shown, never raised on.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float)):
        return js_string(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)
