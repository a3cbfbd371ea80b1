"""Context edits in the tree: the marks (SVG with the real ``dot``, text, ``pi-jupyter tree``) and the
TreeView's Forget / Edit… / Restore, driven by the comm messages the browser sends.

Only edits on the path to the current leaf apply (pi 1.6): an edit on another branch marks nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_jupyter import Agent
from pi_jupyter.notebook.tree_view.display import durable_graph
from pi_jupyter.notebook.tree_view.view import TreeView
from pi_jupyter.session import Session
from pi_jupyter.views import write_turn
from pi_jupyter.views.graph.render import available_backends

HAS_DOT = "dot" in available_backends()
REPO = Path(__file__).resolve().parents[1]


def browser_says(view, **content) -> None:
    """Deliver ``content`` as a custom message from the frontend (what tree_edits.js sends)."""
    view._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def file_entries(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()[1:]]


def sent_text(session: Session) -> str:
    return json.dumps(session.context().raw_messages)


def branched(tmp_path: Path) -> tuple[Session, dict[str, list[str]]]:
    s = Session.create(path=tmp_path / "edits.jsonl")
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    root = write_turn(s, "my key is sk-live-123, load the data", "Loaded 12 columns")
    a = write_turn(s, "idea A", "A works")
    s.checkout(root[-1])
    b = write_turn(s, "idea B", "B works")
    return s, {"root": root, "a": a, "b": b}


def test_forget_from_the_panel_writes_a_context_edit_marks_the_node_and_the_agent_stops_sending_it(tmp_path):
    s, t = branched(tmp_path)
    agent = Agent(s, model="offline/echo")
    view = TreeView(agent)
    key = view.graph.model.by_entry[t["root"][0]]
    browser_says(view, type="select", key=key)
    rows = {r["id"]: r for r in view.details["context"]}
    assert rows[t["root"][0]]["state"] == "sent" and rows[t["root"][0]]["role"] == "You" and rows[t["root"][0]]["onPath"]
    lines_before = len(file_entries(s.path))

    browser_says(view, type="action", action="forget", key=key, entry=t["root"][0])

    added = file_entries(s.path)[lines_before:]
    assert [(e["type"], e["targetId"], e["replacement"]) for e in added] == [("context_edit", t["root"][0], None)]
    assert view.status["kind"] == "ok" and f"forgot {t['root'][0]}" in view.status["text"]
    assert view.nodes[key]["contextEdits"] == {t["root"][0]: "dropped"}  # the redrawn node data carries the mark
    rows = {r["id"]: r for r in view.details["context"]}
    assert rows[t["root"][0]]["state"] == "dropped" and rows[t["root"][0]]["original"].startswith("my key is sk-live-123")
    assert view.details["contextNote"]["kind"] == "ok"
    note = view.details["contextNote"]
    view._timed_redraw()  # the redraw the edit's own append scheduled, landing after the action
    assert view.details["contextNote"] == note, "the panel still says what the action did"
    browser_says(view, type="select", key=view.graph.model.by_entry[t["a"][0]])
    assert "contextNote" not in view.details  # another node: its own panel
    browser_says(view, type="select", key=key)
    assert "sk-live-123" not in json.dumps([m.to_dict() for m in agent.messages])  # the agent was reloaded
    reopened = Session.open(s.path, readonly=True)
    assert "sk-live-123" not in sent_text(reopened) and "Loaded 12 columns" in sent_text(reopened)
    assert "sk-live-123" in Path(s.path).read_text(encoding="utf-8")  # the file keeps the original
    view.close()


def test_edit_then_restore_sends_the_original_again_and_clears_the_mark(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s)
    answer = t["root"][-1]
    key = view.graph.model.by_entry[answer]
    original_context = s.context().raw_messages
    browser_says(view, type="select", key=key)

    browser_says(view, type="action", action="edit_context", key=key, entry=answer, text="Loaded some columns")
    edit = file_entries(s.path)[-1]
    # a string replacement of an assistant message is stored as one text block, as pi 1.6 writes it
    assert edit["type"] == "context_edit" and edit["replacement"] == {"content": [{"type": "text", "text": "Loaded some columns"}]}
    assert view.nodes[key]["contextEdits"] == {answer: "edited"}
    row = next(r for r in view.details["context"] if r["id"] == answer)
    assert row["state"] == "edited" and row["sent"] == "Loaded some columns" and row["original"] == "Loaded 12 columns"
    assert "Loaded some columns" in sent_text(s) and "Loaded 12 columns" not in sent_text(s)

    browser_says(view, type="action", action="restore", key=key, entry=answer)
    restore = file_entries(s.path)[-1]
    assert restore["type"] == "context_edit" and restore["targetId"] == answer
    assert restore["replacement"] == {"content": s.raw_entry(answer)["message"]["content"]}  # the entry's own content
    assert view.nodes[key]["contextEdits"] == {} and "restored" in view.status["text"]
    assert next(r for r in view.details["context"] if r["id"] == answer)["state"] == "restored"
    assert s.context().raw_messages == original_context
    browser_says(view, type="action", action="restore", key=key, entry=answer)
    assert view.status["kind"] == "error" and "nothing to restore" in view.status["text"]
    view.close()


def test_forget_turn_drops_every_message_of_the_node(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s)
    key = view.graph.model.by_entry[t["b"][0]]
    browser_says(view, type="action", action="forget", key=key)
    assert view.nodes[key]["contextEdits"] == {t["b"][0]: "dropped", t["b"][-1]: "dropped"}
    assert "idea B" not in sent_text(s) and "B works" not in sent_text(s)
    browser_says(view, type="action", action="forget", key=key)
    assert view.status["kind"] == "error" and "forgotten already" in view.status["text"]
    view.close()


def test_refusals_come_back_as_one_line_with_pis_reason_and_nothing_is_written(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s, mode="full")
    size = Path(s.path).stat().st_size
    off_branch = t["a"][0]
    browser_says(view, type="select", key=view.graph.model.by_entry[off_branch])
    row = view.details["context"][0]
    assert row["onPath"] is False
    browser_says(view, type="action", action="forget", entry=off_branch)
    assert view.status["kind"] == "error"
    assert view.status["text"].startswith(f"Entry {off_branch} is not on the active branch (check out a node below it first")
    assert "\n" not in view.status["text"] and view.details["contextNote"]["text"] == view.status["text"]
    setting = next(e["id"] for e in s.raw_entries() if e["type"] == "model_change")
    browser_says(view, type="action", action="edit_context", entry=setting, text="x")
    assert view.status["text"].startswith(f"Entry {setting} does not contribute editable model content (only user, assistant")
    browser_says(view, type="action", action="forget", key=view.graph.model.by_entry[setting])  # "forget" on a settings node
    assert view.status["text"].startswith(f"Entry {setting} does not contribute editable model content")
    browser_says(view, type="action", action="forget", entry="no-such-entry")
    assert view.status["kind"] == "error" and "no-such-entry" in view.status["text"]
    assert Path(s.path).stat().st_size == size
    view.close()
    readonly = TreeView(Session.open(s.path, readonly=True))
    assert readonly.capabilities["readonly"]  # the panel disables the buttons; a message sent anyway is refused
    browser_says(readonly, type="action", action="forget", entry=t["b"][0])
    assert readonly.status["kind"] == "error" and "read-only" in readonly.status["text"]
    assert Path(s.path).stat().st_size == size
    readonly.close()


def test_marks_follow_only_the_edits_on_the_current_branch(tmp_path):
    s, t = branched(tmp_path)
    s.edit_context(t["root"][0], None)  # on branch B (the leaf's)
    graph = s.graph()
    root_node = graph.model.node_of(t["root"][0])
    assert root_node.context_edits == {t["root"][0]: "dropped"} and root_node.struck
    assert "✂ 1 of 2 forgotten" in graph.text() and "kept in the file, not sent" in graph.text()
    s.checkout(t["a"][-1])  # branch A shares the root turn, but the edit is not on its path
    graph = s.graph()
    assert all(not n.context_edits for n in graph.nodes.values())
    assert "forgotten" not in graph.text() and "sk-live-123" in sent_text(s)


@pytest.mark.skipif(not HAS_DOT, reason="needs Graphviz dot")
def test_the_static_svg_draws_the_marks_and_the_legend(tmp_path):
    s, t = branched(tmp_path)
    s.edit_context(t["b"][0], None)
    s.edit_context(t["root"][-1], "Loaded some columns")
    bundle = durable_graph(s.graph())._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert 'text-decoration="line-through"' in svg and "idea B" in svg  # the forgotten prompt is struck through
    assert "pi&#45;ctx&#45;dropped" in svg and "pi&#45;ctx&#45;edited" in svg
    assert "✂ 1 of 2 forgotten" in svg and "✎ 1 of 2 edited" in svg
    assert "✂ forgotten: kept in the file, not sent to the model" in svg  # the legend travels in the picture
    assert "✂ 1 of 2 forgotten" in bundle["text/plain"]
    # the widget draws without the header, and its picture (the durable output) still carries the legend
    view = TreeView(s)
    assert "✎ edited: the model is sent other text" in view.svg and "line-through" in view.svg
    view.close()


def test_pi_jupyter_tree_names_forgotten_and_edited_entries(tmp_path):
    s, t = branched(tmp_path)
    forget = s.edit_context(t["b"][0], None)
    s.checkout(t["a"][-1])
    s.edit_context(t["a"][-1], "A is fine")
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-m", "pi_jupyter", "tree", s.path], capture_output=True, text=True, env=env, check=True).stdout

    def line_of(entry_id: str) -> str:
        return next(line for line in out.splitlines() if f" {entry_id} " in line)

    assert "✎ edited (context edit" in line_of(t["a"][-1]) and line_of(t["a"][-1]).startswith("*")
    assert "forgotten" not in line_of(t["b"][0])  # its edit lives on branch B, not the current one
    assert forget in out  # the edit entry itself is listed


def test_odd_edits_in_a_file_never_break_the_tree(tmp_path):
    s, t = branched(tmp_path)
    rows = file_entries(s.path)
    leaf = s.leaf_id
    ts = rows[-1]["timestamp"]
    odd = [
        {"type": "context_edit", "id": "x1", "parentId": leaf, "timestamp": ts, "targetId": "missing", "replacement": None},
        {"type": "context_edit", "id": "x2", "parentId": "x1", "timestamp": ts, "targetId": t["b"][0], "replacement": 5},
        {"type": "context_edit", "id": "x3", "parentId": "x2", "timestamp": ts, "targetId": 7, "replacement": None},
    ]
    with open(s.path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(e) + "\n" for e in odd)
    opened = Session.open(s.path)
    graph = opened.graph()
    node = graph.model.node_of(t["b"][0])
    assert node.context_edits == {t["b"][0]: "edited"}  # pi leaves the content out: not what the file holds
    assert "missing" not in json.dumps([n.context_edits for n in graph.nodes.values()])
    view = TreeView(opened)
    view.select(t["b"][0])
    assert next(r for r in view.details["context"] if r["id"] == t["b"][0])["state"] == "edited"
    view.close()
