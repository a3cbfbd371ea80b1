"""``read``: a text file (head-truncated, with offset/limit) or an image, as pi's read tool.

Big files are streamed: only the lines that can be shown are decoded and the rest is
counted, so reading the start of a multi-gigabyte CSV costs one pass over its bytes, not
its size in memory. Binary files that are not images are refused with their size instead
of being shown as garbage (pi decodes them as UTF-8).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import stat
from dataclasses import dataclass
from typing import IO, ClassVar

from pydantic import BaseModel, Field

from ...messages import ImageContent, TextContent
from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head

__all__ = ["MAX_IMAGE_BASE64_BYTES", "ReadParams", "ReadTool", "detect_image_mime", "read_lines"]

MAX_IMAGE_BASE64_BYTES = int(4.5 * 1024 * 1024)
"""pi's inline image limit (base64 payload), below Anthropic's 5 MB."""

_CHUNK = 1 << 20


class ReadParams(BaseModel):
    """Arguments of ``read``."""

    path: str = Field(description="Path to the file to read (relative or absolute)")
    offset: int | None = Field(default=None, description="Line number to start reading from (1-indexed)")
    limit: int | None = Field(default=None, description="Maximum number of lines to read")


def detect_image_mime(head: bytes) -> str | None:
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp`` from the first bytes, else ``None``."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass
class LineSelection:
    """Lines ``start ..`` of a file as pi's ``content.split("\\n")`` would give them."""

    lines: list[str]
    """The decoded selected lines, or a prefix of them when ``complete`` is false."""
    complete: bool
    total_file_lines: int
    selection_lines: int
    selection_bytes: int


def _count_rest(fh, first: bytes = b"") -> tuple[int, int]:
    """(newlines, bytes) from the current position to EOF."""
    newlines, size = first.count(b"\n"), len(first)
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            return newlines, size
        newlines += chunk.count(b"\n")
        size += len(chunk)


def read_lines(
    path: str | IO[bytes], start: int, limit: int | None, cap_lines: int = DEFAULT_MAX_LINES, cap_bytes: int = DEFAULT_MAX_BYTES
) -> LineSelection:
    """Select lines ``[start, start + limit)`` (0-based; ``limit=None``: to the end) of ``path``
    (a file name, or a binary file object read from its current position and left open).

    Decodes at most ``cap_lines + 1`` lines / about ``cap_bytes`` bytes of them (enough for
    head truncation to decide) and counts the rest.
    """
    end = None if limit is None else start + limit
    lines: list[str] = []
    got_bytes = 0
    collecting = True
    idx = 0
    newlines = 0
    sel_lines = 0
    sel_bytes = 0
    last_had_newline = True  # an empty file is one empty line
    source = open(path, "rb") if isinstance(path, str) else contextlib.nullcontext(path)  # noqa: SIM115 - closed by the with
    with source as fh:
        for raw in fh:
            has_nl = raw.endswith(b"\n")
            body = raw[:-1] if has_nl else raw
            if idx >= start and (end is None or idx < end):
                sel_bytes += len(body) + (1 if sel_lines else 0)
                sel_lines += 1
                if collecting:
                    if _full(lines, got_bytes, cap_lines, cap_bytes):
                        collecting = False
                    else:
                        lines.append(body.decode("utf-8", errors="replace"))
                        got_bytes += len(body) + 1
            newlines += has_nl
            idx += 1
            last_had_newline = has_nl
            if end is not None and idx >= end:
                rest_nl, _ = _count_rest(fh)
                return LineSelection(lines, collecting, newlines + rest_nl + 1, sel_lines, sel_bytes)
            if not collecting and end is None:
                rest_nl, rest_bytes = _count_rest(fh)
                if has_nl:  # the rest of the file is rest_nl + 1 more selected lines
                    sel_lines += rest_nl + 1
                    sel_bytes += rest_bytes + 1
                return LineSelection(lines, False, newlines + rest_nl + 1, sel_lines, sel_bytes)
        # The text after the last newline (possibly empty) is one more line.
        if last_had_newline and idx >= start and (end is None or idx < end):
            sel_bytes += 1 if sel_lines else 0
            sel_lines += 1
            if collecting and not _full(lines, got_bytes, cap_lines, cap_bytes):
                lines.append("")
            else:
                collecting = False
    return LineSelection(lines, collecting, newlines + 1, sel_lines, sel_bytes)


def _full(lines: list[str], got_bytes: int, cap_lines: int, cap_bytes: int) -> bool:
    # Enough for head truncation to decide: more lines than the limit, or (joined with
    # newlines, i.e. got_bytes - 1) more bytes than the limit.
    return len(lines) > cap_lines or got_bytes - 1 > cap_bytes


