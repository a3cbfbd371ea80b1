"""Line framing of session files: one parser that reports every line it cannot read.

pi reads a file by trimming it, splitting on ``\\n`` and silently skipping lines that do not
parse. This parser splits the same way (never on U+2028 or other "line breaks" that
``str.splitlines`` knows) but records each skipped line, with its number, in the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from .report import LoadReport

_WS = b" \t\r\n\x0b\x0c"


@dataclass
class ParsedLine:
    """One JSON object read from the file, with its 1-based line number."""

    line: int
    obj: dict[str, Any]


@dataclass
class ParsedChunk:
    """The objects of a run of lines, and what is known about the chunk's end."""

    objects: list[ParsedLine] = field(default_factory=list)
    ends_with_newline: bool = True
    torn_tail: bool = False
    next_line: int = 1


def dumps(obj: Any) -> bytes:
    """Compact JSON as pi writes it (raw UTF-8, no spaces), without a trailing newline."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        # lone surrogates or exotic numbers: json escapes what orjson refuses
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode()


def loads_line(raw: bytes) -> tuple[Any, str | None]:
    """Parse one line. Returns ``(object, None)``, ``(object, "invalid_utf8")`` or ``(None, reason)``."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            try:
                return json.loads(text), "invalid_utf8"
            except ValueError as exc2:
                return None, f"not JSON: {exc2}"
        return None, f"not JSON: {exc}"


def parse_lines(data: bytes, report: LoadReport, first_line: int = 1, final: bool = True) -> ParsedChunk:
    """Parse ``data`` (whole lines starting at ``first_line``) and report unreadable lines.

    ``final`` says the chunk ends at the end of the file, so an unparsable line without a
    trailing newline is reported as a torn tail (a crash mid-write) rather than as malformed.
    """
    chunk = ParsedChunk()
    if not data:
        chunk.next_line = first_line
        return chunk
    chunk.ends_with_newline = data.endswith(b"\n")
    pieces = data.split(b"\n")
    if chunk.ends_with_newline:
        pieces.pop()
    lineno = first_line - 1
    last = len(pieces) - 1
    for i, raw in enumerate(pieces):
        lineno += 1
        if not raw.strip(_WS):
            continue
        obj, problem = loads_line(raw)
        if obj is None:
            if final and i == last and not chunk.ends_with_newline:
                chunk.torn_tail = True
                report.add(
                    lineno,
                    "torn_tail",
                    f"the last line is cut off ({len(raw)} bytes, no newline): probably a crash mid-write; "
                    "it is kept, and the next entry starts on a new line",
                    "error",
                )
            else:
                preview = raw[:60].decode("utf-8", "replace")
                report.add(lineno, "malformed", f"{problem}; line starts {preview!r}", "error")
            continue
        if problem == "invalid_utf8":
            report.add(lineno, "invalid_utf8", "the line is not valid UTF-8; read with replacement characters", "warning")
        if not isinstance(obj, dict):
            report.add(lineno, "malformed", f"a JSON {type(obj).__name__}, not an object", "error")
            continue
        chunk.objects.append(ParsedLine(lineno, obj))
    chunk.next_line = lineno + (1 if chunk.ends_with_newline else 0)
    return chunk


def strip_bom(data: bytes) -> bytes:
    """Drop a UTF-8 byte-order mark (JavaScript's ``trim`` removes it too)."""
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data
