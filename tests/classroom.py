"""Students running a course notebook, for the class view's tests: real agents on the offline model, real cell records.

Each ``%%pi`` cell of the course is a prompt run by an :class:`~pi_jupyter.Agent` from where
the cell starts (:func:`~pi_jupyter.notebook.cells.start_for`, as the magic does), then
recorded with :func:`~pi_jupyter.notebook.cells.record_run`, so the session files are what a
student's kernel leaves.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path

from pi_jupyter import Agent, Session
from pi_jupyter.notebook.cells import CellRun, record_run, start_for

COURSE = {
    "c-intro": "Hello! My name is {name}.",
    "c-read": "use read on `{file}`",
    "c-guess": "My guess for the largest region is {guess}.",
}


def _run(coro):
    """``asyncio.run``, in a thread of its own where a loop already runs (Playwright's, in the browser tests)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def run_cell(agent: Agent, cell_id: str, prompt: str, count: int) -> None:
    """One run of a course cell, as ``%%pi`` runs it (a re-run forks from the cell's start)."""
    session = agent.session
    start, _ = start_for(session, cell_id)
    if start != session.leaf_id:
        session.checkout(start, persist=False)
        agent.reload()
    result = _run(agent.prompt(prompt))
    record_run(
        session, CellRun(cell_id=cell_id, started_from=start, produced=list(result.entry_ids), end=session.leaf_id, execution_count=count)
    )


def student(folder: Path, name: str, *, cells: list[str] | None = None, values: dict[str, str] | None = None, course: str = "course",
            rerun: str | None = None, prompts: dict[str, str] | None = None) -> Path:  # fmt: skip
    """``name``'s session of the course in ``folder/name.jsonl``: ``cells`` run in order (default: all), ``rerun`` run twice."""
    work = folder.parent / "work"  # the students' project folder, beside the one that collects their sessions
    work.mkdir(exist_ok=True)
    (work / "sales.csv").write_text("region,revenue\nnorth,120\neast,143\n")
    path = folder / f"{name}.jsonl"
    session = Session.create(path=path, cwd=str(work))
    session.set_name(course)
    agent = Agent(session, model="offline/echo", tools=["read"], cwd=str(work))
    fill = {"name": name, "file": "sales.csv", "guess": "east", **(values or {})}
    course_cells = prompts or COURSE
    for n, cell_id in enumerate(cells or list(course_cells), 1):
        run_cell(agent, cell_id, course_cells[cell_id].format(**fill), n)
        if cell_id == rerun:
            run_cell(agent, cell_id, course_cells[cell_id].format(**fill), n + 10)
    session.close()
    return path
