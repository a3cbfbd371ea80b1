"""The size pictures are shown at in a notebook: ``%config PiMagics.scale`` reaches them through here.

The notebook layer sets the scale (:func:`set_display_scale`); the pictures that display
themselves (``Session.graph()``, comparison and experiment charts) multiply their width and
height by it (:func:`scaled_svg`), so a teacher's ``scale = 2`` enlarges a drawn tree as it
enlarges the widgets' text. Their ``.svg`` text and saved files keep Graphviz's own size.
"""

from __future__ import annotations

import math
import re

_SCALE = [1.0]
_SIZE = re.compile(r'\b(width|height)="([\d.]+)(pt|px)?"')


def set_display_scale(scale: float) -> None:
    """Show pictures ``scale`` times their natural size from now on (0.5 to 4; other values mean 1)."""
    ok = isinstance(scale, (int, float)) and not isinstance(scale, bool) and math.isfinite(scale) and scale > 0
    _SCALE[0] = float(min(4.0, max(0.5, scale))) if ok else 1.0


def display_scale() -> float:
    """The scale pictures are shown at (1.0 unless the notebook set one)."""
    return _SCALE[0]


def scaled_svg(svg: str, scale: float | None = None) -> str:
    """``svg`` with the width and height of its root element multiplied by ``scale`` (default: the display scale)."""
    factor = display_scale() if scale is None else scale
    if factor == 1.0:
        return svg
    start = svg.find("<svg")
    end = svg.find(">", start)
    if start < 0 or end < 0:
        return svg
    head = _SIZE.sub(lambda m: f'{m.group(1)}="{float(m.group(2)) * factor:g}{m.group(3) or ""}"', svg[start:end])
    return svg[:start] + head + svg[end:]
