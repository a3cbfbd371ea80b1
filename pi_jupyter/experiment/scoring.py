"""Scoring the branches of an experiment: each value (or why there is none) becomes an entry on the scored leaf."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from ..session import Session
from .branch_session import BranchSession
from .records import SCORE_TYPE, Row
from .scorers import SCORER_TIMEOUT_S, ScorerError, branch_for_scoring, call_scorer, scorer_name, scorer_version


async def score_rows(
    session: Session,
    experiment_id: str,
    rows: Sequence[Row],
    scorers: Sequence[Callable[..., Any]],
    *,
    prompt: str = "",
    timeout: float | None = SCORER_TIMEOUT_S,
) -> list[str]:
    """Score the finished ``rows`` and append each value as a ``pi_jupyter.score`` entry on the row's leaf.

    The scorers of one branch run at once, each within ``timeout`` seconds. A scorer that fails
    (raises, times out, returns no number) writes an entry with its ``error`` instead of a
    value, so the row says why it has no score; the other scores stand. Returns those errors.
    """
    errors: list[str] = []
    for row in rows:
        if row.state != "done" or row.leaf is None or not scorers:
            continue
        branch = branch_for_scoring(session, row, prompt)
        outcomes = await asyncio.gather(*(call_scorer(fn, branch, timeout) for fn in scorers), return_exceptions=True)
        view = BranchSession(session, row.leaf)
        for fn, outcome in zip(scorers, outcomes, strict=True):
            data: dict[str, Any] = {
                "experiment": experiment_id,
                "index": row.index,
                "scorer": scorer_name(fn),
                "version": scorer_version(fn),
            }
            if isinstance(outcome, ScorerError):
                data["error"] = str(outcome)
                errors.append(f"#{row.index}: {outcome}")
            elif isinstance(outcome, BaseException):
                raise outcome  # not the scorer's failure (a cancelled grid): let it through
            else:
                data["value"] = outcome
            view.append_custom(SCORE_TYPE, data)
    return errors
