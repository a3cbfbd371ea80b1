"""A redraw in two steps: the new turn at once, under its parent; Graphviz's layout of the whole a moment later.

Laying a 200-node tree out again takes Graphviz 35-60 ms, most of it measuring every label's
text. When a run appends a turn, the picture the user looks at changes by one or two nodes and
an edge. :func:`provisional` draws only those nodes (and any node whose box changed, such as the
old leaf) with Graphviz, places each new node under its parent, in the first free spot of its
rank, and each changed node where it was, and adds a straight edge to every new node. The
TreeView shows that at once and then sends the whole layout as a patch of it (the nodes move to
where Graphviz puts them: usually nowhere, the layout of a growing session is stable).

A node that went away (folded into its neighbour as the run went on) is taken out with its
edges, and an edge into a node already drawn is drawn straight when its parent is above it.
Anything else (a new root, a node moved under a parent beside or below it, more than a few new
or changed nodes, a layout direction other than top to bottom, no drawing yet) gives ``None``:
the whole layout is drawn as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...views.graph.render import render_svg
from . import patch as tree_patch
from .patch import Drawing, Part

MAX_NEW = 16
"""More new or changed nodes than this: only the whole layout (it is a different picture, not a grown one)."""

RANK_GAP = 21.6  # ranksep 0.30 in, in points (graph.py's graph_attrs)
NODE_GAP = 15.84  # nodesep 0.22 in
ARROW = 6.0  # arrowsize 0.6 x 10 pt
MARGIN = 4.0

_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_SHAPE = re.compile(r'<(?:path|polygon)\b[^>]*?\s(?:d|points)="([^"]*)"')
_SIZE = re.compile(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"\s+viewBox="([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)"')
_BACKGROUND = re.compile(r'(<polygon fill="[^"]*" stroke="transparent" points=")([^"]*)(")')

Box = tuple[float, float, float, float]


def draw_small(source: str) -> str | None:
    """The SVG of the new nodes' small graph (``dot``, kept running: see :mod:`~pi_jupyter.views.graph.dot_pipe`), or ``None``."""
    return render_svg(source, backend="dot", timeout=10).svg


def box_of(part: Part) -> Box | None:
    """A node's outline box (x0, y0, x1, y1) where it is drawn (its first shape, moved by its translation)."""
    shape = _SHAPE.search(part.body)
    if shape is None:
        return None
    nums = [float(n) for n in _NUM.findall(shape.group(1))]
    if len(nums) < 4:
        return None
    xs, ys = nums[0::2], nums[1::2]
    dx, dy = part.offset
    return min(xs) + dx, min(ys) + dy, max(xs) + dx, max(ys) + dy


def edges_of(model: Any) -> set[tuple[str, str, bool]]:
    """A drawing's edges as ``(tail, head, on the current path)`` (an edge that joins or leaves the path is drawn anew)."""
    on_path = set(zip(model.path, model.path[1:], strict=False))
    return {(t, h, (t, h) in on_path) for t, h in model.edges}


def provisional(
    old: Drawing | None,
    before: dict[str, str],
    edges_before: set[tuple[str, str, bool]],
    model: Any,
    source: str,
    draw: Callable[[str], str | None],
) -> str | None:
    """The last picture grown by ``model``'s new nodes (see the module docstring), or ``None``.

    ``before``: the last drawing's node statements; ``edges_before``: its edges as
    ``(tail, head, on path)``; ``source``: the new DOT source; ``draw``: DOT to SVG (``None`` on failure).
    """
    if old is None or not before or getattr(model.options, "rankdir", "TB") != "TB":
        return None
    statements: dict[str, str] = model.statements
    fresh = [key for key in statements if key not in before]
    changed = [key for key in statements if key in before and statements[key] != before[key]]
    removed = {key for key in before if key not in statements}  # folded into a neighbour as the run went on
    if not fresh or len(fresh) + len(changed) + len(removed) > MAX_NEW:
        return None
    parents = {key: model.nodes[key].parent for key in fresh}
    if any(parent is None or parent not in statements for parent in parents.values()):
        return None  # a new root: a different picture
    edges = edges_of(model)
    added = edges - edges_before
    if len(added) > MAX_NEW:
        return None
    small = _small_graph(source, model, fresh + changed, added)
    svg = draw(small) if small is not None else None
    drawn = tree_patch.parse(svg) if svg else None
    if drawn is None or any(p.kind == "other" for p in old.parts.values()):
        return None
    gone = {(t, h) for t, h, _ in edges_before - edges}
    return _grow(old, drawn, fresh, changed, removed, gone, {(t, h) for t, h, _ in added}, parents, model)


