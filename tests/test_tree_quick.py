"""A TreeView redraw after a new turn: the provisional picture (new nodes placed at once) and the patches around it.

Real Graphviz, real sessions (``views.sample_session``: re-run cells, folds, labels, errors,
compactions). What is checked is what the user would see in each picture the kernel sends:
every node and edge once, a new node below its parent, no node covering another, the picture
large enough to hold them, and the last picture exactly what a fresh view draws.
"""

from __future__ import annotations

import random
import re
import shutil

import pytest
from hostile import VECTORS, live_markup

from pi_jupyter.notebook.tree_view import patch as tree_patch
from pi_jupyter.notebook.tree_view import quick as tree_quick
from pi_jupyter.notebook.tree_view.view import TreeView
from pi_jupyter.views import sample_session, write_turn
from pi_jupyter.views.graph.digraph import build_graph

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz dot")

_VIEWBOX = re.compile(r'viewBox="[\d.]+ [\d.]+ ([\d.]+) ([\d.]+)"')


def recorded(view: TreeView) -> list[dict]:
    sent: list[dict] = []
    view.observe(lambda _change: sent.append({"svg": view.svg, "nodes": view.nodes, "patch": view.svg_patch}), names=["revision"])
    return sent


def check_picture(svg: str, nodes: dict, new: set[str]) -> None:
    drawing = tree_patch.parse(svg)
    assert drawing is not None
    drawn = [p.key for p in drawing.parts.values() if p.kind == "node"]
    assert sorted(drawn) == sorted(nodes), "every node once"
    edges = sorted(p.key for p in drawing.parts.values() if p.kind == "edge")
    assert edges == sorted(f"{n['parent']}->{k}" for k, n in nodes.items() if n["parent"]), "every edge once"
    boxes = {p.key: tree_quick.box_of(p) for p in drawing.parts.values() if p.kind == "node"}
    for key in new:
        assert boxes[key][1] > boxes[nodes[key]["parent"]][3], f"{key} is below its parent"
    items = sorted(boxes.items(), key=lambda kv: kv[1][0])
    for i, (a, p) in enumerate(items):  # no node covers another (sweep along x)
        for b, q in items[i + 1 :]:
            if q[0] >= p[2] - 0.5:
                break
            assert p[3] <= q[1] + 0.5 or q[3] <= p[1] + 0.5, f"{a} and {b} overlap"
    width, height = (float(v) for v in _VIEWBOX.search(svg).groups())
    sx, sy = drawing.shift
    for key, b in boxes.items():
        inside = b[0] + sx >= -0.5 and b[2] + sx <= width + 0.5 and b[1] + sy >= -0.5 and b[3] + sy <= height + 0.5
        assert inside, f"{key} is inside the picture"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_picture_sent_after_a_turn_is_whole_and_the_last_is_graphviz_own(seed):
    rng = random.Random(seed)
    session = sample_session(800, seed=seed)
    view = TreeView(session, debounce=3600)
    sent = recorded(view)
    quick_rounds = 0
    for i in range(8):
        if rng.random() < 0.3:  # a re-run of an earlier turn: the new node gets a sibling
            session.checkout(session.raw_entries()[-rng.randint(3, 30)]["id"])
        before = set(view.nodes)
        write_turn(session, f"turn {i}", f"answer {i}", tools=rng.randint(0, 2), error="boom" if rng.random() < 0.2 else None)
        sent.clear()
        view.redraw()
        assert 1 <= len(sent) <= 2
        for got in sent:
            check_picture(got["svg"], got["nodes"], set(got["nodes"]) - before)
        quick_rounds += len(sent) == 2
        fresh = TreeView(session, debounce=3600)
        assert view.svg == fresh.svg, "the last picture is what a fresh view draws"
        fresh.close()
    assert quick_rounds >= 4, "most turns were shown at once"
    view.close()


def test_hostile_text_in_a_new_turn_stays_text_in_the_provisional_picture():
    session = sample_session(300, seed=7)
    view = TreeView(session, debounce=3600)
    sent = recorded(view)
    for name, payload in VECTORS.items():
        write_turn(session, f"{name}: {payload}", payload)
        sent.clear()
        view.redraw()
        assert len(sent) == 2, name
        for got in sent:  # the provisional picture, the patches and the final one
            for markup in (got["svg"], got["patch"]):
                assert live_markup(markup) == [], name


def test_a_picture_that_is_not_a_grown_one_is_drawn_whole():
    session = sample_session(300, seed=8)
    view = TreeView(session, debounce=3600)
    sent = recorded(view)
    view.mode = "full"  # another mode: every node changes
    sent.clear()
    view.redraw()
    assert len(sent) == 1
    first = session.raw_entries()[3]["id"]
    session.checkout(first)  # the path moves back up: nodes and edges leave it
    sent.clear()
    view.redraw()
    assert len(sent) == 1
    write_turn(session, "a turn from early on", "and its answer")
    sent.clear()
    view.redraw()
    assert len(sent) <= 2
    check_picture(sent[-1]["svg"], sent[-1]["nodes"], set())


def test_provisional_refuses_what_it_cannot_place():
    session = sample_session(200, seed=9)
    view = TreeView(session, debounce=3600)
    drawing = tree_patch.parse(view.svg)
    model = view._graph.model
    same = tree_quick.provisional(drawing, dict(model.statements), set(), model, view._graph.source, lambda _s: None)
    assert same is None  # nothing new
    assert tree_quick.provisional(None, {}, set(), model, view._graph.source, lambda _s: view.svg) is None  # no picture yet
    write_turn(session, "one more", "answer")
    before, edges = dict(model.statements), view._edges
    grown = build_graph(session, header=False, mode="turns")
    assert tree_quick.provisional(drawing, before, edges, grown.model, grown.source, lambda _s: None) is None  # Graphviz failed
    assert tree_quick.provisional(drawing, before, edges, grown.model, grown.source, tree_quick.draw_small) is not None  # else it is drawn
    lr = build_graph(session, header=False, rankdir="LR")
    assert tree_quick.provisional(drawing, before, edges, lr.model, lr.source, lambda s: s) is None  # not top to bottom
