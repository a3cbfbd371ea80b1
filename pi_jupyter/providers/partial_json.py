"""Best-effort parsing of JSON that is still arriving (tool-call arguments while they stream).

:func:`parse_streaming_json` always returns a dict: the complete parse when the text is valid
JSON, otherwise what can be recovered. The parsing is ``jiter``'s partial mode (pydantic's
parser, made for streamed LLM output): open strings, arrays and objects are closed, a key
without a value is dropped, and so is an unfinished number. On top of it, a literal being
streamed reads as itself once unambiguous (``tr`` -> ``true``), and, like pi's
``parseStreamingJson``, raw control characters inside strings and invalid backslash escapes
(which models do emit) are repaired rather than rejected.

:class:`StreamingJson` does the same for text that grows by appends.
"""

from __future__ import annotations

import re
from typing import Any

import jiter

_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_LITERAL_TAIL = re.compile(r"[:\[,]\s*(t|tr|tru|f|fa|fal|fals|n|nu|nul)$")
_WORDS = {"t": "true", "f": "false", "n": "null"}


def repair_json(text: str) -> str:
    """Escape raw control characters inside strings and double backslashes before invalid escapes.

    A backslash at the very end is left alone: it starts an escape that has not arrived yet.
    """
    out: list[str] = []
    in_string = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if not in_string:
            out.append(ch)
            in_string = ch == '"'
        elif ch == '"':
            out.append(ch)
            in_string = False
        elif ch == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            if not nxt:
                out.append(ch)
                break
            if nxt == "u" and len(text[i + 2 : i + 6]) == 4 and all(c in "0123456789abcdefABCDEF" for c in text[i + 2 : i + 6]):
                out.append(text[i : i + 6])
                i += 6
                continue
            if nxt in _VALID_ESCAPES and (nxt != "u" or i + 6 > n):
                out.append("\\" + nxt)
                i += 2
                continue
            out.append("\\\\")
        elif ord(ch) < 0x20:
            out.append(_CONTROL_ESCAPES.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def parse_json_with_repair(text: str) -> Any:
    """Parse complete JSON, retrying once on :func:`repair_json`'s output; raises ``ValueError``."""
    try:
        return jiter.from_json(text.encode())
    except ValueError:
        repaired = repair_json(text)
        if repaired != text:
            return jiter.from_json(repaired.encode())
        raise


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _partial(text: str) -> Any:
    return jiter.from_json(text.encode(), partial_mode="trailing-strings", cache_mode="keys")


def _ends_in_string(text: str) -> bool:
    in_string = escape = False
    for ch in text:
        if escape:
            escape = False
        elif in_string:
            if ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
    return in_string


def parse_streaming_json(text: str | None) -> dict[str, Any]:
    """Parse possibly incomplete JSON object text; always returns a dict (``{}`` when nothing is usable)."""
    if not text or not text.strip():
        return {}
    tail = _LITERAL_TAIL.search(text)
    if tail is not None and not _ends_in_string(text):
        text += _WORDS[tail.group(1)[0]][len(tail.group(1)) :]
    try:
        return _as_dict(_partial(text))
    except ValueError:
        pass
    repaired = repair_json(text)
    if repaired == text:
        return {}
    try:
        return _as_dict(_partial(repaired))
    except ValueError:
        return {}


class StreamingJson:
    """Accumulates JSON text by :meth:`feed` and gives the best-effort parse so far."""

    __slots__ = ("_parts", "_text")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text = ""

    @property
    def text(self) -> str:
        """All text fed so far."""
        if self._parts:
            self._text += "".join(self._parts)
            self._parts.clear()
        return self._text

    def feed(self, fragment: str) -> None:
        """Append a fragment of the JSON text."""
        if fragment:
            self._parts.append(fragment)

    def parse(self) -> dict[str, Any]:
        """The best-effort parse of the text so far (a dict)."""
        return parse_streaming_json(self.text)
