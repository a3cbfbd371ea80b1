"""The shipped notebooks' cells, read by their ids, so a test runs what a reader runs.

A test that checks a notebook's section in a real kernel (or in JupyterLab) takes the cells
from ``notebooks/*.ipynb`` itself: when the notebook changes, the test runs the new cells.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def code_cells(notebook: str, first: str, last: str | None = None) -> list[nbformat.NotebookNode]:
    """The code cells of ``notebooks/<notebook>.ipynb`` from the cell with id ``first`` to the one with
    id ``last`` (both included; default: to the end), outputs cleared, in order."""
    cells = nbformat.read(NOTEBOOKS / f"{notebook}.ipynb", as_version=4).cells
    ids = [c.get("id") for c in cells]
    start = ids.index(first)
    end = ids.index(last) + 1 if last else len(cells)
    chosen = [c for c in cells[start:end] if c.cell_type == "code"]
    for cell in chosen:
        cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    return chosen


def sources(notebook: str, first: str, last: str | None = None) -> dict[str, str]:
    """``{cell id: source}`` of the code cells :func:`code_cells` picks, in order."""
    return {c.id: c.source for c in code_cells(notebook, first, last)}
