"""The teaching notebook's part 4 ("Teach with it"), read from the notebook, in JupyterLab with its default settings.

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

from test_teaching_ending import ending_cells, prelude_cells  # noqa: E402


def test_the_ending_plays_in_step_mode_and_shows_the_class(lab):
    prelude = prelude_cells()  # the notebook's MODEL and its project folder (the kernel works in memory-demo/)
    cells = [*prelude, *ending_cells()]
    setup, record, step, export, course, view, table = range(len(prelude), len(cells))
    lab.write_notebook("teaching_ending.ipynb", cells)
    lab.open_notebook("teaching_ending.ipynb")
    for i in (*range(len(prelude)), setup):
        lab.run_cell(i)
        lab.wait_for_execution_count(i)
    lab.run_cell(record)  # the recording
    lab.wait_for_static(record, "east,143.2", timeout=120)

    lab.run_cell(step)  # in class: the replay, in step mode
    go = lab.cell(step).locator("button.piav-go")
    go.wait_for(timeout=90_000)
    shown = lab.cell(step).locator(".piav-root")
    assert "The agent is about to call a tool. What will it do?" in shown.inner_text()
    assert shown.locator(".piav-tool").count() == 0  # the call is not shown before the class has guessed
    from playwright.sync_api import expect

    # the status comes in the same flush as the button, as a trait update a moment after it
    expect(shown.locator(".piav-status")).to_contain_text("paused: press Go on ▶", timeout=5_000)
    lab.screenshot("teaching_step_paused.png", lab.cell(step))
    go.click()
    out = lab.wait_for_static(step, "east,143.2", timeout=120)
    assert "Paused: The agent is about to call a tool" in out and "no browser shows this cell" not in out
    lab.screenshot("teaching_step_done.png", lab.cell(step))

    lab.run_cell(export)  # the page that plays on a projector
    lab.wait_for_output(export, "press ▶ Play")
    assert "pi-play" in (lab.server.root / "memory-demo" / "teaching-demo" / "lecture.html").read_text()

    lab.run_cell(course)  # three students run the course notebook
    listed = lab.wait_for_output(course, "cy.jsonl", timeout=360).strip()
    assert listed.endswith("\n['ada.jsonl', 'bob.jsonl', 'cy.jsonl', 'notes.txt']") and "WARNING" not in listed
    lab.run_cell(view)  # the class view
    found = lab.cell(view).locator(".pi-class .pic-table")
    found.wait_for(timeout=60_000)
    assert found.locator("tbody tr").count() == 3
    assert "never ran it" in found.locator("tfoot").inner_text()
    lab.screenshot("teaching_class_view.png", lab.cell(view))
    found.locator("tbody tr", has_text="bob").locator("td.pic-cell a").nth(1).click()
    opened = lab.cell(view).locator("details.pic-answers[open]")
    opened.wait_for(timeout=10_000)
    assert opened.locator(".pic-card").count() >= 3 and "bob" in lab.cell(view).locator(".pic-card.pic-hl").inner_text()
    lab.screenshot("teaching_class_answers.png", opened)
    lab.run_cell(table)
    lab.wait_for_output(table, "distance")
