"""The rule that picks a notebook's conversation (``notebook/binding.py``), on real files, without a kernel.

The kernel tests (``test_notebook_owns_session.py``) and the JupyterLab test run the common
paths end to end; these pin each step of the rule to what the user ends up with (the session the
next cell continues, the line it says), including the odd cases: a notebook whose outputs name
several sessions, a folder copied whole, two sessions holding one notebook's cells, a copy that
took the original's old inode, a restart before any save, a rename the kernel learns late.
Notebooks from elsewhere are in ``test_adversarial_binding.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from notebook_runs import binder, bound_notebook

from pi_jupyter import Session
from pi_jupyter.notebook.binding import notebook_records
from pi_jupyter.notebook.kernel_notebook import KernelNotebook
from pi_jupyter.notebook.moves import follow, history, record_rename
from pi_jupyter.notebook.notebook_file import Binding, read_notebook


def saved_notebook(path: Path, session: Session | None, notebook_id: str = "nb1", cell_ids=("c1", "c2")) -> Path:
    return bound_notebook(path, session, notebook_id, cell_ids)


def notebook_with_bindings(path: Path, bindings: list[tuple[str, Binding]]) -> Path:
    """A notebook whose cell ``cid`` has one ``%%pi`` output carrying ``binding``, for each pair, in this order."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    for cid, binding in bindings:
        cell = nbformat.v4.new_code_cell(f"%%pi\nin {cid}")
        cell.id = cid
        out = nbformat.v4.new_output("display_data", data={"text/plain": "pi"})
        out.metadata = binding.metadata()
        cell.outputs = [out]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def said_with(choice) -> str:
    return choice.said or ""


# ------------------------------------------------------------ the newest binding, the file beside, the newest session


def test_the_newest_output_decides_whichever_cell_holds_it(tmp_path):
    """A notebook that ran on one session, then (``%pi open``, ``%pi new``) on another, continues the later one."""
    b = binder(tmp_path)
    older = b.choose(str(tmp_path / "nb.ipynb"), set()).session
    newer = Session.create(tmp_path / "pi-sessions")
    nb_path = str(tmp_path / "nb.ipynb")
    first = Binding.of(older.id, "nb1", older.path, nb_path).model_copy(update={"at": "2026-01-01T10:00:00.000Z"})
    second = Binding.of(newer.id, "nb1", newer.path, nb_path).model_copy(update={"at": "2026-01-01T11:00:00.000Z"})
    # the re-run upper cell holds the newest output, the cell below it the older one
    notebook_with_bindings(tmp_path / "nb.ipynb", [("top", second), ("below", first)])
    assert b.choose(nb_path, {"top"}).session.id == newer.id
    notebook_with_bindings(tmp_path / "nb.ipynb", [("top", first), ("below", second)])
    assert b.choose(nb_path, {"top"}).session.id == newer.id


def test_a_folder_copied_whole_goes_on_with_its_own_session_file(tmp_path):
    """``cp -r proj proj2``: proj2's notebook continues proj2's copy of the file, and proj's file is not touched."""
    proj = tmp_path / "proj"
    proj.mkdir()
    saved_notebook(proj / "study.ipynb", None)  # JupyterLab writes the notebook before its kernel runs
    first = binder(proj).choose(str(proj / "study.ipynb"), {"c1"})
    first.session.append_message({"role": "user", "content": "ZEBRA", "timestamp": 1})
    saved_notebook(proj / "study.ipynb", first.session, first.notebook_id)
    shutil.copytree(proj, tmp_path / "proj2")
    before = Path(first.session.path).read_bytes()

    again = binder(tmp_path / "proj2").choose(str(tmp_path / "proj2" / "study.ipynb"), {"c1"})
    assert Path(again.session.path).parent == tmp_path / "proj2" / "pi-sessions"
    assert any(e.get("type") == "message" for e in again.session.raw_entries())  # the conversation came along
    assert Path(first.session.path).read_bytes() == before  # the old place is never written from the copy

    # the notebook itself moved into a folder that holds a copy of its sessions: it goes on with the copy beside it
    (tmp_path / "proj3").mkdir()
    shutil.copytree(proj / "pi-sessions", tmp_path / "proj3" / "pi-sessions")
    (proj / "study.ipynb").rename(tmp_path / "proj3" / "study.ipynb")
    moved = binder(tmp_path / "proj3").choose(str(tmp_path / "proj3" / "study.ipynb"), {"c1"})
    assert Path(moved.session.path).parent == tmp_path / "proj3" / "pi-sessions"
    assert Path(first.session.path).read_bytes() == before