def _small_graph(source: str, model: Any, keys: list[str], added: set[tuple[str, str, bool]]) -> str | None:
    """DOT for the nodes in ``keys`` and the new edges (with their ends, so each edge is drawn as Graphviz draws it)."""
    statements: dict[str, str] = model.statements
    lines = source.split("\n", 8)[:8]  # the graph's line and its attribute lines come first
    head = [lines[0]] + [line for line in lines[1:] if line.startswith(("\tgraph [", "\tnode [", "\tedge ["))]
    if not head[0].startswith("digraph"):
        return None
    ends = dict.fromkeys(k for t, h, _ in added for k in (t, h) if k not in keys and k in statements)
    body = [statements[k] for k in [*keys, *ends]]
    for tail, head_key, _ in sorted(added):
        line = model.edge_statements.get((tail, head_key))
        if line is None:
            return None
        body.append(line)
    return "\n".join(head) + "\n" + "".join(b if b.endswith("\n") else b + "\n" for b in body) + "}\n"


def _grow(
    old: Drawing,
    drawn: Drawing,
    fresh: list[str],
    changed: list[str],
    removed: set[str],
    gone: set[tuple[str, str]],
    added: set[tuple[str, str]],
    parents: dict[str, Any],
    model: Any,
) -> str | None:
    boxes: dict[str, Box] = {}
    for part in old.parts.values():
        if part.kind == "node" and part.key not in removed:
            box = box_of(part)
            if box is not None:
                boxes[part.key] = box
    by_key = {p.key: p for p in drawn.parts.values() if p.kind == "node"}
    replaced: dict[str, str] = {}
    for key in changed:
        now, was = by_key.get(key), boxes.get(key)
        box = box_of(now) if now is not None else None
        if now is None or box is None or was is None:
            return None
        # where it was: the same top and centre (edges into it still meet it)
        dx = (was[0] + was[2]) / 2 - (box[0] + box[2]) / 2
        dy = was[1] - box[1]
        replaced[key] = _moved(now, dx, dy)
        boxes[key] = (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)
    placed: list[str] = []
    children = {k: list(n.children) for k, n in model.nodes.items()}
    for key in fresh:  # parents come before their children in the model's order
        new = by_key.get(key)
        box = box_of(new) if new is not None else None
        parent = boxes.get(parents[key])
        if new is None or box is None or parent is None:
            return None
        w, h = box[2] - box[0], box[3] - box[1]
        siblings = [boxes[c] for c in children.get(parents[key], []) if c in boxes]
        cy = (siblings[0][1] + siblings[0][3]) / 2 if siblings else parent[3] + RANK_GAP + h / 2
        cx = max(b[2] for b in siblings) + NODE_GAP + w / 2 if siblings else (parent[0] + parent[2]) / 2
        cx = _free_spot(cx, cy, w, h, boxes.values())
        dx, dy = cx - w / 2 - box[0], cy - h / 2 - box[1]
        placed.append(_moved(new, dx, dy))
        boxes[key] = (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)
    for part in drawn.parts.values():
        if part.kind == "edge":
            ends = _ends(part)
            if ends not in added:
                continue
            if ends[0] not in boxes or ends[1] not in boxes:
                return None
            if boxes[ends[1]][1] <= boxes[ends[0]][3]:
                return None  # a node moved under another parent that is not above it: only the layout can show that
            placed.append(_edge(part, boxes[ends[0]], boxes[ends[1]]))
    parts = []
    for part in old.parts.values():
        if part.kind == "node" and part.key not in removed:
            parts.append(replaced.get(part.key, part.body))
        elif part.kind == "edge" and _ends(part) not in gone:
            parts.append(part.body)
    return _resized(old.head, old.shift, boxes.values()) + "".join(parts) + "".join(placed) + old.tail


