"""Fixtures for tests of the cell log: IPython's in-process shell, with a cell log hooked in for one test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.testing.globalipapp import start_ipython

from pi_jupyter.notebook.cell_log import CellLog


@pytest.fixture
def shell() -> Any:
    """IPython's test shell (one per process)."""
    start_ipython()
    return TerminalInteractiveShell.instance()


@pytest.fixture
def log(shell: Any) -> Iterator[CellLog]:
    """A cell log hooked into the shell for this test only."""
    cells = CellLog(shell)
    shell.events.register("pre_run_cell", cells.pre_run_cell)
    shell.events.register("post_run_cell", cells.post_run_cell)
    yield cells
    shell.events.unregister("pre_run_cell", cells.pre_run_cell)
    shell.events.unregister("post_run_cell", cells.post_run_cell)
