"""Which files a stretch of conversation read and changed (pi-design §4.8).

The lists go into the summary text (``<read-files>`` / ``<modified-files>``, pi's exact tags)
and into the entry's ``details``; the next compaction (or branch summary) starts from them.

pi tracks only the tools ``read``, ``write`` and ``edit`` with a string ``path`` argument,
recorded raw (pi-design §10 item 25). The default here also knows the usual names of other
agents' file tools (``read_file``, ``write_file``, ``edit_file``, Claude's ``Read``/``Write``/
``Edit``/``MultiEdit``/``NotebookEdit``, the ``str_replace_based_edit_tool`` text editor)
and the argument names ``file_path``, ``filePath`` and ``notebook_path``, and writes paths
in one form: relative to the session's working directory when inside it, else absolute,
normalized (``./a/../b.py`` is ``b.py``). ``pi_compatible=True`` tracks exactly as pi.
Edits made through a shell command stay invisible in both modes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

_READ, _WRITE, _EDIT = "read", "written", "edited"

_TOOL_KINDS: dict[str, str] = {
    "read": _READ,
    "read_file": _READ,
    "view": _READ,
    "write": _WRITE,
    "write_file": _WRITE,
    "create_file": _WRITE,
    "edit": _EDIT,
    "edit_file": _EDIT,
    "multiedit": _EDIT,
    "multi_edit": _EDIT,
    "notebookedit": _EDIT,
    "notebook_edit": _EDIT,
    "str_replace": _EDIT,
}
_EDITOR_TOOLS = {"str_replace_based_edit_tool", "str_replace_editor", "text_editor"}
_EDITOR_COMMANDS = {"view": _READ, "create": _WRITE, "str_replace": _EDIT, "insert": _EDIT, "undo_edit": _EDIT}
_PATH_KEYS = ("path", "file_path", "filePath", "notebook_path")
_PI_KINDS = {"read": _READ, "write": _WRITE, "edit": _EDIT}
FILE_TOOL_NAMES = frozenset(_TOOL_KINDS) | frozenset(_EDITOR_TOOLS)
"""Lower-cased names of the tools whose calls :func:`extract_file_ops` may record (in either mode)."""


class FileOps(BaseModel):
    """Files read, written and edited (sets of paths)."""

    read: set[str] = Field(default_factory=set)
    written: set[str] = Field(default_factory=set)
    edited: set[str] = Field(default_factory=set)

    def add_details(self, details: Any) -> None:
        """Seed from a previous summary's ``details`` (``readFiles`` are read, ``modifiedFiles`` edited)."""
        if not isinstance(details, dict):
            return
        read, modified = details.get("readFiles"), details.get("modifiedFiles")
        if isinstance(read, list):
            self.read.update(f for f in read if isinstance(f, str))
        if isinstance(modified, list):
            self.edited.update(f for f in modified if isinstance(f, str))

    def lists(self) -> tuple[list[str], list[str]]:
        """``(read_files, modified_files)``: files only read, and files written or edited, each sorted."""
        return compute_file_lists(self)

    def details(self) -> dict[str, list[str]]:
        """The ``details`` pi stores on a compaction or branch summary: ``{readFiles, modifiedFiles}``."""
        read, modified = self.lists()
        return {"readFiles": read, "modifiedFiles": modified}


def no_file_details() -> dict[str, list[str]]:
    """The ``details`` of a summary that names no file (``{readFiles: [], modifiedFiles: []}``)."""
    return {"readFiles": [], "modifiedFiles": []}


def _js_order(path: str) -> bytes:
    # JavaScript's default sort compares UTF-16 code units
    return path.encode("utf-16-be", "surrogatepass")


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """pi's ``computeFileLists``: read-only files and modified files (edited or written), sorted as JavaScript sorts."""
    modified = ops.edited | ops.written
    read_only = sorted((f for f in ops.read if f not in modified), key=_js_order)
    return read_only, sorted(modified, key=_js_order)


def format_file_operations(read_files: Iterable[str], modified_files: Iterable[str]) -> str:
    """pi's ``formatFileOperations``: the tags appended to a summary, or ``""`` when both lists are empty."""
    read, modified = list(read_files), list(modified_files)
    sections = []
    if read:
        sections.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


def strip_file_operations(summary: str) -> str:
    """``summary`` without the file tags :func:`format_file_operations` appended at its end."""
    for tag in ("modified-files", "read-files"):
        close = f"\n</{tag}>"
        if summary.endswith(close):
            start = summary.rfind(f"\n\n<{tag}>\n")
            if start >= 0:
                summary = summary[:start]
    return summary


def extract_file_ops(message: Any, ops: FileOps, *, pi_compatible: bool = False, cwd: str | None = None) -> None:
    """Add the file operations of an assistant message's tool calls to ``ops`` (pi's ``extractFileOpsFromMessage``)."""
    if type(message) is not dict or message.get("role") != "assistant":
        return
    content = message.get("content")
    if type(content) is not list:
        return
    for block in content:
        if type(block) is not dict or block.get("type") != "toolCall":
            continue
        name = block.get("name")
        args = block.get("arguments")
        if type(name) is not str or type(args) is not dict:
            continue
        if pi_compatible:
            kind = _PI_KINDS.get(name)
            path = args.get("path")
            if kind is None or type(path) is not str or not path:
                continue
        else:
            lowered = name.lower()
            kind = _EDITOR_COMMANDS.get(args.get("command")) if lowered in _EDITOR_TOOLS else _TOOL_KINDS.get(lowered)  # type: ignore[arg-type]
            if kind is None:
                continue
            path = None
            for key in _PATH_KEYS:
                value = args.get(key)
                if type(value) is str and value:
                    path = normalize_path(value, cwd)
                    break
            if path is None:
                continue
        getattr(ops, kind).add(path)


def normalize_path(path: str, cwd: str | None = None) -> str:
    """One spelling per file: normalized, and relative to ``cwd`` when it lies inside it."""
    p = path.replace("\\", "/") if "\\" in path and "/" not in path else path
    if cwd:
        base = posixpath.normpath(cwd)
        full = posixpath.normpath(p if posixpath.isabs(p) else posixpath.join(base, p))
        if full == base:
            return "."
        prefix = base.rstrip("/") + "/"
        if full.startswith(prefix):
            return full[len(prefix) :]
        return full
    return posixpath.normpath(p)
