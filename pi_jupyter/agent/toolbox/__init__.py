"""The builtin tools and their registry.

pi's file and shell tools (``read``, ``ls``, ``grep``, ``find``, ``write``, ``edit``,
``bash``) with pi's output limits and texts, plus ``python``, which runs code in the
notebook's namespace. Every result is redacted (:mod:`pi_jupyter.agent.redact`) and every
file tool is confined by the :class:`~pi_jupyter.agent.policy.Policy`.

The default set is :data:`DEFAULT_TOOLS` = ``read, ls, grep, find, python, notebook``. Why: in a
notebook the agent's work is to look at the project and compute on the data already loaded
in the kernel (``notebook`` reads the cells the user ran and describes the variables, without
running code). Looking is harmless and confined to the project root; ``python`` is the
notebook's own way of working, and the user watches its results in the cell. Changing
files and running shell commands (``write``, ``edit``, ``bash``) are opt-in
(``builtin_tools("coding")``, ``%pi --tools``). ``python`` can do anything the user can, so
a cautious setup adds ``Policy(confirm="mutating")`` to have each call confirmed.

>>> tools = builtin_tools(["read", "python"], cwd=".", namespace={})   # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ..policy import Policy
from ..tools import Tool
from .base import BuiltinTool, ToolError, redact_result
from .bash import BashTool
from .edit import EditTool
from .find import FindTool
from .grep import GrepTool
from .ls import LsTool
from .notebook import NotebookTool
from .python import PythonInterrupt, PythonTool
from .read import ReadTool
from .truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    GREP_MAX_LINE_LENGTH,
    TruncationResult,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)
from .write import WriteTool

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "DEFAULT_TOOLS",
    "GREP_MAX_LINE_LENGTH",
    "KNOWN_TOOLS",
    "TOOL_SETS",
    "BashTool",
    "BuiltinTool",
    "EditTool",
    "FindTool",
    "GrepTool",
    "LsTool",
    "NotebookTool",
    "PythonInterrupt",
    "PythonTool",
    "ReadTool",
    "ToolError",
    "TruncationResult",
    "WriteTool",
    "builtin_tools",
    "format_size",
    "redact_result",
    "resolve_tool_names",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

_CLASSES: dict[str, type[BuiltinTool[Any]]] = {
    "read": ReadTool,
    "ls": LsTool,
    "grep": GrepTool,
    "find": FindTool,
    "write": WriteTool,
    "edit": EditTool,
    "bash": BashTool,
    "python": PythonTool,
    "notebook": NotebookTool,
}

KNOWN_TOOLS: dict[str, str] = {
    "read": "read a text file (with offset/limit) or an image",
    "ls": "list a directory",
    "grep": "search file contents with a regex (respects .gitignore)",
    "find": "find files by glob pattern (respects .gitignore)",
    "write": "create or overwrite a file",
    "edit": "replace exact text in a file",
    "bash": "run a shell command",
    "python": "run Python code in the notebook's namespace",
    "notebook": "read the notebook's cells and outputs, describe the kernel's variables (read-only)",
}
"""Every builtin tool name with a one-liner (for ``%pi tools`` and error messages)."""

DEFAULT_TOOLS: tuple[str, ...] = ("read", "ls", "grep", "find", "python", "notebook")
"""The default tool set: read-only, confined file tools, ``python`` and the read-only ``notebook`` (see the module notes)."""

TOOL_SETS: dict[str, tuple[str, ...]] = {
    "default": DEFAULT_TOOLS,
    "readonly": ("read", "ls", "grep", "find", "notebook"),
    "coding": ("read", "bash", "edit", "write"),
    "all": tuple(KNOWN_TOOLS),
    "none": (),
}
"""Named tool sets: ``coding`` is pi's default set; ``all`` is every builtin tool."""


def resolve_tool_names(spec: str | Iterable[str] | None = None) -> list[str]:
    """Tool names from a set name (``"default"``, ``"readonly"``, ``"coding"``, ``"all"``,
    ``"none"``), a comma-separated string (``"read,python"``), a list (set names allowed in
    it), or ``None`` (the default set). Raises ``ValueError`` naming an unknown name."""
    if spec is None:
        return list(DEFAULT_TOOLS)
    items = [p.strip() for p in spec.split(",")] if isinstance(spec, str) else [str(p).strip() for p in spec]
    names: list[str] = []
    for item in items:
        if not item:
            continue
        expanded = TOOL_SETS.get(item, (item,))
        for name in expanded:
            if name not in KNOWN_TOOLS:
                known = ", ".join(KNOWN_TOOLS)
                sets = ", ".join(TOOL_SETS)
                raise ValueError(f"unknown tool {name!r}: builtin tools are {known}; tool sets are {sets}")
            if name not in names:
                names.append(name)
    return names


def builtin_tools(
    names: str | Iterable[str] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    namespace: dict[str, Any] | None = None,
    policy: Policy | None = None,
    python_timeout: float | None = 30.0,
    bash_timeout: float | None = None,
) -> list[Tool[Any]]:
    """Instances of the builtin tools ``names`` (see :func:`resolve_tool_names`), sharing ``cwd`` and ``policy``.

    ``names=None`` takes ``policy.allowed_tools`` when set, else :data:`DEFAULT_TOOLS`. A name
    the policy does not allow raises ``ValueError`` (a tool the model may never call should
    not be offered). ``namespace`` is the python tool's dict (in a notebook: ``user_ns``;
    default: a private dict, or ``ctx.extra["namespace"]`` at call time).
    """
    policy = policy if policy is not None else Policy()
    if names is None and policy.allowed_tools is not None:
        names = [n for n in policy.allowed_tools if n in KNOWN_TOOLS]
    resolved = resolve_tool_names(names)
    refused = [n for n in resolved if not policy.is_tool_allowed(n)]
    if refused:
        raise ValueError(f"tool(s) {', '.join(refused)} not allowed by the policy (allowed_tools={policy.allowed_tools})")
    tools: list[Tool[Any]] = []
    for name in resolved:
        if name == "python":
            tools.append(PythonTool(namespace, timeout=python_timeout, cwd=cwd, policy=policy))
        elif name == "bash":
            tools.append(BashTool(cwd, policy, default_timeout=bash_timeout))
        else:
            tools.append(_CLASSES[name](cwd, policy))
    return tools
