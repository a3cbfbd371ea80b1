"""A redraw that reuses the last drawing (``GraphCache``) draws exactly what a fresh ``Session.graph()`` draws.

Random sessions grow step by step the way a notebook makes them grow: turns (with tool calls,
errors, aborts), labels, cell records, context edits, experiment scores, compactions, model
changes, checkouts elsewhere followed by new turns (new branches), and a second writer's
entries read back from the file. After every step the cached drawing and a fresh one must
agree on every node (its text, marks, flags, scores), the edges, the leaf, the path and the
header, in both modes.
"""

from __future__ import annotations

import random

import pytest

from pi_jupyter.session import Session
from pi_jupyter.views import write_turn
from pi_jupyter.views.graph.cache import GraphCache
from pi_jupyter.views.graph.digraph import build_graph
from pi_jupyter.views.graph.units import build_units


def snapshot(graph) -> dict:
    m = graph.model
    return {
        "nodes": {k: n.to_dict() for k, n in m.nodes.items()},
        "edges": m.edges,
        "leaf": m.leaf,
        "path": m.path,
        "roots": m.roots,
        "header": m.header(),
        "by_entry": m.by_entry,
        "source": graph.source,
    }


def step(s: Session, rng: random.Random, i: int) -> str:
    """One change a notebook or an agent makes; returns its name."""
    kind = rng.choice(["turn", "turn", "turn", "tools", "label", "cell", "forget", "score", "checkout", "model", "error", "compact"])
    ids = [e["id"] for e in s.raw_entries() if e["type"] == "message"]
    if kind == "turn" or not ids:
        write_turn(s, f"question {i}", f"answer {i}")
    elif kind == "tools":
        write_turn(s, f"use tools {i}", "done", tools=rng.randint(1, 3), tool_error=rng.random() < 0.3)
    elif kind == "error":
        write_turn(s, f"fails {i}", "", stop=rng.choice(["error", "aborted", "length"]), error="boom")
    elif kind == "label":
        s.label(rng.choice(ids), rng.choice([f"label {i}", None]))
    elif kind == "cell":
        produced = ids[-rng.randint(1, 3) :]
        s.append_custom("pi_jupyter.cell", {"cellId": f"cell-{i % 3}", "produced": produced, "executionCount": i})
    elif kind == "forget":
        on_path = [e["id"] for e in s.raw_branch() if e["type"] == "message"]
        if on_path:
            s.edit_context(rng.choice(on_path), None)
    elif kind == "score":
        s.append_custom("pi_jupyter.score", {"scorer": rng.choice(["a", "b"]), "value": rng.random()})
    elif kind == "checkout":
        s.checkout(rng.choice(ids))
        write_turn(s, f"branch {i}", "another way")
    elif kind == "model":
        s.append_model_change("openai", rng.choice(["gpt-5", "gpt-4.1"]))
    elif kind == "compact":
        path = [e for e in s.raw_branch() if e["type"] == "message"]
        if len(path) > 4:
            s.append_compaction("summary so far", path[-3]["id"], 5000)
    return kind


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", ["turns", "full"])
def test_cached_redraws_equal_fresh_drawings(tmp_path, seed, mode):
    rng = random.Random(seed)
    s = Session.create(path=tmp_path / "grow.jsonl")
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    cache = GraphCache()
    options = {"header": False, "mode": mode, "max_nodes": 30, "keep_recent": 2, "backend": "text"}
    for i in range(40):
        kind = step(s, rng, i)
        cached = snapshot(build_graph(s, cache=cache, **options))
        fresh = snapshot(build_graph(s, **options))
        assert cached == fresh, f"seed {seed}, step {i} ({kind})"


def test_entries_from_another_writer_are_drawn_after_a_refresh(tmp_path):
    path = tmp_path / "shared.jsonl"
    s = Session.create(path=path)
    write_turn(s, "first", "one")
    cache = GraphCache()
    build_graph(s, cache=cache, header=False, backend="text")
    other = Session.open(path)
    write_turn(other, "from another kernel", "two")
    other.close()
    s.refresh()
    cached = snapshot(build_graph(s, cache=cache, header=False, backend="text"))
    assert cached == snapshot(build_graph(s, header=False, backend="text"))
    assert any("from another kernel" in n["title"] for n in cached["nodes"].values())


def test_a_redraw_after_a_new_turn_cuts_only_the_leafs_unit(tmp_path):
    """What makes the redraw cheap: the units above the leaf are the same objects as before."""
    s = Session.create(path=tmp_path / "cheap.jsonl")
    for i in range(30):
        write_turn(s, f"question {i}", f"answer {i}")
    cache = GraphCache()
    build_graph(s, cache=cache, header=False, backend="text")
    before = list(cache.parts(s, build_graph(s, header=False, backend="text").model.options).units.units)
    write_turn(s, "one more", "answer")
    after = cache.parts(s, build_graph(s, header=False, backend="text").model.options).units.units
    assert after[:-2] == before[:-1] and all(a is b for a, b in zip(after[:-2], before[:-1], strict=True))
    assert build_units is not None
