"""``Session.compare()``: branches side by side, from their common ancestor on.

Each ref (an entry id, an id prefix, a label, or a notebook cell id: the end of that cell's
latest run) names the end of a branch; a ref naming a prompt stands for its whole turn. The
comparison finds the deepest entry all branches share and, per branch, counts what came
after it: turns, tool calls, tokens, cost, duration and stop reasons; the final answer is the
last assistant text on the whole branch. It displays as an HTML table with a figure and the
final answers side by side (a word diff for two branches).

A turn's duration is the time from the first message its run wrote on the branch (its prompt,
or the system prompt the run recorded just before it) to its last message; a branch's duration
is the sum of its turns'. A cell's run in the cell-by-cell table is timed the same way, so the
two tables agree; the idle time between runs (a user reading, typing) is in neither.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ...session.report import EntryNotFoundError, SessionError
from ...session.usage import SPENDING_ENTRY_TYPES
from .. import digest
from ..digest import RawEntry, plural
from ..figure import PALETTE, SvgFigure, per_turn_chart
from ..reader_bundle import pi_bundle
from ..scores import Scores, branch_variant, leaf_scores, score_value_text, scores_text, variant_name, variant_text
from .cells import CellComparison, CellRecord, Kernels, cell_records, compare_cells, resolve_cell_ref
from .diff import seconds_text, word_diff_html

if TYPE_CHECKING:
    from ...session import Session

ANSWER_PREVIEW = 600


class TurnStats(BaseModel):
    """One turn on a branch (after the common ancestor)."""

    entry_id: str
    """The turn's first entry (its prompt, for a whole turn)."""
    prompt: str = ""
    """A preview of the prompt ("" for the rest of a turn that began before the branches parted)."""
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    duration_s: float | None = None
    stop_reason: str | None = None


class BranchStats(BaseModel):
    """What one branch did after the common ancestor."""

    ref: str
    """The ref as given."""
    leaf_id: str
    """The entry it resolved to (the branch's end)."""
    name: str
    """How tables and the figure name it: its label, cell, or ref."""
    label: str | None = None
    cell_id: str | None = None
    entry_ids: list[str] = Field(default_factory=list)
    """Entries after the common ancestor, root first (checkout markers and cell records left out)."""
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    duration_s: float | None = None
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    """Stop reason -> how many assistant messages ended that way."""
    final_stop_reason: str | None = None
    final_answer: str = ""
    models: list[str] = Field(default_factory=list)
    per_turn: list[TurnStats] = Field(default_factory=list)
    scores: Scores = Field(default_factory=dict)
    """Experiment scores recorded on the leaf (``pi_jupyter.score`` entries): name -> value, ``name.key`` for a dict score."""
    variant: dict[str, Any] | None = None
    """The experiment variant the branch ran (its values and repeat index), when it is an experiment branch."""


class AnswerDiff(BaseModel):
    """Two final answers side by side, words removed in red on the left and added in green on the right."""

    a_name: str
    b_name: str
    a: str
    b: str

    @property
    def ratio(self) -> float:
        """Similarity of the two answers from 0 to 1 (difflib's ratio over words)."""
        return difflib.SequenceMatcher(None, self.a.split(), self.b.split(), autojunk=False).ratio()

    def unified(self) -> str:
        """A unified diff of the answers, line by line."""
        lines = difflib.unified_diff(self.a.splitlines(), self.b.splitlines(), self.a_name, self.b_name, lineterm="")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.unified() or f"the final answers of {self.a_name} and {self.b_name} are the same"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        from ..markdown_safe import md_quote, md_text

        parts = [
            f"*{md_text(name)}*\n\n" + (md_quote(text) if text.strip() else "*no answer*")
            for name, text in ((self.a_name, self.a), (self.b_name, self.b))
        ]
        return pi_bundle(self._repr_html_(), "\n\n".join(parts), str(self), "answer-diff")

    def _repr_html_(self) -> str:
        left, right = word_diff_html(self.a, self.b)
        # text-align: JupyterLab right-aligns table cells in outputs
        cell = "text-align:left;vertical-align:top;padding:6px 8px;white-space:pre-wrap;word-break:break-word"
        cell += ";border:1px solid #d0d7de;width:50%"
        return (
            '<table class="pi-answer-diff" style="border-collapse:collapse;width:100%;table-layout:fixed">'
            f'<tr><th style="text-align:left;padding:4px 8px">{html.escape(self.a_name)}</th>'
            f'<th style="text-align:left;padding:4px 8px">{html.escape(self.b_name)}</th></tr>'
            f'<tr><td style="{cell}">{left}</td><td style="{cell}">{right}</td></tr>'
            f'<tr><td colspan="2" style="padding:2px 8px;color:#57606a;font-size:90%">similarity {self.ratio:.0%}</td></tr></table>'
        )