def test_a_notebook_never_saved_continues_the_session_it_ran_on_last(tmp_path):
    """Two sessions hold this notebook's cells (it ran on one, then ``%pi new``): a restart before any save takes the newer."""
    b = binder(tmp_path)
    path = str(tmp_path / "nb.ipynb")
    saved_notebook(tmp_path / "nb.ipynb", None, cell_ids=("c1",))
    from pi_jupyter.notebook.cells import CellRun, record_run

    sessions = []
    for _ in range(3):
        s = Session.create(tmp_path / "pi-sessions")
        b.adopt(s, "nb1", path)
        record_run(s, CellRun(cell_id="c1", started_from=None, produced=[], end=None))
        sessions.append(s)
        time.sleep(0.02)  # mtimes apart
    for i, s in enumerate(sessions):
        os.utime(s.path, (1_000_000 + i, 1_000_000 + i))  # written in this order
    assert b.choose(path, {"c1"}).session.id == sessions[-1].id


# ------------------------------------------------------------ copies and moves


def test_a_copy_that_got_the_originals_old_inode_is_still_the_copy(tmp_path):
    """The file system may give a copy the inode the original had: the notebook at the recorded path stays the original."""
    b = binder(tmp_path)
    saved_notebook(tmp_path / "study.ipynb", None)
    first = b.choose(str(tmp_path / "study.ipynb"), {"c1"})
    saved_notebook(tmp_path / "study.ipynb", first.session, first.notebook_id)
    # the recorded inode now belongs to another name, and study.ipynb is a new file with the same content
    os.rename(tmp_path / "study.ipynb", tmp_path / "copy.ipynb")
    shutil.copy(tmp_path / "copy.ipynb", tmp_path / "study.ipynb")

    copy = b.choose(str(tmp_path / "copy.ipynb"), {"c1"})
    assert copy.session.id != first.session.id and "copy of study.ipynb" in said_with(copy)
    original = b.choose(str(tmp_path / "study.ipynb"), {"c1"})
    assert original.session.id == first.session.id and original.said is None


def test_a_copy_of_a_notebook_renamed_since_its_last_run_is_still_the_copy(tmp_path):
    b = binder(tmp_path)
    saved_notebook(tmp_path / "Untitled.ipynb", None)  # JupyterLab writes a new notebook before its kernel runs
    first = b.choose(str(tmp_path / "Untitled.ipynb"), {"c1"})
    saved_notebook(tmp_path / "Untitled.ipynb", first.session, first.notebook_id)
    (tmp_path / "Untitled.ipynb").rename(tmp_path / "study.ipynb")  # renamed; no kernel ran since
    shutil.copy(tmp_path / "study.ipynb", tmp_path / "study-Copy1.ipynb")

    copy = b.choose(str(tmp_path / "study-Copy1.ipynb"), {"c1"})
    assert copy.session.id != first.session.id and "copy of study.ipynb" in said_with(copy)
    original = b.choose(str(tmp_path / "study.ipynb"), {"c1"})
    assert original.session.id == first.session.id  # the renamed file is the original (same file id)
    assert "was Untitled.ipynb" in said_with(original)
    assert Session.open(first.session.path).name == "study"  # the name it took from the notebook followed it
    again = b.choose(str(tmp_path / "study-Copy1.ipynb"), {"c1"})  # the copy's kernel restarted before a save
    assert again.session.id == copy.session.id and again.said is None
    paths = [r.path for r in notebook_records(Session.open(first.session.path)) if not r.fork]
    assert paths[-1] == str(tmp_path / "study.ipynb")


def test_a_notebook_moved_to_another_folder_keeps_its_conversation(tmp_path):
    (tmp_path / "project").mkdir()
    saved_notebook(tmp_path / "project" / "study.ipynb", None)
    first = binder(tmp_path / "project").choose(str(tmp_path / "project" / "study.ipynb"), {"c1"})
    saved_notebook(tmp_path / "project" / "study.ipynb", first.session, first.notebook_id)
    (tmp_path / "project" / "done").mkdir()
    moved = tmp_path / "project" / "done" / "study.ipynb"
    (tmp_path / "project" / "study.ipynb").rename(moved)  # dragged into a subfolder: its kernel now starts there
    again = binder(tmp_path / "project" / "done").choose(str(moved), {"c1"})
    assert again.session.id == first.session.id and "was ../study.ipynb" in said_with(again)
    assert not (tmp_path / "project" / "done" / "pi-sessions").exists()  # nothing new beside it
    later = binder(tmp_path / "project" / "done").choose(str(moved), {"c1"})  # the next restart there
    assert later.session.id == first.session.id and later.said is None  # said once, not at every restart


