"""Experiment outputs in Markdown, for the readers that do not draw their HTML (see :mod:`pi_jupyter.views.reader_bundle`).

The status line, the per-variant table and the verdicts of a :class:`~.analysis.Summary`, the
branch table of an :class:`~.result.ExperimentResult`, and the judgements of a
:class:`~.judging.Preferences`, written with :mod:`pi_jupyter.views.markdown_safe` so nothing in
a score name, a variant value or an answer becomes markup.
"""

from __future__ import annotations

from typing import Any

from ..views.markdown_safe import md_text
from ..views.reader_bundle import md_table

ANSWER_CHARS = 120


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def summary_markdown(summary: Any, records: list[dict[str, Any]]) -> str:
    """The status line, the per-variant table (``records``: its rows as text), the verdicts, the judgements and the notes."""
    parts = [f"**{md_text(summary.status)}**"]
    if records:
        parts.append(md_table(list(records[0]), [[_value(v) for v in r.values()] for r in records]))
    if summary.comparisons:
        lines = summary.verdicts()
        parts.append(md_text(f"verdicts ({len(lines)}):") + "\n\n" + "\n".join(f"- {md_text(line)}" for line in lines))
    if summary.judged:
        parts.append(md_text(summary.judged[0]) + "\n\n" + "\n".join(f"- {md_text(line.strip())}" for line in summary.judged[1:]))
    parts += [md_text(note) for note in summary.notes]
    return "\n\n".join(parts)


def result_markdown(result: Any) -> str:
    """The summary, then one row per branch (long texts clipped)."""
    parts = [result.summary().to_markdown()]
    records = result.records()
    if records:
        cols = [c for c in records[0] if c != "leaf"]
        rows = [[_value(r.get(c))[:ANSWER_CHARS] for c in cols] for r in records]
        parts.append(md_table(cols, rows))
    return "\n\n".join(parts)


def preferences_markdown(prefs: Any) -> str:
    """The judgements' lines as a heading line and a list."""
    lines = prefs.lines()
    if not lines:
        return "no judgements yet"
    return md_text(lines[0]) + "\n\n" + "\n".join(f"- {md_text(line.strip())}" for line in lines[1:])
