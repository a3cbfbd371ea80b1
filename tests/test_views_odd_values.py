"""Session files with odd values (the kinds of tests/test_session_odd_values.py) draw, compare and
show in the TreeView: never a traceback. An odd value is shown as text, as the file writes it
(a label ``5``, a model ``["x"]``) or left out (a token count of ``1e400``), and what the
widget sends to the browser is strict JSON that UTF-8 can carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_jupyter.notebook.tree_view import view as tree_view
from pi_jupyter.session import CHECKOUT_TYPE, Session
from pi_jupyter.views.graph.render import available_backends

TreeView = tree_view.TreeView
CAN_DRAW = bool(available_backends())

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
TS = "2025-01-01T00:00:01.000Z"


def user(eid: str, parent: str | None, content: object = "hi", ts: object = TS) -> dict:
    message = {"role": "user", "content": content, "timestamp": 1}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": message}


def assistant(eid: str, parent: str | None, **fields: object) -> dict:
    message = {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "api": "a", "provider": "p", "model": "m"}
    message.update(usage={}, stopReason="stop", timestamp=2)
    message.update(fields)
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": message}


def label(eid: str, parent: str, target: str, value: object) -> dict:
    return {"type": "label", "id": eid, "parentId": parent, "timestamp": TS, "targetId": target, "label": value}


def write(path: Path, *rows: dict, raw: dict[str, str] | None = None) -> bytes:
    """The file as ``json.dumps`` writes it; ``raw`` replaces text afterwards (``1e400``, lone surrogates)."""
    text = "".join(json.dumps(r) + "\n" for r in (HEADER, *rows))
    for old, new in (raw or {}).items():
        text = text.replace(old, new)
    blob = text.encode("utf-8", "surrogatepass")
    path.write_bytes(blob)
    return blob


def strict_state(view) -> dict:
    """What the widget syncs, checked as the kernel's message packer checks it."""
    state = {name: getattr(view, name) for name in view.keys if not name.startswith("_") and name not in ("layout", "tabbable", "tooltip")}
    json.dumps(state, allow_nan=False, ensure_ascii=False).encode("utf-8")
    return state


def show_everything(session: Session) -> None:
    """The graph in both modes (text, DOT, SVG when Graphviz is here), the tree, a comparison
    of the two most recent tips, and the TreeView with every node selected."""
    session.tree()
    for mode in ("turns", "full"):
        graph = session.graph(mode=mode)
        assert graph.text()
        graph.source.encode("utf-8")  # what graphviz.Digraph.pipe() sends to dot
        bundle = graph._repr_mimebundle_()
        assert "text/plain" in bundle
        if CAN_DRAW:
            assert bundle["image/svg+xml"].startswith("<svg")
    view = TreeView(session, mode="turns")
    try:
        for mode in ("turns", "full"):
            view.set_mode(mode)
            strict_state(view)
            for key in list(view.nodes):
                view.select(key)
                strict_state(view)
    finally:
        view.close()


def test_custom_entries_whose_custom_type_is_not_a_string_are_drawn(tmp_path):
    path = tmp_path / "s.jsonl"
    write(
        path,
        user("a", None),
        {"type": "custom", "customType": ["x"], "id": "c", "parentId": "a", "timestamp": TS},
        {"type": "custom", "customType": {"k": CHECKOUT_TYPE}, "id": "d", "parentId": "c", "timestamp": TS},
        user("e", "a", "other"),
    )
    s = Session.open(path, readonly=True)
    show_everything(s)
    graph = s.graph(mode="full")
    assert {"c", "d"} <= set(graph.nodes)  # not a checkout marker: drawn as the settings they are
    assert graph.nodes["c"].title == 'custom ["x"]'
    comparison = s.compare("d", "e")
    assert comparison.ancestor_id == "a" and [b.leaf_id for b in comparison.branches] == ["d", "e"]


