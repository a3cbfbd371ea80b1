"""The context lens (``pi_jupyter.views.lens``): the rebuild of the next request laid onto the tree.

Each case builds a session with the store's public API and checks the lens against the
session's own context rebuild (``Session.context``), so the lens can never claim a message is
sent that the rebuild leaves out, or the other way round.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_jupyter.session import Session
from pi_jupyter.views import write_turn
from pi_jupyter.views.lens import context_lens

FIXTURES = Path(__file__).parent / "fixtures" / "pi"


def _sent(lens) -> int:
    """Entries the rebuild turns into messages: those sent, and failed replies (rebuilt, then left out of the request)."""
    return sum(1 for e in lens.entries if e.state in ("in", "edited", "summary") or e.note)


def test_compaction_summary_first_kept_and_replaced_originals():
    s = Session.in_memory()
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    old = write_turn(s, "first question", "first answer")
    kept = write_turn(s, "second question", "second answer")
    s.label(kept[-1], "keep me")
    s.append_custom("my.state", {"x": 1})
    s.append_custom_message("my.note", "a note the model reads")
    compaction = s.append_compaction("what happened before", kept[0], 5000)
    after = write_turn(s, "third question", "third answer")
    lens = context_lens(s)
    assert lens.leaf_id == after[-1] and lens.compaction_id == compaction and lens.first_kept_id == kept[0]
    assert lens.messages == len(s.context().raw_messages) == _sent(lens)
    assert all(lens.state_of(e) == "replaced" for e in old)
    assert all(lens.state_of(e) == "in" for e in kept + after)
    assert lens.state_of(compaction) == "summary"
    states = {e.type: e.state for e in lens.entries}
    assert states["custom"] == "out" and states["custom_message"] == "in" and states["label"] == "out" and states["model_change"] == "out"
    assert lens.tokens > 0 and lens.tokens == sum(e.tokens for e in lens.entries)
    head = lens.headline()
    assert f"compaction {compaction} applies" in head and "replaced" in head and "never sent" in head


def test_a_second_compaction_supersedes_the_first_and_branch_summaries_are_sent():
    s = Session.in_memory()
    a = write_turn(s, "one", "1")
    first = s.append_compaction("summary one", a[0], 100)
    b = write_turn(s, "two", "2")
    second = s.append_compaction("summary two", b[0], 200)
    write_turn(s, "three", "3")
    lens = context_lens(s, second)  # the lens of another point than the leaf
    assert lens.state_of(first) == "replaced" and lens.state_of(second) == "summary"
    assert all(lens.state_of(e) == "replaced" for e in a)
    assert lens.messages == len(s.context(second).raw_messages) == _sent(lens)
    summary = s.branch_with_summary(b[-1], "tried three, went back")
    write_turn(s, "four", "4")
    lens = context_lens(s)
    assert lens.state_of(summary) == "summary" and lens.messages == len(s.context().raw_messages) == _sent(lens)


def test_lens_on_the_compacted_pi_session_agrees_with_the_rebuild():
    s = Session.open(str(FIXTURES / "before-compaction.jsonl"), readonly=True)
    lens = context_lens(s)
    ctx = s.context()
    assert lens.messages == len(ctx.raw_messages) == _sent(lens)
    counts = lens.counts()
    assert counts["replaced"] > 100 and counts["summary"] == 1
    # drawn nodes: the compaction is a summary node, the leaf's node is sent, a replaced stretch is greyed
    model = s.graph(header=False).model
    nodes = lens.node_states(model)
    assert nodes[model.leaf] == "in"
    compactions = [k for k, n in model.nodes.items() if n.kind == "compaction"]
    assert len(compactions) == 2  # the pi session compacted twice: the latest applies, the older is superseded
    assert [k for k, v in nodes.items() if v == "summary"] == [model.by_entry[lens.compaction_id]]
    assert {nodes[k] for k in compactions} == {"summary", "replaced"}
    assert "replaced" in nodes.values()
    html = lens.to_html()
    assert "pitv-lens-replaced" in html and "<script" not in html


def test_lens_escapes_text_and_handles_an_empty_session():
    s = Session.in_memory()
    assert context_lens(s).leaf_id is None and context_lens(s).messages == 0
    write_turn(s, "<script>alert(1)</script>", "<b>bold</b>")
    html = context_lens(s).to_html()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_tree_view_lens_follows_the_leaf_and_shows_in_the_panel():
    from pi_jupyter.notebook.tree_view.view import TreeView

    s = Session.in_memory()
    write_turn(s, "one", "1")
    view = TreeView(s, debounce=0)
    lens = view.show_lens(None)
    assert view.lens["leafId"] == lens.leaf_id == s.leaf_id and view.details["kind"] == "lens"
    assert set(view.lens["nodes"].values()) == {"in"}
    new = write_turn(s, "two", "2")
    assert view.wait_idle(5)
    assert view.lens["leafId"] == new[-1]  # the lens follows the leaf as turns arrive
    view.show_lens(None, off=True)
    assert view.lens == {}
    with pytest.raises(KeyError):
        view.show_lens("no-such-node")
    view.close()


def test_context_edits_show_as_edited_and_dropped():
    s = Session.in_memory()
    first = write_turn(s, "first question", "a long first answer")
    second = write_turn(s, "second question", "second answer")
    s.edit_context(first[-1], "short answer")  # the model sees the rewrite; the file keeps the original
    s.edit_context(second[0], None)  # dropped from what the model sees
    write_turn(s, "third", "3")
    lens = context_lens(s)
    assert lens.state_of(first[-1]) == "edited" and lens.state_of(second[0]) == "dropped"
    assert lens.state_of(first[0]) == "in"
    edit_states = {e.state for e in lens.entries if e.type == "context_edit"}
    assert edit_states == {"out"}
    assert lens.messages == len(s.context().raw_messages) == _sent(lens)  # edited counts as sent
    head = lens.headline()
    assert "1 message sent as edited" in head and "1 message forgotten (context edits)" in head


HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
TS = "2025-01-01T00:00:01.000Z"


def test_lens_on_odd_files_never_raises(tmp_path):
    """Entries an odd file may hold: a message entry holding null or a number, a compaction whose first
    kept entry is not on the path, a custom_message without content, a branch summary without text."""
    rows = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": TS, "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": TS, "message": None},
        {"type": "message", "id": "c", "parentId": "b", "timestamp": TS, "message": 5},
        {"type": "custom_message", "id": "d", "parentId": "c", "timestamp": TS, "customType": "x"},
        {"type": "branch_summary", "id": "e", "parentId": "d", "timestamp": TS, "fromId": "a"},
        {
            "type": "compaction",
            "id": "f",
            "parentId": "e",
            "timestamp": TS,
            "summary": "s",
            "firstKeptEntryId": "nowhere",
            "tokensBefore": 1e400,
        },
        {
            "type": "message",
            "id": "g",
            "parentId": "f",
            "timestamp": TS,
            "message": {"role": "user", "content": [{"type": "text"}], "timestamp": 1},
        },
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (HEADER, *rows)).replace("1e+400", "1e400").replace("Infinity", "1e400"))
    s = Session.open(str(path), readonly=True)
    lens = context_lens(s)
    assert lens.messages == len(s.context().raw_messages) == _sent(lens)
    # the first kept entry is not on the path: the compaction replaces all that came before it
    assert [lens.state_of(e) for e in "abcdefg"] == ["replaced"] * 4 + ["out", "summary", "in"]
    # without the compaction: a null message is passed on as pi does, a branch summary without text is not sent
    before = context_lens(s, "e")
    assert before.messages == len(s.context("e").raw_messages) == _sent(before)
    assert before.state_of("e") == "out" and before.state_of("d") == "in"
    json.dumps(lens.model_dump(), allow_nan=False)
    model = s.graph(header=False).model
    lens.node_states(model)
    assert "<" not in lens.headline()
    lens.to_html()