class Comparison(BaseModel):
    """Branches compared from their common ancestor: a table, a figure and the final answers.

    ``to_frame()`` is a pandas DataFrame (one row per branch), ``table()`` that frame when
    pandas is installed and an HTML table otherwise, ``diff()`` the final answers of two
    branches side by side, ``figure()`` tokens and cost per turn as an SVG.
    """

    session_id: str = ""
    ancestor_id: str | None = None
    """The deepest entry every branch holds (``None``: they share nothing)."""
    ancestor_preview: str = ""
    branches: list[BranchStats] = Field(default_factory=list)
    cells: CellComparison | None = None
    """The branches aligned by notebook cell, when they ran ``%%pi`` cells after the common ancestor."""
    by: Literal["auto", "cells", "turns"] = "auto"
    """How it displays: cell by cell when there are cells (``auto``), or turn by turn."""

    def by_turn(self) -> Comparison:
        """The same comparison, shown turn by turn (the view before cells were aligned)."""
        return self.model_copy(update={"by": "turns"})

    def by_cell(self) -> Comparison:
        """The same comparison, shown cell by cell (raises ``ValueError`` when the branches ran no cells)."""
        if self.cells is None:
            raise ValueError("these branches ran no notebook cells after their common ancestor; compare them turn by turn")
        return self.model_copy(update={"by": "cells"})

    def branch(self, ref: str | int) -> BranchStats:
        """A branch by position, ref, name, label, leaf id or cell id."""
        if isinstance(ref, int):
            return self.branches[ref]
        for b in self.branches:
            if ref in (b.ref, b.name, b.label, b.leaf_id, b.cell_id):
                return b
        raise KeyError(f"no branch {ref!r} in this comparison (branches: {', '.join(b.name for b in self.branches)})")

    def score_names(self) -> list[str]:
        """Every score any branch has, in the order first seen (a column each in the table)."""
        return list(dict.fromkeys(name for b in self.branches for name in b.scores))

    def rows(self) -> list[dict[str, Any]]:
        """One dict per branch (the columns of :meth:`to_frame`): the variant and a column per score when there are any."""
        names = self.score_names()
        variants = any(b.variant for b in self.branches)
        return [
            {
                "branch": b.name,
                "leaf": b.leaf_id,
                "label": b.label,
                "cell": b.cell_id,
                "turns": b.turns,
                "tool_calls": b.tool_calls,
                "tool_errors": b.tool_errors,
                "tokens": b.tokens,
                "input_tokens": b.input_tokens,
                "output_tokens": b.output_tokens,
                "cost": b.cost,
                "duration_s": b.duration_s,
                "stop_reasons": ", ".join(f"{k} {v}" for k, v in sorted(b.stop_reasons.items())),
                "final_stop_reason": b.final_stop_reason,
                "final_answer": b.final_answer,
                **({"variant": variant_text(b.variant) or None} if variants else {}),
                **{name: b.scores.get(name) for name in names},
            }
            for b in self.branches
        ]

    def to_frame(self) -> Any:
        """The comparison as a pandas DataFrame indexed by branch name (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Comparison.to_frame() needs pandas (pip install pandas); table() gives an HTML table without it") from None
        return pd.DataFrame(self.rows()).set_index("branch")

    def table(self) -> Any:
        """A pandas DataFrame when pandas is installed, else an object that displays as an HTML table."""
        try:
            return self.to_frame()
        except ImportError:
            return HtmlTable(self.table_html())

    def diff(self, a: str | int = 0, b: str | int = 1) -> AnswerDiff:
        """The final answers of branches ``a`` and ``b`` (positions, refs or names) side by side."""
        first, second = self.branch(a), self.branch(b)
        return AnswerDiff(a_name=first.name, b_name=second.name, a=first.final_answer, b=second.final_answer)

    def figure(self) -> SvgFigure:
        """Tokens and cost per turn along each branch, as an inline SVG."""
        return per_turn_chart(
            [b.name for b in self.branches],
            [[t.tokens for t in b.per_turn] for b in self.branches],
            [[t.cost for t in b.per_turn] for b in self.branches],
        )

    def table_html(self) -> str:
        """The numbers as an HTML table (branches as columns for up to four, else as rows)."""
        metrics: list[tuple[str, Any]] = [
            ("leaf", lambda b: f"<code>{html.escape(b.leaf_id)}</code>"),
            ("turns", lambda b: f"{b.turns:,}"),
            ("tool calls", lambda b: f"{b.tool_calls:,}" + (f" ({b.tool_errors} failed)" if b.tool_errors else "")),
            ("tokens", lambda b: f"{b.tokens:,}"),
            ("input / output", lambda b: f"{b.input_tokens:,} / {b.output_tokens:,}"),
            ("cost", lambda b: digest.cost_text(b.cost)),
            ("duration", lambda b: seconds_text(b.duration_s)),
            ("stop reasons", lambda b: html.escape(", ".join(f"{k} ×{v}" for k, v in sorted(b.stop_reasons.items())) or "–")),
            ("final stop", lambda b: html.escape(b.final_stop_reason or "–")),
            ("final answer", lambda b: html.escape(digest.clip(b.final_answer, 160)) or "<i>none</i>"),
        ]
        if any(b.variant for b in self.branches):
            metrics.insert(1, ("variant", lambda b: html.escape(variant_text(b.variant)) or "–"))
        for name in self.score_names():
            metrics.append((f"score: {html.escape(name)}", _score_cell(name)))
        th = "text-align:left;padding:3px 8px;border-bottom:1px solid #d0d7de"
        td = "text-align:left;padding:3px 8px;vertical-align:top;border-bottom:1px solid #eaeef2"
        parts = ['<table class="pi-compare-table" style="border-collapse:collapse">']
        if len(self.branches) <= 4:
            parts.append(f'<tr><th style="{th}"></th>')
            for i, b in enumerate(self.branches):
                parts.append(f'<th style="{th};color:{PALETTE[i % len(PALETTE)]}">{html.escape(b.name)}</th>')
            parts.append("</tr>")
            for title, fn in metrics:
                cells = "".join(f'<td style="{td}">{fn(b)}</td>' for b in self.branches)
                parts.append(f'<tr><th style="{th}">{title}</th>{cells}</tr>')
        else:
            heads = "".join(f'<th style="{th}">{t}</th>' for t, _ in metrics)
            parts.append(f'<tr><th style="{th}">branch</th>{heads}</tr>')
            for i, b in enumerate(self.branches):
                name = f'<th style="{th};color:{PALETTE[i % len(PALETTE)]}">{html.escape(b.name)}</th>'
                parts.append("<tr>" + name + "".join(f'<td style="{td}">{fn(b)}</td>' for _, fn in metrics) + "</tr>")
        parts.append("</table>")
        return "".join(parts)

    def to_markdown(self) -> str:
        """The comparison as Markdown (what Markdown exports and sanitizing readers show)."""
        from ..compare_markdown import comparison_markdown

        return comparison_markdown(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        return pi_bundle(self._repr_html_(), self.to_markdown(), str(self), "compare")

    def _repr_html_(self) -> str:
        if self.ancestor_id is None:
            head = "The branches share no entry."
        else:
            head = f"Common ancestor <code>{html.escape(self.ancestor_id)}</code>"
            if self.ancestor_preview:
                head += f": {html.escape(self.ancestor_preview)}"
        parts = [
            '<div class="pi-comparison">',
            f'<div style="margin:4px 0">{head}</div>',
            self.table_html(),
        ]
        if self.cells is not None and self.by != "turns":
            parts.append(
                f'<div style="margin:8px 0 4px;font-weight:bold">Cell by cell ({plural(len(self.cells.rows), "cell run")})</div>'
                + self.cells.to_html()
                + f'<div style="margin:8px 0">{self.cells.figure().svg}</div>'
                + '<div style="color:#57606a;font-size:90%">Turn by turn: <code>comparison.by_turn()</code> '
                + "or <code>%pi compare --turns …</code></div></div>"
            )
            return "".join(parts)
        parts.append(f'<div style="margin:8px 0">{self.figure().svg}</div>')
        if len(self.branches) == 2:
            parts.append(self.diff()._repr_html_())
        else:
            parts.append(_answers_html(self.branches))
        parts.append("</div>")
        return "".join(parts)

    def __str__(self) -> str:
        lines = [f"common ancestor: {self.ancestor_id or '(none)'}" + (f"  {self.ancestor_preview}" if self.ancestor_preview else "")]
        for b in self.branches:
            lines.append(
                f"{b.name}: {plural(b.turns, 'turn')}, {plural(b.tool_calls, 'tool call')}, {plural(b.tokens, 'token')}, "
                f"{digest.cost_text(b.cost)}, "
                f"{seconds_text(b.duration_s)}, stop {b.final_stop_reason or '-'}; answer: {digest.preview(b.final_answer, 80)!r}"
            )
            if b.variant:
                lines.append(f"  variant: {variant_text(b.variant)}")
            if b.scores:
                lines.append(f"  scores: {scores_text(b.scores)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


class HtmlTable:
    """An HTML table that displays itself (what :meth:`Comparison.table` gives without pandas)."""

    def __init__(self, markup: str) -> None:
        self.markup = markup

    def _repr_html_(self) -> str:
        return self.markup

    def __str__(self) -> str:
        return re.sub(r"<[^>]+>", " ", self.markup)


# ------------------------------------------------------------------------------ building


def compare(
    session: Session, *refs: str, limit: int = 12, by: Literal["auto", "cells", "turns"] = "auto", kernel: str | None = None
) -> Comparison:
    """Compare the branches ending at ``refs`` (see :meth:`Session.compare`).

    One ref compares it with the current leaf; none compares the ``limit`` most recent tips.
    A ref is an entry id or prefix, a label, ``root``, a cell id (its latest run), ``CELL@2``
    (its second run) or ``In[20]`` (the cell run with execution count 20). ``by``: show cell
    by cell when the branches ran notebook cells (``auto``, the default), or ``turns``.
    ``kernel``: the id of the notebook's kernel (``In [n]`` names its runs; another kernel's read
    ``In [n] (earlier kernel)``, since a restart counts from 1 again); default: the latest kernel
    that recorded a run.
    """
    if by not in ("auto", "cells", "turns"):
        raise ValueError(f"Session.compare(): by must be 'auto', 'cells' or 'turns', not {by!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ValueError(f"Session.compare(): limit must be an integer of at least 2, got {limit!r}")
    entries = session.raw_entries()
    if not refs:
        names = _recent_tips(entries, limit)
        if len(names) < 2:
            raise SessionError("Session.compare(): the tree has fewer than two branches; give refs to compare")
    else:
        names = list(refs)
        if len(names) == 1:
            if session.leaf_id is None:
                raise SessionError("Session.compare(): one ref is compared with the current leaf, and there is none")
            names.append(session.leaf_id)
    records = cell_records(entries)
    kernels = Kernels(records, kernel)
    cells: dict[str, tuple[str, str | None]] = {}  # entry id -> (cell id, how its run is named), the latest run wins
    for rec in records:
        for eid in rec.produced:
            cells[eid] = (rec.cell_id, kernels.label(rec))
    leaves = [_resolve(session, ref, records, kernels) for ref in names]
    paths = [digest.branch_of(session, leaf) for leaf in leaves]
    ancestor_at = _common_prefix(paths)
    shared = [e for e in paths[0][:ancestor_at] if not digest.is_transparent(e)]
    ancestor = shared[-1] if shared else None  # a marker or cell record stands for its parent
    labels = session.labels
    branches = [_branch(ref, leaf, path, ancestor_at, labels, cells) for ref, leaf, path in zip(names, leaves, paths, strict=True)]
    for b, path in zip(branches, paths, strict=True):
        b.scores = leaf_scores(session, b.leaf_id)
        b.variant = branch_variant(path[ancestor_at:])
        if b.variant is not None and b.name == b.ref and b.label is None:
            b.name = variant_name(b.variant)  # the experiment table's and plot's name, not a bare id
    _unique_names(branches)
    by_cell = compare_cells(session, [b.name for b in branches], paths, ancestor_at, kernel) if by != "turns" else None
    if by_cell is not None:
        by_cell.scores = [b.scores for b in branches]
    if by == "cells" and by_cell is None:
        raise SessionError("Session.compare(by='cells'): the branches ran no notebook cells after their common ancestor")
    return Comparison(
        session_id=session.id,
        ancestor_id=ancestor["id"] if ancestor is not None else None,
        ancestor_preview=digest.preview(digest.entry_text(ancestor), 80) if ancestor is not None else "",
        branches=branches,
        cells=by_cell,
        by=by,
    )


def _resolve(session: Session, ref: Any, records: list[CellRecord], kernels: Kernels) -> str:
    if not isinstance(ref, str) or not ref:
        raise TypeError(f"Session.compare(): refs are entry ids, labels, root, In[n] or cell ids (strings), got {ref!r}")
    if ref == "root" and "root" not in session:
        roots = session.tree()
        if not roots:
            raise SessionError("Session.compare(): 'root' names the first entry, and the session is empty")
        return digest.as_text(roots[0].entry.get("id"))
    try:
        eid = session.resolve(ref)
    except EntryNotFoundError:
        try:
            end = resolve_cell_ref(ref, records, kernels)
        except LookupError as exc:
            raise SessionError(f"Session.compare(): {exc}") from None
        if end is None:
            raise EntryNotFoundError(ref, session.path) from None
        eid = end
    entry = session.raw_entry(eid)
    while digest.is_transparent(entry):
        parent = entry.get("parentId")
        if not isinstance(parent, str) or not parent:
            break
        above = digest.lookup(session, parent)
        if above is None:
            break
        eid, entry = parent, above
    return _turn_end(session, eid) if digest.is_head(entry) else eid


def _turn_end(session: Session, eid: str) -> str:
    """A prompt stands for its whole turn: follow its only line of replies to the turn's end."""
    cur = eid
    for _ in range(100_000):
        below = [(k, digest.lookup(session, k)) for k in session.child_ids(cur)]
        kids = [(k, e) for k, e in below if e is not None and not digest.is_transparent(e)]
        if len(kids) != 1:
            return cur
        nxt = kids[0][1]
        if digest.is_head(nxt) or digest.is_meta(nxt) or nxt.get("type") in digest.SOLO_TYPES:
            return cur
        cur = kids[0][0]
    return cur


