"""What an experiment's scores say: per-variant intervals and paired verdicts, from the rows alone.

:func:`summarize` turns the rows of one experiment (as :func:`~.records.read_experiment`
rebuilds them from the file) into a :class:`Summary`:

- one :class:`VariantStats` per variant and score: the mean with its 95% interval (Wilson for
  0/1 scores, t otherwise, see :mod:`.stats`), n, the standard deviation, and over repeats the
  spread (how much the same question asked again varies), pass@k and pass^k;
- one :class:`Comparison` per compared key, pair of its values and score: branches that share
  every other value and the repeat index (the same question asked both ways) are paired; the
  mean difference, its interval, the paired test's p-value, Holm-adjusted over every comparison
  of the summary, and one line in plain words with, when nothing was detected, how many pairs
  would detect a given difference.

With ``--until-decided`` (``grid.sequential``) a comparison is decided at the first look whose
Holm-adjusted p-value is under the error rate that look may spend (:func:`.stats.look_levels`),
so the chance of any wrong verdict over all looks stays at 5%.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Mapping, Sequence, Set
from typing import Any

from pydantic import BaseModel, Field

from . import stats
from .records import Grid, Row

Detect = float | Mapping[str, float] | None


class VariantStats(BaseModel):
    """One variant (a combination of values, or one value of a key with ``by=``) on one score."""

    values: dict[str, str]
    score: str
    n: int
    """Branches with this score."""
    missing: int = 0
    """Branches of the variant that ran and have no such score (failed, or the scorer gave none); skipped ones are not counted."""
    mean: float
    low: float | None = None
    high: float | None = None
    method: str = ""
    sd: float | None = None
    spread: float | None = None
    """Mean standard deviation over the repeats of one combination (``None`` without repeats)."""
    k: int | None = None
    pass_at_k: float | None = None
    pass_hat_k: float | None = None


class Comparison(BaseModel):
    """Values ``a`` and ``b`` of ``key`` on ``score``, paired by every other value and the repeat index."""

    key: str
    a: str
    b: str
    score: str
    binary: bool
    n: int
    """Pairs."""
    mean: float = 0.0
    """Mean of ``a - b``."""
    low: float | None = None
    high: float | None = None
    sd: float | None = None
    p: float | None = None
    p_adjusted: float | None = None
    method: str = ""
    decided: bool = False
    level: float = stats.ALPHA
    """The error rate the verdict was held to (a sequential look's share of 5%)."""
    interval_level: float = stats.ALPHA
    """The error rate of the interval shown: the one the verdicts were held to after correcting for every
    comparison (see :func:`comparisons`), so the interval excludes 0 exactly when the comparison is decided."""
    look: int | None = None
    """``--until-decided``: the look (1-based) at which it was decided."""
    looks: int | None = None
    detect: float | None = None
    needed: int | None = None
    """Pairs a paired test would need to detect ``detect`` (80% power)."""
    to_decide: int | None = None
    """Not decided: the fewest pairs at which the effect seen would be decided at this level
    (``None``: no effect seen, or more than a million)."""

    def line(self) -> str:
        """The verdict in plain words."""
        a, b = f"{self.key}={self.a}", f"{self.key}={self.b}"
        if self.n < 2 or self.p is None:
            return f"{a} vs {b} on {self.score}: too few pairs to compare (n = {self.n} pair{'s' if self.n != 1 else ''})"
        pairs = f"n = {self.n} pairs"
        when = ""
        if self.look is not None and self.looks:
            when = f"; decided at look {self.look} of {self.looks}"
        level = "" if math.isclose(self.interval_level, stats.ALPHA) else f" ({confidence(self.interval_level)} interval)"
        if self.decided:
            winner, loser, sign = (a, b, 1) if self.mean > 0 else (b, a, -1)
            low, high = (self.low, self.high) if sign > 0 else (_neg(self.high), _neg(self.low))
            shown = f"{_signed(abs(self.mean))} {_interval(low, high)}{level}, {_p(self.p_adjusted)}"
            return f"{winner} scores higher than {loser} on {self.score}: {shown} ({pairs}{when})"
        shown = f"{_signed(self.mean)} {_interval(self.low, self.high)}{level}, {_p(self.p_adjusted)}"
        if self.mean == 0:
            text = f"no detectable difference between {a} and {b} on {self.score}: {shown} ({pairs})"
        else:
            text = f"not decided: {a} vs {b} on {self.score}: {shown} ({pairs}: {self._why()})"
        if self.needed is not None and self.detect is not None:
            text += f"; about {self.needed} pairs would detect a {_num(self.detect)} difference"
        elif not self.sd:
            text += "; every pair scored the same" if self.mean == 0 else f"; every pair differed by {_signed(self.mean)}"
        return text

    def _why(self) -> str:
        """Why an effect that was seen is not decided."""
        if self.to_decide is None:
            return "more than 1,000,000 needed to decide at this effect"
        if self.to_decide <= self.n:  # enough on its own: the comparisons before it in Holm's order were not decided
            return "held back by the correction for every comparison"
        return f"at least {self.to_decide:,} needed to decide at this effect"


class Summary(BaseModel):
    """The per-variant table and the verdicts of one experiment (``str()`` is the text a person reads)."""

    status: str
    variants: list[VariantStats] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    keys: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    judged: list[str] = Field(default_factory=list)
    """Blind pairwise judgements: win rates, agreement, position bias (see :mod:`.judging`)."""

    def verdicts(self) -> list[str]:
        """One line per comparison."""
        return [c.line() for c in self.comparisons]

    def frame(self) -> Any:
        """The per-variant table as a pandas DataFrame (one row per variant and score)."""
        import pandas as pd

        return pd.DataFrame.from_records([_variant_record(v, self.keys) for v in self.variants])

    def _shown_records(self) -> list[dict[str, Any]]:
        records = [_variant_record(v, self.keys, text=True) for v in self.variants]
        if all(v.spread is None or v.spread == v.sd for v in self.variants):  # one combination per row: sd is the spread
            for r in records:
                r.pop("spread", None)
        return records

    def text(self) -> str:
        """The status line, the per-variant table, the verdicts and the notes as plain text."""
        out = [self.status]
        records = self._shown_records()
        if records:
            cols = list(records[0])
            widths = [max(len(c), *(len(str(r[c])) for r in records)) for c in cols]
            out.append("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
            out += ["  ".join(str(r[c]).ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip() for r in records]
        if self.comparisons:
            out.append(_verdict_heading(self.comparisons))
            out += [f"  {line}" for line in self.verdicts()]
        out += self.judged
        out += self.notes
        return "\n".join(out)

    def html(self) -> str:
        """The same as HTML (no JavaScript: what a reopened notebook shows)."""
        parts = [f'<div class="pi-experiment-summary"><p><b>{html.escape(self.status)}</b></p>']
        records = self._shown_records()
        if records:
            head = "".join(f"<th>{html.escape(c)}</th>" for c in records[0])
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r.values()) + "</tr>" for r in records)
            parts.append(f'<table class="pi-experiment-variants"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
        if self.comparisons:
            items = "".join(f"<li>{html.escape(line)}</li>" for line in self.verdicts())
            parts.append(f"<p>{html.escape(_verdict_heading(self.comparisons))}</p><ul>{items}</ul>")
        if self.judged:
            items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in self.judged[1:])
            parts.append(f"<p>{html.escape(self.judged[0])}</p><ul>{items}</ul>")
        parts += [f"<p>{html.escape(note)}</p>" for note in self.notes]
        return "".join(parts) + "</div>"

    def to_markdown(self) -> str:
        """The same as Markdown (what Markdown exports and sanitizing readers show)."""
        from .readers import summary_markdown

        return summary_markdown(self, self._shown_records())

    def _repr_html_(self) -> str:
        return self.html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        from ..views.reader_bundle import pi_bundle

        return pi_bundle(self.html(), self.to_markdown(), self.text(), "experiment-summary")

    def __str__(self) -> str:
        return self.text()

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and text in self.text()


def _verdict_heading(comparisons: Sequence[Comparison]) -> str:
    tested = [c for c in comparisons if c.p is not None and c.n >= 2]
    m = len(tested)
    tail = f"; p-values Holm-adjusted for {m} comparisons" if m > 1 else ""
    levels = {round(c.interval_level, 12) for c in tested}
    if levels <= {stats.ALPHA}:
        shown = "95% intervals"
    elif len(levels) == 1:
        shown = f"intervals at {confidence(tested[0].interval_level)}, the level the verdicts were held to"
    else:
        shown = "each interval at the level its verdict was held to (95% where not said)"
    return f"verdicts (pairs share every other value and the repeat; {shown}{tail}):"


def confidence(alpha: float) -> str:
    """``0.05`` -> ``95%``, ``0.05 / 3`` -> ``98.3%``."""
    return f"{(1 - alpha) * 100:.3g}%"


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def _num(x: float) -> str:
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:.2f}" if abs(x) < 100 else f"{x:,.0f}" if abs(x) < 1e15 else f"{x:.3g}"


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + _num(abs(x))  # (abs: "+∞" and "-∞" come out signed once)


