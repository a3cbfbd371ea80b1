"""The verdicts never contradict their intervals, whatever the scores, and each rule is pinned to the line a user reads.

The summary's comparisons are Holm-corrected together; every interval is drawn at the level the
verdicts were held to (the 5% Holm's step-down ended at), so an interval excludes 0 exactly when
its comparison is decided. Checked here on grids built from scores directly (any mix of 0/1,
continuous, constant, tied and missing scores, n from 1 up), against scipy and statsmodels,
and by the coverage of the shown intervals on simulated studies. Then the sequential looks of
``--until-decided``, a winner that is the second value, and the sentence that says why a
comparison is not decided.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statistics_reference import (
    contingency,
    multitest,
    quick_multitest,  # noqa: F401 - a fixture
    scipy_stats,
)

from pi_jupyter.experiment import stats
from pi_jupyter.experiment.analysis import comparisons, sequential_comparisons, summarize
from pi_jupyter.experiment.records import Grid, Row


def grid_of(vary: dict[str, list[str]], repeat: int, score: Any, sequential: dict[str, Any] | None = None) -> tuple[Grid, list[Row]]:
    """A grid and its rows, each row scored ``score(values, repeat)`` (a dict of scores; a missing name is no score)."""
    import itertools

    grid = Grid(id="g", vary=vary, repeat=repeat, sequential=sequential)
    rows = []
    for n, (combo, r) in enumerate(itertools.product(itertools.product(*vary.values()), range(repeat))):
        values = dict(zip(vary, combo, strict=True))
        rows.append(Row(index=n, values=values, repeat=r, state="done", leaf=f"l{n}", scores=score(values, r)))
    return grid, rows


def pairs(rows: list[Row], key: str, a: str, b: str, score: str, below: int | None = None) -> tuple[list[float], list[float]]:
    left = {(tuple(sorted((k, v) for k, v in r.values.items() if k != key)), r.repeat): r.scores[score] for r in rows if r.values[key] == a}
    right = {
        (tuple(sorted((k, v) for k, v in r.values.items() if k != key)), r.repeat): r.scores[score] for r in rows if r.values[key] == b
    }
    shared = [k for k in left if k in right and (below is None or k[1] < below)]
    shared = [k for k in shared if math.isfinite(left[k]) and math.isfinite(right[k])]
    return [left[k] for k in shared], [right[k] for k in shared]


def excludes_zero(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and (low > 0 or high < 0)


# ------------------------------------------------------------------ any scores


KINDS = ["binary", "normal", "integers", "constant", "same", "nan"]


@st.composite
def studies(draw: st.DrawFn) -> tuple[Grid, list[Row]]:
    """Two keys (three comparisons, or more), a few repeats, scores of every kind with effects of any size."""
    vary = {"how": ["a", "b"], "tone": ["x", "y", "z"][: draw(st.integers(2, 3))]}
    repeat = draw(st.integers(1, 8))
    kinds = {name: draw(st.sampled_from(KINDS)) for name in ("s1", "s2")}
    effect = draw(st.sampled_from([0.0, 0.3, 1.0, 3.0]))
    seed = draw(st.integers(0, 10_000))
    rng = random.Random(seed)

    def score(values: dict[str, str], r: int) -> dict[str, Any]:
        lift = effect if values["how"] == "b" else 0.0
        out: dict[str, Any] = {}
        for name, kind in kinds.items():
            if kind == "binary":
                out[name] = int(rng.random() < min(0.95, 0.3 + lift / 4))
            elif kind == "normal":
                out[name] = rng.gauss(5 + lift, 1)
            elif kind == "integers":
                out[name] = rng.randint(0, 3) + round(lift)
            elif kind == "constant":
                out[name] = 4 + lift  # every pair differs by the same amount (or not at all)
            elif kind == "same":
                out[name] = 1
            else:
                out[name] = float("nan") if rng.random() < 0.3 else rng.gauss(lift, 1)
        return out

    return grid_of(vary, repeat, score)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(study=studies())
def test_an_interval_excludes_zero_exactly_when_its_comparison_is_decided(study):
    grid, rows = study
    found = comparisons(grid, rows)
    tested = [c for c in found if c.p is not None and c.n >= 2]
    if not tested:
        return
    holm = multitest.multipletests([c.p for c in tested], alpha=0.05, method="holm")
    undecided = sum(1 for c in tested if not c.decided)
    for c, rejected, adjusted in zip(tested, holm[0], holm[1], strict=True):
        assert c.decided == excludes_zero(c.low, c.high), c.line()
        assert not c.decided or rejected  # Holm decides at least as much (never less is kept as decided)
        assert c.p_adjusted == pytest.approx(adjusted, abs=1e-12)
        assert c.interval_level == pytest.approx(0.05 / max(1, undecided))  # one level for every interval
        xs, ys = pairs(rows, c.key, c.a, c.b, c.score)
        if c.method == "t":
            ci = scipy_stats.ttest_rel(xs, ys).confidence_interval(1 - c.interval_level)
            assert c.p == pytest.approx(scipy_stats.ttest_rel(xs, ys).pvalue, rel=1e-6)
            assert (c.low, c.high) == pytest.approx((ci.low, ci.high), rel=1e-6, abs=1e-9)
        elif c.method == "mcnemar":
            n10 = sum(1 for x, y in zip(xs, ys, strict=True) if x > y)
            n01 = sum(1 for x, y in zip(xs, ys, strict=True) if x < y)
            assert c.p == pytest.approx(contingency.mcnemar([[0, n10], [n01, 0]], exact=True).pvalue)
        elif c.method == "sign":
            pos = sum(1 for x, y in zip(xs, ys, strict=True) if x > y)
            neg = sum(1 for x, y in zip(xs, ys, strict=True) if x < y)
            assert c.p == pytest.approx(scipy_stats.binomtest(pos, pos + neg, 0.5).pvalue if pos + neg else 1.0)
        # and the line says it: a decided comparison names its winner, an undecided one's interval reaches 0
        line = c.line()
        assert line.startswith(f"{c.key}=") if c.decided else line.startswith(("not decided:", "no detectable difference"))
    summary = summarize(grid, rows, "status")
    assert str(summary) and summary.html()


def test_the_sentence_says_why_it_is_not_decided():
    """n = 3 pairs, every one differing by +1 (a length score): the sign test needs 6 at 5%; the interval is the
    sign test's own (unbounded at n = 3), not [+1.00, +1.00]."""
    grid, rows = grid_of({"tone": ["warm", "terse"]}, 3, lambda v, r: {"length": 10 + (v["tone"] == "warm")})
    (c,) = comparisons(grid, rows)
    assert not c.decided and c.to_decide == 6
    assert c.line() == (
        "not decided: tone=warm vs tone=terse on length: +1.00 [-∞, +∞], p = 0.25 "
        "(n = 3 pairs: at least 6 needed to decide at this effect); every pair differed by +1.00"
    )
    grid, rows = grid_of({"tone": ["warm", "terse"]}, 6, lambda v, r: {"length": 10 + (v["tone"] == "warm")})
    (c,) = comparisons(grid, rows)
    assert c.decided and c.line().startswith("tone=warm scores higher than tone=terse on length: +1.00 [+1.00, +1.00], p = 0.031")


