"""The rule that picks a notebook's conversation (``notebook/binding.py``), on real files, without a kernel.

The kernel tests (``test_notebook_owns_session.py``) and the JupyterLab test run the common
paths end to end; these are the odd cases: a path gone stale after a rename, a notebook file that
is not one, a conversation whose file is gone, a copy made after a rename that no kernel saw.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from notebook_runs import bound_notebook

from pi_jupyter import Session
from pi_jupyter.notebook.binding import Binder, notebook_records
from pi_jupyter.notebook.notebook_file import Binding


def binder(folder: Path) -> Binder:
    def create(name):
        s = Session.create(folder / "pi-sessions")
        if name:
            s.set_name(name)
        return s

    return Binder(folder / "pi-sessions", lambda p: Session.open(p), create)


def saved_notebook(path: Path, session: Session | None, notebook_id: str = "nb1", cell_ids=("c1", "c2")) -> Path:
    return bound_notebook(path, session, notebook_id, cell_ids)


def test_a_stale_path_to_another_notebook_is_not_trusted(tmp_path):
    b = binder(tmp_path)
    theirs = b.choose(str(tmp_path / "theirs.ipynb"), {"t1"}).session
    saved_notebook(tmp_path / "theirs.ipynb", theirs, cell_ids=("t1",))
    # this kernel ran cells c1, c2 but was told a path that now holds another notebook
    choice = b.choose(str(tmp_path / "theirs.ipynb"), {"c1", "c2"})
    assert choice.session.id != theirs.id


def test_a_file_that_is_not_a_notebook_starts_a_new_conversation(tmp_path):
    odd = tmp_path / "odd.ipynb"
    for text in ("not json", '{"cells": 3}', "[]", '{"cells": [{"outputs": [{"metadata": {"pi_jupyter": {"session": 5}}}]}]}'):
        odd.write_text(text)
        choice = binder(tmp_path).choose(str(odd), set())
        assert len(choice.session) <= 2 and choice.said is None  # a new, empty session (its name only)


def test_a_conversation_whose_file_is_gone_is_said_and_not_guessed(tmp_path):
    b = binder(tmp_path)
    gone = b.choose(str(tmp_path / "a.ipynb"), set()).session
    saved_notebook(tmp_path / "a.ipynb", gone)
    Path(gone.path).unlink()
    choice = b.choose(str(tmp_path / "a.ipynb"), {"c1"})
    assert choice.session.id != gone.id
    assert "not in" in (choice.said or "") and gone.id.replace("-", "")[-8:] in choice.said


def test_a_copy_of_a_notebook_renamed_since_its_last_run_is_still_the_copy(tmp_path):
    b = binder(tmp_path)
    saved_notebook(tmp_path / "Untitled.ipynb", None)  # JupyterLab writes a new notebook before its kernel runs
    first = b.choose(str(tmp_path / "Untitled.ipynb"), {"c1"})
    saved_notebook(tmp_path / "Untitled.ipynb", first.session, first.notebook_id)
    (tmp_path / "Untitled.ipynb").rename(tmp_path / "study.ipynb")  # renamed; no kernel ran since
    shutil.copy(tmp_path / "study.ipynb", tmp_path / "study-Copy1.ipynb")

    copy = b.choose(str(tmp_path / "study-Copy1.ipynb"), {"c1"})
    assert copy.session.id != first.session.id and "copy of study.ipynb" in (copy.said or "")
    original = b.choose(str(tmp_path / "study.ipynb"), {"c1"})
    assert original.session.id == first.session.id  # the renamed file is the original (same file id)
    assert "was Untitled.ipynb" in (original.said or "")
    again = b.choose(str(tmp_path / "study-Copy1.ipynb"), {"c1"})  # the copy's kernel restarted before a save
    assert again.session.id == copy.session.id and again.said is None
    paths = [r.path for r in notebook_records(Session.open(first.session.path)) if not r.fork]
    assert paths[-1] == str(tmp_path / "study.ipynb")


def test_the_notebook_path_comes_from_jupyter_or_vs_code(tmp_path, monkeypatch):
    from pi_jupyter.notebook.notebook_file import notebook_path

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert notebook_path({}) is None  # jupyter execute, papermill: not told
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "a.ipynb"))
    assert notebook_path({}) == str(tmp_path / "a.ipynb")
    assert notebook_path({"__vsc_ipynb_file__": str(tmp_path / "b.ipynb")}) == str(tmp_path / "b.ipynb")  # VS Code's own
    monkeypatch.setenv("JPY_SESSION_NAME", "console-1")  # a console's session, not a notebook
    assert notebook_path({}) is None


def test_a_binding_names_the_session_file_without_the_users_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home" / "ada"))
    beside = Binding.of("s1", "n1", str(tmp_path / "work" / "pi-sessions" / "x.jsonl"), str(tmp_path / "work" / "nb.ipynb"))
    assert beside.file == "pi-sessions/x.jsonl"
    elsewhere = Binding.of("s1", "n1", str(tmp_path / "home" / "ada" / ".pi" / "x.jsonl"), str(tmp_path / "work" / "nb.ipynb"))
    assert elsewhere.file is None and elsewhere.path == "~/.pi/x.jsonl" and "ada" not in json.dumps(elsewhere.metadata())


def test_a_notebook_moved_to_another_folder_keeps_its_conversation(tmp_path):
    (tmp_path / "project").mkdir()
    saved_notebook(tmp_path / "project" / "study.ipynb", None)
    first = binder(tmp_path / "project").choose(str(tmp_path / "project" / "study.ipynb"), {"c1"})
    saved_notebook(tmp_path / "project" / "study.ipynb", first.session, first.notebook_id)
    (tmp_path / "project" / "done").mkdir()
    moved = tmp_path / "project" / "done" / "study.ipynb"
    (tmp_path / "project" / "study.ipynb").rename(moved)  # dragged into a subfolder: its kernel now starts there
    again = binder(tmp_path / "project" / "done").choose(str(moved), {"c1"})
    assert again.session.id == first.session.id and "was ../study.ipynb" in (again.said or "")
