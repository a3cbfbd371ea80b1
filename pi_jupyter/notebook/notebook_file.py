"""What the kernel reads of its own notebook file: its cells, and which conversation its saved outputs belong to.

Every ``%%pi`` output carries a *binding* in its metadata (``metadata["pi_jupyter"]["session"]``):
the session's id, where its file is, and the *notebook id*, a random id this notebook got the
first time it ran ``%%pi``. The notebook file, once saved, holds them, so it is the notebook
itself that says which conversation it continues (DESIGN decision 14), not its file name.
See :mod:`.binding` for how the kernel uses them.

The kernel learns its notebook's path the way Jupyter tells it: ``JPY_SESSION_NAME`` (set by
Jupyter Server for the kernel of an open notebook, updated on rename for the next restart),
or ``__vsc_ipynb_file__`` (VS Code). ``jupyter execute`` and papermill tell it nothing.
No IPython import here.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..messages import now_iso

BINDING_KEY = "session"
"""Key of the binding inside an output's ``metadata["pi_jupyter"]``."""
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
"""A notebook file larger than this is not read (its cells are not needed to run the next one)."""


def new_notebook_id() -> str:
    """A fresh notebook id (random, 16 hex digits)."""
    return secrets.token_hex(8)


class Binding(BaseModel):
    """Which session a notebook's ``%%pi`` output belongs to."""

    session: str
    """The session's id (its header ``id``)."""
    notebook: str
    """The notebook id (the same in every output of one notebook; a copy starts with its original's)."""
    file: str | None = None
    """The session file, relative to the notebook's folder when it lies below it (a folder moved or sent whole)."""
    path: str | None = None
    """The session file's absolute path, from ``~`` when under the home folder (a notebook moved to another folder)."""
    at: str = Field(default_factory=now_iso)
    """When the output was made: the latest binding of a notebook is the one it continues."""

    def metadata(self) -> dict[str, Any]:
        """The binding as output metadata (``{"pi_jupyter": {"session": {...}}}``)."""
        return {"pi_jupyter": {BINDING_KEY: self.model_dump(exclude_none=True)}}

    @classmethod
    def of(cls, session_id: str, notebook_id: str, session_path: str | None, notebook_path: str | None) -> Binding:
        """The binding of an output of the notebook at ``notebook_path`` made on the session at ``session_path``."""
        file = path = None
        if session_path:
            path = os.path.abspath(session_path)
            folder = os.path.dirname(os.path.abspath(notebook_path)) if notebook_path else None
            if folder and path.startswith(folder + os.sep):
                file = os.path.relpath(path, folder)
            home = os.path.expanduser("~")
            if home not in ("", "~", os.sep) and path.startswith(home + os.sep):
                path = "~" + path[len(home) :]  # a shared notebook does not show whose home it came from
        return cls(session=session_id, notebook=notebook_id, file=file, path=path)

    @classmethod
    def from_output(cls, output: Any) -> Binding | None:
        """The binding an output carries, if any (``None`` for anything malformed)."""
        meta = output.get("metadata") if isinstance(output, dict) else None
        pi = meta.get("pi_jupyter") if isinstance(meta, dict) else None
        data = pi.get(BINDING_KEY) if isinstance(pi, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("session"), str) or not isinstance(data.get("notebook"), str):
            return None
        try:
            return cls.model_validate(data)
        except ValueError:
            return None


class NotebookFile(BaseModel):
    """The parts of a saved notebook the kernel uses."""

    path: str
    cell_ids: set[str] = Field(default_factory=set)
    bindings: list[Binding] = Field(default_factory=list)
    sources: dict[str, list[str]] = Field(default_factory=dict)
    """Each code cell's text -> the ids of the cells holding it (how a run that sends no cell ids finds its cells)."""

    def latest(self) -> Binding | None:
        """The binding of the most recent ``%%pi`` output (the conversation this notebook continues)."""
        return max(self.bindings, key=lambda b: b.at, default=None)

    def notebook_ids(self) -> set[str]:
        """Every notebook id its outputs carry."""
        return {b.notebook for b in self.bindings}

    def session_files(self, binding: Binding) -> list[str]:
        """Where the session file of ``binding`` may be: beside this notebook, then where it was written.

        Beside first: a folder moved or received whole (notebook and ``pi-sessions/``) goes on with
        its own copy of the file, never with the one at the old place.
        """
        out = []
        if binding.file:
            out.append(os.path.normpath(os.path.join(os.path.dirname(self.path), binding.file)))
        if binding.path:
            out.append(os.path.abspath(os.path.expanduser(binding.path)))
        return out

    def cell_id_of(self, source: str) -> str | None:
        """The id of the one code cell holding exactly ``source`` (``None``: none, or several)."""
        ids = self.sources.get(source, [])
        return ids[0] if len(ids) == 1 else None


def notebook_path(namespace: dict[str, Any] | None = None) -> str | None:
    """The path of the notebook this kernel runs, as the front end told it (``None``: not told)."""
    found = os.environ.get("JPY_SESSION_NAME") or ""
    vscode = (namespace or {}).get("__vsc_ipynb_file__")
    if isinstance(vscode, str) and vscode:
        found = vscode
    if not found or not found.endswith(".ipynb"):
        return None
    return os.path.abspath(os.path.expanduser(found))


def read_notebook(path: str | None) -> NotebookFile | None:
    """The cells and bindings of the notebook at ``path``; ``None`` when there is no readable notebook there."""
    if not path:
        return None
    try:
        p = Path(path)
        if not p.is_file() or p.stat().st_size > MAX_NOTEBOOK_BYTES:
            return None
        nb = json.loads(p.read_bytes())
    except (OSError, ValueError):
        return None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return None
    found = NotebookFile(path=os.path.abspath(path))
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        if isinstance(cell.get("id"), str):
            found.cell_ids.add(cell["id"])
            source = cell.get("source")
            text = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
            if cell.get("cell_type") == "code" and isinstance(text, str):
                found.sources.setdefault(text, []).append(cell["id"])
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            binding = Binding.from_output(output)
            if binding is not None:
                found.bindings.append(binding)
    return found


def strip_bindings(nb: Any) -> int:
    """Remove every output's binding from the notebook ``nb`` (a dict, as nbformat reads it); returns how many.

    For a notebook shipped without its sessions (the package's own, a course's handout): a
    reader's first ``%%pi`` then starts a conversation of its own, and never reports one it
    cannot have.
    """
    removed = 0
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        for output in cell.get("outputs", []) if isinstance(cell, dict) else []:
            meta = output.get("metadata") if isinstance(output, dict) else None
            pi = meta.get("pi_jupyter") if isinstance(meta, dict) else None
            if isinstance(meta, dict) and isinstance(pi, dict) and BINDING_KEY in pi:
                del pi[BINDING_KEY]
                removed += 1
                if not pi:
                    del meta["pi_jupyter"]
    return removed


def is_cell_id(value: str | None) -> bool:
    """True for an nbformat cell id as JupyterLab sends it (not nbclient's text hash, not a VS Code URI)."""
    return bool(value) and isinstance(value, str) and not value.startswith("src:") and ":" not in value and "/" not in value


__all__ = ["BINDING_KEY", "Binding", "NotebookFile", "is_cell_id", "new_notebook_id", "notebook_path", "read_notebook", "strip_bindings"]
