"""``ExperimentResult``: the table, the branches, compare, the figure and scoring of one experiment.

Everything is read from the session (see :mod:`.records`), so a result rebuilt from the file
by someone who has only the file (:func:`load_experiment`) is the same as the live one.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from ..session import Session
from .analysis import Detect, Summary, key_column, summarize
from .judging import JudgingRound, PairwiseJudge, Pooling, Preferences, judge_all, preferences
from .records import Grid, Row, experiment_ids, read_experiment
from .scorers import SCORER_TIMEOUT_S
from .scoring import score_rows

_NOWRAP = "white-space:nowrap"
BASE_COLUMNS = [
    "repeat",
    "state",
    "answer",
    "stop_reason",
    "turns",
    "tool_calls",
    "tokens_in",
    "tokens_out",
    "cost",
    "duration_s",
    "error",
    "leaf",
]


class ExperimentResult:
    """One experiment of a session: ``.table()``, ``.branches``, ``.compare()``, ``.plot()``, ``.score(fn)``."""

    def __init__(self, session: Session, experiment_id: str) -> None:
        self.session = session
        self.id = experiment_id
        self._cache: tuple[int, Grid, list[Row]] | None = None

    def _read(self) -> tuple[Grid, list[Row]]:
        size = len(self.session)
        if self._cache is None or self._cache[0] != size:
            grid, rows = read_experiment(self.session, self.id)
            self._cache = (size, grid, rows)
        return self._cache[1], self._cache[2]

    @property
    def grid(self) -> Grid:
        """The grid as recorded (prompt, vary, repeat, size, budget, skipped, continue_from)."""
        return self._read()[0]

    @property
    def rows(self) -> list[Row]:
        """One :class:`Row` per branch of the grid, skipped ones included, in grid order."""
        return self._read()[1]

    @property
    def branches(self) -> list[str]:
        """Leaf ids of the branches that ran, in grid order."""
        return [r.leaf for r in self.rows if r.leaf is not None]

    @property
    def continue_from(self) -> str | None:
        """The leaf the session continues from after the experiment (``None``: it stayed at the start)."""
        return self.grid.continue_from

    def records(self) -> list[dict[str, Any]]:
        """The table as a list of dicts (one per branch): the variant, repeat, state, every score
        (a column per score, ``name.key`` for a dict; empty where a branch has none), then the rest."""
        grid, rows = self._read()
        flat = [_flat_scores(r.scores) for r in rows]
        keys, score_cols = self._columns(flat)
        out = []
        for r, scores in zip(rows, flat, strict=True):
            row: dict[str, Any] = {"branch": r.index}
            row.update({col: r.values.get(k) for k, col in keys.items()})
            row.update(repeat=r.repeat, state=r.state)
            row.update({col: scores.get(c) for c, col in score_cols.items()})
            for col in BASE_COLUMNS[2:]:
                row[col] = getattr(r, col)
            row["model"] = r.values.get("model") or r.model
            unscored = "; ".join(r.score_errors.values())
            error = "; ".join(t for t in (r.error, unscored) if t) or None
            if r.runs > 1:
                error = f"started {r.runs} times (a lost worker's run); " + (error or "this row is the run that ended")
            row.pop("error")
            row["error"], row["leaf"] = error, row.pop("leaf")  # last: long and rarely read
            out.append(row)
        return out

    def _columns(self, flat: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
        """The column of each varied key and each score: its own name, unless the table has that column
        already (``n``, ``state``, ``cost``...): then ``"state (varied)"``, ``"cost (score)"``. A varied
        ``model`` is the model column itself."""
        taken = {"branch", "repeat", "state", "model", *BASE_COLUMNS}
        keys = {k: k if k == "model" else key_column(k, taken) for k in self.grid.vary}
        names = dict.fromkeys(k for f in flat for k in f)
        return keys, {c: f"{c} (score)" if c in taken or c in keys.values() else c for c in names}

    def table(self) -> Any:
        """A pandas DataFrame, one row per branch: variant values, repeat, state, stop reason, turns,
        tool calls, tokens in/out, cost, duration, answer preview, error, leaf and every score."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is in the notebook and test extras
            raise ImportError("table() needs pandas: pip install pandas (records() gives plain dicts)") from exc
        return pd.DataFrame.from_records(self.records()).set_index("branch")

    def compare(self, **options: Any) -> Any:
        """Today's comparison (:meth:`Session.compare`) of every branch that ran."""
        leaves = self.branches
        if not leaves:
            raise ValueError("no branch of this experiment ran; nothing to compare")
        return self.session.compare(*leaves, limit=max(len(leaves), 2), **options)

    def plot(self, metric: str | None = None, *, by: Sequence[str] | None = None) -> Any:
        """An SVG chart: each variant's mean of the score ``metric`` (default: the first) with its 95%
        interval (``by``: group by these keys only); without scores, the cost of each branch."""
        from .analysis import variant_stats
        from .figure import bar_chart, interval_chart

        grid, rows = self._read()
        found = variant_stats(grid, rows, by)
        names = list(dict.fromkeys(v.score for v in found))
        if names and (metric is None or metric in names):
            metric = metric or names[0]
            shown = [v for v in found if v.score == metric]
            labels = [" · ".join(f"{k}={val}" for k, val in v.values.items()) or "(all branches)" for v in shown]
            return interval_chart(labels, [(v.mean, v.low, v.high, v.n) for v in shown], title=metric)
        records = self.records()
        metric = metric or "cost"
        labels = [f"#{r.index} " + " ".join(str(r.values.get(k)) for k in grid.vary) for r in rows]
        values = [r.get(metric) if isinstance(r.get(metric), (int, float)) else None for r in records]
        return bar_chart(labels, values, title=metric, states=[r["state"] for r in records])

    async def score_async(self, *scorers: Callable[..., Any] | str, timeout: float | None = SCORER_TIMEOUT_S) -> ExperimentResult:
        """Score every branch that finished with each scorer (a callable or a registered name)."""
        from .scorers import get_scorer

        await score_rows(self.session, self.id, self.rows, [get_scorer(s) if isinstance(s, str) else s for s in scorers], timeout=timeout)
        return self

    def score(self, *scorers: Callable[..., Any] | str, timeout: float | None = SCORER_TIMEOUT_S) -> ExperimentResult:
        """Score every finished branch and append the scores to the session; returns ``self``.

        Each scorer has ``timeout`` seconds per branch; one that fails leaves its reason on the
        branch (the table's error column). Safe to call from a notebook cell (it runs the
        scorers on a helper thread's loop).
        """
        from ..agent.sync import run_blocking

        return run_blocking(self.score_async(*scorers, timeout=timeout))

    def summary(
        self, *, by: Sequence[str] | None = None, compare: Sequence[str] | None = None, detect: Detect = None, pool_judges: Pooling = "none"
    ) -> Summary:
        """What the scores say: per variant the mean with its 95% interval, n, spread, pass@k and
        pass^k; per compared key the paired verdicts in plain words (see :mod:`.analysis`).

        ``by``: group the per-variant table by these keys only (default: every varied key).
        ``compare``: the keys whose values are compared (default: as the grid was run, else every
        varied key). ``detect``: the difference "how many pairs would detect it" is for (a number,
        or per score name; default 0.2 for 0/1 scores, a fifth of the largest value otherwise).
        ``pool_judges``: pairwise judgements are reported per judge (``"none"``), people apart from
        models (``"kind"``) or all together (``"all"``). ``str(summary)`` is the text; in a notebook it shows as a table.
        """
        grid, rows = self._read()
        judged = self.preferences(pool=pool_judges).lines()
        return summarize(grid, rows, self.status_line(), by=by, compare=compare, detect=detect, judged=judged)

    # ---------------------------------------------------------------- judging (see .judging)

    def judging(self, judge: str | None = None, *, by: str | None = None, seed: int | None = None) -> JudgingRound:
        """A blind round of pairwise judging for a person: ``round.current`` shows two answers as A and B
        (labels hidden, order random), ``round.choose("A" | "B" | "tie", note)`` records the choice as a
        score entry on both branches. ``judge``: your name (default: your login name). ``by``: the key
        whose values are judged (default: the first varied key with two values)."""
        import getpass

        return JudgingRound(self.session, self.id, judge=judge or getpass.getuser(), by=by, seed=seed)

    async def judge_with_async(self, judge: PairwiseJudge, *, by: str | None = None, seed: int | None = None) -> Preferences:
        """Have a model judge every pair in both orders (see :class:`~.judging.PairwiseJudge`); returns the preferences."""
        await judge_all(self.session, self.id, judge, by=by, seed=seed)
        return self.preferences()

    def judge_with(self, judge: PairwiseJudge, *, by: str | None = None, seed: int | None = None) -> Preferences:
        """:meth:`judge_with_async` from a cell or a script."""
        from ..agent.sync import run_blocking

        return run_blocking(self.judge_with_async(judge, by=by, seed=seed))

    def preferences(self, *, pool: Pooling = "none") -> Preferences:
        """Win rates with intervals (each judge apart, unless ``pool`` is ``"kind"`` or ``"all"``), agreement
        between judges (people and models too) and position bias of every judgement, from the file."""
        return preferences(self.session, self.id, pool=pool)

    def status_line(self) -> str:
        """``experiment abc: 12 branches: 10 done, 1 failed, 1 skipped · $0.0123 · the session continues from branch #0 (leaf ...)``."""
        rows = self.rows
        counts: dict[str, int] = {}
        for r in rows:
            counts[r.state] = counts.get(r.state, 0) + 1
        parts = ", ".join(f"{n} {state}" for state, n in counts.items())
        cost = sum(r.cost for r in rows)
        leaf = self.continue_from
        picked = next((r.index for r in rows if r.leaf == leaf), None) if leaf else None
        if picked is not None:
            where = f"the session continues from branch #{picked} (leaf {leaf})"
        elif leaf:
            where = f"the session continues from leaf {leaf}"
        else:
            where = "the session stayed at the start"
        return f"experiment {self.id}: {len(rows)} branch{'es' if len(rows) != 1 else ''}: {parts} · ${cost:.4f} · {where}"

    def table_html(self, caption: bool = True) -> str:
        """The table as HTML, one row per branch (no JavaScript; what a reopened notebook shows)."""
        records = self.records()
        if not records:
            return "<p>empty experiment</p>"
        # the numbers a grid is read for come first, the long texts last (no scrolling to reach the cost)
        later = ["stop_reason", "model", "answer", "error", "leaf"]
        cols = [c for c in records[0] if c not in later] + [c for c in later if c in records[0]]
        numbers = {c for c in cols if all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in records) and c != "branch"}

        def align(c: str) -> str:
            return "text-align:right" if c in numbers else "text-align:left"

        head = "".join(f'<th style="{align(c)}">{html.escape(str(c))}</th>' for c in cols)
        body = []
        for r in records:
            cells = []
            for c in cols:
                value = r.get(c)
                if isinstance(value, float):
                    value = f"{value:.4f}" if c == "cost" else f"{value:.2f}"
                text = "" if value is None else str(value)
                if c in ("answer", "error") and len(text) > 60:
                    # one line per branch: the cell shows the start, the tooltip the whole preview
                    cells.append(f'<td style="{_NOWRAP};{align(c)}" title="{html.escape(text)}">{html.escape(text[:59])}…</td>')
                else:
                    cells.append(f'<td style="{_NOWRAP};{align(c)}">{html.escape(text)}</td>')
            style = (
                ' style="background:#fff1f0"'
                if r["state"] in ("failed", "aborted")
                else (' style="color:#888"' if r["state"] == "skipped" else "")
            )
            body.append(f"<tr{style}>{''.join(cells)}</tr>")
        head_line = f'<caption style="caption-side:top;text-align:left">{html.escape(self.status_line())}</caption>' if caption else ""
        return (
            '<div style="overflow-x:auto"><table class="pi-experiment-table" style="table-layout:auto">'
            f"{head_line}"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        )

    def text(self) -> str:
        """The table as aligned plain text (the CLI prints it)."""
        records = self.records()
        if not records:
            return str(self.summary())
        cols = [c for c in records[0] if c not in ("leaf", "error")] + ["error"]
        shown = [[_cell(r.get(c), c) for c in cols] for r in records]
        widths = [max(len(c), *(len(row[i]) for row in shown)) for i, c in enumerate(cols)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in shown]
        return "\n".join([*lines, str(self.summary())])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        # plain HTML, SVG and text: every viewer draws them without the kernel or a widget model;
        # a chart with nothing to show (every cost $0 on a free model, no score) is left out.
        # Marked as a pi output with a Markdown form, so Markdown and sanitized HTML exports read cleanly
        from ..views.reader_bundle import pi_bundle
        from .readers import result_markdown

        figure = self.plot().svg if self._has_a_chart() else ""
        markup = self.summary().html() + self.table_html(caption=False) + figure
        data, metadata = pi_bundle(markup, result_markdown(self), self.text(), "experiment")
        return ({**data, "image/svg+xml": figure} if figure else data), metadata

    def _has_a_chart(self) -> bool:
        """True when the default chart (the first score, else cost) has a value other than zero."""
        records = self.records()
        scored = list(self._columns([_flat_scores(r.scores) for r in self.rows])[1].values())
        metric = scored[0] if scored else "cost"
        return any(isinstance(r.get(metric), (int, float)) and r.get(metric) for r in records) or bool(scored)

    def __repr__(self) -> str:
        return self.text()


def _flat_scores(scores: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in scores.items():
        if isinstance(value, dict):
            out.update({f"{name}.{k}": v for k, v in value.items()})
        else:
            out[name] = value
    return out


def _cell(value: Any, column: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}" if column == "cost" else f"{value:.2f}"
    text = str(value).replace("\n", " ")
    return text if len(text) <= 40 else text[:39] + "…"


def load_experiment(session: Session, experiment_id: str | None = None) -> ExperimentResult:
    """The experiment ``experiment_id`` (default: the latest) of a session, rebuilt from its entries."""
    ids = experiment_ids(session)
    if not ids:
        raise ValueError(f"no experiment in {session.path or 'this session'}")
    if experiment_id is None:
        return ExperimentResult(session, ids[-1])
    matches = [i for i in ids if i.startswith(experiment_id)]
    if len(matches) != 1:
        raise ValueError(f"no single experiment {experiment_id!r} in {session.path or 'this session'}; recorded: {', '.join(ids)}")
    return ExperimentResult(session, matches[0])