def test_the_audits_contradiction_is_gone():
    """how=words never right, how=python always (4 pairs) beside a second comparison: McNemar's exact p = 0.125, 0.25
    after Holm. The Bonett-Price interval alone [-1.00, -0.07] excluded 0; shown beside "not decided" it reaches 0."""

    def score(values, r):
        return {"correct": int(values["how"] == "python"), "quality": 5 + (r % 2) + 0.1 * (values["tone"] == "x")}

    grid, rows = grid_of({"how": ["words", "python"], "tone": ["x", "y"]}, 2, score)
    found = {(c.key, c.score): c for c in comparisons(grid, rows, compare=["how"])}
    c = found[("how", "correct")]
    assert c.n == 4 and c.p == pytest.approx(0.125) and c.p_adjusted == pytest.approx(0.25) and not c.decided
    assert c.low <= 0 <= c.high
    assert c.line().startswith(
        "not decided: how=words vs how=python on correct: -1.00 [-1.00, +0.02] (97.5% interval), p = 0.25 (n = 4 pairs: "
    )


def test_shown_intervals_cover_the_truth_as_often_as_they_say():
    """Simulated studies of three comparisons (two keys): every interval shown covers its true difference at
    least as often as its level promises (95% or more: the levels after correction are higher)."""
    rng = random.Random(3)
    hits = total = 0
    truth = {"how": 0.5, "tone": 0.0}
    for _ in range(250):
        base = {(t, r): rng.gauss(5, 1.5) for t in ("x", "y", "z") for r in range(8)}

        def score(values, r, base=base):
            return {"s": base[(values["tone"], r)] + truth["how"] * (values["how"] == "a") + rng.gauss(0, 1)}

        grid, rows = grid_of({"how": ["a", "b"], "tone": ["x", "y", "z"]}, 8, score)
        for c in comparisons(grid, rows):
            total += 1
            hits += c.low <= truth[c.key] <= c.high if c.key == "how" else c.low <= 0 <= c.high
    assert hits / total >= 0.95


