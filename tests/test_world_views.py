"""Seeing the world: what a turn changed, in the static output and in the tree's side panel; branches compared."""

from __future__ import annotations

import asyncio

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.views.static_html import render_html, render_markdown
from pi_jupyter.world import World

pd = pytest.importorskip("pandas")

TURN = (
    'call python with {"code": "import pandas as pd\\ndf2 = pd.DataFrame({c: range(1000) for c in \'abcd\'})\\nresult = 42"}\n'
    'call write with {"path": "notes.txt", "content": "hello"}'
)


@pytest.fixture
def turn(tmp_path):
    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    asyncio.run(agent.prompt(TURN))
    return session


def test_the_static_output_says_under_each_tool_what_it_changed(turn):
    messages = turn.context().messages
    page = render_html(messages)
    assert "changed: set df2 (DataFrame 1,000×4), pd (module pandas), result" in page
    assert "changed: wrote notes.txt" in page
    assert "*changed: wrote notes.txt*" in render_markdown(messages)


def test_the_tree_panel_lists_what_the_turn_changed(turn):
    from pi_jupyter.notebook.tree_view.view import TreeView

    view = TreeView(turn)
    key = next(k for k, n in view.graph.nodes.items() if n.kind == "turn")
    details = view.select(key)
    assert details["changed"] == "set df2 (DataFrame 1,000×4), pd (module pandas), result; wrote notes.txt"
    assert "changed: set df2 (DataFrame 1,000×4)" in details["html"]


def test_compare_shows_the_variables_and_files_that_differ(tmp_path, monkeypatch):
    from pi_jupyter.views.compare.world import compare_worlds

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789abcdefghijklmnop")
    from pi_jupyter.agent.redact import redact

    session = Session.create(tmp_path / "sessions")
    ns: dict = {"df": pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0], "c": ["x", "y"]})}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    start = session.leaf_id
    world.move(start)

    def branch(code: str, text: str) -> str:
        session.checkout(start)
        world.move(start)
        agent.reload()
        call = {"code": code}
        write = {"path": "notes.txt", "content": text}
        import json

        asyncio.run(agent.prompt(f"call python with {json.dumps(call)}\ncall write with {json.dumps(write)}"))
        world.settle()
        return session.leaf_id

    a = branch("del df['c']; plan = 'A'", "line one\nbranch A\n")
    b = branch("plan = 'B'; note = 'tok-0123456789abcdefghijklmnop'", "line one\nbranch B\n")
    found = compare_worlds(session, [("A", a), ("B", b)], clean=redact)
    rows = {r.key: r for r in found.rows}
    assert set(rows) == {"df", "plan", "note", "notes.txt"}
    assert rows["plan"].cells == ["'A'", "'B'"]
    assert rows["df"].cells == ["DataFrame 2×2: a int64, b float64", "DataFrame 2×3: a int64, b float64, c str"]
    assert rows["df"].diff == "columns only in B: c"
    assert rows["note"].cells[0] == "absent" and "tok-0123456789" not in str(found) + found._repr_html_()
    assert "-branch A\n+branch B" in rows["notes.txt"].diff
    assert "<table" in found._repr_html_()


def test_check_out_in_the_tree_brings_the_world_back_and_says_so(tmp_path):
    from pi_jupyter.notebook.tree_view.view import TreeView
    from pi_jupyter.notebook.world_cells import Tracker, attach

    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns})
    attach(agent, ns, Tracker())  # as the notebook gives every session's agent its world
    start = session.leaf_id
    asyncio.run(agent.prompt("use python\n```python\nplan = 'A'\n```"))
    agent.tool_extra["world"].settle()
    leaf_a = session.leaf_id
    agent.checkout_sync(start)
    assert "plan" not in ns
    view = TreeView(agent)
    node = next(k for k, n in view.graph.nodes.items() if n.target_id == leaf_a)
    view.checkout(node)
    assert ns["plan"] == "A"
    assert view.status["text"].endswith("; restored plan")


def _two_branches(tmp_path):
    """An agent with its world (as the notebook gives it), plan = 'A' on one branch, plan = 'B' on its sibling (live)."""
    from pi_jupyter.notebook.world_cells import Tracker, attach

    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns})
    tracker = Tracker()
    attach(agent, ns, tracker)
    start = session.leaf_id
    asyncio.run(agent.prompt("use python\n```python\nplan = 'A'\n```"))
    agent.tool_extra["world"].settle()
    leaf_a = session.leaf_id
    agent.checkout_sync(start)
    asyncio.run(agent.prompt("use python\n```python\nplan = 'B'\n```"))
    agent.tool_extra["world"].settle()
    assert ns["plan"] == "B"
    return session, ns, agent, tracker, leaf_a


