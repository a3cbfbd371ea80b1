"""``ls``: a directory's entries, sorted case-insensitively, ``/`` after directories, dotfiles included (pi's ls)."""

from __future__ import annotations

import os
import stat
from typing import ClassVar

from pydantic import BaseModel, Field

from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .truncate import DEFAULT_MAX_BYTES, NO_LINE_LIMIT, format_size, truncate_head

__all__ = ["LsParams", "LsTool"]

DEFAULT_LIMIT = 500


class LsParams(BaseModel):
    """Arguments of ``ls``."""

    path: str | None = Field(default=None, description="Directory to list (default: current directory)")
    limit: int | None = Field(default=None, description="Maximum number of entries to return (default: 500)")


class LsTool(BuiltinTool[LsParams]):
    """List one directory inside the project."""

    name = "ls"
    label = "ls"
    description = (
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. "
        f"Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
    )
    parameters = LsParams
    prompt_snippet = "List directory contents"
    path_args: ClassVar = {"path": "read"}

    async def run(self, args: LsParams, ctx: ToolContext) -> ToolResult:
        limit = args.limit if args.limit is not None else DEFAULT_LIMIT
        if limit < 1:
            raise ToolError(f"limit must be 1 or more, got {limit}")
        try:
            fd, path = self.open_path(args.path or ".", ctx, "read", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError as exc:
            raise ToolError(f"Path not found: {exc.filename}") from None
        except NotADirectoryError as exc:
            raise ToolError(f"Not a directory: {exc.filename}") from None
        except OSError as exc:
            raise ToolError(f"Cannot read directory: {exc.strerror or exc}") from None
        try:
            # listed through the opened folder, not its name: a folder swapped meanwhile is not listed
            names = os.listdir(fd) if os.listdir in os.supports_fd else os.listdir(path)
            names.sort(key=lambda n: (n.lower(), n))
            results: list[str] = []
            limit_reached = False
            for name in names:
                if len(results) >= limit:
                    limit_reached = True
                    break
                try:
                    # follows symlinks (for the / only); a broken link is skipped, as in pi
                    st = os.stat(name, dir_fd=fd) if os.stat in os.supports_dir_fd else os.stat(os.path.join(path, name))
                except OSError:
                    continue
                results.append(name + ("/" if stat.S_ISDIR(st.st_mode) else ""))
        except OSError as exc:
            raise ToolError(f"Cannot read directory: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        if not results:
            return ToolResult.text("(empty directory)")
        truncation = truncate_head("\n".join(results), max_lines=NO_LINE_LIMIT)
        output = truncation.content
        details: dict = {}
        notices = []
        if limit_reached:
            notices.append(f"{limit} entries limit reached. Use limit={limit * 2} for more")
            details["entryLimitReached"] = limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.details()
        if notices:
            output += f"\n\n[{'. '.join(notices)}]"
        return ToolResult.text(output, details=details or None)
