"""A branch carries its world, in a real kernel driven as JupyterLab drives it (default settings, offline model).

The issue's three cases: a grid's repeats do not see each other's variables (1, 1, 1, 1); a
re-run cell's sibling branch and a checkout back (``plan == 'A'``); the same with a file the
agent wrote (``notes.txt``). Then the same after a kernel restart, from the saved state.
"""

from __future__ import annotations

import json

import pytest
from kernel_client import Kernel
from shipped_notebooks import sources

from pi_jupyter import Session
from pi_jupyter.experiment import load_experiment

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
"""


def py_cell(code: str, options: str = "--tools python") -> str:
    return f"%%pi {options}\nuse python\n```python\n{code}\n```"


def both(code: str, branch: str) -> str:
    """A cell whose answer runs ``code`` with python and writes ``notes.txt`` = "branch BRANCH" (braces doubled for %%pi)."""
    call = json.dumps({"code": code}).replace("{", "{{").replace("}", "}}")
    write = json.dumps({"path": "notes.txt", "content": f"branch {branch}"}).replace("{", "{{").replace("}", "}}")
    return f"%%pi --tools python,write\ncall python with {call}\ncall write with {write}"


def value(kernel: Kernel, expr: str) -> object:
    out = kernel.run(f"import json as _j; print(_j.dumps({expr}))")
    assert out.status == "ok", out.error
    return json.loads(out.stdout.strip().splitlines()[-1])


def session_of(tmp_path) -> Session:
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    return Session.open(files[0], readonly=True)


def first_run_end(session: Session, cell_id: str) -> str:
    from pi_jupyter.notebook.cells import cell_runs

    return cell_runs(session, cell_id)[0].end


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(str(tmp_path))
    try:
        assert k.run(SETUP.format(dir=str(tmp_path / "sessions"))).status == "ok"
        yield k
    finally:
        k.close()


def test_repeats_of_a_grid_do_not_see_each_other_and_the_notebook_keeps_its_own(kernel, tmp_path):
    assert kernel.run("mine = [1, 2]\ncounter = 100").status == "ok"
    code = "counter = globals().get('counter', 0) + 1; print(counter); mine.append(counter)"
    run = kernel.run(py_cell(code, "--tools python --repeat 4"), "grid")
    assert run.status == "ok", run.error
    s = session_of(tmp_path)
    rows = load_experiment(s).rows
    printed = [
        [b["text"] for e in s.raw_branch(r.leaf) if (e.get("message") or {}).get("role") == "toolResult" for b in e["message"]["content"]]
        for r in rows
    ]
    assert [p[0].splitlines()[0] for p in printed] == ["101", "101", "101", "101"], printed
    # the cells below continue from branch #0, in its world; what the user had is as it was
    assert value(kernel, "[counter, mine]") == [101, [1, 2, 101]]
    assert "pi: restored counter and mine" in run.stdout


def test_a_rerun_cell_and_a_checkout_bring_each_branch_its_plan_and_its_file(kernel, tmp_path):
    first = kernel.run(both("plan = 'A'", "A"), "plan")
    assert first.status == "ok", first.error
    assert value(kernel, "plan") == "A" and (tmp_path / "notes.txt").read_text() == "branch A"
    # the same cell, edited and run again: a sibling branch, from the world of the cell's start
    second = kernel.run(both("print(globals().get('plan')); plan = 'B'", "B"), "plan")
    assert second.status == "ok", second.error
    assert "pi: removed plan and notes.txt (set only on the branch left)" in second.stdout
    assert value(kernel, "plan") == "B" and (tmp_path / "notes.txt").read_text() == "branch B"
    leaf_a = first_run_end(session_of(tmp_path), "plan")
    back = kernel.run(f"%pi checkout {leaf_a}")
    assert back.status == "ok", back.error
    assert back.stdout.splitlines()[-1] == "restored plan and notes.txt"
    assert value(kernel, "plan") == "A" and (tmp_path / "notes.txt").read_text() == "branch A"


def test_after_a_restart_a_checkout_restores_from_the_saved_state(tmp_path):
    # as in JupyterLab: the kernel knows its notebook (JPY_SESSION_NAME), whose cell ids the session
    # recorded, so the restarted kernel continues the same session (see notebook/binding.py)
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%%pi ...", id="plan")]
    path = tmp_path / "study.ipynb"
    nbformat.write(nb, path)
    env = {"JPY_SESSION_NAME": str(path)}
    k = Kernel(str(tmp_path), env=env)
    try:
        assert k.run(SETUP.format(dir=str(tmp_path / "sessions"))).status == "ok"
        assert k.run(both("plan = 'A'", "A"), "plan").status == "ok"
        assert k.run(both("plan = 'B'", "B"), "plan").status == "ok"
    finally:
        k.close()
    leaf_a = first_run_end(session_of(tmp_path), "plan")
    k = Kernel(str(tmp_path), env=env)  # a restarted kernel: nothing in its namespace
    try:
        assert k.run(SETUP.format(dir=str(tmp_path / "sessions"))).status == "ok"
        back = k.run(f"%pi checkout {leaf_a}")
        assert back.status == "ok", back.error
        assert back.stdout.splitlines()[-1] == "restored plan and notes.txt"
        assert value(k, "plan") == "A" and (tmp_path / "notes.txt").read_text() == "branch A"
    finally:
        k.close()


def test_a_file_changed_by_the_user_is_left_and_force_restores_it(kernel, tmp_path):
    write = 'call write with {{"path": "notes.txt", "content": "branch %s"}}'
    assert kernel.run(f"%%pi --tools write\n{write % 'A'}", "a").status == "ok"
    leaf_a = first_run_end(session_of(tmp_path), "a")
    assert kernel.run(f"%%pi --tools write\n{write % 'B'}", "b").status == "ok"
    (tmp_path / "notes.txt").write_text("edited by hand")
    back = kernel.run(f"%pi checkout {leaf_a}")
    assert back.stdout.splitlines()[-1] == (
        f"left notes.txt as it is: it was changed outside the agent since (%pi checkout {leaf_a} --force restores it)"
    )
    assert (tmp_path / "notes.txt").read_text() == "edited by hand"
    b_end = first_run_end(session_of(tmp_path), "b")
    assert kernel.run(f"%pi checkout {b_end}").status == "ok"
    forced = kernel.run(f"%pi checkout {leaf_a} --force")
    kept = forced.stdout.split("kept in entry ")[1].split(" ")[0]
    assert forced.stdout.splitlines()[-1] == (
        f"restored notes.txt; your version of notes.txt is kept in entry {kept} (%pi checkout {kept} brings it back)"
    )
    assert (tmp_path / "notes.txt").read_text() == "branch A"
    assert kernel.run(f"%pi checkout {kept}").stdout.splitlines()[-1] == "restored notes.txt"
    assert (tmp_path / "notes.txt").read_text() == "edited by hand"  # a --force never loses the user's version


def test_the_teaching_demo_drop_a_column_and_get_it_back(kernel, tmp_path):
    """The teaching notebook's "A branch carries its world", cell by cell as the notebook holds it."""
    cells = sources("teaching-agent-memory", "world-md", "world-rule-md")
    steps = ["world-data", "world-drop", "world-dropped", "world-back", "world-net", "world-to-dropped", "world-to-net", "world-compare"]
    assert list(cells) == steps

    def run(cell_id: str):
        out = kernel.run(cells[cell_id], cell_id)
        assert out.status == "ok", out.error
        return out

    run("world-data")
    assert "changed: set sales (DataFrame 3×2)" in "".join(run("world-drop").data("text/html"))
    run("world-dropped")
    assert value(kernel, "sales.columns.tolist()") == ["region", "amount"]
    assert run("world-back").stdout.splitlines()[-1] == "restored sales"
    assert value(kernel, "sales.columns.tolist()") == ["region", "amount", "discount"]
    run("world-net")
    assert run("world-to-dropped").stdout.splitlines()[-1] == "restored sales"
    assert value(kernel, "sales.columns.tolist()") == ["region", "amount"]
    assert run("world-to-net").stdout.splitlines()[-1] == "restored sales"
    assert value(kernel, "sales.columns.tolist()") == ["region", "amount", "discount", "net"]
    page = "".join(run("world-compare").data("text/html"))
    assert "Variables and files that differ" in page and "discount, net" in page