class ReadTool(BuiltinTool[ReadParams]):
    """Read a text file or an image inside the project."""

    name = "read"
    label = "read"
    description = (
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. "
        f"For text files, output is truncated to {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
        "Use offset/limit for large files. When you need the full file, continue with offset until complete."
    )
    parameters = ReadParams
    prompt_snippet = "Read file contents"
    prompt_guidelines = ("Use read to examine files instead of cat or sed.",)
    path_args: ClassVar = {"path": "read"}

    async def run(self, args: ReadParams, ctx: ToolContext) -> ToolResult:
        try:
            # non-blocking: opening a FIFO must not hang the tool; it is refused below
            fd, path = self.open_path(args.path, ctx, "read", os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError as exc:
            raise ToolError(f"File not found: {exc.filename}") from None
        except OSError as exc:
            raise ToolError(f"Could not read {args.path}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"Is a directory: {path}. Use ls to list it.")
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"{path} is not a regular file (a device, pipe or socket); read shows files only.")
            try:
                head = fh.read(4100)
            except OSError as exc:
                raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None
            fh.seek(0)
            mime = detect_image_mime(head)
            if mime:
                return await asyncio.to_thread(self._image, fh, st.st_size, mime)
            if b"\x00" in head:
                raise ToolError(f"{path} is a binary file ({format_size(st.st_size)}), not text; it cannot be shown.")
            # A big file takes a while to count through: keep the event loop (the kernel's) free.
            return await asyncio.to_thread(self._text, fh, args)

    def _image(self, fh: IO[bytes], size: int, mime: str) -> ToolResult:
        encoded_size = (size + 2) // 3 * 4
        if encoded_size >= MAX_IMAGE_BASE64_BYTES:
            note = (
                f"Read image file [{mime}]\n[Image omitted: {format_size(encoded_size)} of base64 is over the "
                f"{format_size(MAX_IMAGE_BASE64_BYTES)} inline image size limit, and images are not resized here.]"
            )
            return ToolResult(content=[TextContent(text=note)])
        data = base64.b64encode(fh.read()).decode("ascii")
        return ToolResult(content=[TextContent(text=f"Read image file [{mime}]"), ImageContent(data=data, mime_type=mime)])

    def _text(self, fh: IO[bytes], args: ReadParams) -> ToolResult:
        start = max(0, args.offset - 1) if args.offset else 0
        limit = args.limit
        if limit is not None and limit < 0:
            raise ToolError(f"limit must be 0 or more, got {limit}")
        sel = read_lines(fh, start, limit)
        if start >= sel.total_file_lines:
            raise ToolError(f"Offset {args.offset} is beyond end of file ({sel.total_file_lines} lines total)")
        start_display = start + 1
        truncation = truncate_head("\n".join(sel.lines))
        if not sel.complete:
            truncation = truncation.model_copy(update={"total_lines": sel.selection_lines, "total_bytes": sel.selection_bytes})
        details = None
        if truncation.first_line_exceeds_limit:
            fh.seek(0)
            first_size = _line_size(fh, start)
            text = (
                f"[Line {start_display} is {format_size(first_size)}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. "
                f"Use bash: sed -n '{start_display}p' {args.path} | head -c {DEFAULT_MAX_BYTES}]"
            )
            details = {"truncation": truncation.details()}
        elif truncation.truncated:
            end_display = start_display + truncation.output_lines - 1
            next_offset = end_display + 1
            text = truncation.content
            if truncation.truncated_by == "lines":
                shown = f"{start_display}-{end_display} of {sel.total_file_lines}"
                text += f"\n\n[Showing lines {shown}. Use offset={next_offset} to continue.]"
            else:
                text += (
                    f"\n\n[Showing lines {start_display}-{end_display} of {sel.total_file_lines} "
                    f"({format_size(DEFAULT_MAX_BYTES)} limit). Use offset={next_offset} to continue.]"
                )
            details = {"truncation": truncation.details()}
        elif limit is not None and start + sel.selection_lines < sel.total_file_lines:
            remaining = sel.total_file_lines - (start + sel.selection_lines)
            text = f"{truncation.content}\n\n[{remaining} more lines in file. Use offset={start + sel.selection_lines + 1} to continue.]"
        else:
            text = truncation.content
        return ToolResult(content=[TextContent(text=text)], details=details)


def _line_size(fh, index: int) -> int:
    for i, raw in enumerate(fh):
        if i == index:
            return len(raw[:-1] if raw.endswith(b"\n") else raw)
    return 0
