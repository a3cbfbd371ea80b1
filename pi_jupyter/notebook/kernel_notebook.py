"""What a kernel knows of the notebook it runs: its path as it is now, and which of its cells ran.

JupyterLab tells the kernel its notebook's path at start (``JPY_SESSION_NAME``) and each cell's id
with its execute request; :mod:`.moves` keeps the path current through renames. VS Code gives the
path (``__vsc_ipynb_file__``) and its own cell URIs, not the notebook's cell ids. ``jupyter
execute``, papermill and nbclient give neither: the kernel finds its notebook among the
notebooks of its working folder (where they start it) by the text of the ``%pi`` cells it ran,
and a cell's id by its text in that notebook, so re-running a cell there forks where it started,
as in JupyterLab. :func:`watch` is the ``pre_run_cell`` hook that learns all this.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .moves import follow, process_started
from .notebook_file import NotebookFile, is_cell_id, notebook_path, read_notebook

MAX_CANDIDATES = 200
"""How many notebooks of the working folder a run without a path looks at."""
MAX_SOURCES = 200
MAX_TRIES = 3
"""How many ``%%pi`` cells a run without a path looks for its notebook at (more cells make the match surer)."""


def is_pi_cell(source: str) -> bool:
    """Does ``source`` run a pi magic (``%%pi`` or a ``%pi`` line)?"""
    text = source.lstrip()
    return text.startswith("%%pi") or any(line.lstrip().startswith("%pi") for line in source.splitlines())


class KernelNotebook:
    """The notebook of this kernel as far as the front end said, and the ``%pi`` cells it ran."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.started = process_started()
        self.pi_sources: list[str] = []
        """The text of the ``%pi`` cells this kernel ran, in order (how a run without a path finds its notebook)."""
        self._found: NotebookFile | None = None
        self._tries = 0
        self._read: tuple[str, float, NotebookFile | None] | None = None

    @property
    def told(self) -> str | None:
        """The path the front end gave at start (``None``: not told)."""
        return notebook_path(self.namespace)

    def path(self) -> str | None:
        """The notebook's path now: the one the front end gave, after the renames and moves made since this kernel started."""
        told = self.told
        if told is None or os.environ.get("JPY_SESSION_NAME", "") == "" or not os.path.isabs(told):
            return told
        return follow(told, self.started)

    def renamed_to(self, path: str | None, ran: set[str]) -> str | None:
        """``path``, unless the file there holds none of the cells this kernel ran and one other notebook of its folder does.

        That is a notebook renamed while its kernel ran, by a server that did not log it (see
        :mod:`.moves`): the kernel goes with the notebook it ran, not with whatever now has its old name.
        """
        ids = {c for c in ran if is_cell_id(c)}
        if path is None or not ids:
            return path
        here = read_notebook(path)
        if here is not None and (ids & here.cell_ids or not here.cell_ids):
            return path
        holders = []
        for file in sorted(Path(path).parent.glob("*.ipynb"))[:MAX_CANDIDATES]:
            if str(file) == path:
                continue
            try:
                data = file.read_bytes()
            except OSError:
                continue
            if any(f'"{c}"'.encode() in data for c in ids):
                other = read_notebook(str(file))
                if other is not None and ids & other.cell_ids:
                    holders.append(str(file))
        return holders[0] if len(holders) == 1 else path

    def candidates(self, folder: str | None = None) -> list[NotebookFile]:
        """The notebooks of ``folder`` (default: the working folder) holding every ``%pi`` cell this kernel ran."""
        wanted = self.pi_sources
        if not wanted:
            return []
        probe = max(wanted[-1].splitlines() or [""], key=len)
        needle = json.dumps(probe)[1:-1].encode()  # as the line is written in the file (nbformat keeps lines whole)
        out = []
        for file in sorted(Path(folder or os.getcwd()).glob("*.ipynb"))[:MAX_CANDIDATES]:
            try:
                if needle and needle not in file.read_bytes():
                    continue
            except OSError:
                continue
            nb = read_notebook(str(file))
            if nb is not None and all(source in nb.sources for source in wanted):
                out.append(nb)
        return out

    def cell_id(self, source: str) -> str | None:
        """The id of the notebook's cell holding ``source``, for a front end that sends none (or its own, as VS Code)."""
        told = self.path()
        if told is not None:
            nb = self._notebook_at(told)
        else:
            if self._found is None and self._tries < MAX_TRIES:  # each try reads the folder's notebooks: a few, not every cell
                self._tries += 1
                found = self.candidates()
                self._found = found[0] if len(found) == 1 else None
            nb = self._found
        return nb.cell_id_of(source) if nb is not None else None

    def _notebook_at(self, path: str) -> NotebookFile | None:
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return None
        if self._read is None or self._read[:2] != (path, mtime):
            self._read = (path, mtime, read_notebook(path))
        return self._read[2]

    def saw(self, source: str) -> None:
        """A cell with ``source`` is about to run."""
        if is_pi_cell(source):
            self.pi_sources.append(source)
            del self.pi_sources[:-MAX_SOURCES]


def watch(shell: Any, notebook: KernelNotebook) -> Callable[[Any], None]:
    """The ``pre_run_cell`` hook: note each ``%pi`` cell, and give a ``%%pi`` cell its notebook id when the front end sent none."""

    def started(info: Any) -> None:
        source = getattr(info, "raw_cell", None)
        if not isinstance(source, str):
            return
        notebook.saw(source)
        if source.lstrip().startswith("%%pi") and not is_cell_id(getattr(info, "cell_id", None)):
            try:
                found = notebook.cell_id(source)
            except Exception:  # noqa: BLE001 - finding the id is a help, never a reason for the cell to fail
                found = None
            if found:
                shell._pi_cell_id = found  # read by magics._cell_id, as the id JupyterLab would have sent

    return started


__all__ = ["KernelNotebook", "is_pi_cell", "watch"]
