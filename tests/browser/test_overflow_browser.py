"""A prompt larger than the model's window, in a real JupyterLab: what the user reads.

The cell's output ends in a short ``CellFailed`` error naming the entry and ``%pi forget ID``
(no traceback), its status line says "error" (not "running"), and after ``%pi forget`` the next
cell answers. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%pi new overflow-demo
print("setup-end")
"""

BIG = "%%pi\nSummarize this log:\n" + "step 1 loss 0.25 lr 0.001\n" * 24_000  # about 600,000 characters


def test_an_oversized_prompt_ends_the_cell_in_an_error_that_names_it(lab):
    lab.write_notebook("overflow.ipynb", [SETUP, BIG])
    lab.open_notebook("overflow.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")

    lab.run_cell(1)
    lab.wait_for_output(1, "CellFailed", timeout=120)
    out = lab.output_text(1)
    assert "%pi forget " in out and "Traceback" not in out, out
    assert "offline/echo · error" in out and "· running" not in out, out
    lab.screenshot("overflow_cell.png", lab.cell(1).locator(".jp-OutputArea"))  # the cell itself holds the long prompt

    entry = re.search(r"%pi forget (\w+)", out).group(1)
    lab.append_and_run(f"%pi forget {entry}")
    lab.append_and_run("%%pi\nand now a short question")
    lab.wait_for_static(3, "and now a short question")
    assert "CellFailed" not in lab.output_text(3)
