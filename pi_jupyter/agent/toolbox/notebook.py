"""``notebook``: look at the notebook the agent lives in (read-only).

Three actions: ``cells`` lists the cells run in this kernel (``In[n]``, cell id, whether they
failed, what they showed), ``read`` gives one cell's code and outputs whole (by ``In[n]``, its
number, or its cell id), and ``variables`` describes the live namespace like a variable
inspector (names, types, shapes, dtypes, sizes; never whole values; ``name`` describes one
variable in more depth). The automatic notebook context of each turn covers only the cells
since the last turn; this tool looks further back.

The cells come from ``ctx.extra["notebook"]`` (the notebook layer gives its record of the
kernel's cells: an object with ``list_cells(limit)``, ``read_cell(ref)`` and ``hidden_names()``);
the variables from ``ctx.extra["namespace"]``. Outside a notebook the tool says so. Its results
are redacted like every tool's.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .namespace import describe_namespace

__all__ = ["NotebookParams", "NotebookTool"]


class NotebookParams(BaseModel):
    """Arguments of ``notebook``."""

    action: Literal["cells", "read", "variables"] = Field(
        default="cells", description="cells: list the cells run in this kernel; read: one cell whole; variables: the live variables"
    )
    cell: str | None = Field(default=None, description="For read: the cell, as In[n], n, or its cell id")
    name: str | None = Field(default=None, description="For variables: one variable to describe in more depth (columns, keys)")
    limit: int = Field(default=50, description="For cells: how many of the latest cells to list")


class NotebookTool(BuiltinTool[NotebookParams]):
    """Read-only access to the notebook's cells and the kernel's variables (see the module docstring)."""

    name = "notebook"
    label = "notebook"
    description = (
        "Look at the user's notebook (read-only): action 'cells' lists the cells run in this kernel (In[n], cell id, errors, outputs),"
        " 'read' returns one cell's code and outputs (cell='In[3]', '3' or a cell id), 'variables' describes the live variables"
        " (types, shapes, dtypes, sizes; no values; name='df' for one in depth)."
    )
    parameters = NotebookParams
    mutating = False
    prompt_snippet = "Read the notebook's cells (code, outputs, errors) and describe the kernel's variables, without running code"
    prompt_guidelines = (
        "Each prompt comes with the cells the user ran since your last turn; use the notebook tool to look further back, or to see"
        " what the kernel holds before you run code",
    )
    command_arg: ClassVar = None

    async def run(self, args: NotebookParams, ctx: ToolContext) -> ToolResult:
        extra = ctx.extra or {}
        source = extra.get("notebook")
        if args.action == "variables":
            namespace = extra.get("namespace")
            if not isinstance(namespace, dict):
                raise ToolError("No notebook kernel here: there are no live variables to describe.")
            hidden = _hidden(source)
            return ToolResult.text(describe_namespace(namespace, hidden, only=args.name.strip() if args.name else None))
        if source is None:
            raise ToolError("No notebook here: the agent is not running inside a notebook kernel.")
        if args.action == "read":
            if not args.cell or not args.cell.strip():
                raise ToolError("Give the cell to read: cell='In[3]', '3', or a cell id (action 'cells' lists them).")
            text = source.read_cell(args.cell)
            if text is None:
                raise ToolError(f"No cell {args.cell!r} has run in this kernel (action 'cells' lists the ones that did).")
            return ToolResult.text(text)
        return ToolResult.text(source.list_cells(max(1, min(int(args.limit), 500))))


def _hidden(source: Any) -> set[str]:
    names = getattr(source, "hidden_names", None)
    try:
        return set(names()) if callable(names) else set()
    except Exception:  # noqa: BLE001 - no list of hidden names: the rule on "_" still applies
        return set()