def _fork_then_go_on(view, agent, ns, leaf_a):
    """Fork branch A from the tree, run a python call in the fork, check out the fork's start: A's world each time."""
    from pi_jupyter.world import Store, world_at

    node = next(k for k, n in view.graph.nodes.items() if n.target_id == leaf_a)
    new = view.fork(node)
    fork_agent = view.agent
    assert fork_agent is not agent and fork_agent.session is not agent.session
    assert ns["plan"] == "A"  # the fork goes on in the world of the forked node
    assert view.status["text"].endswith("; restored plan")
    forked_at = new.leaf_id
    asyncio.run(fork_agent.prompt("use python\n```python\nplan = 'C'\nmore = [1, 2, 3]\n```"))
    fork_agent.tool_extra["world"].settle()
    assert ns["plan"] == "C" and ns["more"] == [1, 2, 3]
    vars_, _ = world_at(new, new.leaf_id)
    beside = Store.beside(new.path)  # the data of the fork's own calls is in the store next to its file
    assert beside.get_value(vars_["plan"]) == "C" and beside.get_value(vars_["more"]) == [1, 2, 3]
    fork_agent.checkout_sync(forked_at)
    assert ns["plan"] == "A" and "more" not in ns  # the fork's checkout moves the world it records into
    assert world_at(agent.session, agent.session.leaf_id)[0]  # the first session's record is untouched
    return fork_agent


def test_fork_in_the_tree_carries_the_world_and_the_fork_records_into_its_own(tmp_path):
    from pi_jupyter.notebook.tree_view.view import TreeView

    session, ns, agent, _tracker, leaf_a = _two_branches(tmp_path)
    view = TreeView(agent)
    try:
        fork_agent = _fork_then_go_on(view, agent, ns, leaf_a)
        assert fork_agent.tool_extra["world"] is not agent.tool_extra["world"]
    finally:
        view.close()
    agent.checkout_sync(session.leaf_id)  # back in the first session: its own world comes back
    assert ns["plan"] == "B" and "more" not in ns


def test_fork_in_the_tree_of_a_notebook_carries_the_world_to_the_notebooks_agent(tmp_path):
    """In a notebook the view hands the fork to the notebook (``on_fork``), which gives it an agent with a world."""
    from pi_jupyter.notebook.tree_view.view import TreeView
    from pi_jupyter.notebook.world_cells import attach

    session, ns, agent, tracker, leaf_a = _two_branches(tmp_path)

    def switch(new):
        made = Agent(new, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns})
        attach(made, ns, tracker)
        return made

    view = TreeView(agent, on_fork=switch)
    try:
        _fork_then_go_on(view, agent, ns, leaf_a)
    finally:
        view.close()


def test_the_live_tool_card_says_what_the_call_changed_during_the_run_and_in_its_snapshot(tmp_path, monkeypatch):
    """The live widget's card gets the same ``changed:`` line as the saved output, at the call's end (live op) and in the snapshot."""
    from ipywidgets import comm
    from test_agent_view import RecordingComm, custom_msgs

    from pi_jupyter.notebook.agent_view.view import AgentView

    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    view = AgentView(model=agent.model.ref)
    agent.subscribe(view.handle)
    asyncio.run(agent.prompt(TURN))
    view.flush()
    wanted = ["set df2 (DataFrame 1,000×4), pd (module pandas), result", "wrote notes.txt"]
    first_done: dict[str, str | None] = {}  # the op sent as each call ends (before the run does), per card
    for op in (op for m in custom_msgs(view) for op in m["ops"] if op["o"] == "x" and op["x"]["status"] == "done"):
        first_done.setdefault(op["c"], op["x"].get("changed"))
    assert sorted(first_done.values()) == wanted  # (the two calls run at once: either may end first)
    cards = [b for item in view.transcript for b in item.get("blocks", []) if b.get("type") == "toolCall"]
    assert [c["x"].get("changed") for c in cards] == wanted
    view.close()


def test_the_tree_panel_rewinds_the_conversation_the_world_or_both(tmp_path):
    """The panel's *Check out* with its "what moves" choice, as the browser sends it: each status line says what moved."""
    from pi_jupyter.notebook.tree_view.view import TreeView

    session, ns, agent, _tracker, leaf_a = _two_branches(tmp_path)
    leaf_b = session.leaf_id
    view = TreeView(agent)
    try:
        assert view.capabilities["world"] is True
        node_a = next(k for k, n in view.graph.nodes.items() if n.target_id == leaf_a)

        def says(**content):
            view._handle_msg({"content": {"data": {"method": "custom", "content": {"type": "action", **content}}}, "buffers": []})
            assert view.wait_idle(10)
            return view.status["text"]

        line = says(action="checkout", key=node_a, rewind="world")
        assert line.startswith(f"brought the world of {leaf_a} into this conversation (the conversation did not move): restored plan")
        assert ns["plan"] == "A" and session.context().messages[-1].role == "assistant"
        assert leaf_b in session.branch_ids()  # the conversation is still b's
        line = says(action="checkout", key=node_a, rewind="conversation")
        assert line.startswith(f"checked out {leaf_a} (the conversation only); the leaf is now ") and ns["plan"] == "A"
        node_b = next(k for k, n in view.graph.nodes.items() if n.target_id == leaf_b)
        ns["plan"] = "mine"
        line = says(action="checkout", key=node_b, rewind="both", force=True)
        assert line.startswith(f"checked out {leaf_b}; the leaf is now {leaf_b}; restored plan; your version of plan is kept in entry ")
        assert ns["plan"] == "B"
    finally:
        view.close()
