"""Blind pairwise judging: a person (or a model) picks the better of two branches' answers.

Pairs are branches that differ only in the compared key (they share every other value and the
repeat index: the same question asked two ways). A judge sees the two answers as ``A`` and ``B``
in a random order, never their labels, and picks ``A``, ``B`` or ``tie`` with an optional note.
Each judgement is written as a ``pi_jupyter.score`` entry on **both** branches (``kind:
"pairwise"``; ``value`` is that branch's result, 1 won, 0 lost, 0.5 tie; ``shown`` the side it
was shown on; ``judge``, ``choice``, ``note`` and the ``judgement`` id that joins the two), so
:func:`preferences` rebuilds everything from the file: win rates with intervals, agreement
between judges on the pairs several judged, and position bias (how often the side shown first wins).

:class:`JudgingRound` is a round for a person (the notebook's ``%pi judge`` draws it);
:class:`PairwiseJudge` is a model that judges every pair in both orders and records both, so
its own position bias is visible.
"""

from __future__ import annotations

import html
import itertools
import json
import random
import re
import uuid
from collections.abc import Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from ..session import Session
from . import stats
from .branch_session import BranchSession
from .records import SCORE_TYPE, Grid, Row, read_experiment
from .scorers import branch_for_scoring

KIND = "pairwise"
SCORER = "preference"
Choice = Literal["A", "B", "tie"]
JudgeKind = Literal["person", "model"]
Pooling = Literal["none", "kind", "all"]
"""How judges are counted together: ``none`` (each judge apart, the default), ``kind`` (people
together, models together) or ``all`` (every judgement as one judge's: what was once the only way)."""


class JudgingError(ValueError):
    """Nothing to judge (one line): a grid with one branch, no key with two values, no finished pairs."""


class Pair(BaseModel):
    """Two branches to judge, in the order they are shown (``a`` first)."""

    key: str
    a: Row
    b: Row
    question: str = ""
    answer_a: str = ""
    answer_b: str = ""


class Judgement(BaseModel):
    """One judge's choice on one pair, as the file records it."""

    id: str
    judge: str
    key: str
    a: int
    """Index of the branch shown as A."""
    b: int
    choice: Choice
    note: str = ""
    kind: JudgeKind = "person"
    """Who judged: a ``person`` (a round in the notebook) or a ``model`` (:class:`PairwiseJudge`)."""

    @property
    def winner(self) -> int | None:
        """Index of the branch that won (``None`` for a tie)."""
        return self.a if self.choice == "A" else self.b if self.choice == "B" else None


def judged_key(grid: Grid, rows: Sequence[Row], by: str | None) -> str:
    """The key whose values are judged against each other (``by``, else the first varied key with two values)."""
    done = [r for r in rows if r.state == "done" and r.leaf]
    if len(done) < 2:
        raise JudgingError(f"judging needs two finished branches to compare; experiment {grid.id} has {len(done)}")
    if by is not None:
        if by not in grid.vary:
            raise JudgingError(f"judge --by {by}: not a --vary key of experiment {grid.id} (varied: {', '.join(grid.vary) or 'none'})")
        if len(grid.vary[by]) < 2:
            raise JudgingError(f"judge --by {by}: it has one value; judging compares two")
        return by
    for key, values in grid.vary.items():
        if len(values) > 1:
            return key
    raise JudgingError(f"judging compares variants, and experiment {grid.id} varies nothing (only repeats)")


def pairs_for(session: Session, grid: Grid, rows: Sequence[Row], key: str, *, seed: int | None = None) -> list[Pair]:
    """Every pair of finished branches that differ only in ``key``, in a random order, each side drawn at random."""
    rng = random.Random(seed)
    others = [k for k in grid.vary if k != key]
    groups: dict[tuple[Any, ...], dict[str, Row]] = {}
    for r in rows:
        if r.state == "done" and r.leaf:
            ident = tuple(r.values.get(k) for k in others) + (r.repeat,)
            groups.setdefault(ident, {})[r.values.get(key, "")] = r
    out = []
    for members in groups.values():
        for x, y in itertools.combinations(grid.vary[key], 2):
            if x in members and y in members:
                first, second = (members[x], members[y]) if rng.random() < 0.5 else (members[y], members[x])
                bx, by_ = branch_for_scoring(session, first), branch_for_scoring(session, second)
                question = bx.prompt if bx.prompt == by_.prompt else ""
                out.append(Pair(key=key, a=first, b=second, question=question, answer_a=bx.answer, answer_b=by_.answer))
    if not out:
        raise JudgingError(f"no two finished branches of experiment {grid.id} differ only in {key}; nothing to judge")
    rng.shuffle(out)
    return out


