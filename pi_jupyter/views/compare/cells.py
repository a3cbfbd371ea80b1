"""Branches compared cell by cell: the notebook cells each branch ran, aligned by cell.

A ``%%pi`` cell leaves a ``pi_jupyter.cell`` record (see ``pi_jupyter.notebook.cells``) naming
the entries it produced. Two Run Alls (one model, then another) or a re-run from an earlier
cell leave branches that ran the same cells; here each branch's runs after the common
ancestor are lined up by cell id (the second run of a cell on one branch lines up with the
second run on the other), with per run its prompt, answer, tokens, cost, time and tool
calls. A cell that ran on one branch only is shown as such. Also: how refs that name cells
resolve (``In[20]``, ``CELL@2``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from .. import digest
from ..digest import RawEntry
from ..figure import PALETTE, SvgFigure, per_turn_chart
from ..scores import Scores, scores_text
from .diff import seconds_text, word_diff_html

if TYPE_CHECKING:
    from ...session import Session

ANSWER_CHARS = 1500


class CellRecord(BaseModel):
    """One recorded run of a notebook cell, read from its ``custom`` entry."""

    cell_id: str
    end: str | None = None
    produced: list[str] = Field(default_factory=list)
    execution_count: int | None = None
    record_id: str = ""
    kernel: str | None = None
    """The kernel that ran it (records written before kernels were recorded have none)."""
    ms: int | None = None
    """When the record was written."""


class Kernels:
    """Which kernel's ``In [n]`` a reader means: ``current`` (the notebook's own kernel; default: the
    kernel of the latest record), and when it first recorded a run (earlier runs are earlier kernels')."""

    def __init__(self, records: list[CellRecord], current: str | None = None) -> None:
        known = [r for r in records if r.kernel]
        self.current = current if current is not None else (known[-1].kernel if known else None)
        mine = [r.ms for r in records if r.kernel == self.current and r.ms is not None]
        self.since = min(mine) if mine else None

    def mine(self, rec: CellRecord) -> bool:
        """True when ``rec`` was run by the current kernel (or nothing tells kernels apart)."""
        return self.current is None or rec.kernel == self.current

    def label(self, rec: CellRecord) -> str | None:
        """``In [3]`` for the current kernel's run; ``In [3] (earlier kernel)`` (or ``another kernel``) for others."""
        if rec.execution_count is None:
            return None
        base = f"In [{rec.execution_count}]"
        if self.mine(rec):
            return base
        earlier = self.since is None or rec.ms is None or rec.ms < self.since
        return f"{base} ({'earlier' if earlier else 'another'} kernel)"


def cell_records(entries: list[RawEntry]) -> list[CellRecord]:
    """Every cell run recorded in ``entries``, in file order (malformed records skipped)."""
    out: list[CellRecord] = []
    for entry, data in digest.cell_runs(entries):
        produced = data.get("produced")
        out.append(
            CellRecord(
                cell_id=data["cellId"],
                end=digest.run_end(entry, data),
                produced=[p for p in produced if isinstance(p, str)] if isinstance(produced, list) else [],
                execution_count=digest.run_count(data),
                record_id=digest.as_text(entry.get("id")),
                kernel=data["kernel"] if isinstance(data.get("kernel"), str) else None,
                ms=digest.entry_ms(entry),
            )
        )
    return out


_IN = re.compile(r"^In\s*\[\s*(\d+)\s*\]$")
_AT = re.compile(r"^(.+)@(\d+)$")


def resolve_cell_ref(ref: str, records: list[CellRecord], kernels: Kernels | None = None) -> str | None:
    """The end entry a cell-shaped ref names, or ``None`` when ``ref`` is not one.

    ``In[20]`` (or ``In [20]``): the run whose execution count is 20, this kernel's when it ran
    one (``kernels``: which kernel is this one; a restart counts from 1 again), else the latest; ``CELL@2``: the
    second run of cell ``CELL`` (1 is the first); a bare cell id: its latest run. Raises
    ``LookupError`` with a one-line reason when the form is right but no run matches.
    """
    m = _IN.match(ref.strip())
    if m:
        n = int(m.group(1))
        runs = [r for r in records if r.execution_count == n and r.end]
        kernels = kernels or Kernels(records)
        runs = [r for r in runs if kernels.mine(r)] or runs
        if not runs:
            counts = sorted({r.execution_count for r in records if r.execution_count is not None})
            raise LookupError(f"no recorded cell ran as In [{n}] (recorded: {', '.join(f'In [{c}]' for c in counts[-12:]) or 'none'})")
        return runs[-1].end
    m = _AT.match(ref)
    if m and any(r.cell_id == m.group(1) for r in records):
        runs = [r for r in records if r.cell_id == m.group(1) and r.end]
        k = int(m.group(2))
        if not 1 <= k <= len(runs):
            raise LookupError(f"cell {m.group(1)} ran {len(runs)} time{'s' if len(runs) != 1 else ''}; {ref} names run {k}")
        return runs[k - 1].end
    runs = [r for r in records if r.cell_id == ref and r.end]
    return runs[-1].end if runs else None


class CellRunStats(BaseModel):
    """What one run of a cell did on one branch."""

    cell_id: str
    run: int
    """1 for the cell's first run on this branch (after the common ancestor), 2 for its second, ..."""
    execution_count: int | None = None
    label: str | None = None
    """How the run is named: ``In [3]``, or ``In [3] (earlier kernel)`` when another kernel counted it."""
    end: str | None = None
    prompt: str = ""
    answer: str = ""
    tokens: int = 0
    cost: float = 0.0
    duration_s: float | None = None
    tool_calls: int = 0
    stop_reason: str | None = None

    def stats(self) -> str:
        """``2,906 tok · $0 · 0.1 s · 1 tool call`` (and the stop reason when it is not a plain stop)."""
        calls = digest.plural(self.tool_calls, "tool call")
        text = f"{self.tokens:,} tok · {digest.cost_text(self.cost)} · {seconds_text(self.duration_s)} · {calls}"
        return text + (f" · {self.stop_reason}" if self.stop_reason and self.stop_reason not in ("stop", "toolUse") else "")


class CellRow(BaseModel):
    """One cell (one run of it) across the branches: ``runs[i]`` is branch ``i``'s run, or ``None``."""

    cell_id: str
    run: int
    prompt: str = ""
    runs: list[CellRunStats | None] = Field(default_factory=list)

    @property
    def only_in(self) -> list[int]:
        """Branches (positions) that ran this cell, when not all did."""
        ran = [i for i, r in enumerate(self.runs) if r is not None]
        return ran if len(ran) < len(self.runs) else []


class CellComparison(BaseModel):
    """Branches aligned by notebook cell (what ``Comparison`` shows first when the branches ran cells)."""

    names: list[str]
    rows: list[CellRow] = Field(default_factory=list)
    scores: list[Scores] = Field(default_factory=list)
    """Per branch, the experiment scores recorded on its leaf (see :class:`~pi_jupyter.views.compare.branches.BranchStats`)."""

    def totals(self) -> list[dict[str, Any]]:
        """Per branch: cells run, tokens, cost, time and tool calls over its cell runs, and its leaf's scores."""
        out = []
        for i in range(len(self.names)):
            runs = [r.runs[i] for r in self.rows if r.runs[i] is not None]
            times = [r.duration_s for r in runs if r is not None and r.duration_s is not None]
            out.append(
                {
                    "cells": len(runs),
                    "tokens": sum(r.tokens for r in runs if r is not None),
                    "cost": sum(r.cost for r in runs if r is not None),
                    "duration_s": sum(times) if times else None,
                    "tool_calls": sum(r.tool_calls for r in runs if r is not None),
                    "scores": dict(self.scores[i]) if i < len(self.scores) else {},
                }
            )
        return out

    def figure(self) -> SvgFigure:
        """Tokens and cost per cell, one series per branch (0 where a branch did not run the cell)."""
        ticks = [row_name(row, i) for i, row in enumerate(self.rows)]
        return per_turn_chart(
            self.names,
            [[(row.runs[i].tokens if row.runs[i] is not None else 0) for row in self.rows] for i in range(len(self.names))],  # type: ignore[union-attr]
            [[(row.runs[i].cost if row.runs[i] is not None else 0.0) for row in self.rows] for i in range(len(self.names))],  # type: ignore[union-attr]
            unit="cell",
            ticks=ticks,
        )

    def to_html(self) -> str:
        """The aligned cells as an HTML table (word diff of the answers for two branches), totals at the foot."""

        n = len(self.names)
        th = "text-align:left;padding:3px 8px;border-bottom:1px solid #d0d7de;vertical-align:top"
        td = "text-align:left;padding:4px 8px;vertical-align:top;border-bottom:1px solid #eaeef2;white-space:pre-wrap;word-break:break-word"
        width = f"width:{100 // max(1, n)}%"
        parts = ['<table class="pi-compare-cells" style="border-collapse:collapse;width:100%;table-layout:fixed">', "<tr>"]
        for i, name in enumerate(self.names):
            parts.append(f'<th style="{th};{width};color:{PALETTE[i % len(PALETTE)]}">{html.escape(name)}</th>')
        parts.append("</tr>")
        for position, row in enumerate(self.rows):
            prompt = html.escape(digest.clip(row.prompt, 300)) or "<i>(no prompt)</i>"
            tag = html.escape(row_name(row, position))
            only = row.only_in
            note = f" · only on {', '.join(html.escape(self.names[i]) for i in only)}" if only else ""
            # the cell's id is for the curious (a tooltip): the reader knows a cell by its In [n]
            parts.append(
                f'<tr class="pi-cell-head"><td colspan="{n}" style="{td};background:#f6f8fa" title="cell {html.escape(row.cell_id)}">'
                f"<b>{tag}</b>{note}<br>{prompt}</td></tr>"
                '<tr class="pi-cell-answers">'
            )
            texts = [digest.clip(r.answer, ANSWER_CHARS) if r is not None else "" for r in row.runs]
            if n == 2 and row.runs[0] is not None and row.runs[1] is not None:
                shown = list(word_diff_html(texts[0], texts[1]))
            else:
                shown = [html.escape(t) for t in texts]
            for r, body in zip(row.runs, shown, strict=True):
                if r is None:
                    parts.append(f'<td style="{td};color:#57606a"><i>did not run on this branch</i></td>')
                    continue
                foot = f'<div style="color:#57606a;font-size:90%;margin-top:3px">{html.escape(r.stats())}</div>'
                parts.append(f'<td style="{td}">{body or "<i>no answer</i>"}{foot}</td>')
            parts.append("</tr>")
        parts.append('<tr class="pi-cell-totals">')
        for t in self.totals():
            parts.append(
                f'<td style="{td};font-weight:bold">{digest.plural(t["cells"], "cell")} · {t["tokens"]:,} tok · '
                f"{digest.cost_text(t['cost'])} · {seconds_text(t['duration_s'])} · {digest.plural(t['tool_calls'], 'tool call')}"
                + (f"<br>scores: {html.escape(scores_text(t['scores']))}" if t["scores"] else "")
                + "</td>"
            )
        parts.append("</tr></table>")
        return "".join(parts)


def row_name(row: CellRow, position: int) -> str:
    """The row's name as the notebook shows the cell: ``In [3]`` (``In [3] / In [7]`` when the branches
    ran it at different counts), else ``cell N`` (its place in the comparison); never the cell's id."""
    counts = list(dict.fromkeys(r.label for r in row.runs if r is not None and r.label is not None))
    base = " / ".join(counts) if counts else f"cell {position + 1}"
    return base + (f" (run {row.run})" if row.run > 1 else "")


def compare_cells(
    session: Session, names: list[str], paths: list[list[RawEntry]], ancestor_at: int, kernel: str | None = None
) -> CellComparison | None:
    """Align the branches' cell runs after the common ancestor; ``None`` when no branch ran a cell there.

    ``kernel``: the id of the kernel whose ``In [n]`` are shown plain (see :class:`Kernels`).
    """
    records = cell_records(session.raw_entries())
    if not records:
        return None
    kernels = Kernels(records, kernel)
    per_branch: list[list[CellRunStats]] = []
    for path in paths:
        after = {e["id"]: i for i, e in enumerate(path) if i >= ancestor_at}
        runs: list[CellRunStats] = []
        seen: dict[str, int] = {}
        ordered = sorted((r for r in records if r.end in after), key=lambda r: after[r.end])
        for rec in ordered:
            seen[rec.cell_id] = seen.get(rec.cell_id, 0) + 1
            runs.append(_run_stats(session, rec, seen[rec.cell_id], kernels.label(rec)))
        per_branch.append(runs)
    if not any(per_branch):
        return None
    order = merge_orders([[(r.cell_id, r.run) for r in runs] for runs in per_branch])
    rows = []
    for cell_id, run in order:
        found = [next((r for r in runs if r.cell_id == cell_id and r.run == run), None) for runs in per_branch]
        prompt = next((r.prompt for r in found if r is not None and r.prompt), "")
        rows.append(CellRow(cell_id=cell_id, run=run, prompt=prompt, runs=found))
    return CellComparison(names=names, rows=rows)


K = TypeVar("K", bound=Hashable)


def merge_orders(sequences: list[list[K]]) -> list[K]:
    """One order of every item of ``sequences`` that keeps each sequence's own order where it can.

    Used to line up the cells several branches (or several students) ran: an item only an
    earlier sequence had keeps its place, a new one goes right after the item it followed.
    """
    order: list[K] = []
    for seq in sequences:
        mine = set(seq)
        last = -1
        for key in seq:
            if key in order:
                last = order.index(key)
                continue
            last += 1
            while last < len(order) and order[last] not in mine:
                last += 1  # past cells only earlier sequences ran: they keep their place
            order.insert(last, key)
    return order


def _run_stats(session: Session, rec: CellRecord, run: int, label: str | None) -> CellRunStats:
    stats = CellRunStats(cell_id=rec.cell_id, run=run, execution_count=rec.execution_count, label=label, end=rec.end)
    first_ms = last_ms = None
    for eid in rec.produced:
        entry = digest.lookup(session, eid)
        if entry is None:
            continue
        msg = digest.message(entry)
        if msg is None:
            continue
        # a run's time, as a turn's in the turn table: from the first message it wrote to its last
        ms = digest.entry_ms(entry)
        if ms is not None:
            first_ms = ms if first_ms is None else min(first_ms, ms)
            last_ms = ms if last_ms is None else max(last_ms, ms)
        if digest.is_head(entry) and not stats.prompt:
            stats.prompt = digest.entry_text(entry)
        if msg.get("role") == "assistant":
            tokens, cost, _ = digest.usage(msg)
            stats.tokens += tokens
            stats.cost += cost
            stats.tool_calls += len(digest.tool_calls(msg))
            stats.stop_reason = digest.as_text(msg.get("stopReason") or "stop")
            text = digest.content_text(msg.get("content"))
            if text.strip():
                stats.answer = text
            elif stats.stop_reason == "error":
                stats.answer = f"(error: {digest.error_summary(digest.as_text(msg.get('errorMessage') or 'unknown'))})"
    if first_ms is not None and last_ms is not None:
        stats.duration_s = max(0.0, (last_ms - first_ms) / 1000)
    return stats