def _interval(low: float | None, high: float | None) -> str:
    return "[?]" if low is None or high is None else f"[{_signed(low)}, {_signed(high)}]"


def _p(p: float | None) -> str:
    if p is None:
        return "p = ?"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


TABLE_COLUMNS = frozenset({"score", "n", "mean", "95% interval", "low", "high", "sd", "spread", "k", "pass@k", "pass^k", "missing"})
"""The per-variant table's own columns (a varied key of the same name is shown beside them, renamed)."""


def key_column(key: str, taken: Set[str]) -> str:
    """The column a varied ``key`` is shown in: its name, or ``"n (varied)"`` when the table has a column ``n`` of its own."""
    return f"{key} (varied)" if key in taken else key


def _variant_record(v: VariantStats, keys: Sequence[str], text: bool = False) -> dict[str, Any]:
    def fmt(x: float | None) -> Any:
        if not text:
            return x
        return "" if x is None else _num(x)

    record: dict[str, Any] = {key_column(k, TABLE_COLUMNS): v.values.get(k, "") for k in keys}
    interval = f"[{_num(v.low)}, {_num(v.high)}]" if v.low is not None and v.high is not None else ""
    record.update(score=v.score, n=v.n, mean=fmt(v.mean))
    if text:
        record["95% interval"] = interval
    else:
        record.update(low=v.low, high=v.high)
    record.update(sd=fmt(v.sd), spread=fmt(v.spread), k=v.k if v.k is not None else ("" if text else None))
    record["pass@k"], record["pass^k"] = fmt(v.pass_at_k), fmt(v.pass_hat_k)
    if v.missing:
        record["missing"] = v.missing
    elif text:
        record["missing"] = ""
    return record