def record_judgement(
    session: Session, experiment_id: str, pair: Pair, choice: str, judge: str, note: str = "", *, kind: JudgeKind = "person"
) -> Judgement:
    """Write one judgement as a score entry on each of the two branches; returns it (``kind``: a person's or a model's)."""
    if choice not in ("A", "B", "tie"):
        raise JudgingError(f"a choice is A, B or tie, not {choice!r}")
    if not judge.strip():
        raise JudgingError("a judgement needs the judge's name")
    ident = uuid.uuid4().hex[:12]
    value = {"A": (1.0, 0.0), "B": (0.0, 1.0), "tie": (0.5, 0.5)}[choice]
    for row, other, shown, won in ((pair.a, pair.b, "A", value[0]), (pair.b, pair.a, "B", value[1])):
        data = {
            "experiment": experiment_id,
            "index": row.index,
            "scorer": SCORER,
            "version": "1",
            "value": won,
            "kind": KIND,
            "judgement": ident,
            "judge": judge,
            "key": pair.key,
            "against": other.index,
            "shown": shown,
            "choice": choice,
            "by": kind,
        }
        if note:
            data["note"] = note
        BranchSession(session, row.leaf).append_custom(SCORE_TYPE, data)
    return Judgement(id=ident, judge=judge, key=pair.key, a=pair.a.index, b=pair.b.index, choice=cast(Choice, choice), note=note, kind=kind)


def read_judgements(session: Session, experiment_id: str) -> list[Judgement]:
    """Every judgement of the experiment in the file, oldest first (a judgement's two entries read as one)."""
    sides: dict[str, dict[str, dict[str, Any]]] = {}
    for e in session.custom_entries(SCORE_TYPE):
        data = e.get("data")
        if not isinstance(data, dict) or data.get("kind") != KIND or data.get("experiment") != experiment_id:
            continue
        sides.setdefault(str(data.get("judgement")), {})[str(data.get("shown"))] = data
    out = []
    for ident, by_side in sides.items():
        a, b = by_side.get("A"), by_side.get("B")
        if a is None or b is None or a.get("choice") not in ("A", "B", "tie"):
            continue
        out.append(
            Judgement(
                id=ident,
                judge=str(a.get("judge") or "?"),
                key=str(a.get("key") or ""),
                a=int(a["index"]),
                b=int(b["index"]),
                choice=a["choice"],
                note=str(a.get("note") or ""),
                kind=_kind(a),
            )
        )
    return out


def _kind(data: dict[str, Any]) -> JudgeKind:
    """A judgement's judge kind; files written before it was recorded name model judges "model <ref>"."""
    if data.get("by") in ("person", "model"):
        return cast(JudgeKind, data["by"])
    return "model" if str(data.get("judge") or "").startswith("model ") else "person"


class WinRate(BaseModel):
    """How often one value of the judged key won, by one judge (or one pool of judges), with a 95% Wilson interval.

    The unit is the pair: a judge who saw a pair several times (a model judge asks both orders)
    counts it once, at the mean of its verdicts (won 1, tie 0.5, lost 0), so ``n`` is pairs."""

    key: str
    value: str
    judge: str
    """The judge's name, or the pool's (``people``, ``models``, ``all judges``)."""
    kind: str
    """``person``, ``model``, or ``mixed`` for a pool of both."""
    wins: int
    ties: int
    n: int
    """Pairs judged."""
    judgements: int
    rate: float
    low: float
    high: float