def _ends(part: Part) -> tuple[str, str]:
    tail, _, head = part.key.partition("->")
    return tail, head


def _free_spot(cx: float, cy: float, w: float, h: float, boxes: Any) -> float:
    """The first x at or right of ``cx`` where a ``w`` x ``h`` box centred on ``cy`` overlaps no box."""
    band = sorted((b for b in boxes if b[1] < cy + h / 2 + 2 and b[3] > cy - h / 2 - 2), key=lambda b: b[0])
    for b in band:
        if b[0] < cx + w / 2 + NODE_GAP / 2 and b[2] > cx - w / 2 - NODE_GAP / 2:
            cx = b[2] + NODE_GAP + w / 2
    return cx


def _moved(part: Part, dx: float, dy: float) -> str:
    """The part's drawing translated by ``dx, dy`` (the translation written on its group)."""
    dx, dy = dx + part.offset[0], dy + part.offset[1]
    moved = f'transform="translate({dx:.2f} {dy:.2f})"'
    body = re.sub(r'(<g id="[^"]*" class="node[^"]*")(?: transform="[^"]*")?', lambda m: f"{m.group(1)} {moved}", part.body, count=1)
    return body.replace('<g id="', '<g id="pi-q-', 1)  # Graphviz numbered it in the small graph: not a name of the big one


def _edge(part: Part, tail: Box, head: Box) -> str:
    """Graphviz's drawing of a new edge, re-routed from the bottom of ``tail`` to the top of ``head``."""
    x1, y1 = (tail[0] + tail[2]) / 2, tail[3]
    x2, y2 = (head[0] + head[2]) / 2, head[1]
    end = y2 - ARROW
    k = (end - y1) / 3
    path = f"M{x1:.2f},{y1:.2f}C{x1:.2f},{y1 + k:.2f} {x2:.2f},{end - k:.2f} {x2:.2f},{end:.2f}"
    arrow = f"{x2 - 2.1:.2f},{end:.2f} {x2:.2f},{y2:.2f} {x2 + 2.1:.2f},{end:.2f} {x2 - 2.1:.2f},{end:.2f}"
    body = re.sub(r'(<path\b[^>]*?\sd=")[^"]*(")', lambda m: m.group(1) + path + m.group(2), part.body, count=1)
    body = re.sub(r'(<polygon\b[^>]*?\spoints=")[^"]*(")', lambda m: m.group(1) + arrow + m.group(2), body, count=1)
    return body.replace('<g id="', '<g id="pi-q-', 1)


def _resized(head: str, shift: tuple[float, float], boxes: Any) -> str:
    """The picture's head, its size grown to hold every box (the graph's translation stays)."""
    size = _SIZE.search(head)
    if size is None:
        return head
    width, height = float(size.group(5)), float(size.group(6))
    right = max([b[2] for b in boxes] + [width - shift[0] - MARGIN]) + shift[0] + MARGIN
    bottom = max([b[3] for b in boxes] + [height - shift[1] - MARGIN]) + shift[1] + MARGIN
    if right <= width and bottom <= height:
        return head
    width, height = max(width, right), max(height, bottom)
    svg = f'<svg width="{width:.0f}pt" height="{height:.0f}pt"\n viewBox="0.00 0.00 {width:.2f} {height:.2f}"'
    head = head[: size.start()] + svg + head[size.end() :]
    x0, y0, x1, y1 = -shift[0], -shift[1], width - shift[0], height - shift[1]
    rect = f"{x0:.2f},{y1:.2f} {x0:.2f},{y0:.2f} {x1:.2f},{y0:.2f} {x1:.2f},{y1:.2f} {x0:.2f},{y1:.2f}"
    return _BACKGROUND.sub(lambda m: m.group(1) + rect + m.group(3), head, count=1)
