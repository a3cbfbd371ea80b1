"""Output limits of pi's tools (``core/tools/truncate.ts``): lines and bytes, head or tail.

Two independent limits, whichever is hit first: 2000 lines and 50 KB (UTF-8 bytes). Head
truncation (read, ls, grep, find) keeps the beginning and never returns a partial line; tail
truncation (bash, python output) keeps the end and may return the end of one over-long last
line. Lines are split on ``"\\n"`` only, as pi splits them.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "NO_LINE_LIMIT",
    "TruncationResult",
    "format_size",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
NO_LINE_LIMIT = 2**53 - 1
"""The line limit of listings capped by bytes only (grep, find, ls): JavaScript's ``Number.MAX_SAFE_INTEGER``, as pi records it."""


class TruncationResult(BaseModel):
    """What a truncation kept; :meth:`details` gives pi's camelCase ``truncation`` object."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)

    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool = False
    first_line_exceeds_limit: bool = False
    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES

    def details(self) -> dict[str, Any]:
        """pi's ``details.truncation`` shape (camelCase keys, ``truncatedBy`` null when not truncated)."""
        return self.model_dump(by_alias=True)


class _Totals(TypedDict):
    """The fields every :class:`TruncationResult` of one content shares."""

    total_lines: int
    total_bytes: int
    max_lines: int
    max_bytes: int


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def format_size(n: int) -> str:
    """``512B``, ``1.5KB``, ``2.0MB`` as pi writes sizes."""
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB"
    return f"{n / (1024 * 1024):.1f}MB"


def truncate_head(content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> TruncationResult:
    """Keep the first complete lines within both limits.

    If the first line alone is over ``max_bytes`` the content is empty and
    ``first_line_exceeds_limit`` is set.
    """
    total_bytes = _nbytes(content)
    lines = content.split("\n")
    total_lines = len(lines)
    common = _Totals(total_lines=total_lines, total_bytes=total_bytes, max_lines=max_lines, max_bytes=max_bytes)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return TruncationResult(
            content=content, truncated=False, truncated_by=None, output_lines=total_lines, output_bytes=total_bytes, **common
        )
    if _nbytes(lines[0]) > max_bytes:
        return TruncationResult(
            content="", truncated=True, truncated_by="bytes", output_lines=0, output_bytes=0, first_line_exceeds_limit=True, **common
        )
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    for i, line in enumerate(lines[:max_lines]):
        size = _nbytes(line) + (1 if i > 0 else 0)
        if used + size > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    out = "\n".join(kept)
    return TruncationResult(content=out, truncated=True, truncated_by=by, output_lines=len(kept), output_bytes=_nbytes(out), **common)


def _tail_bytes(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:  # not in the middle of a character
        start += 1
    return data[start:].decode("utf-8")


def truncate_tail(content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> TruncationResult:
    """Keep the last complete lines within both limits.

    If the last line alone is over ``max_bytes``, its end is kept and ``last_line_partial`` is set.
    """
    total_bytes = _nbytes(content)
    lines = content.split("\n")
    total_lines = len(lines)
    common = _Totals(total_lines=total_lines, total_bytes=total_bytes, max_lines=max_lines, max_bytes=max_bytes)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return TruncationResult(
            content=content, truncated=False, truncated_by=None, output_lines=total_lines, output_bytes=total_bytes, **common
        )
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = _nbytes(line) + (1 if kept else 0)
        if used + size > max_bytes:
            by = "bytes"
            if not kept:
                piece = _tail_bytes(line, max_bytes)
                kept.append(piece)
                used = _nbytes(piece)
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    kept.reverse()
    out = "\n".join(kept)
    return TruncationResult(
        content=out,
        truncated=True,
        truncated_by=by,
        output_lines=len(kept),
        output_bytes=_nbytes(out),
        last_line_partial=partial,
        **common,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` with pi's ``... [truncated]`` suffix: ``(text, was_truncated)``."""
    if len(line) <= max_chars:
        return line, False
    return f"{line[:max_chars]}... [truncated]", True
