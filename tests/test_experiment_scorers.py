"""Scorers that misbehave: they hang, raise, return what is not a number, or block; the grid goes on and the row says why."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import experiment, load_experiment

PROMPT = "Say {x}."
VARY = {"x": ["a", "b", "c"]}


@pytest.fixture
def session(tmp_path):
    return Session.open(tmp_path / "grid.jsonl", create=True, cwd=str(tmp_path))


def length(branch):
    return len(branch.answer)


def lines_parse(path) -> bool:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            json.loads(line)
    return True


@pytest.mark.timeout(60)
def test_an_async_scorer_that_never_returns_times_out_on_its_branch(session):
    async def forever(branch):
        await asyncio.Event().wait()

    result = asyncio.run(experiment(session, PROMPT, vary=VARY, scorers=[forever, length], scorer_timeout=0.5))
    assert [r.state for r in result.rows] == ["done"] * 3
    for row in result.rows:
        assert row.score_errors == {"forever": "scorer forever timed out after 0.5 s"}
        assert row.scores["length"] > 0  # the other scorer's value stands
    reopened = load_experiment(Session.open(session.path))
    assert reopened.rows[1].score_errors == {"forever": "scorer forever timed out after 0.5 s"}
    assert "forever timed out" in reopened.table()["error"].iloc[0]


@pytest.mark.timeout(60)
def test_a_sync_scorer_that_hangs_times_out_and_the_grid_ends(session):
    release = threading.Event()

    def stuck(branch):
        release.wait(30)
        return 1

    try:
        result = asyncio.run(experiment(session, PROMPT, vary=VARY, scorers=[stuck], scorer_timeout=0.5))
    finally:
        release.set()
    assert all(r.score_errors == {"stuck": "scorer stuck timed out after 0.5 s"} for r in result.rows)


@pytest.mark.parametrize(
    "value,message",
    [
        (10**5000, "scorer bad returned an integer too large to record (5001 digits); return a float or a smaller number"),
        (float("nan"), "scorer bad returned nan; return a finite number, a bool or a dict of them"),
        (float("inf"), "scorer bad returned inf; return a finite number, a bool or a dict of them"),
        ("7/10", "scorer bad returned str; return a number, a bool or a dict of them"),
        (None, "scorer bad returned NoneType; return a number, a bool or a dict of them"),
        ({"ok": 1, "bad": "x"}, "scorer bad returned a dict whose 'bad' is str; return a number, a bool or a dict of them"),
        ({"big": 2**70}, "scorer bad returned an integer too large to record (22 digits); return a float or a smaller number"),
    ],
    ids=["10**5000", "nan", "inf", "text", "None", "dict-with-text", "dict-with-2**70"],
)
def test_a_bad_score_is_reported_on_its_branch_and_the_others_stand(session, value, message):
    def bad(branch):
        return value

    result = asyncio.run(experiment(session, PROMPT, vary=VARY, scorers=[length, bad]))
    assert lines_parse(session.path)
    assert Session.open(session.path).load_report.ok
    for row in load_experiment(Session.open(session.path)).rows:
        assert row.state == "done"
        assert row.scores["length"] > 0 and "bad" not in row.scores
        assert row.score_errors == {"bad": message}
    assert len(result.rows) == 3


def test_a_scorer_that_raises_is_one_line_on_its_branch(session):
    def grumpy(branch):
        if branch.values["x"] == "b":
            raise KeyError("expected")
        return 1.0

    result = asyncio.run(experiment(session, PROMPT, vary=VARY, scorers=[grumpy]))
    assert [r.scores.get("grumpy") for r in result.rows] == [1.0, None, 1.0]
    assert result.rows[1].score_errors == {"grumpy": "scorer grumpy failed: KeyError: 'expected'"}
    assert "1 score could not be computed" in str(result.summary())


def test_sync_scorers_run_off_the_event_loop(session):
    """Two branches' sync scorers meet: one waits for the other. On the event loop the first would block the second."""
    met = threading.Event()
    loop_threads: list[int] = []
    scorer_threads: list[int] = []

    def meet(branch):
        scorer_threads.append(threading.get_ident())
        if branch.values["x"] == "a":
            return float(met.wait(10))
        met.set()
        return 1.0

    async def main():
        loop_threads.append(threading.get_ident())
        return await experiment(session, PROMPT, vary={"x": ["a", "b"]}, scorers=[meet])

    result = asyncio.run(main())
    assert [r.scores.get("meet") for r in result.rows] == [1.0, 1.0]
    assert loop_threads[0] not in scorer_threads


def test_score_afterwards_reports_the_bad_score_too(session):
    result = asyncio.run(experiment(session, PROMPT, vary=VARY))

    def huge(branch):
        return 10**400

    result.score(huge)
    assert all(r.score_errors["huge"].startswith("scorer huge returned an integer too large") for r in result.rows)
    assert lines_parse(session.path)
