"""Experiments: a grid of sibling branches from one node, run at once, scored, and recorded in the session.

::

    from pi_jupyter import Session
    from pi_jupyter.experiment import experiment

    s = Session.open("study.jsonl", create=True)
    result = await experiment(s, "Explain recursion in a {tone} way.",
                              vary={"model": ["offline/echo", "offline/tools"], "tone": ["terse", "warm"]},
                              repeat=2, scorers=["judge"])
    result.table()          # pandas DataFrame, one row per branch
    result.compare(); result.plot(); result.score(my_scorer)

Every branch records its variant, every score is a ``custom`` entry on the scored leaf, so
:func:`load_experiment` rebuilds the same table from the session file alone.
"""

from __future__ import annotations

from .branch_session import BranchSession
from .core import Experiment, experiment
from .executors import Executor, LocalExecutor
from .limiter import RateLimiter
from .records import Grid, Row
from .result import ExperimentResult, load_experiment
from .runner import BranchOutcome, BranchSpec, BranchStatus
from .scorers import Judge, ScoredBranch, get_scorer, register_scorer, registered
from .variants import DEFAULT_LIMIT, GridError, Variant, parse_vary

__all__ = [
    "DEFAULT_LIMIT",
    "BranchOutcome",
    "BranchSession",
    "BranchSpec",
    "BranchStatus",
    "Executor",
    "Experiment",
    "ExperimentResult",
    "Grid",
    "GridError",
    "Judge",
    "LocalExecutor",
    "RateLimiter",
    "Row",
    "ScoredBranch",
    "Variant",
    "experiment",
    "get_scorer",
    "load_experiment",
    "parse_vary",
    "register_scorer",
    "registered",
]