def numeric_scores(row: Row) -> dict[str, float]:
    """A row's scores as numbers (``name.key`` for a dict score; bools as 0/1)."""
    out: dict[str, float] = {}
    for name, value in row.scores.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, v in items:
            if isinstance(v, (bool, int, float)) and math.isfinite(float(v)):
                out[name if key is None else f"{name}.{key}"] = float(v)
    return out


def _score_names(rows: Sequence[Row]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in numeric_scores(r)))


def variant_stats(grid: Grid, rows: Sequence[Row], by: Sequence[str] | None = None) -> list[VariantStats]:
    """Per variant and score: mean, interval, n, sd, spread over repeats, pass@k and pass^k (0/1 scores)."""
    keys = list(by) if by is not None else list(grid.vary)
    combos = list(grid.vary)
    scores = {r.index: numeric_scores(r) for r in rows}
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        groups.setdefault(tuple(r.values.get(k, "") for k in keys), []).append(r)
    out = []
    for name in _score_names(rows):
        for group, members in groups.items():
            values = [scores[r.index][name] for r in members if name in scores[r.index]]
            if not values:
                continue
            est = stats.mean_estimate(values)
            by_combo: dict[tuple[str, ...], list[float]] = {}
            for r in members:
                if name in scores[r.index]:
                    by_combo.setdefault(tuple(r.values.get(k, "") for k in combos), []).append(scores[r.index][name])
            repeated = [v for v in by_combo.values() if len(v) > 1]
            spread = sum(stats.mean_estimate(v).sd or 0.0 for v in repeated) / len(repeated) if repeated else None
            k = min(len(v) for v in by_combo.values())
            pass_at = pass_hat = None
            if est.method == "wilson" and k > 1:
                pass_at = sum(stats.pass_at_k(len(v), int(sum(v)), k) for v in by_combo.values()) / len(by_combo)
                pass_hat = sum(stats.pass_hat_k(len(v), int(sum(v)), k) for v in by_combo.values()) / len(by_combo)
            out.append(
                VariantStats(
                    values=dict(zip(keys, group, strict=True)),
                    score=name,
                    n=len(values),
                    missing=sum(1 for r in members if r.state != "skipped") - len(values),
                    mean=est.mean,
                    low=est.low,
                    high=est.high,
                    method=est.method,
                    sd=est.sd,
                    spread=spread,
                    k=k if pass_at is not None else None,
                    pass_at_k=pass_at,
                    pass_hat_k=pass_hat,
                )
            )
    return out


