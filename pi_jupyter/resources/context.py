"""Project context files (AGENTS.md / CLAUDE.md) and SYSTEM.md / APPEND_SYSTEM.md, found as pi finds them.

These are the rules on the wall: read afresh when resources are loaded and put into the
system prompt, never stored as session memory (pi-design §8.1).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

__all__ = [
    "CONFIG_DIR_NAME",
    "CONTEXT_FILE_NAMES",
    "ContextFile",
    "discover_append_system_prompt_file",
    "discover_system_prompt_file",
    "load_context_file_from_dir",
    "load_project_context_files",
    "resolve_prompt_input",
]

CONFIG_DIR_NAME = ".pi"
"""The project configuration folder (``<cwd>/.pi``), pi's."""

CONTEXT_FILE_NAMES: tuple[str, ...] = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
"""Candidates in one directory, in order; the first readable one is that directory's file."""


class ContextFile(BaseModel):
    """One context file: its absolute ``path`` and its ``content`` (as read, not trimmed)."""

    path: str
    content: str


def _read_text(path: str) -> str:
    # pi reads with Node's utf-8 decoder, which replaces invalid bytes.
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def load_context_file_from_dir(directory: str | os.PathLike[str], warnings: list[str] | None = None) -> ContextFile | None:
    """The context file of one directory: ``AGENTS.md``, else ``CLAUDE.md`` (upper-case ``.MD`` too).

    A candidate that exists but cannot be read adds a warning to ``warnings`` and the next
    candidate is tried.
    """
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(os.fspath(directory), name)
        if not os.path.exists(path):
            continue
        try:
            return ContextFile(path=path, content=_read_text(path))
        except OSError as exc:
            if warnings is not None:
                warnings.append(f"Could not read {path}: {exc.strerror or exc}")
    return None


def load_project_context_files(
    cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str], warnings: list[str] | None = None
) -> list[ContextFile]:
    """pi's ``loadProjectContextFiles``: the global file of ``agent_dir`` first, then one file per
    ancestor of ``cwd`` (up to the filesystem root, no stop at a git root), outermost first and
    ``cwd`` last, without duplicates."""
    files: list[ContextFile] = []
    seen: set[str] = set()
    global_file = load_context_file_from_dir(agent_dir, warnings)
    if global_file is not None:
        files.append(global_file)
        seen.add(global_file.path)
    ancestors: list[ContextFile] = []
    current = os.path.abspath(os.fspath(cwd))
    while True:
        found = load_context_file_from_dir(current, warnings)
        if found is not None and found.path not in seen:
            ancestors.append(found)
            seen.add(found.path)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    ancestors.reverse()
    files.extend(ancestors)
    return files


def _discover(cwd: str, agent_dir: str, name: str) -> str | None:
    project = os.path.join(cwd, CONFIG_DIR_NAME, name)
    if os.path.exists(project):
        return project
    user = os.path.join(agent_dir, name)
    if os.path.exists(user):
        return user
    return None


def discover_system_prompt_file(cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str]) -> str | None:
    """``<cwd>/.pi/SYSTEM.md``, else ``<agent_dir>/SYSTEM.md``, else ``None``. It *replaces* the default prompt."""
    return _discover(os.fspath(cwd), os.fspath(agent_dir), "SYSTEM.md")


def discover_append_system_prompt_file(cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str]) -> str | None:
    """``<cwd>/.pi/APPEND_SYSTEM.md``, else ``<agent_dir>/APPEND_SYSTEM.md``, else ``None``. It is appended."""
    return _discover(os.fspath(cwd), os.fspath(agent_dir), "APPEND_SYSTEM.md")


def resolve_prompt_input(value: str | os.PathLike[str] | None, what: str, warnings: list[str] | None = None) -> str | None:
    """pi's reading of ``--system-prompt`` / ``--append-system-prompt``: the file's text if
    ``value`` names an existing path, otherwise ``value`` itself as literal text. An existing
    file that cannot be read adds a warning and the value is used literally, as pi does."""
    if value is None or value == "":
        return None
    text = os.fspath(value)
    try:
        exists = os.path.exists(text)
    except (OSError, ValueError):  # e.g. an embedded NUL or a name too long: it is text
        exists = False
    if not exists:
        return text
    try:
        return Path(text).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        if warnings is not None:
            warnings.append(f"Could not read {what} file {text}: {exc.strerror or exc}")
        return text