def _recent_tips(entries: list[RawEntry], limit: int) -> list[str]:
    """Ids of the most recent tips (messages with no message below them), oldest first.

    Labels, settings, markers, compactions and summaries between two messages do not end a
    branch: a label entry is appended after the leaf and the next turn hangs under it.
    """
    by_id = {e["id"]: e for e in entries}
    has_child: set[str] = set()
    for entry in entries:
        if digest.message(entry) is None:
            continue
        parent, seen = entry.get("parentId"), set()
        while isinstance(parent, str) and parent in by_id and parent not in seen:
            seen.add(parent)
            above = by_id[parent]
            if digest.message(above) is not None:
                has_child.add(parent)
                break
            parent = above.get("parentId")
    # an entry whose id is "" is no ref (an odd file): it is left out of the tips
    tips = [e["id"] for e in entries if e["id"] and e["id"] not in has_child and digest.message(e) is not None]
    return list(dict.fromkeys(tips))[-limit:]


def _common_prefix(paths: list[list[RawEntry]]) -> int:
    shortest = min(len(p) for p in paths)
    n = 0
    while n < shortest and all(p[n]["id"] == paths[0][n]["id"] for p in paths):
        n += 1
    return n


def _branch(
    ref: str,
    leaf: str,
    path: list[RawEntry],
    ancestor_at: int,
    labels: dict[str, str],
    cells: dict[str, tuple[str, str | None]],
) -> BranchStats:
    after = [e for e in path[ancestor_at:] if not digest.is_transparent(e)]
    label = digest.as_text(labels[leaf]) if labels.get(leaf) else None  # pi keeps any truthy value as a label
    cell = cells.get(leaf)
    if cell is None:
        cell = next((cells[e["id"]] for e in reversed(after) if e["id"] in cells), None)
    name = label or (f"{cell[1]} {ref}" if cell is not None and cell[1] is not None and ref == leaf else ref)
    stats = BranchStats(ref=ref, leaf_id=leaf, name=name, label=label, cell_id=cell[0] if cell else None)
    stats.entry_ids = [e["id"] for e in after]
    stops: Counter[str] = Counter()
    turn: TurnStats | None = None
    turn_start: int | None = None
    turn_end: int | None = None
    durations: list[float] = []
    opened: int | None = None  # when the run that opens the next turn began (the system prompt it recorded first)

    def close() -> None:
        if turn is not None:
            if turn_start is not None and turn_end is not None:
                turn.duration_s = max(0.0, (turn_end - turn_start) / 1000)
                durations.append(turn.duration_s)
            stats.per_turn.append(turn)

    for entry in after:
        ms = digest.entry_ms(entry)
        if digest.is_head(entry):
            close()
            turn = TurnStats(entry_id=entry["id"], prompt=digest.preview(digest.entry_text(entry), 80))
            turn_start, turn_end = (opened if opened is not None else ms), ms
            opened = None
            stats.turns += 1
        elif turn is None and digest.role(entry) == "system":
            # the prompt a run records before its first turn belongs to that turn, not to one of its own
            opened = ms if opened is None else opened
        elif turn is None and digest.message(entry) is not None:
            # the rest of a turn that began before the branches parted (a retry, a continue): timed from
            # its first entry on this branch, as a cell's run is (never from the shared entry above)
            turn = TurnStats(entry_id=entry["id"])
            turn_start, turn_end = ms, ms
        elif turn is not None and ms is not None and digest.message(entry) is not None:
            # only the turn's own messages extend it: a model change or label appended to a
            # recorded branch months later is no part of the turn's time
            turn_end = ms
        if entry.get("type") == "model_change":
            stats.models.append(digest.model_ref(entry.get("provider"), entry.get("modelId")))
        elif entry.get("type") in SPENDING_ENTRY_TYPES:  # pi 1.x: summaries and other calls outside the conversation
            tokens, cost, _ = digest.usage(entry)
            stats.tokens += tokens
            stats.cost += cost
        msg = digest.message(entry)
        if msg is None:
            continue
        r = msg.get("role")
        if r == "assistant":
            tokens, cost, parts = digest.usage(msg)
            calls = len(digest.tool_calls(msg))
            stats.tokens += tokens
            stats.cost += cost
            stats.input_tokens += parts["input"]
            stats.output_tokens += parts["output"]
            stats.cache_read_tokens += parts["cacheRead"]
            stats.cache_write_tokens += parts["cacheWrite"]
            stats.tool_calls += calls
            stop = digest.as_text(msg.get("stopReason") or "stop")
            stops[stop] += 1
            model = digest.model_ref(msg.get("provider"), msg.get("model"))
            if model not in stats.models:
                stats.models.append(model)
            if turn is not None:
                turn.tokens += tokens
                turn.cost += cost
                turn.input_tokens += parts["input"]
                turn.output_tokens += parts["output"]
                turn.tool_calls += calls
                turn.stop_reason = stop
        elif r == "toolResult" and msg.get("isError"):
            stats.tool_errors += 1
    close()
    stats.duration_s = sum(durations) if durations else None
    stats.stop_reasons = dict(stops)
    for entry in reversed(path):
        msg = digest.message(entry)
        if msg is not None and msg.get("role") == "assistant":
            stats.final_stop_reason = digest.as_text(msg.get("stopReason") or "stop")
            stats.final_answer = digest.content_text(msg.get("content"))
            if stats.final_stop_reason == "error" and not stats.final_answer:
                stats.final_answer = f"(error: {digest.error_summary(digest.as_text(msg.get('errorMessage') or 'unknown'))})"
            break
    return stats


def _score_cell(name: str) -> Any:
    return lambda b: html.escape(score_value_text(b.scores[name])) if name in b.scores else "–"


def _unique_names(branches: list[BranchStats]) -> None:
    seen: Counter[str] = Counter(b.name for b in branches)
    for b in branches:
        if seen[b.name] > 1:
            b.name = f"{b.name} ({b.leaf_id[:8]})"


def _answers_html(branches: list[BranchStats]) -> str:
    cells = []
    for i, b in enumerate(branches):
        color = PALETTE[i % len(PALETTE)]
        text = html.escape(digest.clip(b.final_answer, ANSWER_PREVIEW)) or "<i>no answer</i>"
        cells.append(
            '<div style="flex:1 1 220px;min-width:200px;border:1px solid #d0d7de;padding:6px 8px;white-space:pre-wrap;text-align:left">'
            f'<div style="font-weight:bold;color:{color}">{html.escape(b.name)}</div>{text}</div>'
        )
    return '<div class="pi-answers" style="display:flex;flex-wrap:wrap;gap:6px">' + "".join(cells) + "</div>"