def test_a_name_follows_its_notebook_and_a_given_name_stays(tmp_path):
    b = binder(tmp_path)
    old, new = str(tmp_path / "Untitled.ipynb"), str(tmp_path / "study.ipynb")
    auto = b.choose(old, set())
    b.follow(auto.session, auto.notebook_id, old, new)
    assert Session.open(auto.session.path).name == "study"
    given = Session.create(tmp_path / "pi-sessions")
    given.set_name("baseline runs")
    b.follow(given, "nb2", old, new)
    assert Session.open(given.path).name == "baseline runs"


# ------------------------------------------------------------ a restart before any save


def test_a_restart_before_any_save_continues_by_the_very_file(tmp_path):
    """JupyterLab writes a new notebook with no cells; a restart before its first save still finds its conversation."""
    b = binder(tmp_path)
    path = tmp_path / "Untitled.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    time.sleep(0.01)
    first = b.choose(str(path), {"new-cell-1"})
    again = b.choose(str(path), {"new-cell-2"})  # after the restart, a new cell runs first
    assert again.session.id == first.session.id and again.notebook_id == first.notebook_id

    # deleted, and a new notebook takes the name: a new conversation, whatever inode it gets
    path.unlink()
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert b.choose(str(path), {"new-cell-3"}).session.id != first.session.id


def test_a_rename_then_a_restart_before_any_save_continues_by_the_servers_log(tmp_path):
    """Renamed in the file browser, then restarted, the notebook never saved: the logged rename leads back to its conversation."""
    b = binder(tmp_path)
    log = tmp_path / "runtime"
    log.mkdir()
    old, new = tmp_path / "Untitled.ipynb", tmp_path / "study.ipynb"
    old.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    time.sleep(0.01)
    first = b.choose(str(old), {"new-cell-1"})
    time.sleep(0.01)
    old.rename(new)  # a rename changes the file's change time
    record_rename(log, str(old), str(new))
    again = b.choose(str(new), {"new-cell-2"}, came_from=history(str(new), folders=[log]))
    assert again.session.id == first.session.id and "was Untitled.ipynb" in said_with(again)
    assert Session.open(first.session.path).name == "study"


def test_a_deleted_conversation_is_said_and_not_guessed(tmp_path):
    b = binder(tmp_path)
    gone = b.choose(str(tmp_path / "a.ipynb"), set()).session
    saved_notebook(tmp_path / "a.ipynb", gone)
    Path(gone.path).unlink()
    choice = b.choose(str(tmp_path / "a.ipynb"), {"c1"})
    assert choice.session.id != gone.id
    said = said_with(choice)
    assert "is not in" in said and gone.id.replace("-", "")[-8:] in said and "a new one starts" in said and "%pi open" in said


def test_a_file_that_is_not_a_notebook_starts_a_new_conversation(tmp_path):
    odd = tmp_path / "odd.ipynb"
    for text in ("not json", '{"cells": 3}', "[]", '{"cells": [{"outputs": [{"metadata": {"pi_jupyter": {"session": 5}}}]}]}'):
        odd.write_text(text)
        choice = binder(tmp_path).choose(str(odd), set())
        assert len(choice.session) <= 2 and choice.said is None  # a new, empty session (its name only)


# ------------------------------------------------------------ where the kernel learns its path


def test_a_rename_while_the_kernel_runs_is_followed(tmp_path):
    """The server logs renames; the kernel follows its start path through those made since it started."""
    log = tmp_path / "runtime"
    log.mkdir()
    a, b, c = (str(tmp_path / n) for n in ("Untitled.ipynb", "study.ipynb", "done"))
    record_rename(log, a, b, at=100.0)  # before this kernel started: not its
    assert follow(a, since=200.0, folders=[log]) == a
    record_rename(log, a, b, at=300.0)
    record_rename(log, str(tmp_path), c, at=400.0)  # then its whole folder was renamed
    assert follow(a, since=200.0, folders=[log]) == os.path.join(c, "study.ipynb")
    (log / "pi-jupyter-moves.jsonl").write_text("not json\n[1]\n" + (log / "pi-jupyter-moves.jsonl").read_text())
    assert follow(a, since=200.0, folders=[log]) == os.path.join(c, "study.ipynb")  # damaged lines are skipped


