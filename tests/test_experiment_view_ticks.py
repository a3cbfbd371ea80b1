"""The live grid view sends only the rows that changed: a thousand settled rows cost nothing per tick."""

from __future__ import annotations

from pi_jupyter.experiment import BranchStatus
from pi_jupyter.notebook.experiments.view import ExperimentView


class Grid:
    def __init__(self, n: int) -> None:
        self.statuses = [BranchStatus(index=i, label=f"x={i} #0") for i in range(n)]
        self.started = None

    def progress(self):
        return {"done": sum(s.state == "done" for s in self.statuses), "total": len(self.statuses), "cost": 0.0, "elapsed": 0.0}


def test_each_tick_sends_the_rows_that_changed_and_no_others():
    grid = Grid(1000)
    view = ExperimentView(title="t")
    sent = []
    view.send = lambda message: sent.append(message)
    view.tick(grid)
    assert len(sent[-1]["rows"]) == 1000  # the first tick: every row
    view.tick(grid)
    assert sent[-1]["rows"] == []  # nothing moved
    grid.statuses[3].state = "running"
    grid.statuses[3].tail = "partial"
    grid.statuses[7].state, grid.statuses[7].tokens = "done", 42
    view.tick(grid)
    assert sorted(r["i"] for r in sent[-1]["rows"]) == [3, 7]
    assert next(r for r in sent[-1]["rows"] if r["i"] == 7)["tokens"] == 42
    grid.statuses[3].tail = "partial answer"
    view.tick(grid)
    assert [r["i"] for r in sent[-1]["rows"]] == [3] and sent[-1]["rows"][0]["tail"] == "partial answer"
