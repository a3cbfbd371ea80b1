"""A small SVG bar chart of one metric per branch (no matplotlib, no network)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..views.figure import SvgFigure, nice_max

_COLOURS = {"done": "#1f6feb", "failed": "#d1242f", "aborted": "#d1242f", "running": "#bf8700", "skipped": "#8c959f"}


def bar_chart(labels: Sequence[str], values: Sequence[float | None], *, title: str, states: Sequence[str] = ()) -> SvgFigure:
    """Horizontal bars, one per branch, coloured by state; a branch without a value shows its state."""
    row_h, label_w, bar_w, width = 18, 260, 320, 660
    height = 30 + row_h * max(1, len(labels)) + 10
    top = nice_max(max([v for v in values if v is not None] or [0.0]))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="11" class="pi-experiment-figure">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-weight="bold">{html.escape(title)} per branch</text>',
    ]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 30 + i * row_h
        state = states[i] if i < len(states) else "done"
        short = label if len(label) <= 42 else label[:41] + "…"
        out.append(f'<text x="8" y="{y + 12}">{html.escape(short)}</text>')
        if value is None:
            out.append(f'<text x="{label_w}" y="{y + 12}" fill="#57606a">{html.escape(state)}</text>')
            continue
        w = max(1.0, bar_w * float(value) / top) if value else 1.0
        colour = _COLOURS.get(state, "#1f6feb")
        tip = f"<title>{html.escape(label)}: {value}</title>"
        out.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{colour}">{tip}</rect>')
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}">{html.escape(shown)}</text>')
    out.append("</svg>")
    return SvgFigure(svg="".join(out))