def test_labels_of_any_truthy_value_are_shown_as_text(tmp_path):
    # pi keeps any truthy value as a label (a number, a list, true); 0 clears it
    path = tmp_path / "s.jsonl"
    write(
        path,
        user("a", None),
        assistant("b", "a"),
        label("l1", "b", "b", 5),
        user("c", "l1", "second"),
        assistant("d", "c", content=[{"type": "text", "text": 7}]),
        label("l2", "d", "d", ["x", 1]),
        user("e", "b", "third"),
        assistant("f", "e"),
        label("l3", "f", "f", True),
        label("l4", "l3", "a", {"k": [1]}),
        label("l5", "l4", "e", 0),
    )
    s = Session.open(path, readonly=True)
    show_everything(s)
    graph = s.graph(mode="full")
    assert graph.nodes["b"].labels == ["5"] and graph.nodes["d"].labels == ['["x",1]'] and graph.nodes["f"].labels == ["true"]
    assert graph.nodes["a"].labels == ['{"k":[1]}'] and graph.nodes["e"].labels == []
    assert "[5]" in graph.text() and '["x",1]' in graph.nodes["d"].tooltip
    assert graph.nodes["d"].answer == "→ 7"  # a text block whose text is a number
    comparison = s.compare("d", "f")
    assert [b.name for b in comparison.branches] == ['["x",1]', "true"] and [b.label for b in comparison.branches] == ['["x",1]', "true"]
    assert comparison.branches[0].final_answer == "7"
    assert "true" in comparison._repr_html_()


@pytest.mark.parametrize(
    "usage, tokens, cost",
    [
        # 1e400 reads as infinity (JSON.parse too): such a count is left out, the others add up
        ({"input": 1e400, "output": 10, "totalTokens": 1e400, "cost": {"total": 0.5}}, 10, "$0.500"),
        ({"input": 10, "output": 10, "cost": {"total": 1e400, "input": -1e400}}, 20, "$0"),
    ],
    ids=["infinite-tokens", "infinite-cost"],
)
def test_numbers_beyond_a_double_count_nothing_and_the_widget_state_stays_strict_json(tmp_path, usage, tokens, cost):
    path = tmp_path / "s.jsonl"
    write(path, user("a", None), assistant("b", "a", usage=usage), raw={"Infinity": "1e400"})
    s = Session.open(path, readonly=True)
    assert s.load_report.ok
    show_everything(s)
    node = s.graph().nodes["a"]
    assert node.tokens == tokens and node.cost in (0.0, 0.5)
    view = TreeView(s)
    details = view.select("a")
    assert details["costText"] == cost and "inf" not in json.dumps(strict_state(view))
    comparison = s.compare("a", "b")
    assert "inf" not in comparison._repr_html_()


def test_lone_surrogates_are_drawn_and_reach_the_browser(tmp_path):
    # JSON.parse and json.loads both read "\ud83d" without its pair; UTF-8 cannot write it
    path = tmp_path / "s.jsonl"
    write(
        path,
        user("a", None, "x@@"),
        assistant("b@@", "a", content=[{"type": "text", "text": "y@@"}], model="m@@"),
        label("l", "b@@", "b@@", "tag@@"),
        raw={"@@": "\\ud83d"},
    )
    s = Session.open(path, readonly=True)
    assert s.context().raw_messages[0]["content"] == "x\ud83d"
    show_everything(s)
    graph = s.graph(mode="full")
    key = graph.model.by_entry["b\ud83d"]
    assert key == "id:" + "b\ud83d".encode("utf-8", "surrogatepass").hex()  # a DOT name must be UTF-8
    assert graph.nodes[key].first_id == "b\ud83d" and graph.nodes[key].labels == ["tag\ud83d"]
    assert "tag\ufffd" in graph.source and "\ud83d" not in graph.source
    view = TreeView(s, mode="full")
    details = view.select("b\ud83d")  # by entry id: the key it is drawn under
    assert details["key"] == key and "\ud83d" not in json.dumps(strict_state(view), ensure_ascii=False)
    assert "y\ufffd" in details["html"] and details["entryIds"] == ["b\ufffd"]


def test_times_at_the_edges_of_the_calendar(tmp_path):
    # a date-time without offset is local time: year 1 (or 9999) shifted by the local offset
    # leaves Python's calendar, not JavaScript's
    path = tmp_path / "s.jsonl"
    write(
        path,
        user("a", None, ts="0001-01-01T00:00:00"),
        user("b", "a", "late", ts="9999-12-31T23:59:59"),
        user("c", "a", "early", ts="0001-01-01T00:00:00"),
        {"type": "compaction", "id": "k", "parentId": "c", "timestamp": "0001-01-01T00:00:00"}
        | {"summary": "s", "firstKeptEntryId": "c", "tokensBefore": 3},
        assistant("d", "k"),
    )
    s = Session.open(path, readonly=True)
    assert [n.id for n in s.tree()[0].children] == ["c", "b"]  # ordered by time, as pi orders them
    show_everything(s)
    comparison = s.compare("b", "d")
    assert comparison.ancestor_id == "a" and all(b.duration_s is not None for b in comparison.branches)


