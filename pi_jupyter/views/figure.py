"""A small inline SVG chart of tokens and cost per turn along each branch (no matplotlib, no network)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from pydantic import BaseModel

from . import digest
from .display_scale import scaled_svg

PALETTE = ("#1f6feb", "#d1242f", "#1a7f37", "#8250df", "#bf8700", "#0a7ea4", "#cf4a9b", "#57606a")
"""Branch colours, in order (readable on light and dark backgrounds)."""


class SvgFigure(BaseModel):
    """An SVG image that displays itself in a notebook (``.svg`` holds the text)."""

    svg: str

    def _repr_svg_(self) -> str:
        return scaled_svg(self.svg)  # %config PiMagics.scale enlarges the chart with the text

    def save(self, path: str) -> str:
        """Write the SVG to ``path``; returns the path."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.svg)
        return path


def nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``value`` (1 for zero)."""
    if value <= 0:
        return 1.0
    if not math.isfinite(value) or value > 1e300:
        return value  # no rounder number fits in a float above it
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value * 0.999999:
            return step * power
    return 10 * power


def per_turn_chart(
    names: Sequence[str],
    tokens: Sequence[Sequence[float]],
    costs: Sequence[Sequence[float]],
    *,
    width: int = 660,
    panel_height: int = 150,
    unit: str = "turn",
    ticks: Sequence[str] | None = None,
) -> SvgFigure:
    """Two panels (tokens, cost) with one series per branch, x = turn after the common ancestor.

    Grouped bars when there are few turns, lines with dots when there are many. When nothing cost
    anything (a free or local model) the cost panel is one line saying so.
    """
    legend_h = 18 * math.ceil(len(names) / 3) + 6
    priced = any(v for s in costs for v in s)  # a free model: a cost panel of zeros shows nothing
    height = legend_h + (2 if priced else 1) * (panel_height + 34) + (8 if priced else 26)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="11" class="pi-compare-figure">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
    ]
    for i, name in enumerate(names):
        x = 12 + (i % 3) * (width // 3)
        y = 6 + (i // 3) * 18
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y + 2}" width="12" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 17}" y="{y + 11}" fill="#24292f">{html.escape(digest.clip(name, 34))}</text>')
    top = legend_h
    out.extend(_panel(f"tokens per {unit}", names, tokens, digest.tokens_text, top, width, panel_height, unit, ticks))
    below = top + panel_height + 34
    if priced:
        out.extend(_panel(f"cost per {unit} (USD)", names, costs, digest.cost_text, below, width, panel_height, unit, ticks))
    else:
        out.append(f'<text x="58" y="{below + 16}" fill="#57606a">cost: $0 on every {unit} (a free model)</text>')
    out.append("</svg>")
    return SvgFigure(svg="\n".join(out))


def _panel(title, names, series, fmt, top: int, width: int, height: int, unit: str = "turn", ticks=None) -> list[str]:
    left, right = 58, 12
    plot_w = width - left - right
    y0 = top + 18
    turns = max((len(s) for s in series), default=0)
    peak = nice_max(max((v for s in series for v in s), default=0.0))
    out = [f'<text x="{left}" y="{top + 12}" font-weight="bold" fill="#24292f">{html.escape(title)}</text>']
    for k in range(5):
        value = peak * k / 4
        y = y0 + height - height * k / 4
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#d0d7de" stroke-width="{1 if k else 1.4}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#57606a">{html.escape(fmt(value))}</text>')
    if turns == 0:
        middle = f'x="{left + plot_w / 2}" y="{y0 + height / 2}" text-anchor="middle"'
        out.append(f'<text {middle} fill="#57606a">no {unit}s after the common ancestor</text>')
        return out
    slot = plot_w / turns
    label_every = max(1, math.ceil(turns / 20))
    for t in range(turns):
        if t % label_every == 0 or t == turns - 1:
            cx = left + slot * (t + 0.5)
            tick = html.escape(ticks[t]) if ticks is not None and t < len(ticks) else str(t + 1)
            out.append(f'<text x="{cx:.1f}" y="{y0 + height + 13}" text-anchor="middle" fill="#57606a">{tick}</text>')

    def y_of(v: float) -> float:
        return y0 + height - height * (v / peak)

    bars = turns * len(series) <= 48
    for i, values in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        name = html.escape(names[i])
        if bars:
            bar_w = max(1.0, slot * 0.8 / max(1, len(series)))
            for t, v in enumerate(values):
                x = left + slot * t + slot * 0.1 + bar_w * i
                y = y_of(v)
                out.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{y0 + height - y:.1f}" fill="{color}">'
                    f"<title>{name}, {unit} {t + 1}: {html.escape(fmt(v))}</title></rect>"
                )
        else:
            points = " ".join(f"{left + slot * (t + 0.5):.1f},{y_of(v):.1f}" for t, v in enumerate(values))
            out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.6"/>')
            for t, v in enumerate(values):
                out.append(
                    f'<circle cx="{left + slot * (t + 0.5):.1f}" cy="{y_of(v):.1f}" r="2.4" fill="{color}">'
                    f"<title>{name}, {unit} {t + 1}: {html.escape(fmt(v))}</title></circle>"
                )
    return out
