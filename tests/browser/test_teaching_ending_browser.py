"""The teaching notebook's ending (``NOTEBOOK_CELLS.md``) in JupyterLab with its default settings.

A teacher's path: the lecture recorded, then performed again from the recording in step mode,
where the replay stops before the tool call until **Go on ▶** is pressed in the cell's view;
then a course notebook run by three students, and the class view of their sessions, where a
click on a cell opens every student's answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_teaching_ending import ending_cells  # noqa: E402


def test_the_ending_plays_in_step_mode_and_shows_the_class(lab):
    cells = ['MODEL = "offline/echo"', *ending_cells()]
    lab.write_notebook("teaching_ending.ipynb", cells)
    lab.open_notebook("teaching_ending.ipynb")
    for i in (0, 1):
        lab.run_cell(i)
        lab.wait_for_execution_count(i)
    lab.run_cell(2)  # the recording
    lab.wait_for_static(2, "east,143.2", timeout=120)

    lab.run_cell(3)  # in class: the replay, in step mode
    go = lab.cell(3).locator("button.piav-go")
    go.wait_for(timeout=90_000)
    view = lab.cell(3).locator(".piav-root")
    assert "The agent is about to call a tool. What will it do?" in view.inner_text()
    assert view.locator(".piav-tool").count() == 0  # the call is not shown before the class has guessed
    assert "paused: press Go on ▶" in view.locator(".piav-status").inner_text()
    lab.screenshot("teaching_step_paused.png", lab.cell(3))
    go.click()
    out = lab.wait_for_static(3, "east,143.2", timeout=120)
    assert "Paused: The agent is about to call a tool" in out and "no browser shows this cell" not in out
    lab.screenshot("teaching_step_done.png", lab.cell(3))

    lab.run_cell(4)  # the page that plays on a projector
    lab.wait_for_output(4, "press ▶ Play")
    assert "pi-play" in (lab.server.root / "teaching-demo" / "lecture.html").read_text()

    lab.run_cell(5)  # three students run the course notebook
    lab.wait_for_output(5, "cy.jsonl", timeout=360)
    lab.run_cell(6)  # the class view
    table = lab.cell(6).locator(".pi-class .pic-table")
    table.wait_for(timeout=60_000)
    assert table.locator("tbody tr").count() == 3
    assert "never ran it" in table.locator("tfoot").inner_text()
    lab.screenshot("teaching_class_view.png", lab.cell(6))
    table.locator("tbody tr", has_text="bob").locator("td.pic-cell a").nth(1).click()
    opened = lab.cell(6).locator("details.pic-answers[open]")
    opened.wait_for(timeout=10_000)
    assert opened.locator(".pic-card").count() >= 3 and "bob" in lab.cell(6).locator(".pic-card.pic-hl").inner_text()
    lab.screenshot("teaching_class_answers.png", opened)
    lab.run_cell(7)
    lab.wait_for_output(7, "distance")