def test_a_kernel_records_a_rename_once_and_its_outputs_name_the_new_place(tmp_path, monkeypatch):
    """What the kernel does between cells when its notebook is renamed: one record per rename, the name and the binding follow."""
    from types import SimpleNamespace

    from pi_jupyter.notebook.state import NotebookState

    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    old, new = tmp_path / "Untitled.ipynb", tmp_path / "study.ipynb"
    old.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    monkeypatch.setenv("JPY_SESSION_NAME", str(old))
    state = NotebookState(SimpleNamespace(session_dir=str(tmp_path / "pi-sessions"), durability="never"), {})
    session = state._notebook_session()
    assert session.name == "Untitled"
    old.rename(new)
    record_rename(runtime, str(old), str(new))
    for _ in range(3):  # three cells after the rename
        state._follow_notebook(session)
    moves = [r for r in notebook_records(Session.open(session.path)) if r.moved_from]
    assert [(r.moved_from, r.path) for r in moves] == [(str(old), str(new))]
    assert Session.open(session.path).name == "study"
    assert state.binding(session)["pi_jupyter"]["session"]["notebook"] == state.notebook_id

    # another kernel's notebook renamed before its first %pi: its session is named after the new name
    other = tmp_path / "Untitled1.ipynb"
    other.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    monkeypatch.setenv("JPY_SESSION_NAME", str(other))
    fresh = NotebookState(SimpleNamespace(session_dir=str(tmp_path / "pi-sessions"), durability="never"), {})
    other.rename(tmp_path / "results.ipynb")
    record_rename(runtime, str(other), str(tmp_path / "results.ipynb"))
    assert fresh._notebook_session().name == "results"


def test_a_stale_path_now_holding_another_notebook_is_not_taken(tmp_path):
    """Renamed while its kernel ran, by a server that did not log it: the kernel goes with the notebook holding its cells."""
    b = binder(tmp_path)
    theirs = b.choose(str(tmp_path / "theirs.ipynb"), {"t1"}).session
    saved_notebook(tmp_path / "theirs.ipynb", theirs, cell_ids=("t1",))
    saved_notebook(tmp_path / "mine.ipynb", None, cell_ids=("c1", "c2"))
    where = KernelNotebook({}).renamed_to(str(tmp_path / "theirs.ipynb"), {"c1", "c2"})
    assert where == str(tmp_path / "mine.ipynb")
    assert b.choose(where, {"c1", "c2"}).session.id != theirs.id
    # a new cell after a restart is in no file yet: the path the kernel was told stands
    assert KernelNotebook({}).renamed_to(str(tmp_path / "mine.ipynb"), {"new"}) == str(tmp_path / "mine.ipynb")


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
    sibling = Binding.of("s1", "n1", str(tmp_path / "work-old" / "x.jsonl"), str(tmp_path / "work" / "nb.ipynb"))
    assert sibling.file is None  # a folder whose name starts like the notebook's is not below it


# ------------------------------------------------------------ runs that were not told the path


def test_a_run_without_a_path_forks_the_conversation_of_the_notebook_holding_its_cells(tmp_path, monkeypatch):
    b = binder(tmp_path)
    first = b.choose(str(tmp_path / "study.ipynb"), {"c1"})
    saved_notebook(tmp_path / "study.ipynb", first.session, first.notebook_id)
    before = Path(first.session.path).read_bytes()
    monkeypatch.chdir(tmp_path)
    kernel = KernelNotebook({})
    kernel.saw("%%pi\nhello")
    found = kernel.candidates()
    assert [Path(nb.path).name for nb in found] == ["study.ipynb"]
    run = b.choose(None, set(), found)
    assert run.session.header.parent_session == first.session.path and "continues its conversation in a fork" in said_with(run)
    assert "JPY_SESSION_NAME=study.ipynb" in said_with(run)
    assert Path(first.session.path).read_bytes() == before  # the notebook's own conversation is left as it was
    assert kernel.cell_id("%%pi\nhello") is None  # two cells hold that text: no guess

    shutil.copy(tmp_path / "study.ipynb", tmp_path / "other.ipynb")
    other = b.choose(str(tmp_path / "other.ipynb"), {"c1"}).session  # now a copy with its own conversation (a fork)
    saved_notebook(tmp_path / "other.ipynb", other, "nb9")
    found = kernel.candidates()
    assert len(found) == 2
    ambiguous = b.choose(None, set(), found)
    assert ambiguous.session.header.parent_session is None and "other.ipynb, study.ipynb" in said_with(ambiguous)


def test_a_run_without_a_path_of_a_fresh_notebook_names_its_session_after_it(tmp_path, monkeypatch):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext pi_jupyter"), nbformat.v4.new_code_cell("%%pi\nfirst question")]
    nbformat.write(nb, tmp_path / "report.ipynb")
    monkeypatch.chdir(tmp_path)
    kernel = KernelNotebook({})
    kernel.saw("%%pi\nfirst question")
    choice = binder(tmp_path).choose(None, set(), kernel.candidates())
    assert choice.session.name == "report" and choice.said is None
    assert kernel.cell_id("%%pi\nfirst question") == nb.cells[1].id  # the cell's own id, as JupyterLab sends it
    assert read_notebook(str(tmp_path / "report.ipynb")).cell_id_of("%load_ext pi_jupyter") == nb.cells[0].id
