"""Run All on a notebook whose prompt is larger than the model's window, in a real kernel (nbclient).

The run stops at that cell with a short error that names the entry (no traceback), the cells below
it do not run, and the saved notebook keeps the megabyte prompt once, not three times.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.kernel

PROMPT = "word " * 200_000  # a million characters; the offline model's window is 128,000 tokens


def test_run_all_stops_at_the_oversized_prompt_and_keeps_it_once(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = tmp_path / "overflow.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"'),
        nbformat.v4.new_code_cell("%%pi\nhello"),
        nbformat.v4.new_code_cell("%%pi\n" + PROMPT),
        nbformat.v4.new_code_cell("ran_after = True"),
    ]
    env = {**os.environ, "JPY_SESSION_NAME": str(path), "PI_JUPYTER_CONFIG": str(tmp_path / "none.toml")}
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as info, client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    assert "CellFailed" in str(info.value)

    failed = nb.cells[2]
    error = next(o for o in failed.outputs if o.output_type == "error")
    text = "\n".join(error.traceback)
    assert error.ename == "CellFailed" and "%pi forget " in text and "Traceback" not in text
    assert str(tmp_path) not in text
    assert not nb.cells[3].outputs  # Run All stopped at the failed cell

    nbformat.write(nb, path)
    saved = path.read_text()
    # the prompt is in the cell's source and once in its outputs (whole in the HTML, folded), not in all three forms
    one_copy = len(PROMPT) // len("word " * 2000)
    assert 1.5 * one_copy < saved.count("word " * 2000) < 2.5 * one_copy
    assert path.stat().st_size < 2.2 * len(PROMPT)