# ------------------------------------------------------------------ the sequential looks


def strong(values, r):
    return {"s": 6 + 0.27 * (r % 4) if values["how"] == "b" else 4.0}


def noisy(seed: int, lift: float) -> Any:
    """Scores ``s`` drawn once per branch (the same on a second call): variant ``b`` is ``lift`` higher on average."""
    rng = random.Random(seed)
    cache: dict[tuple[str, int], float] = {}

    def score(values: dict[str, str], r: int) -> dict[str, float]:
        return {"s": cache.setdefault((values["how"], r), rng.gauss(5 + lift * (values["how"] == "b"), 1))}

    return score


def test_each_look_counts_the_repeats_before_it_only():
    """Looks after 4, 8 and 12 repeats: at each look exactly the pairs with a repeat index under it, compared as scipy does."""
    grid, rows = grid_of({"how": ["a", "b"]}, 12, noisy(5, 0.3))
    for looks in ([4], [4, 8], [4, 8, 12]):
        grid.sequential = {"looks": looks, "planned": 12}
        (c,) = sequential_comparisons(grid, rows)
        at = looks[c.look - 1] if c.look else looks[-1]
        xs, ys = pairs(rows, "how", "a", "b", "s", below=at)
        assert c.n == at == len(xs)
        assert c.p == pytest.approx(scipy_stats.ttest_rel(xs, ys).pvalue)


def test_a_comparison_decided_at_a_look_keeps_that_looks_verdict():
    grid, rows = grid_of({"how": ["a", "b"]}, 12, strong, sequential={"looks": [4, 8, 12], "planned": 12})
    (c,) = sequential_comparisons(grid, rows)
    assert c.decided and c.look == 1 and c.n == 4  # decided at the first look; the later looks do not count it again
    assert "decided at look 1 of 3" in c.line()
    assert c.level == pytest.approx(stats.look_levels([4, 8, 12], 12)[0])


# ------------------------------------------------------------------ the winner


def test_when_the_second_value_wins_its_interval_is_its_own():
    grid, rows = grid_of({"how": ["a", "b"]}, 10, noisy(9, 2.0))
    (c,) = comparisons(grid, rows)
    assert c.decided and c.mean < 0
    xs, ys = pairs(rows, "how", "a", "b", "s")
    ci = scipy_stats.ttest_rel(ys, xs).confidence_interval(0.95)  # b - a, as the line reads it
    line = c.line()
    assert line.startswith(f"how=b scores higher than how=a on s: +{-c.mean:.2f} [+{ci.low:.2f}, +{ci.high:.2f}], p = ")
    assert ci.low <= -c.mean <= ci.high
