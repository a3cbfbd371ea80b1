"""A redrawn tree as a patch: only what changed since the picture the browser shows.

After a new turn most of a large tree looks exactly as before: Graphviz's layout of a session
is stable, so a turn adds a node and an edge and moves a few nodes. (Graphviz measures heights
from the bottom, so a deeper tree changes every coordinate in the SVG and the graph's
translation with them; elements are compared where they land, coordinates plus translation.) Sending (and parsing, and
laying out again) a 0.4 MB picture for that is most of a redraw's cost in the browser.
:func:`svg_patch` compares the new picture with the last one, element by element (a node or an
edge, known by its ``<title>``), and keeps:

* a node whose DOT statement did not change but which the layout moved: a stub
  ``<g class="node" data-at="X,Y"><title>…</title></g>`` naming where Graphviz put the first
  point of its outline now (the browser moves its own copy there: a node's statement fixes its
  whole drawing up to a translation);
* every new or changed node and edge, whole (the browser inserts it, or replaces its copy);
* ``<g class="node|edge" data-gone=""><title>…</title></g>`` for an element that is no longer drawn.

Elements drawn exactly as before are left out. The patch's ``<svg>`` and ``<g class="graph">``
carry the new picture's size and translation; the browser keeps its own translation and moves
what it inserts by the difference.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from functools import cached_property

_START = "<!-- "
_GROUP = re.compile(r'<g id="[^"]*" class="(node|edge)[ "][^>]*?(?: transform="translate\((-?[\d.]+) (-?[\d.]+)\)")?>')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_ID = re.compile(r'^(\s*<g) id="[^"]*"', re.M)
_SHIFT = re.compile(r'<g id="[^"]*" class="graph" transform="[^"]*translate\((-?[\d.]+)[ ,]+(-?[\d.]+)\)')
_GEOMETRY = re.compile(r'\s(?:d|points)="([^"]*)"')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_ANCHOR = re.compile(r'<(?:path|polygon)\b[^>]*?\s(?:d|points)="M?\s*(-?[\d.]+)[ ,]+(-?[\d.]+)')


@dataclass
class Part:
    """One element of a Graphviz picture: a node or an edge group (``other`` for anything else), with its comment."""

    kind: str
    title: str
    """The ``<title>`` as written in the SVG (escaped)."""
    body: str
    anchor: tuple[str, str] | None = None
    """The first point of a node's outline, where it is drawn."""
    offset: tuple[float, float] = (0.0, 0.0)
    """The translation written on the group (a node placed before Graphviz laid the picture out: :mod:`.tree_quick`)."""

    @property
    def key(self) -> str:
        """The node's key (or the edge's ``tail->head``), unescaped."""
        return html.unescape(self.title)

    @cached_property
    def sig(self) -> str:
        """The element's drawing without its ``id`` (Graphviz numbers elements in order, so ids shift)."""
        return _ID.sub(r"\1", self.body, count=1)


@dataclass
class Drawing:
    """A Graphviz SVG cut into its head (``<svg>``, the graph's group, background), elements and tail."""

    head: str
    tail: str
    shift: tuple[float, float] = (0.0, 0.0)
    """The graph group's translation (where the SVG's coordinates land)."""
    parts: dict[str, Part] = field(default_factory=dict)
    """By ``kind:title``, in drawing order."""


def parse(svg: str) -> Drawing | None:
    """Cut ``svg`` into a :class:`Drawing`; ``None`` when it is not laid out as Graphviz writes SVG."""
    first = svg.find(_START)
    end = svg.rfind("</g>")
    if first < 0 or end < first:
        return None
    shift = _SHIFT.search(svg, 0, first)
    if shift is None:
        return None
    drawing = Drawing(head=svg[:first], tail=svg[end:], shift=(float(shift.group(1)), float(shift.group(2))))
    at = first
    n = 0
    while at < end:
        nxt = svg.find(_START, at + len(_START))
        if nxt < 0 or nxt > end:
            nxt = end
        chunk = svg[at:nxt]
        at = nxt
        head = chunk.find("-->")
        body = chunk[head + 3 :] if head >= 0 else chunk
        group = _GROUP.match(body.lstrip())
        title = _TITLE.search(body)
        if group is None or title is None:
            n += 1
            drawing.parts[f"other:{n}"] = Part("other", str(n), chunk)
            continue
        kind = group.group(1)
        offset = (float(group.group(2)), float(group.group(3))) if group.group(2) else (0.0, 0.0)
        anchor = _ANCHOR.search(body) if kind == "node" else None
        where = (anchor.group(1), anchor.group(2)) if anchor else None
        if where is not None and group.group(2):
            where = (_num(float(where[0]) + offset[0]), _num(float(where[1]) + offset[1]))
        part = Part(kind, title.group(1), chunk, where, offset)
        drawing.parts[f"{kind}:{part.title}"] = part
    return drawing


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def svg_patch(old: Drawing, new: Drawing, same: set[str]) -> str | None:
    """``new`` as a patch of ``old`` (see the module docstring); ``same``: keys of nodes whose DOT statement did not change.

    ``None`` when nothing could be left out, or the picture has an element the browser cannot name.
    """
    if any(p.kind == "other" for d in (old, new) for p in d.parts.values()):
        return None  # an element the browser cannot name (a cluster): draw the whole picture
    dx, dy = new.shift[0] - old.shift[0], new.shift[1] - old.shift[1]
    out = [new.head]
    left_out = 0
    for ident, part in new.parts.items():
        was = old.parts.get(ident)
        if was is not None and part.kind == "node" and part.anchor and was.anchor and part.key in same:
            left_out += 1
            if not _near(was.anchor, part.anchor, dx, dy):
                out.append(f'<g class="node" data-at="{part.anchor[0]},{part.anchor[1]}"><title>{part.title}</title></g>\n')
            continue
        if was is not None and _drawn_alike(was.sig, part.sig, dx, dy):
            left_out += 1
            continue
        out.append(part.body)
    for ident, was in old.parts.items():
        if ident not in new.parts:
            out.append(f'<g class="{was.kind}" data-gone=""><title>{was.title}</title></g>\n')
    out.append(new.tail)
    return "".join(out) if left_out else None


def _near(old: tuple[str, str], new: tuple[str, str], dx: float, dy: float) -> bool:
    """True when the point ``new`` lands where ``old`` did (the SVG's translation moved by ``dx, dy``)."""
    return abs(float(old[0]) - float(new[0]) - dx) < 0.005 and abs(float(old[1]) - float(new[1]) - dy) < 0.005


def _drawn_alike(old: str, new: str, dx: float, dy: float) -> bool:
    """True when two drawings differ at most by their geometry, and that only by the translation's change."""
    if not dx and not dy:
        return old == new
    old_geo = _GEOMETRY.findall(old)
    new_geo = _GEOMETRY.findall(new)
    if len(old_geo) != len(new_geo) or _GEOMETRY.sub(" g", old) != _GEOMETRY.sub(" g", new):
        return False
    for a, b in zip(old_geo, new_geo, strict=True):
        xs, ys = _NUMBER.findall(a), _NUMBER.findall(b)
        if len(xs) != len(ys) or _NUMBER.sub("0", a) != _NUMBER.sub("0", b):
            return False
        for i, (p, q) in enumerate(zip(xs, ys, strict=True)):
            if abs(float(p) - float(q) - (dy if i % 2 else dx)) >= 0.005:
                return False
    return True
