"""Cells are tree nodes (DESIGN decision 4): where a ``%%pi`` cell starts, and what it produced.

Each run of a cell appends a ``custom`` entry of type ``pi_jupyter.cell`` recording the cell's
id, the node the run started from and the entries it produced. The record is a dead-end
child of the run's last entry and does not move the leaf (like a checkout marker), so it
never changes the context, here or in pi.

Where a re-run starts (:func:`start_for`): a cell that ran before forks from where it
started, so its new answer is a sibling of the old one, as long as the current position is
that run's start, its end, or a descendant of its end (the cells below it ran after it).
Otherwise the leaf has moved to another branch (say, an earlier cell was re-run) and the
cell continues from there, which keeps a top-to-bottom "Run All" on one new branch.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from ..session import Session
from ..session.index import CELL_TYPE

KERNEL = uuid.uuid4().hex[:12]
"""This kernel's id in cell records: an ``In [n]`` is only meaningful with the kernel that counted it
(a restart counts from 1 again), so views tell this kernel's runs from earlier kernels' (see
:func:`pi_jupyter.views.compare.cells.count_label`)."""


class CellRun(BaseModel):
    """One recorded run of a notebook cell."""

    cell_id: str
    started_from: str | None = None
    produced: list[str] = Field(default_factory=list)
    end: str | None = None
    execution_count: int | None = None
    kernel: str | None = KERNEL
    """The kernel that ran it (:data:`KERNEL`; ``None`` in records written before kernels were recorded)."""
    entry_id: str | None = None
    """The id of the record entry itself."""
    filled: str = ""
    """What the prompt had filled in from the notebook, as the cell said it (``""``: nothing)."""

    def to_data(self) -> dict[str, Any]:
        """The ``data`` of the ``custom`` entry (camelCase, as pi's own fields)."""
        data: dict[str, Any] = {
            "cellId": self.cell_id,
            "startedFrom": self.started_from,
            "produced": self.produced,
            "end": self.end,
            "executionCount": self.execution_count,
            **({"kernel": self.kernel} if self.kernel else {}),
        }
        if self.filled:
            data["filled"] = self.filled
        return data

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> CellRun | None:
        """Read a record entry; ``None`` when it is not one (or is malformed)."""
        data = entry.get("data")
        if entry.get("customType") != CELL_TYPE or not isinstance(data, dict) or not isinstance(data.get("cellId"), str):
            return None
        produced = data.get("produced")
        return cls(
            cell_id=data["cellId"],
            started_from=data.get("startedFrom") if isinstance(data.get("startedFrom"), str) else None,
            produced=[p for p in produced if isinstance(p, str)] if isinstance(produced, list) else [],
            end=data.get("end") if isinstance(data.get("end"), str) else None,
            execution_count=data.get("executionCount") if isinstance(data.get("executionCount"), int) else None,
            kernel=data.get("kernel") if isinstance(data.get("kernel"), str) else None,
            entry_id=entry.get("id"),
            filled=data["filled"] if isinstance(data.get("filled"), str) else "",
        )


def cell_runs(session: Session, cell_id: str | None = None) -> list[CellRun]:
    """Every recorded cell run in file order (only ``cell_id``'s when given)."""
    out: list[CellRun] = []
    for entry in session.cell_records(cell_id):
        run = CellRun.from_entry(entry)
        if run is not None:
            out.append(run)
    return out


def last_run(session: Session, cell_id: str) -> CellRun | None:
    """The most recent run of ``cell_id``, if any."""
    runs = cell_runs(session, cell_id)
    return runs[-1] if runs else None


def start_for(session: Session, cell_id: str | None, *, continue_: bool = False) -> tuple[str | None, bool]:
    """Where a run of ``cell_id`` starts: ``(node id or None for before the root, forked?)``."""
    leaf = session.leaf_id
    if continue_ or not cell_id:
        return leaf, False
    previous = last_run(session, cell_id)
    if previous is None:
        return leaf, False
    start = previous.started_from
    if start is not None and start not in session:
        return leaf, False
    if leaf == previous.end or leaf == start:
        return start, True
    if previous.end is not None and previous.end in session and leaf is not None:
        if previous.end in session.branch_ids(leaf):
            return start, True
    return leaf, False


def record_run(session: Session, run: CellRun) -> str:
    """Append the record of a finished run (a dead-end child of its last entry)."""
    entry_id = session.append_custom(CELL_TYPE, run.to_data())
    run.entry_id = entry_id
    return entry_id


def cell_of_entries(session: Session) -> dict[str, str]:
    """Entry id -> id of the cell that produced it, for every recorded run (the latest wins)."""
    owner: dict[str, str] = {}
    for run in cell_runs(session):
        for entry_id in run.produced:
            owner[entry_id] = run.cell_id
    return owner