class Preferences(BaseModel):
    """Win rates per judge, agreement between judges and position bias of an experiment's judgements."""

    judgements: list[Judgement] = Field(default_factory=list)
    win_rates: list[WinRate] = Field(default_factory=list)
    agreement: list[str] = Field(default_factory=list)
    position: list[str] = Field(default_factory=list)
    pool: Pooling = "none"

    def lines(self) -> list[str]:
        """Everything in plain words, one line each."""
        if not self.judgements:
            return []
        judges = sorted({j.judge for j in self.judgements})
        kinds = {j.kind for j in self.judgements}
        who = ", ".join(judges) if len(judges) <= 4 else f"{len(judges)} judges"
        if kinds == {"person", "model"}:
            people = len({j.judge for j in self.judgements if j.kind == "person"})
            models = len(judges) - people
            who += f" ({people} {'person' if people == 1 else 'people'}, {models} model{'s' if models != 1 else ''})"
        head = f"judged: {len(self.judgements)} blind pairwise judgement{'s' if len(self.judgements) != 1 else ''} by {who}"
        if len(judges) > 1:
            head += {
                "none": "; each judge counted apart",
                "kind": "; people counted together, models together",
                "all": "; every judge counted together (pooled)",
            }[self.pool]
        out = [head]
        for w in self.win_rates:
            ties = f", {w.ties} tie{'s' if w.ties != 1 else ''}" if w.ties else ""
            wins = f"{w.wins} win{'s' if w.wins != 1 else ''}{ties}"
            seen = f"{w.n} pair{'s' if w.n != 1 else ''}" + (f", {w.judgements} judgements" if w.judgements != w.n else "")
            out.append(f"  {w.judge}: {w.key}={w.value} won {w.rate:.0%} [{w.low:.0%}, {w.high:.0%}] of {seen} ({wins})")
        out += [f"  {line}" for line in self.agreement + self.position]
        return out

    def text(self) -> str:
        """The lines joined."""
        return "\n".join(self.lines())

    def html(self) -> str:
        """The lines as an HTML list (no JavaScript)."""
        lines = self.lines()
        if not lines:
            return ""
        items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in lines[1:])
        return f'<div class="pi-experiment-judged"><p>{html.escape(lines[0])}</p><ul>{items}</ul></div>'

    def _repr_html_(self) -> str:
        return self.html() or "<p>no judgements yet</p>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        from ..views.reader_bundle import pi_bundle
        from .readers import preferences_markdown

        return pi_bundle(self._repr_html_(), preferences_markdown(self), str(self), "judgements")

    def __str__(self) -> str:
        return self.text() or "no judgements yet"


def preferences(session: Session, experiment_id: str, *, pool: Pooling = "none") -> Preferences:
    """Win rates, agreement and position bias of the experiment's judgements, from the file alone.

    Each judge's win rates are their own (``pool``: ``"kind"`` counts people together and models
    together, ``"all"`` every judge together; see :data:`Pooling`); the agreement between judges,
    people and models included, says whether pooling them would mean anything.
    """
    if pool not in ("none", "kind", "all"):
        raise JudgingError(f"pool: {pool!r} is not one of none, kind, all")
    grid, rows = read_experiment(session, experiment_id)
    found = read_judgements(session, experiment_id)
    by_index = {r.index: r for r in rows}
    groups: dict[tuple[str, str], list[Judgement]] = {}
    for j in found:
        name = j.judge if pool == "none" else ("people" if j.kind == "person" else "models") if pool == "kind" else "all judges"
        groups.setdefault((name, j.kind if pool != "all" else "mixed"), []).append(j)
    win_rates = []
    for (name, kind), mine in groups.items():
        for key in dict.fromkeys(j.key for j in mine):
            win_rates += _win_rates(grid.vary.get(key, []), key, [j for j in mine if j.key == key], by_index, name, kind)
    return Preferences(judgements=found, win_rates=win_rates, agreement=_agreement(found), position=_position(found), pool=pool)


def _win_rates(
    values: Sequence[str], key: str, mine: Sequence[Judgement], by_index: dict[int, Row], judge: str, kind: str
) -> list[WinRate]:
    """One judge's (or pool's) win rate per value of ``key``, a pair counted once at the mean of its verdicts."""
    out = []
    for value in values:
        outcomes: dict[tuple[int, int], list[float]] = {}
        for j in mine:
            if j.a not in by_index or j.b not in by_index:
                continue
            sides = {by_index[j.a].values.get(key): j.a, by_index[j.b].values.get(key): j.b}
            if value not in sides:
                continue
            won = 0.5 if j.winner is None else float(j.winner == sides[value])
            outcomes.setdefault((min(j.a, j.b), max(j.a, j.b)), []).append(won)
        if not outcomes:
            continue
        per_pair = [sum(v) / len(v) for v in outcomes.values()]
        n, score = len(per_pair), sum(per_pair)
        low, high = stats.wilson(score, n)
        wins, ties = sum(1 for v in per_pair if v == 1.0), sum(1 for v in per_pair if 0.0 < v < 1.0)
        judged = sum(len(v) for v in outcomes.values())
        out.append(
            WinRate(
                key=key,
                value=value,
                judge=judge,
                kind=kind,
                wins=wins,
                ties=ties,
                n=n,
                judgements=judged,
                rate=score / n,
                low=low,
                high=high,
            )
        )
    return out


