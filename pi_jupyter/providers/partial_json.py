"""Best-effort parsing of JSON that is still arriving (tool-call arguments while they stream).

:func:`parse_streaming_json` always returns a dict: the complete parse when the text is valid
JSON, otherwise what can be recovered (open strings, arrays and objects are closed; a key
without a value is dropped; an unfinished number or literal is dropped unless it already
reads as one). :class:`StreamingJson` does the same for text that grows by appends, at a
cost proportional to the appended text plus one C-speed ``orjson`` parse, instead of a
Python re-parse of the whole text on every fragment.

Like pi's ``parseStreamingJson``, raw control characters inside strings and invalid
backslash escapes (which models do emit) are repaired rather than rejected.
"""

from __future__ import annotations

from typing import Any

import orjson

_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def repair_json(text: str) -> str:
    """Escape raw control characters inside strings and double backslashes before invalid escapes."""
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
            if nxt == "u" and len(text[i + 2 : i + 6]) == 4 and all(c in "0123456789abcdefABCDEF" for c in text[i + 2 : i + 6]):
                out.append(text[i : i + 6])
                i += 6
                continue
            if nxt and nxt in _VALID_ESCAPES and nxt != "u":
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
    """``json.loads`` that retries once on :func:`repair_json`'s output; raises ``ValueError``."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        repaired = repair_json(text)
        if repaired != text:
            return orjson.loads(repaired)
        raise


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_streaming_json(text: str | None) -> dict[str, Any]:
    """Parse possibly incomplete JSON object text; always returns a dict (``{}`` when nothing is usable)."""
    if not text or not text.strip():
        return {}
    try:
        return _as_dict(parse_json_with_repair(text))
    except ValueError:
        pass
    try:
        return _as_dict(_Lenient(text).value())
    except (_Incomplete, ValueError, RecursionError):
        return {}


class StreamingJson:
    """Accumulates JSON text by :meth:`feed` and gives the best-effort parse so far.

    Tracks string/escape state and the stack of open containers incrementally, so the
    common case (the text ends inside a string or after a complete value) closes the text
    and parses it with orjson; only other cut points fall back to a Python parse.
    """

    __slots__ = ("_parts", "_text", "_stack", "_in_string", "_escape", "_dirty")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text = ""
        self._stack: list[str] = []
        self._in_string = False
        self._escape = False
        self._dirty = False

    @property
    def text(self) -> str:
        """All text fed so far."""
        if self._dirty:
            self._text += "".join(self._parts)
            self._parts.clear()
            self._dirty = False
        return self._text

    def feed(self, fragment: str) -> None:
        """Append a fragment of the JSON text."""
        if not fragment:
            return
        self._parts.append(fragment)
        self._dirty = True
        in_string, escape, stack = self._in_string, self._escape, self._stack
        # Fast skip of plain string content: only quotes, backslashes and brackets matter.
        for ch in fragment:
            if in_string:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                stack.append("}")
            elif ch == "[":
                stack.append("]")
            elif (ch == "}" or ch == "]") and stack:
                stack.pop()
        self._in_string, self._escape = in_string, escape

    def parse(self) -> dict[str, Any]:
        """The best-effort parse of the text so far (a dict)."""
        text = self.text
        if not text.strip():
            return {}
        if not self._stack and not self._in_string:
            return parse_streaming_json(text)
        closing = ""
        if self._in_string:
            closing = '"' if not self._escape else ""
        if not self._escape:
            candidate = text + closing + "".join(reversed(self._stack))
            try:
                return _as_dict(orjson.loads(candidate))
            except orjson.JSONDecodeError:
                pass
        return parse_streaming_json(text)


class _Incomplete(Exception):
    pass


class _Lenient:
    """A forgiving recursive-descent parser that stops cleanly at the end of the text."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)

    def ws(self) -> None:
        s, i, n = self.s, self.i, self.n
        while i < n and s[i] in " \t\r\n":
            i += 1
        self.i = i

    def value(self) -> Any:
        self.ws()
        if self.i >= self.n:
            raise _Incomplete
        ch = self.s[self.i]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch == '"':
            return self.string()
        return self.scalar()

    def obj(self) -> dict[str, Any]:
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            self.ws()
            if self.i >= self.n:
                return out
            ch = self.s[self.i]
            if ch == "}":
                self.i += 1
                return out
            if ch == ",":
                self.i += 1
                continue
            if ch != '"':
                raise ValueError(f"expected a key at offset {self.i}")
            key = self.string()
            if self.i > self.n:
                return out  # the key itself is unfinished
            self.ws()
            if self.i >= self.n or self.s[self.i] != ":":
                return out
            self.i += 1
            self.ws()
            if self.i >= self.n:
                return out
            try:
                out[key] = self.value()
            except _Incomplete:
                return out

    def arr(self) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        while True:
            self.ws()
            if self.i >= self.n:
                return out
            ch = self.s[self.i]
            if ch == "]":
                self.i += 1
                return out
            if ch == ",":
                self.i += 1
                continue
            try:
                out.append(self.value())
            except _Incomplete:
                return out

    def string(self) -> str:
        s, n = self.s, self.n
        i = self.i + 1
        parts: list[str] = []
        while i < n:
            ch = s[i]
            if ch == '"':
                self.i = i + 1
                return "".join(parts)
            if ch == "\\":
                if i + 1 >= n:
                    break
                nxt = s[i + 1]
                if nxt == "u":
                    digits = s[i + 2 : i + 6]
                    if len(digits) < 4:
                        break
                    try:
                        code = int(digits, 16)
                    except ValueError:
                        parts.append("\\u")
                        i += 2
                        continue
                    if 0xD800 <= code <= 0xDBFF:
                        # A high surrogate: combine with the low one that follows (or wait for it).
                        low = s[i + 6 : i + 12]
                        if len(low) < 6:
                            break
                        if low[:2] == "\\u":
                            try:
                                low_code = int(low[2:], 16)
                            except ValueError:
                                low_code = 0
                            if 0xDC00 <= low_code <= 0xDFFF:
                                parts.append(chr(0x10000 + ((code - 0xD800) << 10) + (low_code - 0xDC00)))
                                i += 12
                                continue
                    parts.append(chr(code))
                    i += 6
                    continue
                parts.append({"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}.get(nxt, nxt if nxt in '"\\/' else "\\" + nxt))
                i += 2
                continue
            parts.append(ch)
            i += 1
        self.i = n + 1  # marks an unfinished string
        return "".join(parts)

    def scalar(self) -> Any:
        s, n = self.s, self.n
        start = self.i
        i = start
        while i < n and s[i] not in ",}] \t\r\n":
            i += 1
        token = s[start:i]
        self.i = i
        for word, val in (("true", True), ("false", False), ("null", None)):
            if token == word:
                return val
            if i >= n and word.startswith(token):
                return val
        try:
            return orjson.loads(token)
        except orjson.JSONDecodeError:
            if i >= n:
                # An unfinished number: keep the longest prefix that parses (``12.`` -> 12).
                for end in range(len(token) - 1, 0, -1):
                    try:
                        return orjson.loads(token[:end])
                    except orjson.JSONDecodeError:
                        continue
                raise _Incomplete from None
            raise ValueError(f"bad token {token!r} at offset {start}") from None
