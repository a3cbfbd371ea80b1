"""Grids that break the table: scores at the edge of a float, keys named like its columns, a scorer that never returns.

Each grid is built as a careless user (or a hostile scorer) would build it: scores of ±1e308 (the
mean, the spread and the differences overflow a float), ``--vary n=6,5`` and ``state`` (names of the
table's own columns), a scorer called ``cost``, and a sync scorer that hangs with more branches than
a thread pool would have threads. Every output stays one clear text; nothing raises, nothing is lost.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import Experiment, experiment, load_experiment
from pi_jupyter.experiment.analysis import TABLE_COLUMNS


@pytest.fixture
def session(tmp_path):
    return Session.open(tmp_path / "study.jsonl", create=True, cwd=str(tmp_path))


def huge(branch):
    return 1e308 if branch.values["how"] == "a" else -1e308


def swings(branch):
    return 1.7e308 if branch.repeat % 2 else -1.7e308


def test_scores_at_the_edge_of_a_float_give_a_summary_a_figure_and_a_verdict(session, tmp_path):
    result = asyncio.run(experiment(session, "Say {how}", vary={"how": ["a", "b"]}, repeat=4, scorers=[huge, swings]))
    text = str(result.summary())
    assert "Traceback" not in text and "verdicts" in text
    assert "not decided: how=a vs how=b on huge: +∞" in text  # the difference is past the largest float: said so
    assert "(97.5% interval), p = 0.25 (n = 4 pairs: at least 7 needed to decide at this effect)" in text
    assert result.summary().html() and result.plot().svg.startswith("<svg") and result.plot("cost").svg
    bundle, _meta = result._repr_mimebundle_()
    assert "pi-experiment-summary" in bundle["text/html"]
    # the same from the shell, on the file alone
    proc = subprocess.run(
        [sys.executable, "-m", "pi_jupyter", "experiment", "--show", str(session.path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "how=a vs how=b on huge: +∞" in proc.stdout


def test_until_decided_with_scores_at_the_edge_of_a_float(session):
    exp = Experiment(session, "Say {how}", vary={"how": ["a", "b"]}, repeat=8, scorers=[huge, swings], until_decided=True)
    result = asyncio.run(exp.run())
    summary = result.summary()
    assert {c.score for c in summary.comparisons} == {"huge", "swings"}
    assert "until decided: stopped after" in str(summary)
    for c in summary.comparisons:
        line = c.line()
        assert line.startswith(("how=a scores higher than how=b on huge: +∞", "not decided: how=a vs how=b on huge: +∞", "no detectable"))
        assert c.decided or "needed to decide" in line or "every pair scored the same" in line


def test_keys_named_like_the_tables_columns_keep_their_values(session):
    """``--vary n=6,5``: the count no longer overwrites the key; every colliding name is shown renamed, beside the column."""

    def cost(branch):  # a score named like the cost column
        return int(branch.values["n"]) + branch.repeat

    result = asyncio.run(
        experiment(session, "Say {n} {state} {mean}", vary={"n": ["6", "5"], "state": ["x", "y"], "mean": ["m"]}, repeat=2, scorers=[cost])
    )
    frame = result.summary().frame()
    assert sorted(frame["n (varied)"].unique()) == ["5", "6"] and set(frame["n"]) == {2}  # the key's values, and the count
    assert set(frame["mean (varied)"]) == {"m"} and {"n", "mean", "score"} <= TABLE_COLUMNS
    text = str(result.summary())
    assert "n (varied)" in text.splitlines()[1]
    table = result.table()
    assert {"state", "state (varied)", "cost", "cost (score)"} <= set(table.columns)
    assert set(table["state"]) == {"done"} and set(table["state (varied)"]) == {"x", "y"}
    assert sorted(table["cost (score)"]) == sorted(int(n) + r for n in ("6", "5") for _ in ("x", "y") for r in (0, 1))
    # rebuilt from the file alone: the same columns
    again = load_experiment(Session.open(session.path, readonly=True))
    assert list(again.table().columns) == list(table.columns)
    # the shell's table too
    proc = subprocess.run(
        [sys.executable, "-m", "pi_jupyter", "experiment", "--show", str(session.path)], capture_output=True, text=True, timeout=120
    )
    assert "state (varied)" in proc.stdout and "cost (score)" in proc.stdout


@pytest.mark.timeout(120)
def test_a_hanging_sync_scorer_holds_no_thread_a_later_grid_needs(session):
    """12 branches whose sync scorer never returns (more than a pool of 8 would have): then a trivial scorer on a
    new grid gets every branch scored, at once, while the first ones still hang."""
    release = threading.Event()

    def stuck(branch):
        release.wait(100)
        return 1

    def length(branch):
        return len(branch.answer)

    try:
        first = asyncio.run(experiment(session, "Say {how}", vary={"how": ["a", "b", "c"]}, repeat=4, scorers=[stuck], scorer_timeout=0.5))
        assert all(r.score_errors == {"stuck": "scorer stuck timed out after 0.5 s"} for r in first.rows)
        later = asyncio.run(experiment(session, "Tell {how}", vary={"how": ["a", "b", "c"]}, repeat=4, scorers=[length], scorer_timeout=3))
        assert [r.score_errors for r in later.rows] == [{}] * 12
        assert all(r.scores["length"] > 0 for r in later.rows)
    finally:
        release.set()


def test_a_scorer_that_raises_system_exit_ends_its_score_not_the_grid(session):
    def leaves(branch):
        raise SystemExit(3)

    result = asyncio.run(experiment(session, "Say {how}", vary={"how": ["a", "b"]}, scorers=[leaves]))
    assert [r.score_errors for r in result.rows] == [{"leaves": "scorer leaves failed: SystemExit"}] * 2
