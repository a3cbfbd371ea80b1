"""Run a notebook file in a real kernel the ways its users do, and save it as they would.

``run(path, cells)`` executes the code cells at ``cells`` of the notebook at ``path`` with nbclient,
in a fresh kernel, and returns the notebook with its outputs (written back with ``save=True``).
How the kernel is told about the notebook follows the front end being imitated:

* ``frontend="lab"``: as Jupyter Server starts a notebook's kernel (``JPY_SESSION_NAME`` is the
  notebook's path) and as JupyterLab executes cells (each execute request carries ``cellId``);
* ``frontend="vscode"``: as VS Code does (``__vsc_ipynb_file__`` in the namespace, its own cell URIs);
* ``frontend="nbclient"``: as ``jupyter execute`` and papermill do (no path, no cell ids).

The kernel's working folder is the notebook's folder, as with both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _with_cell_ids(client: Any, vscode: str | None = None) -> None:
    """Make ``client`` send each cell's id with its execute request, as JupyterLab does (VS Code: a URI of its own)."""
    current: dict[str, Any] = {}

    def on_cell_execute(cell: Any, cell_index: int) -> None:
        current["id"] = cell.get("id") if vscode is None else f"vscode-notebook-cell:{vscode}#W{cell_index}sZmlsZQ%3D%3D"

    client.on_cell_execute = on_cell_execute
    session = client.kc.session
    plain = session.msg

    def msg(msg_type: str, content: Any = None, parent: Any = None, header: Any = None, metadata: Any = None) -> Any:
        if msg_type == "execute_request" and current.get("id"):
            metadata = {**(metadata or {}), "cellId": current["id"]}
        return plain(msg_type, content, parent, header, metadata)

    session.msg = msg


def run(
    path: Path,
    cells: list[int] | None = None,
    *,
    frontend: str = "lab",
    save: bool = True,
    env: dict[str, str] | None = None,
    allow_errors: bool = False,
    new: list[str] | None = None,
) -> Any:
    """Run the code cells at ``cells`` (default: all; ``[]``: none) of the notebook at ``path`` in a fresh kernel; returns the notebook.

    ``new``: then cells typed at the end of the notebook and run before any save (fresh ids the
    saved file does not hold, as after a restart); they are saved with the rest when ``save``.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    first_new = len(nb.cells)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in new or []]
    client = NotebookClient(
        nb, timeout=180, kernel_name="python3", allow_errors=allow_errors, resources={"metadata": {"path": str(path.parent)}}
    )
    kernel_env = {**os.environ, **(env or {})}
    kernel_env.pop("JPY_SESSION_NAME", None)
    if frontend == "lab":
        kernel_env["JPY_SESSION_NAME"] = str(path)
    with client.setup_kernel(env=kernel_env):
        if frontend == "lab":
            _with_cell_ids(client)
        elif frontend == "vscode":  # VS Code sets the path in the namespace, silently, before the first cell
            from nbclient.util import run_sync

            run_sync(client.kc.execute_interactive)(f"__vsc_ipynb_file__ = {str(path)!r}", silent=True, timeout=60)
            _with_cell_ids(client, vscode=str(path))
        for index in [*(cells if cells is not None else range(first_new)), *range(first_new, len(nb.cells))]:
            client.execute_cell(nb.cells[index], index)
    if save:
        nbformat.write(nb, path)
    return nb


def new_notebook(path: Path, sources: list[str]) -> Path:
    """Write a new notebook of code cells (fresh cell ids, as JupyterLab makes them)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)
    return path


def add_cell(path: Path, source: str) -> int:
    """Append a code cell to the saved notebook at ``path``; returns its index."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(nb, path)
    return len(nb.cells) - 1


def output_text(nb: Any, index: int) -> str:
    """Every text a reader sees in the outputs of cell ``index`` (plain text, HTML, streams)."""
    parts: list[str] = []
    for out in nb.cells[index].get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        data = out.get("data") or {}
        for mime in ("text/plain", "text/html", "text/markdown"):
            if mime in data:
                parts.append(str(data[mime]))
        if out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "\n".join(parts)


def bound_notebook(path: Path, session: Any, notebook_id: str, cell_ids: list[str] | tuple[str, ...]) -> Path:
    """A notebook of ``%%pi`` cells with these ids, saved as Jupyter saves it after an output bound to ``session`` (``None``: none)."""
    import nbformat

    from pi_jupyter.notebook.notebook_file import Binding

    nb = nbformat.v4.new_notebook()
    for cid in cell_ids:
        cell = nbformat.v4.new_code_cell("%%pi\nhello")
        cell.id = cid
        nb.cells.append(cell)
    if session is not None:
        out = nbformat.v4.new_output("display_data", data={"text/plain": "pi"})
        out.metadata = Binding.of(session.id, notebook_id, session.path, str(path)).metadata()
        nb.cells[-1].outputs = [out]
    nbformat.write(nb, path)
    return path


def binder(folder: Path) -> Any:
    """The rule of ``notebook/binding.py`` with ``folder/pi-sessions`` as the session folder, making sessions as a kernel does."""
    from pi_jupyter import Session
    from pi_jupyter.notebook.binding import Binder

    def create(name: str | None) -> Session:
        s = Session.create(folder / "pi-sessions")
        if name:
            s.set_name(name)
        return s

    return Binder(folder / "pi-sessions", lambda p: Session.open(p), create)
