"""``%pi compare`` in Markdown: the form Markdown exports and sanitizing readers show (see :mod:`.reader_bundle`).

The same facts as the HTML: the common ancestor, the numbers per branch as a table, the cells
each branch ran (their prompts and answers, with tokens, cost, time and tool calls), the final
answers, and the variables and files that differ. Every text from the session is written with
:mod:`.markdown_safe`, so nothing a model or a user wrote becomes markup.
"""

from __future__ import annotations

from typing import Any

from . import digest
from .compare.cells import CellComparison, row_name
from .compare.diff import seconds_text
from .markdown_safe import md_code, md_fence, md_quote, md_text
from .reader_bundle import md_table
from .scores import score_value_text, variant_text

ANSWER_CHARS = 1500


def _metrics(branches: list[Any], scores: list[str]) -> list[tuple[str, list[str]]]:
    rows: list[tuple[str, list[str]]] = [
        ("leaf", [b.leaf_id for b in branches]),
        ("turns", [f"{b.turns:,}" for b in branches]),
        ("tool calls", [f"{b.tool_calls:,}" + (f" ({b.tool_errors} failed)" if b.tool_errors else "") for b in branches]),
        ("tokens", [f"{b.tokens:,}" for b in branches]),
        ("input / output", [f"{b.input_tokens:,} / {b.output_tokens:,}" for b in branches]),
        ("cost", [digest.cost_text(b.cost) for b in branches]),
        ("duration", [seconds_text(b.duration_s) for b in branches]),
        ("stop reasons", [", ".join(f"{k} ×{v}" for k, v in sorted(b.stop_reasons.items())) or "–" for b in branches]),
        ("final stop", [b.final_stop_reason or "–" for b in branches]),
    ]
    if any(b.variant for b in branches):
        rows.insert(1, ("variant", [variant_text(b.variant) or "–" for b in branches]))
    for name in scores:
        rows.append((f"score: {name}", [score_value_text(b.scores.get(name)) for b in branches]))
    return rows


def comparison_markdown(c: Any) -> str:
    """The comparison as Markdown (the table, cell by cell or the final answers)."""
    if c.ancestor_id is None:
        head = "The branches share no entry."
    else:
        head = f"**Common ancestor** {md_code(c.ancestor_id)}" + (f": {md_text(c.ancestor_preview)}" if c.ancestor_preview else "")
    metrics = _metrics(c.branches, c.score_names())
    if len(c.branches) <= 4:
        table = md_table(["", *[b.name for b in c.branches]], [[title, *values] for title, values in metrics])
    else:
        table = md_table(["branch", *[t for t, _ in metrics]], [[b.name, *[v[i] for _, v in metrics]] for i, b in enumerate(c.branches)])
    parts = [head, table]
    if c.cells is not None and c.by != "turns":
        parts.append(cells_markdown(c.cells))
        parts.append(md_text("Turn by turn: comparison.by_turn() or %pi compare --turns …"))
        return "\n\n".join(parts)
    parts.append("**Final answers**")
    for b in c.branches:
        answer = digest.clip(b.final_answer, ANSWER_CHARS)
        parts.append(f"*{md_text(b.name)}*\n\n" + (md_quote(answer) if answer.strip() else "*no answer*"))
    return "\n\n".join(parts)


def cells_markdown(cells: CellComparison) -> str:
    """The cells the branches ran, one section per cell run, and the totals."""
    parts = [f"**Cell by cell** ({digest.plural(len(cells.rows), 'cell run')})"]
    for position, row in enumerate(cells.rows):
        only = row.only_in
        note = f" · only on {', '.join(cells.names[i] for i in only)}" if only else ""
        parts.append(f"**{md_text(row_name(row, position))}**{md_text(note)}")
        if row.prompt.strip():
            parts.append(md_quote(digest.clip(row.prompt, 300)))
        for name, run in zip(cells.names, row.runs, strict=True):
            if run is None:
                parts.append(f"*{md_text(name)}*: did not run on this branch")
                continue
            answer = digest.clip(run.answer, ANSWER_CHARS)
            parts.append(f"*{md_text(name)}* ({md_text(run.stats())})\n\n" + (md_quote(answer) if answer.strip() else "*no answer*"))
    totals = [
        [
            name,
            digest.plural(t["cells"], "cell"),
            f"{t['tokens']:,}",
            digest.cost_text(t["cost"]),
            seconds_text(t["duration_s"]),
            digest.plural(t["tool_calls"], "tool call"),
        ]
        for name, t in zip(cells.names, cells.totals(), strict=True)
    ]
    parts.append(md_table(["totals", "cells", "tokens", "cost", "time", "tool calls"], totals))
    return "\n\n".join(parts)


def world_markdown(w: Any) -> str:
    """The variables and files that differ, as a table, and each diff in a fence."""
    if not w.rows:
        return md_text(str(w))
    rows = [[f"{r.kind} {r.key}", *r.cells] for r in w.rows]
    parts = ["**Variables and files that differ**", md_table(["", *w.names], rows)]
    for r in w.rows:
        if r.diff:
            parts.append(f"{md_text(f'{r.kind} {r.key}')}, diff:\n\n" + md_fence(r.diff, "diff"))
    return "\n\n".join(parts)