def _outcome(j: Judgement) -> str:
    """What a judgement says whatever the order shown: the lower-indexed branch won, the higher did, or a tie."""
    if j.winner is None:
        return "tie"
    return "first" if j.winner == min(j.a, j.b) else "second"


def _agreement(found: Sequence[Judgement]) -> list[str]:
    by_pair: dict[tuple[int, int], dict[str, list[str]]] = {}
    for j in found:
        by_pair.setdefault((min(j.a, j.b), max(j.a, j.b)), {}).setdefault(j.judge, []).append(_outcome(j))
    out = []
    judges = sorted({j.judge for j in found})
    for x, y in itertools.combinations(judges, 2):
        shared = [(p[x][-1], p[y][-1]) for p in by_pair.values() if x in p and y in p]
        if shared:
            same = sum(u == v for u, v in shared)
            share = f"{same / len(shared):.0%}; Cohen's kappa {_kappa(shared):.2f}"
            out.append(f"{x} and {y} agree on {same} of {len(shared)} pairs both judged ({share})")
    kinds = {j.judge: j.kind for j in found}
    if {"person", "model"} <= set(kinds.values()):  # people's verdict against the models' (each side's majority) on the pairs both judged
        both: list[tuple[str, str]] = []
        for p in by_pair.values():
            person, model = (_majority([o for who, outs in p.items() if kinds[who] == side for o in outs]) for side in ("person", "model"))
            if person is not None and model is not None:
                both.append((person, model))
        if both:
            same = sum(u == v for u, v in both)
            share = f"{same / len(both):.0%}; Cohen's kappa {_kappa(both):.2f}"
            out.append(f"people and models agree on {same} of {len(both)} pairs both judged ({share})")
    for judge in judges:
        twice = [p[judge] for p in by_pair.values() if len(p.get(judge, [])) > 1]
        if twice:
            same = sum(len(set(o)) == 1 for o in twice)
            out.append(f"{judge} gave the same verdict both times on {same} of {len(twice)} pairs judged twice")
    return out


def _majority(outcomes: Sequence[str]) -> str | None:
    """The outcome most verdicts gave (``tie`` when two outcomes are as frequent); ``None`` without verdicts."""
    if not outcomes:
        return None
    counts = sorted(((outcomes.count(o), o) for o in set(outcomes)), reverse=True)
    return "tie" if len(counts) > 1 and counts[0][0] == counts[1][0] else counts[0][1]


def _kappa(pairs: Sequence[tuple[str, str]]) -> float:
    """Cohen's kappa of two judges' outcomes (1: full agreement, 0: what chance would give)."""
    n = len(pairs)
    observed = sum(u == v for u, v in pairs) / n
    cats = {c for pair in pairs for c in pair}
    expected = sum((sum(u == c for u, _ in pairs) / n) * (sum(v == c for _, v in pairs) / n) for c in cats)
    return 1.0 if expected >= 1 else (observed - expected) / (1 - expected)


def _position(found: Sequence[Judgement]) -> list[str]:
    out = []
    for judge in sorted({j.judge for j in found}):
        decisive = [j for j in found if j.judge == judge and j.choice != "tie"]
        if not decisive:
            continue
        first = sum(j.choice == "A" for j in decisive)
        low, high = stats.wilson(first, len(decisive))
        p = stats.sign_test(first, len(decisive) - first)
        out.append(
            f"position: {judge} picked the answer shown first in {first} of {len(decisive)} decisive judgements "
            f"({first / len(decisive):.0%} [{low:.0%}, {high:.0%}], p = {p:.2g} against no bias)"
        )
    return out


