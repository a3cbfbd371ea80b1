"""The lines of a student's session file, parsed for the class view: tool results that succeeded are not read whole.

About half the bytes of a real session are tool results (files read, command output), and the
class view needs only their id, their parent and that they did not fail. A line written the
way pi and pi-jupyter write a tool result (``{"type":"message","id":"…","parentId":…,
"timestamp":"…","message":{"role":"toolResult",…}``, ending in ``}}``) that holds no
``"isError":true`` becomes a small stub without being parsed; every other line is parsed
whole, and one that cannot be is reported as :func:`~pi_jupyter.session.jsonl.parse_lines`
reports it (a cut-off last line as still being written).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ...messages.text import json_type
from ...session.jsonl import DEEP_LINE_BYTES, SKIP, TORN, report_too_deep, slow_line, too_deep
from ...session.report import LoadReport

_OK_RESULT = re.compile(
    rb'\{"type":"message","id":"([^"\\]*)","parentId":(?:"([^"\\]*)"|null),"timestamp":"[^"\\]*","message":\{"role":"toolResult",'
)
_FAILED = b'"isError":true'
_decode_error = orjson.JSONDecodeError


def parse_session_lines(data: bytes, report: LoadReport) -> tuple[list[dict[str, Any]], list[int], bool]:
    """``(objects, their line numbers, the last line is cut off)``; unreadable lines go to ``report``."""
    objs: list[dict[str, Any]] = []
    lines: list[int] = []
    torn = False
    n = len(data)
    ends_with_newline = data.endswith(b"\n")
    find = data.find
    match = _OK_RESULT.match
    view = memoryview(data)
    loads = orjson.loads
    start = 0
    lineno = 1
    while start < n:
        end = find(b"\n", start)
        if end < 0:
            end = n
        stop = end - 1 if end > start and data[end - 1] == 13 else end  # a \r\n line ending
        if stop > start:
            last = end == n and not ends_with_newline
            m = None if last or data[stop - 2 : stop] != b"}}" else match(data, start, stop)
            if stop - start > DEEP_LINE_BYTES and too_deep(data, start, stop):
                report_too_deep(report, lineno, data[start : min(stop, start + 60)])  # as every reader of a session does
            elif m is not None and find(_FAILED, start, stop) < 0:
                parent = m.group(2)
                objs.append(
                    {"type": "message", "id": m.group(1).decode(), "parentId": parent.decode() if parent is not None else None,
                     "message": {"role": "toolResult"}}
                )  # fmt: skip
                lines.append(lineno)
            else:
                try:
                    obj = loads(view[start:stop])
                except _decode_error:
                    obj = slow_line(data[start:stop], lineno, report, torn=last)
                    if obj is TORN:
                        torn = True
                        obj = SKIP
                if type(obj) is dict:
                    objs.append(obj)
                    lines.append(lineno)
                elif obj is not SKIP:
                    report.add(lineno, "malformed", f"a JSON {json_type(obj)}, not an object", "error")
        lineno += 1
        start = end + 1
    return objs, lines, torn


__all__ = ["parse_session_lines"]
