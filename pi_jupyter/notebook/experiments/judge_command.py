"""``%pi judge [EXPERIMENT] [--by KEY] [--as NAME] [--model MODEL --rubric TEXT] [--name VAR]``.

A person judges pairs of an experiment's branches blind (:class:`~.judge_view.JudgeView`), or,
with ``--model``, a model judges every pair in both orders
(:class:`~pi_jupyter.experiment.judging.PairwiseJudge`). EXPERIMENT is its id (a prefix) or
``last`` (the default).
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from IPython.display import display

from ...experiment import load_experiment
from ...experiment.judging import PairwiseJudge
from ..typos import CommandParser


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("%pi judge")
    parser.add_argument("experiment", nargs="?", default="last")
    parser.add_argument("--by", default=None)
    parser.add_argument("--as", dest="judge", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--rubric", default="The answer is correct, complete and clear.")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--name", default=None)
    return parser


def judge_command(magics: Any, rest: list[str]) -> Any:
    """Run ``%pi judge``: show the blind judging widget (returns nothing; ``--name VAR`` holds the view),
    or with ``--model`` have that model judge every pair in both orders (returns the preferences)."""
    opts = _parser().parse_args(rest)
    session = magics.state.agent_for().session
    result = load_experiment(session, None if opts.experiment == "last" else opts.experiment)
    if opts.model:
        judge = PairwiseJudge(rubric=opts.rubric, model=opts.model)
        runner = magics.state.runner
        future = runner.submit(result.judge_with_async(judge, by=opts.by, seed=opts.seed))
        prefs = runner.wait(future, on_interrupt=future.cancel)
        if opts.name:
            magics.shell.user_ns[opts.name] = prefs
        return prefs
    rounds = result.judging(opts.judge or getpass.getuser(), by=opts.by, seed=opts.seed)
    from .judge_view import JudgeView

    view = JudgeView(rounds)
    handle = display(view, display_id=True)
    if handle is not None:
        # the finished round leaves its results in the notebook, readable without the kernel
        view.on_done(lambda v: handle.update(v.static_bundle(), raw=True))
    if opts.name:
        magics.shell.user_ns[opts.name] = view
    return None
