"""Blind pairwise judging: pairs, records on both branches, win rates, agreement, position bias, a model judge in both orders."""

from __future__ import annotations

import asyncio

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import experiment, load_experiment
from pi_jupyter.experiment.judging import JudgingError, PairwiseJudge, parse_choice
from pi_jupyter.experiment.stats import wilson
from pi_jupyter.views.scores import leaf_scores

PROMPT = "Explain recursion {how}."


@pytest.fixture
def session(tmp_path):
    return Session.open(tmp_path / "study.jsonl", create=True, cwd=str(tmp_path))


@pytest.fixture
def grid(session):
    return asyncio.run(experiment(session, PROMPT, vary={"how": ["briefly", "with an example"]}, repeat=4))


def test_a_round_shows_pairs_blind_in_random_order_and_records_both_sides(session, grid):
    rounds = grid.judging("alice", seed=3)
    assert rounds.key == "how" and len(rounds.pairs) == 4
    # each pair: the same repeat asked both ways; which one is A is drawn at random and varies
    for pair in rounds.pairs:
        assert pair.a.repeat == pair.b.repeat and {pair.a.values["how"], pair.b.values["how"]} == {"briefly", "with an example"}
        assert pair.answer_a and pair.answer_b
    assert len({pair.a.values["how"] for pair in rounds.pairs}) == 2
    # the judge picks the answer that came from "with an example" whichever side it is on, once a tie
    for n in range(4):
        pair = rounds.current
        choice = "tie" if n == 3 else ("A" if pair.a.values["how"] == "with an example" else "B")
        rounds.choose(choice, note="clearer" if n == 0 else "")
    assert rounds.done
    with pytest.raises(JudgingError, match="this round is over"):
        rounds.choose("A")
    # a score entry on both branches of every pair, with the judge's name, the side shown and the note
    reopened = Session.open(session.path, readonly=True)
    entries = [e["data"] for e in reopened.raw_entries() if e.get("customType") == "pi_jupyter.score"]
    assert len(entries) == 8 and {e["judge"] for e in entries} == {"alice"} and {e["shown"] for e in entries} == {"A", "B"}
    assert sorted(e["value"] for e in entries) == [0.0, 0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 1.0]
    assert sum(e.get("note") == "clearer" for e in entries) == 2
    # the judgements are results against another branch, not scores the table or the tree show
    assert all(r.scores == {} for r in load_experiment(reopened).rows)
    assert all(leaf_scores(reopened, r.leaf) == {} for r in load_experiment(reopened).rows)
    # win rates with Wilson intervals, rebuilt from the file alone
    prefs = load_experiment(reopened).preferences()
    example = next(w for w in prefs.win_rates if w.value == "with an example")
    assert (example.wins, example.ties, example.n, example.rate) == (3, 1, 4, 0.875)
    assert (example.low, example.high) == pytest.approx(wilson(3.5, 4))
    text = str(load_experiment(reopened).summary())
    assert "judged: 4 blind pairwise judgements by alice" in text
    assert "alice: how=with an example won 88% [" in text and "of 4 pairs (3 wins, 1 tie)" in text


def test_two_judges_agreement_and_position_bias(session, grid):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    alice = grid.judging("alice", seed=1)
    bob = grid.judging("bob", seed=2)  # the same pairs, in another order and with other sides
    alice_picks = {}
    while not alice.done:
        pair = alice.current
        # alice always takes the answer shown first
        alice.choose("A")
        alice_picks[frozenset((pair.a.index, pair.b.index))] = pair.a.index
    bob_picks = {}
    while not bob.done:
        pair = bob.current
        winner = pair.a if pair.a.values["how"] == "briefly" else pair.b
        bob.choose("A" if winner is pair.a else "B")
        bob_picks[frozenset((pair.a.index, pair.b.index))] = winner.index
    prefs = grid.preferences()
    shared = list(alice_picks)
    same = sum(alice_picks[k] == bob_picks[k] for k in shared)
    # the outcome as "lower index won" / "higher index won", as the agreement reads it
    cats = ["first", "second"]
    table = [[0, 0], [0, 0]]
    for k in shared:
        low = min(k)
        table[cats.index("first" if alice_picks[k] == low else "second")][cats.index("first" if bob_picks[k] == low else "second")] += 1
    kappa = inter_rater.cohens_kappa(table).kappa
    line = next(line for line in prefs.agreement if line.startswith("alice and bob"))
    assert line.startswith(f"alice and bob agree on {same} of 4 pairs both judged ({same / 4:.0%}; Cohen's kappa {kappa:.2f})")
    position = {line.split()[1]: line for line in prefs.position}
    assert position["alice"].startswith("position: alice picked the answer shown first in 4 of 4 decisive judgements (100% [")
    # the sign test of "no position bias" is scipy's exact binomial test of the first side's count
    scipy_stats = pytest.importorskip("scipy.stats")
    for line in position.values():
        first, decisive = (int(x) for x in line.split(" in ")[1].split(" decisive")[0].split(" of "))
        assert f"p = {scipy_stats.binomtest(first, decisive, 0.5).pvalue:.2g} against no bias" in line, line


