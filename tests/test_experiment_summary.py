"""What the table says about the question: per-variant intervals, paired verdicts, sequential stopping, all from the file."""

from __future__ import annotations

import asyncio
import hashlib
import tracemalloc

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import Experiment, GridError, experiment, load_experiment
from pi_jupyter.experiment import stats as st

PROMPT = "Answer it {how}."


@pytest.fixture
def session(tmp_path):
    return Session.open(tmp_path / "study.jsonl", create=True, cwd=str(tmp_path))


def noise(branch, salt: str = "") -> float:
    """A stable pseudo-random number in [0, 1) per branch (the same on a re-read)."""
    digest = hashlib.sha256(f"{salt}{branch.values}{branch.repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def correct(branch):
    # python is right 9 times in 10, words 3 in 10 (decided by a stable coin per branch)
    return int(noise(branch, "c") < (0.9 if branch.values["how"] == "python" else 0.3))


def quality(branch):
    return round(5 + 2 * noise(branch, "q") + (1.5 if branch.values["how"] == "python" else 0), 3)


def same(branch):
    return 1


def test_summary_has_intervals_and_a_verdict_per_comparison(session):
    result = asyncio.run(experiment(session, PROMPT, vary={"how": ["words", "python"]}, repeat=10, scorers=[correct, quality]))
    summary = result.summary()
    rows = result.rows
    # per variant: the mean with its Wilson interval (0/1) or t interval, n, pass@k and pass^k
    python = next(v for v in summary.variants if v.values == {"how": "python"} and v.score == "correct")
    values = [r.scores["correct"] for r in rows if r.values["how"] == "python"]
    assert python.n == 10 and python.mean == pytest.approx(sum(values) / 10)
    assert (python.low, python.high) == pytest.approx(st.wilson(sum(values), 10))
    assert python.k == 10 and python.pass_at_k == float(any(values)) and python.pass_hat_k == float(all(values))
    q = next(v for v in summary.variants if v.values == {"how": "words"} and v.score == "quality")
    assert q.method == "t" and q.low < q.mean < q.high and q.pass_at_k is None
    # paired by repeat index: python against words, one verdict per score, Holm-adjusted together
    by_score = {c.score: c for c in summary.comparisons}
    assert set(by_score) == {"correct", "quality"}
    qc = by_score["quality"]
    pairs = [
        (r.scores["quality"], s.scores["quality"])
        for r in rows
        for s in rows
        if r.repeat == s.repeat and r.values["how"] == "words" and s.values["how"] == "python"
    ]
    est = st.paired_estimate([a for a, _ in pairs], [b for _, b in pairs])
    assert qc.n == 10 and qc.mean == pytest.approx(est.mean) and qc.p == pytest.approx(est.p)
    assert qc.p_adjusted == pytest.approx(st.holm([by_score["correct"].p, qc.p])[1])
    lines = summary.verdicts()
    assert any(line.startswith("how=python scores higher than how=words on quality: +1.") and "(n = 10 pairs)" in line for line in lines), (
        lines
    )
    text = str(summary)
    assert "95% interval" in text and "pass@k" in text and "Holm-adjusted for 2 comparisons" in text


def test_no_difference_says_how_many_pairs_would_detect_one(session):
    def coin(branch):
        return int(noise(branch) < 0.5)

    result = asyncio.run(experiment(session, PROMPT, vary={"how": ["words", "python"]}, repeat=5, scorers=[coin]))
    (c,) = result.summary().comparisons
    assert not c.decided
    line = c.line()
    if c.mean:  # an effect was seen: why it is not decided, and the pairs that effect would need
        assert line.startswith("not decided: how=words vs how=python on coin: ")
        assert f"(n = 5 pairs: at least {st.pairs_to_decide(st.paired_estimate(*_coins(result)))} needed to decide at this effect)" in line
    else:
        assert line.startswith("no detectable difference between how=words and how=python on coin: ")
    if c.sd:
        assert f"about {st.pairs_needed(0.2, c.sd)} pairs would detect a 0.20 difference" in line
    else:
        assert line.endswith("every pair scored the same")


def _coins(result):
    by = {(r.values["how"], r.repeat): r.scores["coin"] for r in result.rows}
    return [by[("words", i)] for i in range(5)], [by[("python", i)] for i in range(5)]


def test_pairs_without_spread_are_named_as_they_are(session):
    def by_how(branch):
        return 5 if branch.values["how"] == "python" else 4

    result = asyncio.run(experiment(session, PROMPT, vary={"how": ["words", "python"]}, repeat=2, scorers=[by_how, same]))
    lines = {c.score: c.line() for c in result.summary().comparisons}
    # two pairs, each 1 apart: the sign test's own interval is unbounded (it cannot decide under 7 pairs at 2.5%)
    assert lines["by_how"] == (
        "not decided: how=words vs how=python on by_how: -1.00 [-∞, +∞] (97.5% interval), p = 1.00 "
        "(n = 2 pairs: at least 7 needed to decide at this effect); every pair differed by -1.00"
    ), lines
    assert lines["same"].endswith("(n = 2 pairs); every pair scored the same"), lines


def test_the_same_summary_comes_back_from_the_file_alone(session):
    prompt = "Answer it {how}, in a {tone} voice."
    asyncio.run(
        experiment(session, prompt, vary={"how": ["words", "python"], "tone": ["dry", "warm"]}, repeat=3, scorers=[correct, quality])
    )
    live = load_experiment(session)
    again = load_experiment(Session.open(session.path, readonly=True))
    assert str(again.summary()) == str(live.summary())
    assert again.summary().model_dump() == live.summary().model_dump()
    # two keys compared: each pairs on the other key's value and the repeat
    keys = {c.key for c in again.summary().comparisons}
    assert keys == {"how", "tone"} and all(c.n == 6 for c in again.summary().comparisons)
    # by= groups the per-variant table by one key
    assert {tuple(v.values) for v in again.summary(by=["how"]).variants} == {("how",)}
    # the durable output carries the summary and the interval figure
    bundle, _metadata = again._repr_mimebundle_()
    assert "pi-experiment-summary" in bundle["text/html"] and "mean and 95% interval per variant" in bundle["image/svg+xml"]
    assert "verdicts" in bundle["text/plain"]


def test_plot_shows_each_variants_interval(session):
    result = asyncio.run(experiment(session, PROMPT, vary={"how": ["words", "python"]}, repeat=4, scorers=[correct]))
    svg = result.plot().svg
    for v in result.summary().variants:
        assert f"how={v.values['how']}: {v.mean:.3g} [{v.low:.3g}, {v.high:.3g}], n = 4" in svg


def test_until_decided_stops_once_decided_and_says_what_it_saved(session):
    def right(branch):
        return int(branch.values["how"] == "python")

    exp = Experiment(session, PROMPT, vary={"how": ["words", "python"]}, repeat=20, scorers=[right], until_decided=True)
    result = asyncio.run(exp.run())
    ran = [r for r in result.rows if r.state == "done"]
    # looks after 4, 8, ... repeats; 4 pairs cannot reach that look's level, 8 can
    assert sorted({r.repeat for r in ran}) == list(range(8))
    assert [r.error for r in result.rows if r.state == "skipped"] == ["decided"] * 24
    (c,) = result.summary().comparisons
    assert c.decided and c.look == 2 and c.looks == 2 and c.n == 8
    assert all(v.n == 8 and v.missing == 0 for v in result.summary().variants)  # the branches not needed are not missing scores
    assert c.level == pytest.approx(st.look_levels([4, 8], 20)[1])
    assert "decided at look 2 of 2" in c.line()
    assert "until decided: stopped after 8 of 20 repeats (2 looks); 24 of 40 branches not needed (about 24 model calls saved)" in str(
        result.summary()
    )
    # the same verdict from the file alone
    again = load_experiment(Session.open(session.path, readonly=True)).summary()
    assert again.comparisons[0].model_dump() == c.model_dump()


def test_until_decided_runs_every_repeat_when_nothing_is_decided(session):
    exp = Experiment(session, PROMPT, vary={"how": ["words", "python"]}, repeat=6, scorers=[same], until_decided=True)
    result = asyncio.run(exp.run())
    assert [r.state for r in result.rows] == ["done"] * 12
    assert "stopped after 6 of 6 repeats (5 looks); every planned branch ran" in str(result.summary())
    assert not result.summary().comparisons[0].decided


@pytest.mark.parametrize(
    "options,message",
    [
        ({"until_decided": True, "repeat": 5}, "--until-decided: give a --score to decide on (a verdict compares scores)"),
        ({"until_decided": True, "scorers": [same]}, "--until-decided: give --repeat 2 or more"),
        ({"compare": ["tone"]}, "--compare tone: not a --vary key (varied: how)"),
    ],
)
def test_bad_sequential_options_are_one_line_and_write_nothing(session, options, message):
    before = open(session.path, "rb").read()
    with pytest.raises(GridError) as info:
        Experiment(session, PROMPT, vary={"how": ["words", "python"]}, **options)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert open(session.path, "rb").read() == before


def test_a_million_branch_grid_is_refused_before_it_is_built(session):
    vary = {"a": [str(i) for i in range(1000)], "b": [str(i) for i in range(1000)]}
    tracemalloc.start()
    try:
        with pytest.raises(GridError, match=r"the grid has 1,000,000 branches; one experiment runs at most 100,000"):
            Experiment(session, "{a} {b}", vary=vary, yes=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000  # a few megabytes for the values themselves, not gigabytes of branches


def test_a_key_with_many_values_is_paired_on_not_compared_unless_named(session):
    questions = [f"q{i}" for i in range(8)]
    result = asyncio.run(experiment(session, "Answer {q} {how}.", vary={"q": questions, "how": ["words", "python"]}, scorers=[correct]))
    (c,) = result.summary().comparisons  # the eight questions are what the pairs share, not 28 comparisons
    assert (c.key, c.n) == ("how", 8)
    assert {x.key for x in result.summary(compare=["q"]).comparisons} == {"q"}
    assert len(result.summary(compare=["q"]).comparisons) == 28
