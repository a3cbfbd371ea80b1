"""A saved notebook is a reader too (issue 36): a notebook from elsewhere never attaches the kernel to a session it names.

Each test builds the notebook the way a sender would (its outputs' binding metadata naming a
session the receiver has: by absolute path, by a ``file`` that climbs out of its folder, with the
receiver's own notebook id copied from a notebook they shared, through a link, at a pipe) and
checks what the receiver ends up with: the session the next cell continues, the one line it says,
and that no session file outside the notebook's session folder was opened for writing or changed.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from notebook_runs import binder

from pi_jupyter.notebook.notebook_file import Binding


def received(path: Path, binding: dict | Binding, cell_ids=("c1",)) -> Path:
    """A notebook as it arrives: one ``%%pi`` output whose metadata is ``binding``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    for cid in cell_ids:
        cell = nbformat.v4.new_code_cell("%%pi\nhello")
        cell.id = cid
        nb.cells.append(cell)
    out = nbformat.v4.new_output("display_data", data={"text/plain": "pi"})
    out.metadata = binding.metadata() if isinstance(binding, Binding) else {"pi_jupyter": {"session": binding}}
    nb.cells[-1].outputs = [out]
    nbformat.write(nb, path)
    return path


@pytest.fixture
def victim(tmp_path):
    """The receiver's own project: a notebook bound to a session with a conversation in it, and the file's bytes."""
    project = tmp_path / "project"
    project.mkdir()
    own = binder(project).choose(str(project / "study.ipynb"), {"c1"})
    own.session.append_message({"role": "user", "content": "PRIVATE-NOTES-42", "timestamp": 1})
    received(project / "study.ipynb", Binding.of(own.session.id, own.notebook_id, own.session.path, str(project / "study.ipynb")))
    return own, Path(own.session.path).read_bytes()


def downloads(tmp_path) -> Path:
    folder = tmp_path / "Downloads"
    folder.mkdir(exist_ok=True)
    return folder


def check_left_alone(choice, victim, where: Path) -> None:
    own, before = victim
    assert choice.session.id != own.session.id
    assert Path(own.session.path).read_bytes() == before  # nothing appended, not even a record
    assert Path(choice.session.path).parent == where / "pi-sessions"  # what it did instead: a new one, in its own folder
    assert not any(e.get("type") == "message" for e in choice.session.raw_entries())  # none of the victim's turns shown


def test_a_binding_naming_a_session_by_absolute_path_is_left_alone(tmp_path, victim):
    own, _ = victim
    nb = received(downloads(tmp_path) / "homework.ipynb", {"session": own.session.id, "notebook": "n-evil", "path": own.session.path})
    choice = binder(downloads(tmp_path)).choose(str(nb), {"c1"})
    check_left_alone(choice, victim, downloads(tmp_path))
    said = choice.said or ""
    assert said.count("\n") == 0 and own.session.path in said and f"%pi open {own.session.path}" in said
    assert "outside this notebook's session folder" in said


def test_a_relative_file_that_climbs_out_of_the_notebooks_folder_is_left_alone(tmp_path, victim):
    own, _ = victim
    climb = os.path.relpath(own.session.path, downloads(tmp_path))
    assert climb.startswith("..")
    nb = received(downloads(tmp_path) / "homework.ipynb", {"session": own.session.id, "notebook": "n-evil", "file": climb})
    check_left_alone(binder(downloads(tmp_path)).choose(str(nb), {"c1"}), victim, downloads(tmp_path))


def test_a_notebook_carrying_the_victims_own_notebook_id_is_still_from_elsewhere(tmp_path, victim):
    """The sender copied the binding from a notebook the victim shared: same session id, same notebook id."""
    own, _ = victim
    copied = Binding.of(own.session.id, own.notebook_id, own.session.path, str(tmp_path / "project" / "study.ipynb"))
    nb = received(downloads(tmp_path) / "study.ipynb", copied)
    check_left_alone(binder(downloads(tmp_path)).choose(str(nb), {"c1"}), victim, downloads(tmp_path))
    # and when the victim's notebook is gone from its place, the download is not taken for it moved
    (tmp_path / "project" / "study.ipynb").unlink()
    check_left_alone(binder(downloads(tmp_path)).choose(str(nb), {"c1"}), victim, downloads(tmp_path))


def test_a_link_in_the_session_folder_that_points_out_of_it_is_outside(tmp_path, victim):
    own, _ = victim
    folder = downloads(tmp_path)
    (folder / "pi-sessions").mkdir()
    link = folder / "pi-sessions" / Path(own.session.path).name
    link.symlink_to(own.session.path)
    nb = received(folder / "homework.ipynb", {"session": own.session.id, "notebook": "n-evil", "file": f"pi-sessions/{link.name}"})
    check_left_alone(binder(folder).choose(str(nb), {"c1"}), victim, folder)


def test_a_pipe_or_odd_ids_named_by_a_binding_neither_hang_nor_escape(tmp_path):
    folder = downloads(tmp_path)
    (folder / "pi-sessions").mkdir()
    fifo = folder / "pi-sessions" / "2026_x.jsonl"
    os.mkfifo(fifo)
    cases = [
        {"session": "x", "notebook": "n", "file": "pi-sessions/2026_x.jsonl"},
        {"session": "*", "notebook": "n"},
        {"session": "../../etc/passwd", "notebook": "n", "path": "/etc/passwd"},
        {"session": "x" * 10_000, "notebook": "n", "at": "9999-99-99"},
    ]
    for case in cases:
        nb = received(folder / "odd.ipynb", case)
        done: list = []
        worker = threading.Thread(target=lambda nb=nb, done=done: done.append(binder(folder).choose(str(nb), {"c1"})), daemon=True)
        worker.start()
        worker.join(30)
        assert done, f"choosing hung on {case}"
        assert Path(done[0].session.path).parent == folder / "pi-sessions"


def test_a_folder_received_whole_continues_its_own_session(tmp_path, victim):
    """A student's ``homework.ipynb`` with its ``pi-sessions/``: the session is in the notebook's own folder, so it goes on."""
    own, _ = victim
    shutil.copytree(tmp_path / "project", tmp_path / "received")
    shutil.rmtree(tmp_path / "project")  # the sender's machine: the original is not here
    choice = binder(tmp_path / "received").choose(str(tmp_path / "received" / "study.ipynb"), {"c1"})
    assert choice.session.id == own.session.id and Path(choice.session.path).parent == tmp_path / "received" / "pi-sessions"
    assert any("PRIVATE-NOTES-42" in str(e) for e in choice.session.raw_entries())
