"""``find``: files and directories by glob pattern, pi's output format, in pure Python (see :mod:`.walk`).

As fd's ``--glob``: a pattern without ``/`` matches the name; a pattern with ``/`` matches
the whole absolute path, with ``**/`` put in front unless it starts with ``/`` or ``**``
(so ``src/**/*.py`` finds ``src`` at any depth). ``{a,b}`` alternatives work. Directories
are listed with a trailing ``/``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import ClassVar

from pydantic import BaseModel, Field

from ...resources.ignore import compile_glob
from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .truncate import DEFAULT_MAX_BYTES, NO_LINE_LIMIT, format_size, truncate_head
from .walk import walk

__all__ = ["FindParams", "FindTool"]

DEFAULT_LIMIT = 1000


class FindParams(BaseModel):
    """Arguments of ``find``."""

    pattern: str = Field(description="Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'")
    path: str | None = Field(default=None, description="Directory to search in (default: current directory)")
    limit: int | None = Field(default=None, description="Maximum number of results (default: 1000)")


class FindTool(BuiltinTool[FindParams]):
    """Find files by name or path pattern inside the project."""

    name = "find"
    label = "find"
    description = (
        "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. "
        f"Output is truncated to {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
    )
    parameters = FindParams
    prompt_snippet = "Find files by glob pattern (respects .gitignore)"
    path_args: ClassVar = {"path": "read"}

    async def run(self, args: FindParams, ctx: ToolContext) -> ToolResult:
        search = self.resolve(args.path or ".", ctx, "read")
        if not os.path.exists(search):
            raise ToolError(f"Path not found: {search}")
        if not os.path.isdir(search):
            raise ToolError(f"Not a directory: {search}")
        limit = args.limit if args.limit is not None else DEFAULT_LIMIT
        if limit < 1:
            raise ToolError(f"limit must be 1 or more, got {limit}")
        pattern = args.pattern
        full_path = "/" in pattern
        if full_path and not pattern.startswith("/") and not pattern.startswith("**/") and pattern != "**":
            pattern = f"**/{pattern}"
        try:
            regex = compile_glob(pattern.lstrip("/") if full_path else pattern)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

        cancelled = threading.Event()

        def stop() -> bool:
            return cancelled.is_set() or (ctx.signal is not None and ctx.signal.aborted)

        def search_tree() -> tuple[list[str], bool]:
            found: list[str] = []
            for entry in walk(search, ignore_files=(".gitignore", ".ignore", ".fdignore"), stop=stop, resolved_root=True):
                target = entry.path.replace(os.sep, "/").lstrip("/") if full_path else entry.rel.rsplit("/", 1)[-1]
                if regex.match(target) is None:
                    continue
                if len(found) >= limit:
                    return found, True
                found.append(entry.rel + ("/" if entry.is_dir else ""))
            return found, False

        try:
            found, limit_reached = await asyncio.to_thread(search_tree)
        except asyncio.CancelledError:
            cancelled.set()  # the worker thread notices and ends its walk
            raise
        if stop():
            raise ToolError("Operation aborted")
        if not found:
            return ToolResult.text("No files found matching pattern")
        truncation = truncate_head("\n".join(found), max_lines=NO_LINE_LIMIT)
        output = truncation.content
        details: dict = {}
        notices = []
        if limit_reached:
            notices.append(f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern")
            details["resultLimitReached"] = limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.details()
        if notices:
            output += f"\n\n[{'. '.join(notices)}]"
        return ToolResult.text(output, details=details or None)