def _pairs(
    grid: Grid, rows: Sequence[Row], key: str, a: str, b: str, score: str, max_repeat: int | None
) -> tuple[list[float], list[float]]:
    others = [k for k in grid.vary if k != key]

    def index(value: str) -> dict[tuple[Any, ...], float]:
        out = {}
        for r in rows:
            if r.values.get(key) != value or (max_repeat is not None and r.repeat >= max_repeat):
                continue
            s = numeric_scores(r)
            if score in s:
                out[tuple(r.values.get(k) for k in others) + (r.repeat,)] = s[score]
        return out

    left, right = index(a), index(b)
    shared = [k for k in left if k in right]
    return [left[k] for k in shared], [right[k] for k in shared]


MAX_COMPARED_VALUES = 6
"""A varied key with more values than this (a list of questions, say) is what pairs are matched on,
not compared value against value, unless it is named with ``--compare``."""


def compared_keys(grid: Grid, compare: Sequence[str] | None = None) -> list[str]:
    """The keys whose values are compared: ``compare`` (or the grid's own choice), else every varied
    key with 2 to :data:`MAX_COMPARED_VALUES` values."""
    chosen = list(compare) if compare is not None else grid.compare
    if chosen is not None:
        return [k for k in chosen if len(grid.vary.get(k, [])) > 1]
    return [k for k, values in grid.vary.items() if 1 < len(values) <= MAX_COMPARED_VALUES]


def comparisons(
    grid: Grid,
    rows: Sequence[Row],
    *,
    compare: Sequence[str] | None = None,
    detect: Detect = None,
    max_repeat: int | None = None,
    level: float = stats.ALPHA,
) -> list[Comparison]:
    """Every paired comparison (Holm-adjusted together, at ``level``), on the rows with a repeat index under ``max_repeat``.

    A comparison is decided when its Holm-adjusted p-value is under ``level``. Every interval is
    then drawn at one error rate, ``level`` over the number of comparisons left undecided: the
    rate Holm's step-down ended at. A decided comparison's p-value is under that rate and an
    undecided one's is not, so each interval excludes 0 exactly when its comparison is decided.
    Where the interval is not the test's own (0/1 scores: Bonett-Price beside McNemar's exact
    test), both must agree to decide, and an undecided comparison's interval is widened to reach 0.
    """
    out: list[Comparison] = []
    samples: dict[int, tuple[list[float], list[float]]] = {}
    names = _score_names(rows)
    for key in compared_keys(grid, compare):
        for a, b in itertools.combinations(grid.vary[key], 2):
            for name in names:
                xs, ys = _pairs(grid, rows, key, a, b, name, max_repeat)
                binary = stats.is_binary(xs + ys)
                c = Comparison(key=key, a=a, b=b, score=name, binary=binary, n=len(xs), level=level, interval_level=level)
                if xs:
                    est = stats.paired_estimate(xs, ys, level)
                    c.mean, c.low, c.high, c.sd, c.p, c.method = est.mean, est.low, est.high, est.sd, est.p, est.method
                    samples[id(c)] = (xs, ys)
                out.append(c)
    tested = [c for c in out if c.p is not None and c.n >= 2]
    for c, adjusted in zip(tested, stats.holm([c.p or 1.0 for c in tested]), strict=True):
        c.p_adjusted = adjusted
        c.decided = adjusted < level
    _one_level(tested, samples, level)
    m = max(1, len(tested))
    for c in tested:
        if c.decided:
            continue
        est = stats.paired_estimate(*samples[id(c)], c.interval_level)
        c.to_decide = stats.pairs_to_decide(est)
        if c.sd:
            c.detect = _detect_for(c, rows, detect)
            c.needed = stats.pairs_needed(c.detect, c.sd, alpha=stats.ALPHA / m)
    return out


def _one_level(tested: Sequence[Comparison], samples: dict[int, tuple[list[float], list[float]]], level: float) -> None:
    """Draw every interval at the rate Holm's step-down ended at, and make each agree with its verdict."""
    while True:
        alpha = level / max(1, sum(1 for c in tested if not c.decided))
        demoted = False
        for c in tested:
            est = stats.paired_estimate(*samples[id(c)], alpha)
            c.low, c.high, c.interval_level = est.low, est.high, alpha
            if c.decided and not _excludes_zero(c.low, c.high):
                c.decided = False  # the interval is not the test's own and does not agree with it: not decided
                demoted = True
        if not demoted:  # demoting one leaves more undecided, so a lower rate: again until nothing moves
            break
    for c in tested:
        if not c.decided and _excludes_zero(c.low, c.high):  # the test does not decide: its interval reaches 0
            c.low, c.high = min(c.low or 0.0, 0.0), max(c.high or 0.0, 0.0)