def test_fork_carries_the_world_of_the_forked_node(kernel, tmp_path):
    assert kernel.run(both("plan = 'A'", "A"), "plan").status == "ok"
    assert kernel.run(both("plan = 'B'", "B"), "plan").status == "ok"
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    leaf_a = first_run_end(Session.open(files[0], readonly=True), "plan")
    fork = kernel.run(f"%pi fork {leaf_a}")
    assert fork.status == "ok", fork.error
    assert fork.stdout.splitlines()[-1] == "restored plan and notes.txt"
    assert value(kernel, "plan") == "A" and (tmp_path / "notes.txt").read_text() == "branch A"
    listed = kernel.run("%pi world")
    assert "variables the tools set on this branch: plan" in listed.stdout
    assert "files the tools wrote on this branch: notes.txt" in listed.stdout
    # the fork goes on from there: its next cell's tools see plan == 'A'
    more = kernel.run(py_cell("print('plan is', plan)"), "more")
    assert more.status == "ok" and "plan is A" in "".join(more.data("text/html"))


def test_restart_and_run_all_give_every_branch_the_same_world(tmp_path):
    from pi_jupyter.notebook.cells import cell_runs
    from pi_jupyter.world import world_at

    cells = [
        ("plan", both("plan = 'A'", "A")),
        ("grid", py_cell("counter = globals().get('counter', 0) + 1", "--tools python --repeat 2")),
        ("after", py_cell("done = plan + str(counter)")),
    ]
    notebook = tmp_path / "study.ipynb"  # JupyterLab tells the kernel its notebook (JPY_SESSION_NAME)
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    for _ in range(2):  # Run All, then Restart & Run All
        k = Kernel(str(tmp_path), env={"JPY_SESSION_NAME": str(notebook)})
        try:
            assert k.run(SETUP.format(dir=str(tmp_path / "sessions"))).status == "ok"
            for cell_id, source in cells:
                out = k.run(source, cell_id)
                assert out.status == "ok", out.error
            assert value(k, "[plan, counter, done]") == ["A", 1, "A1"]
        finally:
            k.close()
    s = session_of(tmp_path)
    for cell_id, _source in cells:
        first, second = cell_runs(s, cell_id)
        assert first.end != second.end and world_at(s, first.end) == world_at(s, second.end), cell_id
    grids = load_experiment_rows(s)
    assert len(grids) == 4 and len({json.dumps(world_at(s, r.leaf), sort_keys=True) for r in grids}) == 1


