"""Pictures a saved notebook shows in every viewer, trusted or not: SVG as ``<img>`` data URIs.

A notebook someone else wrote (downloaded, cloned, shared) opens *untrusted* in JupyterLab.
There ``image/svg+xml`` is not drawn at all (the text beside it is shown instead) and inline
``<svg>`` in ``text/html`` is removed by the sanitizer, leaving its labels as loose text; an
``<img>`` whose source is a ``data:image/svg+xml`` URI is kept and drawn, and so it is by
nbconvert's HTML and a trusted JupyterLab. A live output keeps its inline SVG (tooltips,
links); this turns the pictures of a notebook that is *saved for readers* into images.
No IPython, widget or nbconvert import here.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from .outputs import outputs_of

SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'
_SVG_TAG = re.compile(r"<svg\b|</svg\s*>", re.IGNORECASE)


def svg_image(svg: str) -> str:
    """``svg`` as an ``<img>`` with a ``data:image/svg+xml`` source (an image needs the SVG namespace: added when missing)."""
    head, sep, rest = svg.partition(">")
    if "xmlns=" not in head:
        head = re.sub(r"<svg\b", f"<svg {SVG_NS}", head, count=1, flags=re.IGNORECASE)
    data = base64.b64encode((head + sep + rest).encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="" style="max-width:100%">'


def inline_svg_as_images(page: str) -> str:
    """``page`` (HTML) with each outermost inline ``<svg>…</svg>`` replaced by :func:`svg_image`;
    a page whose ``<svg>`` tags do not balance is returned as it is."""
    parts: list[str] = []
    depth = start = done = 0
    for tag in _SVG_TAG.finditer(page):
        if tag.group().startswith("</"):
            if depth == 0:
                return page
            depth -= 1
            if depth == 0:
                parts += [page[done:start], svg_image(page[start : tag.end()])]
                done = tag.end()
        else:
            if depth == 0:
                start = tag.start()
            depth += 1
    if depth:
        return page
    return "".join([*parts, page[done:]])


def _text(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return value if isinstance(value, str) else None


def pictures_for_every_viewer(nb: Any) -> int:
    """Make every SVG picture in ``nb``'s outputs an image any viewer draws, in place; returns how many outputs changed.

    HTML with inline SVG gets images instead; an output with ``image/svg+xml`` and no HTML gets
    an HTML image of it (sharper than a PNG beside it, which an untrusted JupyterLab would draw
    at 72 dpi; LaTeX exports still take the PNG). Anything of an unexpected shape is left alone.
    """
    changed = 0
    for output in outputs_of(nb):
        data = output.get("data")
        if not isinstance(data, dict):
            continue
        page = _text(data.get("text/html"))
        svg = _text(data.get("image/svg+xml"))
        if page is not None and re.search(r"<svg\b", page, re.IGNORECASE):
            new = inline_svg_as_images(page)
            if new != page:
                data["text/html"] = new
                changed += 1
        elif page is None and svg is not None:
            data["text/html"] = svg_image(svg)
            changed += 1
    return changed


__all__ = ["inline_svg_as_images", "pictures_for_every_viewer", "svg_image"]