def _excludes_zero(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and (low > 0 or high < 0)


def _detect_for(c: Comparison, rows: Sequence[Row], detect: Detect) -> float:
    """The difference a "how many pairs" estimate is for: ``detect``, else the larger of the difference
    seen and a default one (0.2 on a 0/1 score, a fifth of the largest score seen otherwise)."""
    if isinstance(detect, Mapping) and c.score in detect:
        return float(detect[c.score])
    if isinstance(detect, (int, float)):
        return float(detect)
    if c.binary:
        default = 0.2
    else:
        top = max((abs(v) for r in rows for k, v in numeric_scores(r).items() if k == c.score), default=1.0)
        default = float(f"{0.2 * top:.2g}") or 0.2
    return max(default, float(f"{abs(c.mean):.2g}"))


def sequential_comparisons(
    grid: Grid, rows: Sequence[Row], *, compare: Sequence[str] | None = None, detect: Detect = None
) -> list[Comparison]:
    """The comparisons of an ``--until-decided`` grid: each decided at the first look whose Holm-adjusted
    p-value is under that look's share of the error rate (the final look's figures otherwise)."""
    seq = grid.sequential or {}
    looks = [int(r) for r in seq.get("looks") or []]
    planned = int(seq.get("planned") or grid.repeat)
    levels = stats.look_levels(looks, planned)
    final: list[Comparison] = []
    decided: dict[tuple[str, str, str, str], Comparison] = {}
    for number, (repeats, level) in enumerate(zip(looks, levels, strict=True), start=1):
        now = comparisons(grid, rows, compare=compare, detect=detect, max_repeat=repeats, level=level)
        for c in now:
            ident = (c.key, c.a, c.b, c.score)
            c.looks = len(looks)
            if c.decided and ident not in decided:
                c.look = number
                decided[ident] = c
        final = now
    out = []
    for c in final:
        ident = (c.key, c.a, c.b, c.score)
        out.append(decided.get(ident, c))
    return out


def summarize(
    grid: Grid,
    rows: Sequence[Row],
    status: str,
    *,
    by: Sequence[str] | None = None,
    compare: Sequence[str] | None = None,
    detect: Detect = None,
    judged: Sequence[str] = (),
) -> Summary:
    """The :class:`Summary` of an experiment's rows (see the module docstring); ``judged``: the lines of its judgements."""
    keys = list(by) if by is not None else list(grid.vary)
    variants = variant_stats(grid, rows, by)
    found = comparisons if not grid.sequential else sequential_comparisons
    notes = []
    errors = [f"{name} on #{r.index}: {text}" for r in rows for name, text in r.score_errors.items()]
    if errors:
        notes.append(
            f"{len(errors)} score{' could' if len(errors) == 1 else 's could'} not be computed ({errors[0]}"
            + (", ..." if len(errors) > 1 else "")
            + ")"
        )
    if grid.sequential:
        notes.append(saved_line(grid, rows))
    found_comparisons = found(grid, rows, compare=compare, detect=detect)
    return Summary(status=status, variants=variants, comparisons=found_comparisons, keys=keys, notes=notes, judged=list(judged))


def saved_line(grid: Grid, rows: Sequence[Row]) -> str:
    """``--until-decided``: where it stopped and how many branches (and model calls) that saved."""
    seq = grid.sequential or {}
    looks = seq.get("looks") or []
    planned = int(seq.get("planned") or grid.repeat)
    saved = sum(1 for r in rows if r.state == "skipped" and r.error == "decided")
    ran = [r for r in rows if r.state != "skipped"]
    calls = sum(r.requests for r in ran) / len(ran) if ran else 0.0
    at = looks[-1] if looks else 0
    head = f"until decided: stopped after {at} of {planned} repeats ({len(looks)} look{'s' if len(looks) != 1 else ''})"
    if not saved:
        return head + "; every planned branch ran"
    return head + f"; {saved} of {len(rows)} branches not needed (about {round(saved * calls):,} model calls saved)"