class JudgingRound:
    """A blind round for one person: :attr:`current` is the pair to judge, :meth:`choose` records it and moves on.

    Build it with :meth:`ExperimentResult.judging <pi_jupyter.experiment.ExperimentResult.judging>`
    (the notebook's ``%pi judge`` shows it as a widget).
    """

    def __init__(self, session: Session, experiment_id: str, *, judge: str, by: str | None = None, seed: int | None = None) -> None:
        grid, rows = read_experiment(session, experiment_id)
        self.session = session
        self.experiment_id = experiment_id
        self.judge = judge
        self.key = judged_key(grid, rows, by)
        self.pairs = pairs_for(session, grid, rows, self.key, seed=seed)
        self.position = 0
        self.recorded: list[Judgement] = []

    @property
    def current(self) -> Pair | None:
        """The pair to judge now (``None`` once every pair is judged)."""
        return self.pairs[self.position] if self.position < len(self.pairs) else None

    @property
    def done(self) -> bool:
        """True once every pair is judged."""
        return self.current is None

    def choose(self, choice: str, note: str = "") -> Judgement:
        """Record ``A``, ``B`` or ``tie`` (with an optional note) for the current pair and move to the next."""
        pair = self.current
        if pair is None:
            raise JudgingError("this round is over: every pair is judged")
        judgement = record_judgement(self.session, self.experiment_id, pair, choice, self.judge, note)
        self.recorded.append(judgement)
        self.position += 1
        return judgement

    def skip(self) -> None:
        """Leave the current pair unjudged and move to the next."""
        if self.current is not None:
            self.position += 1

    def preferences(self, *, pool: Pooling = "none") -> Preferences:
        """Win rates (each judge apart unless ``pool`` says otherwise), agreement and position bias of every judgement so far."""
        return preferences(self.session, self.experiment_id, pool=pool)

    def __repr__(self) -> str:
        return f"<JudgingRound of {self.key} by {self.judge}: {self.position} of {len(self.pairs)} pairs>"


_CHOICE = re.compile(r'"choice"\s*:\s*"(A|B|tie)"', re.IGNORECASE)


class PairwiseJudge:
    """A model that judges pairs against a rubric, asked in both orders (both are recorded, so its
    position bias shows in :func:`preferences`).

    On the offline model (the default) a deterministic stand-in answers: the answer holding more
    of the rubric's and the question's words (4+ letters) wins, and when they tie it picks the
    answer shown first, so the demo shows what position bias looks like. It is not a judgement.
    """

    version = "1"

    def __init__(
        self, rubric: str = "The answer is correct, complete and clear.", model: str = "offline/echo", name: str | None = None
    ) -> None:
        self.rubric = rubric
        self.model = model
        self.name = name or f"model {model}"

    def prompt(self, question: str, first: str, second: str) -> str:
        """The request: the rubric, the question and the two answers as A and B."""
        return (
            'Which answer is better against the rubric? Reply with JSON only: {"choice": "A"}, {"choice": "B"} or {"choice": "tie"}.\n\n'
            f"<rubric>\n{self.rubric}\n</rubric>\n<question>\n{question}\n</question>\n"
            f"<answer_A>\n{first}\n</answer_A>\n<answer_B>\n{second}\n</answer_B>"
        )

    async def choose(self, question: str, first: str, second: str) -> str:
        """``A``, ``B`` or ``tie`` for the two answers in this order."""
        from .. import providers
        from ..messages import UserMessage
        from ..providers.base import LlmRequest

        model = providers.get_model(self.model)
        if model.api == "offline":
            words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", self.rubric + " " + question)}

            def hits(text: str) -> int:
                return len(words & {w.lower() for w in re.findall(r"[A-Za-z]{4,}", text)})

            return "B" if hits(second) > hits(first) else "A"
        reply = await providers.complete(model, LlmRequest(messages=[UserMessage.text(self.prompt(question, first, second))]))
        if reply.stop_reason == "error":
            raise JudgingError(f"{self.name}: {reply.error_message}")
        return parse_choice(reply.text)


def parse_choice(text: str) -> str:
    """The choice in a judge's reply: ``{"choice": "A"}``, else a lone A, B or tie."""
    match = _CHOICE.search(text)
    if match:
        value = match.group(1)
        return "tie" if value.lower() == "tie" else value.upper()
    try:
        value = json.loads(text.strip()).get("choice")
    except (ValueError, AttributeError):
        value = text.strip().strip(".").strip()
    if isinstance(value, str) and value.strip().lower() in ("a", "b", "tie"):
        return "tie" if value.strip().lower() == "tie" else value.strip().upper()
    raise JudgingError(f"no choice (A, B or tie) in the judge's reply {text[:80]!r}")


async def judge_all(
    session: Session, experiment_id: str, judge: PairwiseJudge, *, by: str | None = None, seed: int | None = None
) -> list[Judgement]:
    """Have ``judge`` judge every pair in both orders; both judgements are recorded."""
    grid, rows = read_experiment(session, experiment_id)
    key = judged_key(grid, rows, by)
    out = []
    for pair in pairs_for(session, grid, rows, key, seed=seed):
        swapped = pair.model_copy(update={"a": pair.b, "b": pair.a, "answer_a": pair.answer_b, "answer_b": pair.answer_a})
        for shown in (pair, swapped):
            choice = await judge.choose(shown.question, shown.answer_a, shown.answer_b)
            out.append(record_judgement(session, experiment_id, shown, choice, judge.name, kind="model"))
    return out
