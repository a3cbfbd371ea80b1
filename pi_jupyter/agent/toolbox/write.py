"""``write``: create or overwrite a file inside the project, making parent folders (pi's write)."""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import BaseModel, Field

from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError

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
        path = self.resolve(args.path, ctx, "write")
        if os.path.isdir(path):
            raise ToolError(f"Cannot write {path}: it is a directory.")
        data = args.content.encode("utf-8")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ToolError(f"Could not write {path}: {exc.strerror or exc}") from None
        return ToolResult.text(f"Successfully wrote {len(data)} bytes to {args.path}")
