"""``Session.compare()`` cell by cell: branches that ran the same notebook cells, aligned by cell,
and the refs the tree shows (``In[n]``, ``root``, ``CELL@2``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pi_jupyter.notebook.cells import CellRun, record_run
from pi_jupyter.session import EntryNotFoundError, Session, SessionError
from pi_jupyter.views import write_turn


def run_cell(s: Session, cell: str, count: int, prompt: str, answer: str, **kw) -> list[str]:
    start = s.leaf_id
    ids = write_turn(s, prompt, answer, **kw)
    record_run(s, CellRun(cell_id=cell, started_from=start, produced=ids, end=ids[-1], execution_count=count))
    return ids


def two_run_alls(tmp_path: Path) -> tuple[Session, dict[str, list[str]]]:
    """Run All with one model (cells c1 c2 c3), then from the setup cell again with another (c1 c2, and c4)."""
    s = Session.create(path=tmp_path / "cells.jsonl")
    setup = run_cell(s, "c0", 1, "load the data", "loaded")
    a1 = run_cell(s, "c1", 2, "fit a linear model", "The slope is 1.8 and R² is 0.71.", tokens=1000, cost=0.01, tools=2)
    a2 = run_cell(s, "c2", 3, "plot residuals", "Residuals look fine.", tokens=2000, cost=0.02)
    a3 = run_cell(s, "c3", 4, "summarize", "Linear is fine.", tokens=500, cost=0.005)
    s.checkout(setup[-1])
    b1 = run_cell(s, "c1", 12, "fit a linear model", "The slope is 1.9 and R² is 0.70.", tokens=1500, cost=0.03, model="openai/gpt-5")
    b2 = run_cell(s, "c2", 13, "plot residuals", "Residuals show a curve.", tokens=2500, cost=0.04, model="openai/gpt-5")
    b4 = run_cell(s, "c4", 14, "try a spline", "The spline fits better.", tokens=800, cost=0.01, model="openai/gpt-5")
    return s, {"setup": setup, "a1": a1, "a2": a2, "a3": a3, "b1": b1, "b2": b2, "b4": b4}


def test_branches_that_ran_the_same_cells_are_aligned_by_cell(tmp_path):
    s, t = two_run_alls(tmp_path)
    c = s.compare("In[4]", "In[14]")
    assert c.ancestor_id is not None and c.cells is not None
    rows = [(r.cell_id, [x is not None for x in r.runs]) for r in c.cells.rows]
    # c1 and c2 side by side; c3 ran on the first branch only, c4 on the second only
    assert rows == [("c1", [True, True]), ("c2", [True, True]), ("c3", [True, False]), ("c4", [False, True])]
    c1 = c.cells.rows[0]
    assert c1.prompt == "fit a linear model"
    assert c1.runs[0].answer.startswith("The slope is 1.8") and c1.runs[1].answer.startswith("The slope is 1.9")
    assert c1.runs[0].tool_calls == 2 and c1.runs[1].execution_count == 12
    assert c1.runs[1].tokens == 1500 and c1.runs[0].tokens == 3 * 1000  # two tool calls: three assistant messages
    totals = c.cells.totals()
    assert [t["cells"] for t in totals] == [3, 3]
    assert totals[0]["tokens"] == sum(r.runs[0].tokens for r in c.cells.rows if r.runs[0] is not None)
    html = c._repr_html_()
    assert "Cell by cell" in html and "did not run on this branch" in html and "by_turn()" in html
    assert "<del" in html and "<ins" in html  # word diff of the two answers of a cell
    assert "tokens per cell" in html and "cost per cell" in html
    assert "only on" in html
    # the turn-by-turn view is still there
    turns = c.by_turn()._repr_html_()
    assert "Cell by cell" not in turns and "tokens per turn" in turns
    assert "Cell by cell" not in s.compare("In[4]", "In[14]", by="turns")._repr_html_()


def test_refs_in_n_root_and_cell_at_k(tmp_path):
    s, t = two_run_alls(tmp_path)
    assert s.compare("In[3]", "root").branches[0].leaf_id == t["a2"][-1]
    root = s.compare("In[13]", "root")
    assert root.branches[1].leaf_id == t["setup"][0] and root.ancestor_id == t["setup"][0]
    assert s.compare("In [14]", "In[2]").branches[0].leaf_id == t["b4"][-1]
    # a cell that ran twice: its latest run, or the one asked for
    assert s.compare("c1", "root").branches[0].leaf_id == t["b1"][-1]
    assert s.compare("c1@1", "c1@2").branches[0].leaf_id == t["a1"][-1]
    with pytest.raises(SessionError, match=r"no recorded cell ran as In \[99\]"):
        s.compare("In[99]", "root")
    with pytest.raises(SessionError, match=r"cell c1 ran 2 times; c1@3"):
        s.compare("c1@3", "root")
    with pytest.raises(EntryNotFoundError):
        s.compare("nothing-like-this", "root")
    with pytest.raises(ValueError, match="by must be"):
        s.compare("In[3]", "root", by="cell")


def test_without_cell_records_the_turn_view_is_the_default(tmp_path):
    s = Session.in_memory()
    shared = write_turn(s, "load", "ok")
    a = write_turn(s, "A", "a")
    s.checkout(shared[-1])
    b = write_turn(s, "B", "b")
    c = s.compare(a[-1], b[-1])
    assert c.cells is None and "Cell by cell" not in c._repr_html_()
    with pytest.raises(SessionError, match="ran no notebook cells"):
        s.compare(a[-1], b[-1], by="cells")


def test_answer_panes_are_left_aligned_in_the_notebook(tmp_path):
    s, t = two_run_alls(tmp_path)
    html = s.compare("In[4]", "In[14]", by="turns").diff()._repr_html_()
    tds = re.findall(r"<td style=\"([^\"]*)\"", html)
    assert tds and all("text-align:left" in style for style in tds[:2])


def test_pi_compare_magic_accepts_in_n_and_root(tmp_path, monkeypatch):
    from IPython.terminal.interactiveshell import TerminalInteractiveShell
    from IPython.testing.globalipapp import start_ipython

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "no-user-config.toml"))
    ip = start_ipython() or TerminalInteractiveShell.instance()
    ip.run_line_magic("load_ext", "pi_jupyter")
    try:
        ip.run_line_magic("config", "PiMagics.widget = False")
        s, t = two_run_alls(tmp_path)
        ip.run_line_magic("pi", f"open {s.path}")
        out = ip.run_line_magic("pi", "compare In[4] root")
        assert out.branches[0].leaf_id == t["a3"][-1] and out.cells is not None
        turns = ip.run_line_magic("pi", "compare --turns In[4] In[14]")
        assert turns.by == "turns"
    finally:
        ip.run_line_magic("unload_ext", "pi_jupyter")


def test_odd_refs_get_one_line_errors(tmp_path):
    s, t = two_run_alls(tmp_path)
    for ref in ("In[abc]", "In[]", "@2", "c1@x"):
        with pytest.raises(EntryNotFoundError):
            s.compare(ref, "root")
    with pytest.raises(SessionError, match=r"cell c1 ran 2 times; c1@0 names run 0"):
        s.compare("c1@0", "root")
    empty = Session.in_memory()
    with pytest.raises(SessionError, match="'root' names the first entry, and the session is empty"):
        empty.compare("root", "root")
    # a label named like a form wins over the form: what the user wrote on the tree is what compare finds
    s.label(t["a2"][-1], "In[13]")
    assert s.compare("In[13]", "root").branches[0].leaf_id == t["a2"][-1]
    # a malformed cell record (no cellId, produced not a list) is skipped, not a traceback
    s.append_custom("pi_jupyter.cell", {"cellId": 5, "produced": "x"})
    s.append_custom("pi_jupyter.cell", {"cellId": "c9", "produced": "x", "executionCount": True})
    assert s.compare("In[4]", "In[14]").cells is not None
