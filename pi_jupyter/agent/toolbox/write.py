"""``write``: create or overwrite a file inside the project, making parent folders (pi's write)."""

from __future__ import annotations

import errno
import os
from typing import ClassVar

from pydantic import BaseModel, Field

from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .safe_open import check_writable

__all__ = ["WriteParams", "WriteTool"]


class WriteParams(BaseModel):
    """Arguments of ``write``."""

    path: str = Field(description="Path to the file to write (relative or absolute)")
    content: str = Field(description="Content to write to the file")


class WriteTool(BuiltinTool[WriteParams]):
    """Write a whole file. The read-modify-write happens without awaiting, so parallel calls cannot interleave."""

    name = "write"
    label = "write"
    description = (
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories."
    )
    parameters = WriteParams
    mutating = True
    prompt_snippet = "Create or overwrite files"
    prompt_guidelines = ("Use write only for new files or complete rewrites.",)
    path_args: ClassVar = {"path": "write"}

    async def run(self, args: WriteParams, ctx: ToolContext) -> ToolResult:
        data = args.content.encode("utf-8")
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)  # no O_TRUNC: the file is checked first
        try:
            fd, path = self.open_path(args.path, ctx, "write", flags, make_parents=True)
        except IsADirectoryError as exc:
            raise ToolError(f"Cannot write {exc.filename}: it is a directory.") from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a pipe nobody reads (opened without blocking)
                raise ToolError(f"Cannot write {args.path}: it is not a regular file (a pipe or device).") from None
            raise ToolError(f"Could not write {args.path}: {exc.strerror or exc}") from None
        try:
            check_writable(fd, path)
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except IsADirectoryError:
            raise ToolError(f"Cannot write {path}: it is a directory.") from None
        except OSError as exc:
            raise ToolError(f"Could not write {path}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        return ToolResult.text(f"Successfully wrote {len(data)} bytes to {args.path}")
