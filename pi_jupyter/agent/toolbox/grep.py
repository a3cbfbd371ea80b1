"""``grep``: search file contents with a regex, pi's output format, in pure Python (see :mod:`.walk`).

Patterns are Python regular expressions (ripgrep's dialect differs in corners such as
``\\p{..}`` classes and possessive quantifiers). Binary files (a NUL byte in their first
8 KB) are skipped, as ripgrep skips them. The search runs in a worker thread so the
notebook's event loop stays free, and stops at once when the call is aborted.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO, ClassVar

from pydantic import BaseModel, Field

from ...resources.ignore import compile_glob
from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, NO_LINE_LIMIT, format_size, truncate_head, truncate_line
from .walk import Entry, walk

__all__ = ["GrepParams", "GrepTool"]

DEFAULT_LIMIT = 100


class GrepParams(BaseModel):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Search pattern (regex or literal string)")
    path: str | None = Field(default=None, description="Directory or file to search (default: current directory)")
    glob: str | None = Field(default=None, description="Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'")
    ignoreCase: bool | None = Field(default=None, description="Case-insensitive search (default: false)")
    literal: bool | None = Field(default=None, description="Treat pattern as literal string instead of regex (default: false)")
    context: int | None = Field(default=None, description="Number of lines to show before and after each match (default: 0)")
    limit: int | None = Field(default=None, description="Maximum number of matches to return (default: 100)")


class _GlobFilter:
    """ripgrep's ``--glob``: without ``/`` it matches the file name at any depth; ``!`` excludes."""

    def __init__(self, glob: str) -> None:
        self.negated = glob.startswith("!")
        body = glob[1:] if self.negated else glob
        self.anchored = "/" in body.rstrip("/")
        try:
            self.regex = compile_glob(body.lstrip("/"))
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    def _match(self, rel: str) -> bool:
        target = rel if self.anchored else rel.rsplit("/", 1)[-1]
        return self.regex.match(target) is not None

    def wants_file(self, rel: str) -> bool:
        return not self._match(rel) if self.negated else self._match(rel)

    def prunes_dir(self, rel: str) -> bool:
        return self.negated and self._match(rel)


_WHOLE_FILE_LIMIT = 32 * 1024 * 1024
_PRESCAN_UNSAFE = re.compile(r"\(\?[=!<]|\\[AZnr]")


