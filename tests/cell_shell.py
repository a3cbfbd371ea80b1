"""Fixtures for tests of the cell log: IPython's in-process shell, with a cell log hooked in for one test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def own_shell() -> Iterator[Any]:
    """A plain ``InteractiveShell`` of the test's own; the process's shell is put back after it.

    Clearing the singleton alone would leave the next test's shell a new, bare one, where
    ``display()`` prints its argument instead of publishing it.
    """
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import SingletonConfigurable

    before = InteractiveShell._instance if InteractiveShell.initialized() else None
    InteractiveShell.clear_instance()
    try:
        yield InteractiveShell.instance()
    finally:
        InteractiveShell.clear_instance()
        if before is not None:
            for cls in type(before).mro():
                if isinstance(cls, type) and issubclass(cls, SingletonConfigurable) and cls is not SingletonConfigurable:
                    cls._instance = before
