"""A small SVG bar chart of one metric per branch (no matplotlib, no network)."""

from __future__ import annotations

import html
import math
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


def interval_chart(labels: Sequence[str], estimates: Sequence[tuple[float, float | None, float | None, int]], *, title: str) -> SvgFigure:
    """One row per variant: its mean as a dot and its 95% interval as a line, on one shared axis
    (``estimates``: mean, low, high, n); a variant with too few branches for an interval shows its dot only."""
    row_h, label_w, axis_w, width = 22, 240, 300, 700
    height = 46 + row_h * max(1, len(labels)) + 24
    # the axis spans the finite values (an unbounded interval runs to its edge)
    points = [x for m, lo, hi, _ in estimates for x in (m, lo, hi) if x is not None and math.isfinite(x)]
    lo_axis, hi_axis = min([0.0, *points]), max([0.0, *points])
    if hi_axis / 2 - lo_axis / 2 < 1e-12:
        hi_axis = lo_axis + 1.0
    if 0 <= lo_axis and hi_axis <= 1:
        lo_axis, hi_axis = 0.0, 1.0  # a share: the whole 0-1 scale
    else:
        hi_axis = nice_max(hi_axis) if hi_axis > 0 else hi_axis
        lo_axis = -nice_max(-lo_axis) if lo_axis < 0 else lo_axis

    def x_of(v: float) -> float:
        # halves first: the span of scores near 1e308 does not fit in a float
        share = (v / 2 - lo_axis / 2) / (hi_axis / 2 - lo_axis / 2)
        return label_w + axis_w * min(1.0, max(0.0, share))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="11" class="pi-experiment-figure">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-weight="bold">{html.escape(title)}: mean and 95% interval per variant</text>',
    ]
    top, bottom = 34, 34 + row_h * max(1, len(labels))
    for tick in (lo_axis, (lo_axis + hi_axis) / 2, hi_axis):
        x = x_of(tick)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#d0d7de"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle" fill="#57606a">{tick:.3g}</text>')
    for i, (label, (mean, low, high, n)) in enumerate(zip(labels, estimates, strict=True)):
        y = top + i * row_h + row_h / 2
        short = label if len(label) <= 42 else label[:41] + "…"
        out.append(f'<text x="8" y="{y + 4:.1f}">{html.escape(short)}</text>')
        interval = f"[{low:.3g}, {high:.3g}]" if low is not None and high is not None else "(no interval)"
        tip = f"<title>{html.escape(label)}: {mean:.3g} {interval}, n = {n}</title>"
        if low is not None and high is not None:
            out.append(
                f'<line x1="{x_of(low):.1f}" y1="{y:.1f}" x2="{x_of(high):.1f}" y2="{y:.1f}" stroke="#1f6feb" stroke-width="2">{tip}</line>'
            )
        out.append(f'<circle cx="{x_of(mean):.1f}" cy="{y:.1f}" r="4" fill="#1f6feb">{tip}</circle>')
        out.append(f'<text x="{label_w + axis_w + 10}" y="{y + 4:.1f}" fill="#57606a">{mean:.3g} {html.escape(interval)} n={n}</text>')
    out.append("</svg>")
    return SvgFigure(svg="".join(out))
