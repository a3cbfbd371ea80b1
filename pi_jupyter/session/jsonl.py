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
import re
from array import array
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import orjson

from ..messages.text import json_type
from .report import LoadReport

_WS = b" \t\r\n\x0b\x0c"
_decode_error = orjson.JSONDecodeError
SKIP: Any = object()  # a blank or malformed line
TORN: Any = object()  # an unreadable last line without a newline


class ParsedLine(msgspec.Struct):
    """One JSON object read from the file, with its 1-based line number."""

    line: int
    obj: dict[str, Any]


class ParsedChunk(msgspec.Struct):
    """The objects of a run of lines (``objs``, with their 1-based ``lines``), and how the chunk ends.

    ``tail_start`` is the byte offset (within the parsed data) of a torn last line (no newline,
    not readable), so a later reader can re-read that line whole if a writer completes it.
    When lines were read as stubs, ``offsets`` and ``lengths`` say, per object, where its line
    is in the data (offset -1: the object is the whole line).
    """

    objs: list[dict[str, Any]] = msgspec.field(default_factory=list)
    lines: list[int] = msgspec.field(default_factory=list)
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
            obj = json.loads(text, parse_constant=_not_json, parse_int=_js_int)
        except ValueError as exc2:
            return None, f"not JSON: {exc2 if problem else exc}"
        except RecursionError:
            return None, TOO_DEEP
        if depth_of(obj) > MAX_DEPTH:
            return None, TOO_DEEP
        return obj, problem


def _not_json(name: str) -> Any:
    # the standard library reads NaN and Infinity, which JSON (and pi's JSON.parse) does not have
    raise ValueError(f"{name} is not a JSON value")


def _js_int(text: str) -> int | float:
    # JSON.parse reads every number as a double: an integer too long for one is Infinity, as 1e400
    # is (and Python would refuse to read more than 4,300 digits, or to make a float of the result)
    return int(text) if len(text) <= 300 else float(text)


MAX_DEPTH = 500
"""A line whose JSON nests arrays and objects more than this deep is malformed ("nested too deeply").

Every reader applies the same rule (the bulk and the line reader, the class view), so they
agree on which lines are entries; and no value read from a file is deeper than what the code
after them (the standard library's JSON writer, which stops near a thousand levels less the
stack in use) can handle. pi's own files never nest more than a few levels."""

TOO_DEEP = f"not JSON: nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)"
"""The load report's reason for such a line."""

DEEP_LINE_BYTES = 2 * MAX_DEPTH
"""A line this long or shorter cannot nest more than :data:`MAX_DEPTH` deep (readers skip the check)."""
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(data: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
    """True when the JSON text ``data[start:end]`` nests arrays and objects more than :data:`MAX_DEPTH` deep.

    Cheap for the usual line: one that is short, or holds few brackets, cannot be that deep. Only
    a line with more brackets than that is looked at closely (brackets inside strings do not count).
    """
    stop = len(data) if end is None else end
    if stop - start <= DEEP_LINE_BYTES or data.count(b"[", start, stop) + data.count(b"{", start, stop) <= MAX_DEPTH:
        return False
    only = _STRING.sub(b"", bytes(data[start:stop])).translate(None, _NOT_BRACKETS)
    only = only.replace(b"{", b"[").replace(b"}", b"]")
    for _ in range(MAX_DEPTH):  # each pass takes away the innermost level
        only = only.replace(b"[]", b"")
        if b"[" not in only:
            return False
    return b"[]" in only  # (a line cut off inside its nesting leaves only openers: it is torn, not deep)


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value`` nests lists and dicts, counted up to ``limit + 1`` (no recursion)."""
    deepest = 0
    todo = [(value, 1)]
    while todo:
        item, level = todo.pop()
        if type(item) is dict:
            item = list(item.values())
        elif type(item) is not list:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        todo.extend((v, level + 1) for v in item if type(v) in (dict, list))
    return deepest


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
                if end - start > DEEP_LINE_BYTES and too_deep(data, start, end):
                    report_too_deep(report, lineno, data[start : start + 60])
                    lineno += 1
                    start = end + 1
                    continue
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
        report.add(lineno, "malformed", f"{problem}; line starts {_preview(raw)!r}", "error")
        return SKIP
    if problem == "invalid_utf8":
        report.add(lineno, "invalid_utf8", "the line is not valid UTF-8; read with replacement characters", "warning")
    return obj


def _preview(raw: bytes | bytearray) -> str:
    return bytes(raw[:60]).decode("utf-8", "replace")


def report_too_deep(report: LoadReport, lineno: int, head: bytes | bytearray) -> None:
    """Report line ``lineno`` (which starts with ``head``) as nested too deeply."""
    report.add(lineno, "malformed", f"{TOO_DEEP}; line starts {_preview(head)!r}", "error")


def strip_bom(data: bytes) -> bytes:
    """Drop a UTF-8 byte-order mark (JavaScript's ``trim`` removes it too)."""
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data