def prescan_regex(regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """A multi-line version of ``regex`` that can reject a whole file in one C-level search.

    It never misses a line match (``^``/``$`` work per line), but may report files without
    one; patterns where a whole-text search could miss (lookarounds, ``\\A``, ``\\Z``, explicit
    line breaks) get ``None`` and are searched line by line only.
    """
    if _PRESCAN_UNSAFE.search(regex.pattern):
        return None
    try:
        return re.compile(regex.pattern, regex.flags | re.MULTILINE)
    except re.error:
        return None


def _regular_file(fd: int) -> BinaryIO | None:
    """``fd`` as a file object when it is a regular file; anything else (a folder a link led to since
    the walk saw a file, a pipe, a device) is closed here and gives ``None``."""
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return os.fdopen(fd, "rb")
    except OSError:
        pass
    os.close(fd)
    return None


def _file_matches(fh: BinaryIO, regex: re.Pattern[str], context: int, prescan: re.Pattern[str] | None = None):
    """Yield ``(line number, [(n, text), ...])`` per matching line of the regular file ``fh`` (closed at the end).

    Lines are split as pi shows them: on ``\\n`` with ``\\r`` removed without context, on any
    line break with context. Files up to 32 MB are read whole (and skipped at once when the
    prescan finds nothing); bigger ones are streamed line by line, so a huge data file costs
    no memory.
    """
    with fh:
        try:
            size = os.fstat(fh.fileno()).st_size
        except OSError:
            return
        head = fh.read(8192)
        if b"\x00" in head:  # binary, as ripgrep decides it
            return
        if size > _WHOLE_FILE_LIMIT and context == 0:
            fh.seek(0)
            for number, raw in enumerate(fh, start=1):
                line = raw.decode("utf-8", errors="replace").rstrip("\n").replace("\r", "")
                if regex.search(line) is not None:
                    yield number, [(number, line)]
            return
        try:
            text = (head + fh.read()).decode("utf-8", errors="replace")
        except OSError:
            return
    if prescan is not None and prescan.search(text) is None:
        return
    if context == 0:
        for number, line in enumerate(text.split("\n"), start=1):
            line = line.replace("\r", "")
            if regex.search(line) is not None:
                yield number, [(number, line)]
        return
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        if regex.search(line) is not None:
            first, last = max(1, number - context), min(len(lines), number + context)
            yield number, [(n, lines[n - 1]) for n in range(first, last + 1)]


class GrepTool(BuiltinTool[GrepParams]):
    """Search file contents inside the project."""

    name = "grep"
    label = "grep"
    description = (
        "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. "
        f"Output is truncated to {DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
        f"Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
    )
    parameters = GrepParams
    prompt_snippet = "Search file contents for patterns (respects .gitignore)"
    path_args: ClassVar = {"path": "read"}

    async def run(self, args: GrepParams, ctx: ToolContext) -> ToolResult:
        search = self.resolve(args.path or ".", ctx, "read")
        if not os.path.exists(search):
            raise ToolError(f"Path not found: {search}")
        flags = re.IGNORECASE if args.ignoreCase else 0
        try:
            regex = re.compile(re.escape(args.pattern) if args.literal else args.pattern, flags)
        except re.error as exc:
            raise ToolError(f"Invalid regex {args.pattern!r}: {exc}. Use literal=true to search for the text as is.") from None
        glob = _GlobFilter(args.glob) if args.glob else None
        context = args.context if args.context and args.context > 0 else 0
        limit = max(1, args.limit if args.limit is not None else DEFAULT_LIMIT)
        cancelled = threading.Event()

        def stop() -> bool:
            return cancelled.is_set() or (ctx.signal is not None and ctx.signal.aborted)

        try:
            result = await asyncio.to_thread(self._search, search, regex, glob, context, limit, stop, ctx)
        except asyncio.CancelledError:
            cancelled.set()  # the worker thread notices and ends its walk
            raise
        if stop():
            raise ToolError("Operation aborted")
        return result

    def _search(
        self, search: str, regex: re.Pattern[str], glob: _GlobFilter | None, context: int, limit: int, stop: Any, ctx: ToolContext
    ) -> ToolResult:
        is_dir = os.path.isdir(search)
        candidates: Iterator[tuple[str, str, Entry | None]]
        if is_dir:
            files = (
                e
                for e in walk(
                    search,
                    ignore_files=(".gitignore", ".ignore", ".rgignore"),
                    stop=stop,
                    skip_dir=lambda e: glob is not None and glob.prunes_dir(e.rel),
                    resolved_root=True,
                )
                if not e.is_dir
            )
            candidates = ((e.path, e.rel, e) for e in files)
        else:
            candidates = iter([(search, os.path.basename(search), None)])
        prescan = prescan_regex(regex)
        out: list[str] = []
        matches = 0
        limit_reached = False
        lines_truncated = False
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
        for path, rel, entry in candidates:
            if stop():
                break
            if glob is not None and is_dir and not glob.wants_file(rel):
                continue
            try:
                if entry is not None and not entry.is_link:
                    fd = entry.open(flags)  # through the walk's folder descriptor, refusing a link swapped in
                else:
                    # checked and opened without following a link swapped in since; a link
                    # pointing outside the allowed area is not followed
                    fd, _real = self.open_path(path, ctx, "read", flags)
            except (ToolError, OSError):
                continue
            fh = _regular_file(fd)
            if fh is None:
                continue
            for number, block in _file_matches(fh, regex, context, prescan):
                if matches >= limit:
                    limit_reached = True
                    break
                matches += 1
                for current, line in block:
                    text, cut = truncate_line(line)
                    lines_truncated = lines_truncated or cut
                    sep = ":" if current == number else "-"
                    out.append(f"{rel}{sep}{current}{sep} {text}")
            if limit_reached:
                break
        if matches == 0:
            return ToolResult.text("No matches found")
        truncation = truncate_head("\n".join(out), max_lines=NO_LINE_LIMIT)
        output = truncation.content
        details: dict = {}
        notices = []
        if limit_reached:
            notices.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern")
            details["matchLimitReached"] = limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.details()
        if lines_truncated:
            notices.append(f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines")
            details["linesTruncated"] = True
        if notices:
            output += f"\n\n[{'. '.join(notices)}]"
        return ToolResult.text(output, details=details or None)
