"""Line framing of session files: one parser that reports every line it cannot read.

pi reads a file by trimming it, splitting on ``\\n`` and silently skipping lines that do not
parse. This parser splits the same way (never on U+2028 or other "line breaks" that
``str.splitlines`` knows) but records each skipped line, with its number, in the report.

It is the hot path of opening a large session: lines are sliced out of the file's bytes as
memoryviews (no copy) and handed to orjson; the cyclic garbage collector is paused while a
file is parsed, because its repeated scans of the growing heap cost more than the parsing.
"""

from __future__ import annotations

import contextlib
import gc
import json
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..messages.text import json_type
from .report import LoadReport

_WS = b" \t\r\n\x0b\x0c"
_decode_error = orjson.JSONDecodeError
SKIP: Any = object()  # a blank or malformed line
TORN: Any = object()  # an unreadable last line without a newline


@dataclass
class ParsedLine:
    """One JSON object read from the file, with its 1-based line number."""

    line: int
    obj: dict[str, Any]


@dataclass
class ParsedChunk:
    """The objects of a run of lines (``objs``, with their 1-based ``lines``), and how the chunk ends.

    ``tail_start`` is the byte offset (within the parsed data) of a torn last line (no newline,
    not readable), so a later reader can re-read that line whole if a writer completes it.
    When lines were read as stubs, ``offsets`` and ``lengths`` say, per object, where its line
    is in the data (offset -1: the object is the whole line).
    """

    objs: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    ends_with_newline: bool = True
    torn_tail: bool = False
    next_line: int = 1
    tail_start: int = -1
    offsets: array | None = None
    lengths: array | None = None

    @property
    def objects(self) -> list[ParsedLine]:
        """The objects paired with their line numbers."""
        return [ParsedLine(line, obj) for line, obj in zip(self.lines, self.objs, strict=True)]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk build of many containers.

    Parsing 100k entries creates about a million dicts and lists; with the collector running,
    CPython rescans the growing heap again and again, which takes several times longer than
    the parsing itself. Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def settle_gc() -> None:
    """Move every object the collector tracks into its oldest generation, without scanning them.

    Right after a large file is read, its million new containers sit in the youngest
    generation, and the next few young collections would each walk all of them (seconds in
    total for 100k entries, landing on whatever runs next: an append, a context rebuild).
    ``gc.freeze()`` then ``gc.unfreeze()`` moves them to the oldest generation directly. They
    are still collected, by the next full collection, which CPython runs rarely; cyclic
    garbage that was young at this moment waits for that one too.
    """
    gc.freeze()
    gc.unfreeze()


def dumps(obj: Any) -> bytes:
    """Compact JSON as pi writes it (raw UTF-8, no spaces), without a trailing newline."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        # lone surrogates or exotic numbers: json escapes what orjson refuses
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode()


def loads_line(raw: bytes | memoryview) -> tuple[Any, str | None]:
    """Parse one line. Returns ``(object, None)``, ``(object, "invalid_utf8")`` or ``(None, reason)``.

    orjson is stricter than JavaScript's ``JSON.parse`` in a few places (a lone surrogate
    escape such as ``"\\ud800"``); such lines are read with the standard library, as pi reads them.
    """
    try:
        return orjson.loads(raw), None
    except _decode_error as exc:
        data = bytes(raw)
        try:
            text = data.decode("utf-8")
            problem = None
        except UnicodeDecodeError:
            # pi reads files as UTF-8 with replacement characters; so do we, and say so
            text = data.decode("utf-8", "replace")
            problem = "invalid_utf8"
        try:
            return json.loads(text, parse_constant=_not_json), problem
        except ValueError as exc2:
            return None, f"not JSON: {exc2 if problem else exc}"
        except RecursionError:
            return None, "not JSON: nested too deeply"


def _not_json(name: str) -> Any:
    # the standard library reads NaN and Infinity, which JSON (and pi's JSON.parse) does not have
    raise ValueError(f"{name} is not a JSON value")


StubReader = Callable[[memoryview, bool], "dict[str, Any] | None"]
"""``stub(line, ascii_only)``: a stub of the line, or ``None`` to read it whole (see :mod:`.stubs`)."""


def parse_lines(data: bytes, report: LoadReport, first_line: int = 1, final: bool = True, stub: StubReader | None = None) -> ParsedChunk:
    """Parse ``data`` (whole lines starting at ``first_line``) and report unreadable lines.

    ``final`` says the chunk ends at the end of the file, so an unparsable line without a
    trailing newline is reported as a torn tail (a crash mid-write) rather than as malformed.
    ``stub`` reads the lines it can as stubs (their place is in ``offsets`` and ``lengths``);
    the others are read whole, as without it.
    """
    chunk = ParsedChunk(next_line=first_line)
    n = len(data)
    if not n:
        return chunk
    ends_with_newline = data.endswith(b"\n")
    chunk.ends_with_newline = ends_with_newline
    objs = chunk.objs
    lines = chunk.lines
    add_obj = objs.append
    add_line = lines.append
    view = memoryview(data)
    find = data.find
    loads = orjson.loads
    start = 0
    lineno = first_line
    if stub is not None:
        chunk.offsets, chunk.lengths = array("q"), array("q")
        add_off, add_len = chunk.offsets.append, chunk.lengths.append
        ascii_only = data.isascii()
    with paused_gc():
        while start < n:
            end = find(b"\n", start)
            if end < 0:
                end = n
            if end > start:
                if stub is not None:
                    head = stub(view[start:end], ascii_only)
                    if head is not None:
                        add_obj(head)
                        add_line(lineno)
                        add_off(start)
                        add_len(end - start)
                        lineno += 1
                        start = end + 1
                        continue
                try:
                    obj = loads(view[start:end])
                except _decode_error:
                    torn = final and end == n and not ends_with_newline
                    obj = slow_line(data[start:end], lineno, report, torn=torn)
                    if obj is SKIP:
                        lineno += 1
                        start = end + 1
                        continue
                    if obj is TORN:
                        chunk.torn_tail = True
                        chunk.tail_start = start
                        lineno += 1
                        start = end + 1
                        continue
                if type(obj) is dict:
                    add_obj(obj)
                    add_line(lineno)
                    if stub is not None:
                        add_off(-1)
                        add_len(0)
                else:
                    report.add(lineno, "malformed", f"a JSON {json_type(obj)}, not an object", "error")
            lineno += 1
            start = end + 1
    # the number the next line written will have (a torn last line is continued, not counted)
    chunk.next_line = lineno if ends_with_newline else lineno - 1
    return chunk


def slow_line(raw: bytes, lineno: int, report: LoadReport, *, torn: bool) -> Any:
    """A line orjson refused: blank (skipped), read by the standard library, or reported."""
    if not raw.strip(_WS):
        return SKIP
    obj, problem = loads_line(raw)
    if obj is None:
        if torn:
            report.add(
                lineno,
                "torn_tail",
                f"the last line is cut off ({len(raw)} bytes, no newline): probably a crash mid-write; "
                "it is kept, and the next entry starts on a new line",
                "error",
            )
            return TORN
        preview = raw[:60].decode("utf-8", "replace")
        report.add(lineno, "malformed", f"{problem}; line starts {preview!r}", "error")
        return SKIP
    if problem == "invalid_utf8":
        report.add(lineno, "invalid_utf8", "the line is not valid UTF-8; read with replacement characters", "warning")
    return obj


def strip_bom(data: bytes) -> bytes:
    """Drop a UTF-8 byte-order mark (JavaScript's ``trim`` removes it too)."""
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data
