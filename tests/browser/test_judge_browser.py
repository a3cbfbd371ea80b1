"""``%pi judge`` in a real JupyterLab: two answers side by side, labels hidden, the buttons record; reopened, the results stay."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """%load_ext pi_jupyter
%config PiMagics.session_dir = "judge-sessions"
print("setup ok")"""

GRID = """%%pi --vary style=terse,chatty --repeat 2
Describe the sea in a {style} voice."""

JUDGE = "%pi judge --as alice --seed 3"


def test_a_blind_round_in_the_browser_records_each_click(lab):
    lab.write_notebook("judge.ipynb", [SETUP, GRID, JUDGE])
    lab.open_notebook("judge.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup ok")
    lab.run_cell(1)
    lab.wait_for_output(1, "4 branches", timeout=120)
    lab.run_cell(2)
    cell = lab.cell(2)
    first = cell.get_by_role("button", name="A is better")
    first.wait_for(timeout=60_000)
    text = cell.locator(".jp-OutputArea").inner_text()
    assert "pair 1 of 2" in text and "judging as alice" in text
    assert "style=terse" not in text and "style=chatty" not in text  # nothing says which variant answered
    assert text.count("Describe the sea") >= 2  # both answers, side by side
    lab.screenshot("judge_round.png", cell)
    first.click()
    cell.locator("text=pair 2 of 2").wait_for(timeout=30_000)
    cell.get_by_role("button", name="Tie").click()
    out = lab.wait_for_output(2, "won", timeout=60)
    assert "2 of 2 pairs judged" in out and "judged: 2 blind pairwise judgements by alice" in out
    lab.screenshot("judge_done.png", cell)
    # the clicks are in the session file: one score entry on each branch of each pair, with the judge's name
    (path,) = (lab.server.root / "judge-sessions").glob("*.jsonl")
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    judged = [e["data"] for e in entries if e.get("customType") == "pi_jupyter.score"]
    assert len(judged) == 4 and {d["judge"] for d in judged} == {"alice"} and {d["choice"] for d in judged} == {"A", "tie"}
    # reopened without the kernel: the results, not a broken widget
    lab.save()
    lab.shutdown_kernel()
    lab.page.reload()
    lab.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=60_000)
    reopened = lab.wait_for_output(2, "2 of 2 pairs judged")  # JupyterLab draws the reopened outputs a moment after the cells
    assert "Error displaying widget" not in reopened