def load_experiment_rows(s: Session) -> list:
    from pi_jupyter.experiment.records import experiment_ids

    return [row for eid in experiment_ids(s) for row in load_experiment(s, eid).rows]


def test_files_the_python_tool_writes_come_back_in_a_kernel(kernel, tmp_path):
    """In a notebook, ``open`` in the namespace is IPython's own: its writes are kept and restored as well."""
    (tmp_path / "data.csv").write_text("x\n1\n")
    code = "import pandas as pd; pd.DataFrame(dict(y=[2])).to_csv('report.csv', index=False); open('data.csv', 'w').write('rewritten')"
    run = kernel.run(py_cell(code, "--tools python --name files"), "files")
    assert run.status == "ok", run.error
    assert "changed: set pd (module pandas); wrote data.csv, report.csv" in "".join(run.data("text/html"))
    back = kernel.run("%pi checkout {files.started_from}")
    assert back.status == "ok", back.error
    assert back.stdout.splitlines()[-1] == "restored data.csv; removed pd and report.csv (set only on the branch left)"
    assert (tmp_path / "data.csv").read_text() == "x\n1\n" and not (tmp_path / "report.csv").exists()
    again = kernel.run("%pi checkout {files.leaf_id}")
    assert again.status == "ok", again.error
    assert (tmp_path / "data.csv").read_text() == "rewritten" and (tmp_path / "report.csv").read_text() == "y\n2\n"
    # nothing stays wrapped once the call has ended
    assert value(kernel, "__import__('builtins').open is __import__('io').open and __import__('builtins').open.__module__ == 'io'")


def test_world_gc_in_a_notebook_keeps_what_the_sessions_refer_to(kernel, tmp_path):
    assert kernel.run(py_cell("plan = 'A'\nbig = list(range(5000))"), "a").status == "ok"
    listed = kernel.run("%pi world")
    assert "variables the tools set on this branch: big, plan" in listed.stdout
    assert "2 (" in listed.stdout.splitlines()[-1] and "referred to by 1 session files" in listed.stdout
    dry = kernel.run("%pi world gc --dry-run")
    assert dry.status == "ok" and dry.stdout.strip().endswith("would remove 0 (0 B)")
    (tmp_path / "sessions" / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")  # a session file that cannot be read
    refused = kernel.run("%pi world gc")
    assert refused.status == "ok"
    gone = tmp_path / "sessions" / "gone.jsonl"
    assert refused.stdout.strip() == f"pi: {gone}: cannot be read (No such file or directory); nothing removed"
