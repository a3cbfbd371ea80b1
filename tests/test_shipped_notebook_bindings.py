"""The shipped notebooks never refer to sessions they do not ship.

Their saved outputs are a reader's first view; a binding in them (``metadata.pi_jupyter.session``)
would name the session of the run that made them, which is not in the repository, and a
first-time user's first ``%%pi`` would report a conversation they cannot have. Checked on the
files as shipped, and on what the first cell of each says when a reader opens a downloaded copy
in JupyterLab (the notebook's path known) or runs it with nbclient or papermill (not known).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from notebook_runs import binder

from pi_jupyter import Session
from pi_jupyter.notebook.binding import Binder
from pi_jupyter.notebook.kernel_notebook import KernelNotebook
from pi_jupyter.notebook.notebook_file import Binding, read_notebook, strip_bindings

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_shipped_notebooks():
    assert len(SHIPPED) >= 5, SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_no_output_names_a_session_the_repository_does_not_ship(path):
    nb = read_notebook(str(path))
    assert nb is not None
    for binding in nb.bindings:
        files = [Path(f) for f in nb.session_files(binding)]
        assert any(f.is_file() and ROOT in f.resolve().parents for f in files), (
            f"{path.name}: an output is bound to session {binding.session}, which is not in the repository ({binding.file or binding.path})"
        )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_first_time_readers_first_pi_cell_says_nothing_about_other_conversations(path, tmp_path, monkeypatch):
    copy = tmp_path / path.name  # downloaded alone, as a reader has it
    shutil.copy(path, copy)
    nb = read_notebook(str(copy))
    assert nb is not None
    opened = binder(tmp_path).choose(str(copy), set())  # JupyterLab: its path is known
    assert opened.said is None and opened.session.name == path.stem

    monkeypatch.chdir(tmp_path)
    kernel = KernelNotebook({})
    first_pi = next((c for c in nbformat.read(copy, as_version=4).cells if c.cell_type == "code" and "%%pi" in c.source), None)
    if first_pi is None:
        return
    kernel.saw(first_pi.source)
    headless = Binder(tmp_path / "headless", lambda p: Session.open(p), lambda n: Session.create(tmp_path / "headless")).choose(
        None, set(), kernel.candidates()
    )
    assert headless.said is None  # nbclient, papermill: nothing said either


def test_the_notebook_runner_strips_bindings_for_readers(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%%pi\nhello")
    out = nbformat.v4.new_output("display_data", data={"text/plain": "pi"})
    out.metadata = Binding.of("s1", "n1", str(tmp_path / "pi-sessions" / "s1.jsonl"), str(tmp_path / "nb.ipynb")).metadata()
    out.metadata["pi_jupyter"]["durable"] = ["text/plain"]
    cell.outputs = [out]
    nb.cells = [cell]
    as_dict = nbformat.from_dict(nb)
    assert strip_bindings(as_dict) == 1
    assert as_dict.cells[0].outputs[0].metadata == {"pi_jupyter": {"durable": ["text/plain"]}}  # the rest of its metadata kept

    import importlib.util

    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
    assert spec is not None and spec.loader is not None
    run_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_notebooks)
    cell.outputs = [out]
    out.metadata = Binding.of("s1", "n1", None, None).metadata()
    shown = run_notebooks.for_readers(nbformat.from_dict(nb))
    assert "session" not in str(shown.cells[0].outputs[0].get("metadata", {}))
