"""The teaching notebook's part 4 ("Teach with it"), run cell by cell in a real kernel by nbclient.

The cells are read from ``notebooks/teaching-agent-memory.ipynb`` itself, after the notebook's
own setup cells, so what is tested is what the notebook holds: a lecture recorded, performed
again from the recording in step mode (no browser here: it plays through and says so),
exported as a page that plays, and a course notebook run by three students whose sessions the
class view shows.
"""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient
from shipped_notebooks import code_cells

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

NOTEBOOK = "teaching-agent-memory"


def prelude_cells() -> list[str]:
    """What part 4 runs after: the notebook's ``MODEL`` and its project folder, with the extension loaded."""
    return [c.source for c in code_cells(NOTEBOOK, "setup", "project")]


def ending_cells() -> list[str]:
    """The code cells of the teaching notebook's part 4, in order."""
    return [c.source for c in code_cells(NOTEBOOK, "teach-md")]


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
    cells = [*code_cells(NOTEBOOK, "setup", "project"), *code_cells(NOTEBOOK, "teach-md")]
    assert [c.id for c in cells][2:] == ["teach-setup", "record", "step", "export", "course", "class", "class-table"]
    nb = nbformat.v4.new_notebook(cells=cells)
    # the kernel as a reader's: pytest's variable would turn off the kernel's capture of what child processes print
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    out = {c.id: _outputs(c) for c in nb.cells}
    for text in out.values():
        assert "ERROR" not in text and "Traceback" not in text, text[-2000:]
    assert out["teach-setup"] == ""  # the setup says nothing
    # the recording, and its performance in class: the same answer, held before the tool call
    record, replay = out["record"], out["step"]
    assert "east,143.2" in record and "offline/typewriter" in record
    assert "Paused: The agent is about to call a tool. What will it do?" in replay
    assert "no browser shows this cell, so the replay does not stop here" in replay
    assert "east,143.2" in replay and "pi: stop" in replay
    demo = tmp_path / "memory-demo" / "teaching-demo"
    assert (demo / "lecture.jsonl").exists() and (demo / "in-class.jsonl").exists()
    page = (demo / "lecture.html").read_text()
    assert 'id="pi-play"' in page and "east,143.2" in page
    # three students' sessions, and what the class view makes of them; the students' kernels say nothing of their own
    assert out["course"] == "['ada.jsonl', 'bob.jsonl', 'cy.jsonl', 'notes.txt']"
    view = out["class"]
    assert "Class view · class" in view and "3 sessions · 1 course notebook" in view
    assert "Who never ran a cell" in view and re.search(r"never ran it</div>", view)
    assert "bob</a>: 2 branches" in view  # he ran his guess twice
    assert "sales.xlsx" in view and "tool error" in view  # the file he read was not there
    assert "notes.txt" in view and "not read" in view
    assert "ada" in out["class-table"] and "distance" in out["class-table"]
