"""An experiment's scores and variants in the tree and in compare, rebuilt from the session file alone."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import experiment, records
from pi_jupyter.notebook.tree_view.html import node_details
from pi_jupyter.views import build_model, parse_options, scores

PROMPT = "Say {word} and nothing else."


def exact(branch):
    """True when the answer holds the word the branch was asked to say."""
    return branch.values["word"] in branch.answer.lower()


def words(branch):
    return {"count": len(branch.answer.split()), "long": len(branch.answer) > 1000}


@pytest.fixture
def scored(tmp_path):
    """A 2×2 grid on the offline model, scored at run time and once more afterwards; the file path and the rows."""
    s = Session.open(tmp_path / "grid.jsonl", create=True, cwd=str(tmp_path))
    s.append_message({"role": "user", "content": "Hello", "timestamp": 1})
    result = asyncio.run(
        experiment(s, PROMPT, vary={"model": ["offline/echo", "offline/typewriter"], "word": ["yes", "no"]}, scorers=[exact, "judge"])
    )
    result.score(words)
    assert all(r.state == "done" for r in result.rows)
    return s.path, result.rows


def test_the_record_types_the_views_read_are_the_experiments(scored):
    assert (scores.SCORE_TYPE, scores.VARIANT_TYPE) == (records.SCORE_TYPE, records.VARIANT_TYPE)


def test_the_tree_shows_each_branchs_scores_on_its_leaf_node(scored):
    path, rows = scored
    s = Session.open(path, readonly=True)
    model = build_model(s, parse_options("test", {}))
    scored_nodes = [n for n in model.nodes.values() if n.scores]
    assert len(scored_nodes) == len(rows) == 4
    for row in rows:
        node = model.node_of(row.leaf)
        assert node is not None and row.leaf in node.entry_ids
        judge = row.scores["judge"]
        assert node.scores == {"exact": True, "judge": judge, "words.count": row.scores["words"]["count"], "words.long": False}
        shown = f"exact ✓ · judge {scores.score_value_text(judge)} · words.count {row.scores['words']['count']} · words.long ✗"
        assert f"scores: {shown}" in node.tooltip
        assert f"variant: model={row.values['model']}, word={row.values['word']}" in node.tooltip
        assert node.to_dict()["scores"] == node.scores
    # the shared prompt the branches start from carries none of them
    start = records.read_experiment(s, records.experiment_ids(s)[0])[0].start
    assert start is not None and model.node_of(start).scores == {}
    # the drawn SVG: the badge in the node's box, the class the TreeView can style
    svg = s.graph().svg()
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    groups = [g for g in root.iter(f"{ns}g") if "pi-scored" in (g.get("class") or "").split()]
    assert len(groups) == 4
    texts = ["".join(t.itertext()) for g in groups for t in g.iter(f"{ns}text")]
    assert sum("★ exact ✓" in t for t in texts) == 4
    assert "★ exact ✓" in s.graph().text()


def test_the_side_panel_lists_the_scores(scored):
    path, rows = scored
    s = Session.open(path, readonly=True)
    model = build_model(s, parse_options("test", {}))
    node = model.node_of(rows[1].leaf)
    details = node_details(s, node.key, node)
    assert details["scores"]["exact"] is True
    assert "scores: exact ✓ · judge" in details["html"]


def test_compare_shows_scores_and_variant_per_branch(scored):
    path, rows = scored
    s = Session.open(path, readonly=True)
    c = s.compare(*(r.leaf for r in rows))
    assert [b.leaf_id for b in c.branches] == [r.leaf for r in rows]
    for b, row in zip(c.branches, rows, strict=True):
        assert b.scores["exact"] is True and b.scores["judge"] == row.scores["judge"]
        assert b.scores["words.count"] == row.scores["words"]["count"]
        assert b.variant is not None and b.variant["values"] == row.values and b.variant["repeat"] == 0
    # named as the experiment's plot names them, and still found by their leaf ids
    assert [b.name for b in c.branches] == [f"#{r.index} {r.values['model']} {r.values['word']}" for r in rows]
    assert c.branch(rows[2].leaf).name == "#2 offline/typewriter yes"
    assert c.score_names() == ["exact", "judge", "words.count", "words.long"]
    frame = c.to_frame()
    assert frame["judge"].tolist() == [r.scores["judge"] for r in rows]
    assert frame["exact"].tolist() == [True] * 4
    assert frame["variant"].tolist() == [f"model={r.values['model']}, word={r.values['word']}" for r in rows]
    table = c.table_html()
    assert "score: judge" in table and "score: words.count" in table
    assert "model=offline/echo, word=yes" in table
    text = str(c)
    assert text.count("  scores: exact ✓ · judge ") == 4
    assert "  variant: model=offline/typewriter, word=no" in text


def test_compare_of_a_scored_and_an_unscored_branch(scored):
    """A branch without scores gets an empty cell, and a score entry as the ref stands for its leaf."""
    path, rows = scored
    s = Session.open(path)
    s.checkout(rows[0].variant_entry)
    s.append_message({"role": "user", "content": "by hand", "timestamp": 3})
    by_hand = s.leaf_id
    score_entry = next(c for c in s.child_ids(rows[0].leaf) if s.raw_entry(c).get("customType") == records.SCORE_TYPE)
    c = Session.open(path, readonly=True).compare(score_entry, by_hand)
    first, second = c.branches
    assert first.leaf_id == rows[0].leaf and first.scores["exact"] is True
    assert second.scores == {}
    assert c.to_frame()["exact"].tolist()[1] is None
    assert "–" in c.table_html()


def test_a_later_score_of_the_same_name_wins_and_odd_values_are_skipped(tmp_path):
    s = Session.open(tmp_path / "odd.jsonl", create=True)
    s.append_message({"role": "user", "content": "q", "timestamp": 1})
    leaf = s.leaf_id
    s.append_custom(records.SCORE_TYPE, {"scorer": "judge", "value": 3})
    s.append_custom(records.SCORE_TYPE, {"scorer": "judge", "value": 8.25})
    s.append_custom(records.SCORE_TYPE, {"scorer": "bad", "value": "high"})
    s.append_custom(records.SCORE_TYPE, {"scorer": "nan", "value": float("nan")})
    s.append_custom(records.SCORE_TYPE, ["not", "a", "dict"])
    assert scores.leaf_scores(Session.open(s.path, readonly=True), leaf) == {"judge": 8.25}
    node = build_model(Session.open(s.path, readonly=True), parse_options("test", {})).node_of(leaf)
    assert node is not None and node.scores == {"judge": 8.25}


def test_cell_by_cell_compare_has_the_scores_in_its_totals(tmp_path):
    from pi_jupyter.experiment import BranchSession
    from pi_jupyter.notebook.cells import CellRun, record_run
    from pi_jupyter.views import write_turn

    s = Session.create(path=tmp_path / "cells.jsonl")
    setup = write_turn(s, "load the data", "loaded")
    ends = []
    for count, answer in ((2, "The slope is 1.8."), (12, "The slope is 1.9.")):
        s.checkout(setup[-1])
        ids = write_turn(s, "fit a linear model", answer)
        record_run(s, CellRun(cell_id="c1", started_from=setup[-1], produced=ids, end=ids[-1], execution_count=count))
        ends.append(ids[-1])
    for leaf, value in zip(ends, (4.5, 9.0), strict=True):
        data = {"experiment": "x", "index": 0, "scorer": "judge", "version": "1", "value": value}
        BranchSession(s, leaf).append_custom(records.SCORE_TYPE, data)
    c = Session.open(s.path, readonly=True).compare("In[2]", "In[12]")
    assert c.cells is not None
    assert [t["scores"] for t in c.cells.totals()] == [{"judge": 4.5}, {"judge": 9.0}]
    html = c._repr_html_()
    assert "scores: judge 4.5" in html and "scores: judge 9" in html


def test_merged_branches_show_how_many_were_scored_and_the_range(tmp_path):
    s = Session.open(tmp_path / "wide.jsonl", create=True)
    s.append_message({"role": "user", "content": "Hello", "timestamp": 1})

    def position(branch):
        return branch.index * 10

    def even(branch):
        return branch.index % 2 == 0

    result = asyncio.run(experiment(s, "Say {word}.", vary={"word": [f"w{i}" for i in range(14)]}, scorers=[position, even]))
    model = build_model(Session.open(s.path, readonly=True), parse_options("test", {"max_nodes": 10}))
    (merged,) = [n for n in model.nodes.values() if n.folded]
    inside = [r for r in result.rows if r.leaf in merged.entry_ids]
    assert len(inside) >= 2 and not merged.scores
    low, high = min(r.index for r in inside) * 10, max(r.index for r in inside) * 10
    evens = sum(1 for r in inside if r.index % 2 == 0)
    assert merged.scores_inside == f"{len(inside)} scored: position {low}–{high} · even {evens}/{len(inside)} ✓"
    assert "scores inside, " + merged.scores_inside in merged.tooltip
    # the branches drawn on their own still carry their own scores
    assert all(model.node_of(r.leaf).scores == {"position": r.index * 10, "even": r.index % 2 == 0} for r in result.rows if r not in inside)
