"""The teaching notebook's ending (``NOTEBOOK_CELLS.md``), run cell by cell in a real kernel by nbclient.

The code cells are read from ``NOTEBOOK_CELLS.md`` itself, so what is tested is what the
notebook will hold: a lecture recorded, performed again from the recording in step mode (no
browser here: it plays through and says so), exported as a page that plays, and a course
notebook run by three students whose sessions the class view shows.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

CELLS = Path(__file__).resolve().parents[1] / "NOTEBOOK_CELLS.md"


def ending_cells() -> list[str]:
    """The code cells of the teaching notebook's ending, in order."""
    text = CELLS.read_text(encoding="utf-8")
    section = text.split("## `notebooks/teaching-agent-memory.ipynb`", 1)[1].split("<!-- end of the teaching notebook's ending -->", 1)[0]
    return re.findall(r"\*\*code\*\*\s*```python\n(.*?)```", section, re.S)


def _outputs(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(o["text"])
        for mime in ("text/html", "text/plain", "text/markdown"):
            if mime in o.get("data", {}):
                out.append(o["data"][mime])
        if o.get("output_type") == "error":
            out.append(f"ERROR {o['ename']}: {o['evalue']}")
    return "\n".join(out)


def test_the_ending_records_replays_in_step_mode_exports_and_shows_the_class(tmp_path):
    cells = ending_cells()
    assert len(cells) == 7
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell('MODEL = "offline/echo"')] + [nbformat.v4.new_code_cell(c) for c in cells]
    )
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    record, replay, export, course, view, table = (_outputs(c) for c in nb.cells[2:8])
    for out in (record, replay, export, course, view, table):
        assert "ERROR" not in out and "Traceback" not in out, out[-2000:]
    # the recording, and its performance in class: the same answer, held before the tool call
    assert "east,143.2" in record and "offline/typewriter" in record
    assert "Paused: The agent is about to call a tool. What will it do?" in replay
    assert "no browser shows this cell, so the replay does not stop here" in replay
    assert "east,143.2" in replay and "pi: stop" in replay
    lecture = tmp_path / "teaching-demo" / "lecture.jsonl"
    in_class = tmp_path / "teaching-demo" / "in-class.jsonl"
    assert lecture.exists() and in_class.exists()
    page = (tmp_path / "teaching-demo" / "lecture.html").read_text()
    assert 'id="pi-play"' in page and "east,143.2" in page
    # three students' sessions, and what the class view makes of them
    assert "'ada.jsonl', 'bob.jsonl', 'cy.jsonl', 'notes.txt'" in course
    assert "Class view · class" in view and "3 sessions · 1 course notebook" in view
    assert "Who never ran a cell" in view and re.search(r"never ran it</div>", view)
    assert "bob</a>: 2 branches" in view  # he ran his guess twice
    assert "sales.xlsx" in view and "tool error" in view  # the file he read was not there
    assert "notes.txt" in view and "not read" in view
    assert "ada" in table and "distance" in table
