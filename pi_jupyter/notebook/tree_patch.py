"""A redrawn tree as a patch: the new picture with the nodes the browser already shows left out.

After a new turn most nodes of a large tree look exactly as before; only the layout moved them.
Sending (and parsing, and laying out again) a 0.4 MB picture for that is most of a redraw's
cost in the browser. :func:`svg_patch` replaces every node group whose DOT statement did not
change by a stub that names the node and where Graphviz put it now (the first point of its
outline); the browser moves its own copy of that node there and inserts the rest (new and
changed nodes, every edge). A node's DOT statement fixes its whole drawing up to a translation,
so the moved copy is the same picture Graphviz drew.
"""

from __future__ import annotations

import html
import re

_START = "<!-- "
_NODE = re.compile(r'<g id="[^"]*" class="node[ "]')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_ANCHOR = re.compile(r'<(?:path|polygon)\b[^>]*?\s(?:d|points)="M?\s*(-?[\d.]+)[ ,]+(-?[\d.]+)')


def svg_patch(svg: str, same: set[str]) -> str | None:
    """``svg`` with the groups of nodes in ``same`` (keys) replaced by stubs; ``None`` when nothing is left out.

    A stub is ``<g class="node" data-at="X,Y"><title>…</title></g>``: the node, and the first
    point of its outline in the new layout.
    """
    first = svg.find(_START)
    end = svg.rfind("</g>")
    if first < 0 or end < first:
        return None
    parts = [svg[:first]]
    left_out = 0
    at = first
    while at < end:
        nxt = svg.find(_START, at + len(_START))
        if nxt < 0 or nxt > end:
            nxt = end
        chunk = svg[at:nxt]
        at = nxt
        head = chunk.find("-->")
        body = chunk[head + 3 :] if head >= 0 else chunk
        if _NODE.match(body.lstrip()):
            title = _TITLE.search(body)
            anchor = _ANCHOR.search(body)
            if title and anchor and html.unescape(title.group(1)) in same:
                parts.append(f'<g class="node" data-at="{anchor.group(1)},{anchor.group(2)}"><title>{title.group(1)}</title></g>\n')
                left_out += 1
                continue
        parts.append(chunk)
    parts.append(svg[end:])
    return "".join(parts) if left_out else None