def test_a_model_judge_asks_both_orders_and_its_position_bias_shows(session, grid):
    # a rubric the answers differ on: the stand-in prefers the answer with "example" in both orders
    fair = grid.judge_with(PairwiseJudge(rubric="Uses an example.", name="fair"), seed=4)
    assert "fair gave the same verdict both times on 4 of 4 pairs judged twice" in fair.agreement
    assert next(w for w in fair.win_rates if w.value == "with an example").rate == 1.0
    # a rubric that tells them apart in nothing: it takes the answer shown first
    judge = PairwiseJudge(rubric="Kind and gentle.", name="stand-in")
    prefs = grid.judge_with(judge, seed=5)
    prefs.judgements = [j for j in prefs.judgements if j.judge == "stand-in"]
    assert len(prefs.judgements) == 8  # 4 pairs, each in both orders
    by_pair = {}
    for j in prefs.judgements:
        by_pair.setdefault(frozenset((j.a, j.b)), []).append(j)
    assert all(len(js) == 2 and js[0].a == js[1].b and js[0].b == js[1].a for js in by_pair.values())
    # the offline stand-in takes the first answer when it cannot tell: position bias, and no consistency
    assert any(line.startswith("position: stand-in picked the answer shown first in 8 of 8") for line in prefs.position)
    assert "stand-in gave the same verdict both times on 0 of 4 pairs judged twice" in prefs.agreement


def test_each_judge_and_people_apart_from_models_with_their_agreement(session, grid):
    """7 pairs a person judged and a model that judged them in both orders: never "won 72% of 23 judgements"
    pooled. Each judge has their own win rate (a pair counts once: the model's two verdicts are its mean),
    the people and the models their agreement, and pooling is asked for by name."""
    alice = grid.judging("alice", seed=1)
    while not alice.done:  # alice prefers the example every time
        pair = alice.current
        alice.choose("A" if pair.a.values["how"] == "with an example" else "B")
    grid.judge_with(PairwiseJudge(rubric="Kind and gentle.", name="model stand-in"), seed=2)  # takes whatever is shown first
    prefs = grid.preferences()
    kinds = {j.judge: j.kind for j in prefs.judgements}
    assert kinds == {"alice": "person", "model stand-in": "model"}
    rates = {(w.judge, w.value): w for w in prefs.win_rates}
    mine = rates[("alice", "with an example")]
    assert (mine.n, mine.judgements, mine.rate) == (4, 4, 1.0) and (mine.low, mine.high) == pytest.approx(wilson(4, 4))
    model = rates[("model stand-in", "with an example")]
    assert (model.n, model.judgements, model.rate, model.ties) == (4, 8, 0.5, 4)  # each pair won once, lost once: half
    lines = prefs.lines()
    assert lines[0] == "judged: 12 blind pairwise judgements by alice, model stand-in (1 person, 1 model); each judge counted apart"
    assert "  alice: how=with an example won 100% [" in "\n".join(lines)
    assert "  model stand-in: how=with an example won 50% [" in "\n".join(lines) and "of 4 pairs, 8 judgements" in "\n".join(lines)
    assert any(line.startswith("people and models agree on ") for line in prefs.agreement)
    # pooling, when asked for: people together and models together, or everyone as one judge
    by_kind = grid.preferences(pool="kind")
    assert {w.judge for w in by_kind.win_rates} == {"people", "models"}
    assert by_kind.lines()[0].endswith("; people counted together, models together")
    pooled = grid.preferences(pool="all")
    everyone = next(w for w in pooled.win_rates if w.value == "with an example")
    assert everyone.judge == "all judges" and everyone.n == 4 and everyone.judgements == 12
    assert everyone.rate == pytest.approx(2 / 3)  # each pair: alice's win, the model's win and loss, as one judge's
    assert "every judge counted together (pooled)" in pooled.lines()[0]
    assert "each judge counted apart" in str(grid.summary()) and "(pooled)" in str(grid.summary(pool_judges="all"))
    # the file says who judged: a reader rebuilds the same kinds
    assert {j.kind for j in load_experiment(Session.open(session.path, readonly=True)).preferences().judgements} == {"person", "model"}


def test_judging_bad_input_is_one_line(session, tmp_path):
    one = asyncio.run(experiment(session, "Say hi."))
    with pytest.raises(JudgingError) as info:
        one.judging("alice")
    assert str(info.value) == f"judging needs two finished branches to compare; experiment {one.id} has 1"
    repeats = asyncio.run(experiment(session, "Say hi.", repeat=3))
    with pytest.raises(JudgingError, match="varies nothing"):
        repeats.judging("alice")
    two = asyncio.run(experiment(session, PROMPT, vary={"how": ["a", "b"]}))
    with pytest.raises(JudgingError, match=r"judge --by tone: not a --vary key of experiment \w+ \(varied: how\)"):
        two.judging("alice", by="tone")


@pytest.mark.parametrize(
    "reply,choice", [('{"choice": "B"}', "B"), ('I prefer {"choice":"a"}', "A"), ("tie", "tie"), ("B.", "B"), ('{"choice": "Tie"}', "tie")]
)
def test_parse_choice(reply, choice):
    assert parse_choice(reply) == choice


def test_parse_choice_without_a_choice_is_one_line():
    with pytest.raises(JudgingError, match="no choice"):
        parse_choice("both are fine")


def test_a_judge_who_changed_their_mind_agrees_by_their_latest_verdict(session, grid):
    """alice first preferred the brief answers, then judged again and took the examples, as bob did: they agree
    now (4 of 4), and alice is shown as having changed her verdict on every pair."""

    def judge(name: str, wanted: str, seed: int) -> None:
        round_ = grid.judging(name, seed=seed)
        while not round_.done:
            pair = round_.current
            round_.choose("A" if pair.a.values["how"] == wanted else "B")

    judge("alice", "briefly", 1)
    judge("bob", "with an example", 2)
    judge("alice", "with an example", 3)
    prefs = grid.preferences()
    assert any(line.startswith("alice and bob agree on 4 of 4 pairs both judged (100%") for line in prefs.agreement), prefs.agreement
    assert "alice gave the same verdict both times on 0 of 4 pairs judged twice" in prefs.agreement