def test_an_entry_whose_id_is_the_empty_string_is_drawn_and_refused_as_a_target(tmp_path):
    path = tmp_path / "s.jsonl"
    write(
        path,
        user("a", None),
        {"type": "compaction", "id": "", "parentId": "a", "timestamp": TS, "summary": "early", "firstKeptEntryId": "a", "tokensBefore": 9},
        user("c", "a", "other"),
        assistant("d", "c"),
        user("", "d", "last"),  # the last line: the leaf is ""
    )
    s = Session.open(path)
    assert s.leaf_id == ""
    show_everything(s)
    graph = s.graph(mode="full")
    assert graph.model.by_entry[""] == "id:" and graph.nodes["id:"].title == "You: last" and graph.nodes["id:"].is_leaf
    assert "" not in graph.nodes  # "" means "no node" to the TreeView
    view = TreeView(s, mode="full")
    assert view.leaf == "id:" and view.select("")["key"] == "id:" and view.select("id:")["title"] == "You: last"
    before = path.read_bytes()
    with pytest.raises(ValueError, match="empty string"):
        view.checkout("id:")
    tree_view_says(view, type="action", action="fork", key="id:")
    assert view.status["kind"] == "error" and "empty string" in view.status["text"]
    assert path.read_bytes() == before  # nothing was written
    comparison = s.compare("c", "a")
    assert comparison.ancestor_id == "a"
    view.close()


def tree_view_says(view, **content) -> None:
    """Deliver ``content`` as a custom message from the frontend (as ipywidgets does)."""
    view._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


@pytest.mark.parametrize("message", [None, 5, "text", [1]])
def test_a_message_that_is_not_an_object_before_a_compaction(tmp_path, message):
    path = tmp_path / "s.jsonl"
    odd = {"type": "message", "id": "b", "parentId": "a", "timestamp": TS, "message": message}
    compaction = {"type": "compaction", "id": "k", "parentId": "b", "timestamp": TS}
    compaction |= {"summary": "sum", "firstKeptEntryId": "a", "tokensBefore": 50}
    write(path, user("a", None), odd, compaction, user("c", "k", "after"))
    s = Session.open(path, readonly=True)
    show_everything(s)
    node = s.graph().nodes["k"]
    assert node.kind == "compaction" and node.recorded_tokens_before == 50 and node.tokens_after == 2  # "sum" and the kept "hi": ⌈5 / 4⌉


def test_odd_values_inside_messages_are_shown_as_the_file_writes_them(tmp_path):
    path = tmp_path / "s.jsonl"
    call = {"type": "toolCall", "id": ["x"], "name": {"n": 1}, "arguments": [1]}
    result = {"role": "toolResult", "toolCallId": ["x"], "toolName": {"n": 1}, "content": [{"type": "text", "text": ["t"]}], "isError": 1}
    write(
        path,
        user("a", None, {"a": 1}),
        assistant("b", "a", content=[call, {"type": "thinking", "thinking": 5}], provider=["x"], model=None, stopReason="toolUse"),
        {"type": "message", "id": "r", "parentId": "b", "timestamp": TS, "message": result | {"timestamp": None}},
        assistant("e", "r", content=[], stopReason="error", errorMessage={"x": 1}),
        {"type": "model_change", "id": "m", "parentId": "e", "timestamp": TS, "provider": 5, "modelId": ["y"]},
    )
    s = Session.open(path, readonly=True)
    show_everything(s)
    graph = s.graph(mode="full")
    assert graph.nodes["a"].title == 'You: {"a":1}'
    assert graph.nodes["b"].answer == '→ calls {"n":1}' and graph.nodes["b"].summary == '["x"]'
    assert graph.nodes["r"].title == 'Tool result: {"n":1} (error)' and graph.nodes["r"].answer == '["t"]'
    assert graph.nodes["e"].error == '{"x":1}' and graph.nodes["m"].models == ['5/["y"]']
    html = TreeView(s, mode="full").select("r")["html"]
    assert "result of {&quot;n&quot;:1}" in html
