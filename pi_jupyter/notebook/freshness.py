"""Before a ``%%pi`` cell runs: read what other programs wrote to its session file since the last cell.

Another kernel, a Dask worker or pi itself may append to the same file between two cells. The
cell reads those lines first (an ``fstat`` when nothing changed), so its tree, its re-run rule and
its records see them; a line it cannot read is reported once, as ``file:line: problem``. A file
that another program replaced or truncated is opened again, with a note, instead of failing on
the first append (or, worse, answering without saving); a deleted one is a one-line error.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..session import Session, SessionChangedError, SessionError

if TYPE_CHECKING:  # pragma: no cover
    from ..agent.agent import Agent
    from .state import NotebookState


def fresh_agent(state: NotebookState, agent: Agent) -> Agent:
    """``agent`` once its session has read what other writers appended; a new agent when the file had to be reopened."""
    session = agent.session
    path = session.path
    if path is None:
        return agent
    report = session.load_report
    seen = (len(report.problems), report.total)
    try:
        session.refresh()
    except SessionChangedError as exc:
        return _reopen(state, agent, exc)
    if report.total > seen[1]:
        _tell_new_problems(session, *seen)
    return agent


def _reopen(state: NotebookState, agent: Agent, exc: SessionChangedError) -> Agent:
    session = agent.session
    path = session.path
    assert path is not None
    name = os.path.basename(path)
    if not os.path.exists(path):
        raise SessionError(
            f"{name}: the session file was deleted or moved since the last cell; "
            "%pi open PATH continues it where it is now, %pi new starts a new session"
        ) from None
    why = "shrank" if "shrank" in str(exc) else "was replaced"
    session.close()
    reopened = Session.open(path, durability=session.durability)
    key = path
    state.agents.pop(key, None)
    fresh = state.agent_for(reopened)
    print(
        f"pi: {name} {why} since the last cell (another program rewrote it); reopened it: "
        f"{len(reopened)} entries, leaf {reopened.leaf_id or 'before the first entry'}",
        file=sys.stderr,
    )
    if not reopened.load_report.ok:
        _tell_new_problems(reopened, 0, 0)
    return fresh


_SHOWN = 5
"""New problems told one per line; more are counted in one line."""


def _tell_new_problems(session: Session, listed: int, total: int) -> None:
    """One line per problem found since ``listed`` were listed and ``total`` counted (a few at most; the rest counted)."""
    report = session.load_report
    name = os.path.basename(session.path or "session")
    fresh = [p for p in report.problems[listed:] if p.severity != "info"]
    for problem in fresh[:_SHOWN]:
        where = f"{name}:{problem.line}" if problem.line else name
        print(f"pi: {where}: {problem.severity}: {problem.message} (the line is left as it is)", file=sys.stderr)
    more = report.total - total - min(len(fresh), _SHOWN) - sum(1 for p in report.problems[listed:] if p.severity == "info")
    if more > 0:
        print(f"pi: {name}: {more} more problem(s); pi-jupyter info {session.path} lists them all", file=sys.stderr)
