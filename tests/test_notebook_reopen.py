"""The manual's promise (docs/notebook.md): reopening a notebook continues its session in a fresh kernel, without ``%pi open``.

Jupyter Server tells a notebook's kernel which file it belongs to (``JPY_SESSION_NAME``);
the kernel is started here with that variable, as the server starts it, and the notebook is
run by nbclient in one kernel, then a new cell in a second, fresh kernel.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_jupyter.session import Session

pytestmark = pytest.mark.kernel


def run_cells(nb, path: Path, indices: list[int]) -> None:
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    # what Jupyter Server sets for the kernel of an open notebook
    with client.setup_kernel(env={**os.environ, "JPY_SESSION_NAME": str(path)}):
        for index in indices:
            client.execute_cell(nb.cells[index], index)


def test_a_reopened_notebook_continues_its_session_in_a_fresh_kernel(tmp_path: Path) -> None:
    import nbformat

    path = tmp_path / "analysis.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"'),
        nbformat.v4.new_code_cell("%%pi\nremember the word banana"),
    ]
    nbformat.write(nb, path)
    run_cells(nb, path, [0, 1])
    nbformat.write(nb, path)

    # the kernel is gone; the notebook is opened again and a new cell runs in a fresh kernel
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("%%pi\nwhich word did I ask you to remember?"))
    run_cells(nb, path, [0, 2])
    assert nb.cells[2].outputs[-1]["data"]["text/plain"].startswith("pi: stop"), nb.cells[2].outputs

    files = sorted((tmp_path / "pi-sessions").glob("*.jsonl"))
    assert len(files) == 1, files  # the same session, not a new one
    s = Session.open(files[0], readonly=True)
    assert s.name == "analysis"
    prompts = [m["content"] for m in s.context().raw_messages if m["role"] == "user"]
    texts = [p if isinstance(p, str) else p[0]["text"] for p in prompts]
    # the second cell's context holds the first cell's turn: the conversation went on
    assert texts == ["remember the word banana", "which word did I ask you to remember?"]
