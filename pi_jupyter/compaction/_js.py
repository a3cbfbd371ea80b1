"""``JSON.stringify`` as JavaScript writes it, for values read from JSON.

pi measures and prints tool-call arguments with ``JSON.stringify``; Python's ``json.dumps``
differs in three ways that change lengths: floats (``1.0`` vs ``1``, ``1e-07`` vs ``1e-7``),
the order of integer-like keys (JavaScript puts array-index keys first, ascending) and lone
surrogates (escaped by JavaScript, written raw by Python).
"""

from __future__ import annotations

import math
import re
from json.encoder import encode_basestring  # the ensure_ascii=False escaper (C accelerated)
from typing import Any

from ..messages.text import js_number as number_text

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_SAFE = 2**53
_MAX_INDEX = 2**32 - 2


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for a JSON-shaped Python value (dict, list, str, number, bool, None)."""
    t = type(value)
    if t is str:
        return _string(value)
    if t is dict:
        keys = list(value)
        if any(is_array_index(k) for k in keys):
            index = sorted((k for k in keys if is_array_index(k)), key=int)
            keys = index + [k for k in keys if not is_array_index(k)]
        return "{" + ",".join(_string(str(k)) + ":" + js_stringify(value[k]) for k in keys) + "}"
    if t is list or t is tuple:
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if t is int:
        return str(value) if -_MAX_SAFE <= value <= _MAX_SAFE else js_number(float(value))
    if t is float:
        return js_number(value)
    # anything else (a pydantic model, a set): its JSON form, as the session would store it
    if hasattr(value, "model_dump"):
        return js_stringify(value.model_dump(mode="json", by_alias=True))
    return _string(str(value))


def is_array_index(key: Any) -> bool:
    """True for keys JavaScript orders first in an object: canonical array indices (``"0"``, ``"7"``, not ``"07"``)."""
    if not isinstance(key, str) or not key or not key.isdigit() or not key.isascii():
        return False
    if len(key) > 1 and key[0] == "0":
        return False
    return int(key) <= _MAX_INDEX


def _string(text: str) -> str:
    out = encode_basestring(text)
    if _SURROGATE.search(text):
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def js_number(x: float) -> str:
    """A number as ``JSON.stringify`` writes it: ``String(x)``, except ``null`` for NaN and the infinities."""
    if math.isnan(x) or math.isinf(x):
        return "null"
    return number_text(x)
