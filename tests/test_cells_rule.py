"""Where a re-run of a ``%%pi`` cell starts (``notebook/cells.start_for``), case by case.

A cell that ran before forks from where it started when the current position is that run's
start, its end, or below its end; anywhere else it continues from the current position.
"""

from __future__ import annotations

from pi_jupyter.notebook.cells import CellRun, record_run, start_for
from pi_jupyter.session import Session


def message(s: Session, text: str) -> str:
    return s.append_message({"role": "user", "content": text, "timestamp": 1})


def ran(s: Session, cell: str, start: str | None, produced: list[str]) -> None:
    record_run(s, CellRun(cell_id=cell, started_from=start, produced=produced, end=produced[-1] if produced else None))


def test_leaf_at_the_runs_start_forks_from_it() -> None:
    s = Session.in_memory()
    a = message(s, "setup")
    b, c = message(s, "question"), message(s, "answer")
    ran(s, "cell-1", a, [b, c])
    s.checkout(a)  # back at the start: the re-run is a sibling of the old answer
    assert s.leaf_id == a
    assert start_for(s, "cell-1") == (a, True)


def test_leaf_before_the_root_at_a_first_cells_start_forks_from_there() -> None:
    s = Session.in_memory()
    b, c = message(s, "question"), message(s, "answer")
    ran(s, "cell-1", None, [b, c])
    s.checkout(None)
    assert s.leaf_id is None
    assert start_for(s, "cell-1") == (None, True)


def test_leaf_at_the_end_or_below_it_forks_from_the_start() -> None:
    s = Session.in_memory()
    a = message(s, "setup")
    b, c = message(s, "question"), message(s, "answer")
    ran(s, "cell-1", a, [b, c])
    assert start_for(s, "cell-1") == (a, True)
    message(s, "a later cell")
    assert start_for(s, "cell-1") == (a, True)


def test_leaf_on_another_branch_continues_from_the_leaf() -> None:
    s = Session.in_memory()
    a = message(s, "setup")
    b, c = message(s, "question"), message(s, "answer")
    ran(s, "cell-1", a, [b, c])
    s.checkout(a)
    other = message(s, "another branch")
    assert start_for(s, "cell-1") == (other, False)


def test_a_new_cell_or_continue_starts_at_the_leaf() -> None:
    s = Session.in_memory()
    a = message(s, "setup")
    b = message(s, "question")
    ran(s, "cell-1", a, [b])
    assert start_for(s, "cell-2") == (b, False)
    assert start_for(s, "cell-1", continue_=True) == (b, False)
    assert start_for(s, None) == (b, False)


def test_a_start_that_is_no_longer_in_the_session_continues_from_the_leaf() -> None:
    s = Session.in_memory()
    b = message(s, "question")
    ran(s, "cell-1", "gone-id", [b])
    assert start_for(s, "cell-1") == (b, False)
