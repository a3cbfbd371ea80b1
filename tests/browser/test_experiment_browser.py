"""``%%pi --vary`` in a real JupyterLab: the live view while the grid runs, the table after, and after reopening."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """%load_ext pi_jupyter
%config PiMagics.session_dir = "sessions"
%config PiMagics.model = "offline/typewriter"
print("setup ok")"""

GRID = """%%pi --vary tone=terse,warm,plain --repeat 2 --concurrency 3 --score length
Explain recursion in a {tone} way, with one example from everyday life."""


def test_grid_live_view_then_durable_table(lab):
    lab.write_notebook("grid.ipynb", [SETUP, GRID])
    lab.open_notebook("grid.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup ok")
    lab.run_cell(1)
    view = lab.cell(1).locator(".pi-exp")
    view.wait_for(timeout=60_000)
    # while it runs: one row per branch, some running with a streaming tail, the rest queued, a progress line
    lab.page.wait_for_function(
        "() => { const rows = document.querySelectorAll('.pi-exp-table tr.pi-exp-running');"
        " return rows.length >= 1 && [...rows].some(r => r.children[3].textContent.length > 5); }",
        timeout=60_000,
    )
    rows = view.locator("tr.pi-exp-running, tr.pi-exp-queued, tr.pi-exp-done")
    assert rows.count() == 6
    assert "6 branches:" in view.locator(".pi-exp-progress").inner_text()
    assert view.locator("tr.pi-exp-running").count() <= 3  # --concurrency 3
    lab.screenshot("experiment_live.png", lab.cell(1))
    # when it ends: the progress line and the table with a column per score, and the figure
    out = lab.wait_for_output(1, "cells below continue from branch #0", timeout=120)
    assert "6 branches: 6 done" in out
    table = lab.cell(1).locator("table.pi-experiment-table")
    table.wait_for(timeout=30_000)
    headers = table.locator("th").all_inner_texts()
    assert {"tone", "repeat", "state", "answer", "length", "cost"} <= set(headers), headers
    assert headers.index("cost") < headers.index("answer"), "tokens and cost are read without scrolling past the answers"
    assert table.locator("tbody tr").count() == 6
    answer = table.locator("tbody tr").first.locator("td").nth(headers.index("answer"))
    assert answer.evaluate("td => getComputedStyle(td).textAlign") == "left"  # text reads from the left
    assert lab.cell(1).locator("svg.pi-experiment-figure").count() == 1
    lab.screenshot("experiment_table.png", lab.cell(1))
    # reopened without the kernel: the table and the progress line are still there, no widget errors
    lab.save()
    lab.shutdown_kernel()
    lab.page.reload()
    lab.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=60_000)
    reopened = lab.cell(1)
    reopened.locator("table.pi-experiment-table").wait_for(timeout=30_000)
    text = reopened.locator(".jp-OutputArea").inner_text()
    assert "cells below continue from branch #0" in text and "Error displaying widget" not in text
    assert reopened.locator("table.pi-experiment-table tbody tr").count() == 6


STOPPABLE = """%%pi --vary n=1,2,3,4,5,6,7,8,9,10,11,12 --concurrency 2
Count slowly to {n} hundred, in words, one number per line."""


def test_stop_all_while_the_cell_blocks(lab):
    lab.write_notebook("stop.ipynb", [SETUP, STOPPABLE])
    lab.open_notebook("stop.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup ok")
    lab.run_cell(1)
    view = lab.cell(1).locator(".pi-exp")
    view.wait_for(timeout=60_000)
    lab.page.wait_for_function("() => document.querySelectorAll('.pi-exp-table tr.pi-exp-running').length >= 1", timeout=60_000)
    view.locator("button.pi-exp-stop").click()
    out = lab.wait_for_output(1, "RunStopped", timeout=120)
    assert "12 branches:" in out and "skipped" in out
    # the error says how the grid ended (not "nothing was answered yet")
    assert "Run stopped (Stop was pressed): grid stopped:" in out and "of 12 branches finished" in out and "not started" in out, out
    assert "nothing was answered" not in out
    assert "queued" not in out.split("12 branches:")[1].split("·")[0] or "0 queued" in out
    # the rows the live view showed stay: one per branch, with what finished and what was stopped
    table = lab.cell(1).locator("table.pi-experiment-table")
    table.wait_for(timeout=30_000)
    states = table.locator("tbody tr").evaluate_all("rows => rows.map(r => r.textContent)")
    assert len(states) == 12 and any("done" in r or "aborted" in r for r in states), states
    lab.screenshot("experiment_stopped.png", lab.cell(1))
