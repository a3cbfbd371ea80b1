"""TreeView without a browser: what it sends, and what the browser's messages do to the session.

Browser messages are delivered the way ipywidgets delivers them (``_handle_msg`` with a comm
message), so the dispatch under test is the real one.
"""

from __future__ import annotations

import threading
import types
from pathlib import Path

import pytest

from pi_jupyter.agent.sync import run_blocking
from pi_jupyter.notebook.tree_view import view as tree_view
from pi_jupyter.session import Session
from pi_jupyter.views import TextTree, sample_session, session_graph_class, write_turn
from pi_jupyter.views.graph.render import available_backends

TreeView = tree_view.TreeView
CAN_DRAW = bool(available_backends())


def browser_says(view, **content) -> None:
    """Deliver ``content`` as a custom message from the frontend."""
    view._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def branched(tmp_path: Path) -> tuple[Session, dict[str, list[str]]]:
    s = Session.create(path=tmp_path / "tree.jsonl")
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    root = write_turn(s, "load the data", "Loaded **12** columns <script>alert(1)</script>", tools=1, tokens=1200, cost=0.002)
    a = write_turn(s, "idea A", "A works")
    s.checkout(root[-1])
    b = write_turn(s, "idea B", "B works")
    return s, {"root": root, "a": a, "b": b}


def key_of(view, entry_id: str) -> str:
    return view.graph.model.by_entry[entry_id]


def test_the_view_carries_the_graph_and_the_selected_node(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s)
    assert set(view.nodes) == set(view.graph.nodes) and len(view.nodes) == 3
    assert view.leaf == key_of(view, t["b"][0]) and view.path == [key_of(view, t["root"][0]), view.leaf]
    if CAN_DRAW:
        assert view.svg.startswith("<svg") and view.text == ""
        assert all(f"<title>{k}</title>" in view.svg for k in view.nodes)
    details = view.select(t["root"][0])
    assert details["key"] == key_of(view, t["root"][0]) and view.selected == details["key"]
    assert details["entryIds"] == view.graph.nodes[details["key"]].entry_ids
    assert details["usage"]["total"] == 2400 and details["costText"] == "$0.0040"
    assert details["models"] == ["anthropic/claude-sonnet-4-5"] and details["stopReasons"] == {"toolUse": 1, "stop": 1}
    page = details["html"]
    assert "<p>load the data</p>" in page and "<strong>12</strong>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "python(" in page  # the tool call, and its result below
    assert view.capabilities == {"summarize": False, "compact": False, "reason": tree_view.NO_MODEL, "readonly": False, "world": False}
    with pytest.raises(KeyError, match="not drawn"):
        view.select("fold:nothing")
    marker = next(e["id"] for e in s.raw_entries() if e.get("customType") == "pi_jupyter.checkout")
    with pytest.raises(KeyError, match="not drawn"):
        view.select(marker)


def test_browser_actions_check_out_label_and_fork_through_the_session(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s)
    before = view.revision
    a_key = key_of(view, t["a"][0])
    browser_says(view, type="select", key=a_key)
    assert view.details["title"] == "You: idea A"
    browser_says(view, type="action", action="checkout", key=a_key)
    assert s.leaf_id == t["a"][-1]
    assert Session.open(s.path, readonly=True).leaf_id == t["a"][-1]  # persisted
    assert view.leaf == a_key and view.revision > before
    assert view.status["kind"] == "ok" and "checked out" in view.status["text"]
    browser_says(view, type="action", action="label", key=a_key, text="  plan A ")
    assert s.label_of(t["a"][-1]) == "plan A" and view.nodes[a_key]["labels"] == ["plan A"]
    browser_says(view, type="action", action="fork", key=a_key)
    new = view.last_fork
    assert new is not None and new.path != s.path and Path(new.path).exists()
    assert view.session is new and new.header.parent_session == s.path
    assert set(new.branch_ids()) >= set(t["root"] + t["a"]) and not set(t["b"]) & set(new.branch_ids())
    assert {n["title"] for n in view.nodes.values()} == {"You: load the data", "You: idea A"}
    assert "forked" in view.status["text"]
    assert "next %%pi cells" not in view.status["text"]  # a bare view belongs to no notebook


def test_a_fork_from_a_notebook_tree_says_the_next_cells_continue_there(tmp_path):
    s, t = branched(tmp_path)
    followed = []
    view = TreeView(s, on_fork=lambda new: followed.append(new) or new)  # the notebook's state.switch
    view.fork(key_of(view, t["a"][0]))
    (new,) = followed
    text = view.status["text"]
    assert new.id.replace("-", "")[-8:] in text  # the new session, by its short id
    assert "the notebook's next %%pi cells continue in it" in text  # said, not done silently


def test_summaries_and_compaction_need_an_agent_and_say_so(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s)
    key = key_of(view, t["a"][0])
    browser_says(view, type="action", action="compact", key=key)
    assert view.status["kind"] == "error" and "needs a model" in view.status["text"]
    browser_says(view, type="action", action="checkout", key=key, summarize=True)
    assert view.status["kind"] == "error" and "branch summary needs a model" in view.status["text"]
    assert s.leaf_id == t["b"][-1]  # nothing moved
    browser_says(view, type="action", action="teleport", key=key)
    assert "unknown TreeView action 'teleport'" in view.status["text"]


def test_compare_with_shows_the_comparison_in_the_side_panel(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s)
    browser_says(view, type="select", key=key_of(view, t["a"][0]))
    browser_says(view, type="action", action="compare", key=key_of(view, t["a"][0]), other=key_of(view, t["b"][0]))
    assert view.details["kind"] == "comparison"
    assert (view.details["a"], view.details["b"]) == (t["a"][-1], t["b"][-1])
    assert "Common ancestor" in view.details["html"] and "<svg" in view.details["html"]
    assert view.last_comparison.ancestor_id == t["root"][-1]


def test_folded_nodes_expand_and_the_mode_switches(tmp_path):
    s = Session.in_memory()
    for i in range(20):
        write_turn(s, f"turn {i}", "ok")
    view = TreeView(s)
    (fold,) = [k for k, n in view.nodes.items() if n["folded"]]
    browser_says(view, type="action", action="checkout", key=fold)
    assert "folded node" in view.status["text"] and view.status["kind"] == "error"
    browser_says(view, type="action", action="expand", key=fold)
    assert not [k for k, n in view.nodes.items() if n["folded"]] and len(view.nodes) == 20
    browser_says(view, type="action", action="collapse")
    assert [k for k, n in view.nodes.items() if n["folded"]]
    browser_says(view, type="action", action="mode", mode="full")
    assert view.mode == "full" and len(view.nodes) < len(s)  # folded runs of entries
    view.set_mode("turns")
    with pytest.raises(ValueError, match="mode"):
        view.set_mode("cards")


def test_appends_from_another_thread_redraw_once_after_a_short_wait(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s, debounce=0.2)
    before = view.revision

    def agent_loop() -> None:
        for i in range(25):
            write_turn(s, f"streamed turn {i}", "ok")

    worker = threading.Thread(target=agent_loop)
    worker.start()
    worker.join()
    assert view.wait_idle(10)
    assert 1 <= view.revision - before <= 3  # 100 appends, coalesced
    assert view.graph.nodes[view.leaf].title == "You: streamed turn 24"
    view.close()
    write_turn(s, "after close", "ok")
    assert view.wait_idle(2) and view.graph.nodes[view.leaf].title == "You: streamed turn 24"


def test_text_only_view_and_display_bundle(tmp_path):
    s, t = branched(tmp_path)
    view = TreeView(s, backend="text")
    assert view.svg == "" and "▶ └─ You: idea B" in view.text
    data, _ = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "You: idea A" in data["text/plain"]
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        TreeView(s, colour="red")
    with pytest.raises(TypeError, match="expected an Agent or a Session"):
        TreeView("tree.jsonl")


# ------------------------------------------------------------------------------ with an agent


@pytest.fixture
def agent(tmp_path):
    from pi_jupyter import Agent

    session = Session.create(path=tmp_path / "agent.jsonl")
    a = Agent(session, model="offline/echo")
    # run_blocking, not asyncio.run: under the browser tests Playwright keeps a loop running here
    run_blocking(a.prompt("first question"))
    run_blocking(a.prompt("second question"))
    return a


def test_with_an_agent_checkout_goes_through_the_agent_and_its_runner(agent):
    from pi_jupyter.notebook.runner import KernelRunner

    runner = KernelRunner()
    view = TreeView(agent, runner=runner)
    assert view.capabilities["summarize"] and view.capabilities["compact"]
    first = next(k for k, n in view.nodes.items() if n["title"] == "You: first question")
    events = []
    agent.subscribe(lambda e: events.append(e.type))
    future = view.checkout(first)
    leaf = future.result(timeout=30)
    assert view.wait_idle(10)
    assert leaf == agent.session.leaf_id == view.graph.nodes[first].target_id
    assert view.leaf == first and view.status["kind"] == "ok"
    assert len(agent.messages) == len(agent.session.context().messages) == 3  # rebuilt: system, question, answer
    assert "session_event" in events


def test_with_an_agent_a_fork_shows_a_new_agent_on_the_new_file(agent):
    view = TreeView(agent)
    first = next(k for k, n in view.nodes.items() if n["title"] == "You: first question")
    view.fork(first)
    assert view.agent is not None and view.agent is not agent
    assert view.agent.session is view.last_fork and view.agent.model.ref == agent.model.ref
    assert view.capabilities["compact"]


def test_compact_up_to_here_with_an_agent(tmp_path):
    from pi_jupyter import Agent, AgentSettings
    from pi_jupyter.compaction import CompactionSettings

    settings = AgentSettings(compaction=CompactionSettings(keep_recent_tokens=50))
    a = Agent(Session.create(path=tmp_path / "c.jsonl"), model="offline/echo", settings=settings)
    for i in range(4):
        run_blocking(a.prompt(f"question {i} " + "words " * 200))
    view = TreeView(a)
    third = next(k for k, n in view.nodes.items() if n["title"].startswith("You: question 2"))
    browser_says(view, type="action", action="compact", key=third, instructions="keep the numbers")
    assert view.status["kind"] == "ok", view.status
    (compaction,) = [n for n in view.graph.nodes.values() if n.kind == "compaction"]
    assert compaction.parent == third and view.leaf == compaction.key  # compacted where it was asked
    assert compaction.tokens_before > 0
    assert [m.role for m in a.messages[:2]] == ["system", "compactionSummary"]  # rebuilt; the prompt snapshot leads


def test_check_out_with_a_branch_summary(agent):
    view = TreeView(agent)
    first = next(k for k, n in view.nodes.items() if n["title"] == "You: first question")
    browser_says(view, type="action", action="checkout", key=first, summarize=True, instructions="what was tried")
    assert view.status["kind"] == "ok", view.status
    (summary,) = [n for n in view.graph.nodes.values() if n.kind == "branch_summary"]
    assert summary.parent == first and summary.is_leaf
    assert "checked out with a branch summary" in view.status["text"]


# ------------------------------------------------------------------------------ %pi tree


def test_show_tree_picks_the_widget_the_picture_or_the_text(agent):
    from pi_jupyter.notebook.tree_view.display import show_tree

    assert isinstance(show_tree(agent, ["--text"]), TextTree)
    assert isinstance(show_tree(agent, []), session_graph_class())  # no kernel here: the picture
    full = show_tree(agent, ["--full", "--static", "--max-nodes", "40", "--lr"])
    assert full.model.options.mode == "full" and full.model.options.max_nodes == 40 and full.model.options.rankdir == "LR"
    state = types.SimpleNamespace(runner=object(), switch=lambda s: s)
    shell = types.SimpleNamespace(kernel=object(), _pi_magics=types.SimpleNamespace(widget=True, state=state))
    view = show_tree(agent, [], shell=shell)
    assert isinstance(view, TreeView) and view._runner is state.runner and view._on_fork is state.switch
    shell._pi_magics.widget = False
    assert isinstance(show_tree(agent, [], shell=shell), session_graph_class())
    with pytest.raises(ValueError, match=r"%pi tree: unknown option --sideways"):
        show_tree(agent, ["--sideways"])


def test_pi_tree_magic(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "pi_jupyter")
        shell.run_line_magic("config", "PiMagics.session_dir = 'sessions'")
        out = shell.run_line_magic("pi", "tree --text")
        assert isinstance(out, TextTree) and "entries" in out.text
        shell.run_cell("%%pi\nhello tree")
        graph = shell.run_line_magic("pi", "tree")
        assert any(n.title == "You: hello tree" for n in graph.nodes.values())
        first_end = graph.model.nodes[graph.model.leaf].target_id
        shell.run_line_magic("pi", f"checkout {first_end}")
        shell.run_cell("%%pi\nanother way")
        session = shell._pi_magics.state.agent_for().session
        comparison = shell.run_line_magic("pi", f"compare {first_end} {session.leaf_id}")
        assert comparison.ancestor_id == first_end and [b.turns for b in comparison.branches] == [0, 1]
    finally:
        InteractiveShell.clear_instance()


def test_sample_session_is_the_same_for_a_seed():
    a, b = sample_session(150, seed=4), sample_session(150, seed=4)
    assert a.graph().text().splitlines()[1:] == b.graph().text().splitlines()[1:]


def test_search_text_holds_every_text_a_node_shows(tmp_path):
    s = Session.in_memory()
    write_turn(s, "fetch the prices", "ok")
    write_turn(
        s, "again please", "", stop="error", error='429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}'
    )
    s.append_model_change("openai", "gpt-5.1-codex")
    write_turn(s, "and now", "fine", model="openai/gpt-5.1-codex")
    view = TreeView(s)
    by_title = {n["title"]: n for n in view.nodes.values()}
    failed = by_title["You: again please"]["search"]
    for shown in ("429", "rate limit", "rate_limit_error", "error"):
        assert shown in failed, shown
    assert "gpt-5.1-codex" in " ".join(n["search"] for n in view.nodes.values())
    assert "current leaf" in by_title["You: and now"]["search"]
    # keyboard navigation reads the tree shape from the nodes
    leaf = view.nodes[view.leaf]
    assert leaf["parent"] and view.leaf in view.nodes[leaf["parent"]]["children"]
    view.close()


def test_header_counts_every_entry_and_says_what_is_not_drawn(tmp_path):
    from pi_jupyter.notebook.cells import CellRun, record_run

    s = Session.create(path=tmp_path / "cells.jsonl")
    ids = write_turn(s, "cell one", "ok")
    record_run(s, CellRun(cell_id="c1", started_from=None, produced=ids, end=ids[-1], execution_count=1))
    view = TreeView(s)
    assert f"{len(s)} entries (1 of them cell records and checkout markers, not drawn)" in view.header
    reopened = Session.open(str(tmp_path / "cells.jsonl"))
    assert len(reopened) == len(s)  # what %pi open and pi-jupyter info count
    view.close()


def test_presentation_scale_is_read_defensively():
    class Magics:
        scale = 1.5

    assert tree_view.presentation_scale(types.SimpleNamespace(_pi_magics=Magics())) == 1.5
    for odd in (float("nan"), -1, "big", True, None):
        assert tree_view.presentation_scale(types.SimpleNamespace(_pi_magics=types.SimpleNamespace(scale=odd))) == 1.0
    assert tree_view.presentation_scale(types.SimpleNamespace()) == 1.0
    assert tree_view.presentation_scale(types.SimpleNamespace(_pi_magics=types.SimpleNamespace(scale=40))) == 4.0
    view = TreeView(Session.in_memory(), scale=1.25)
    assert view.scale == 1.25
    view.close()


def test_compare_many_picked_nodes(tmp_path):
    s, t = branched(tmp_path)
    s.checkout(t["root"][-1])
    c = write_turn(s, "idea C", "C works")
    view = TreeView(s)
    browser_says(view, type="action", action="compare_many", keys=[key_of(view, t["a"][0]), key_of(view, t["b"][0]), key_of(view, c[0])])
    assert view.details["kind"] == "comparison" and view.details["title"].startswith("Compare 3 branches")
    assert len(view.last_comparison.branches) == 3
    browser_says(view, type="action", action="compare_many", keys=[key_of(view, c[0])])
    assert "two or more" in view.status["text"]
    view.close()


def test_search_looks_inside_folded_turns():
    s = Session.in_memory()
    for i in range(30):
        write_turn(s, f"step {i}", "the usual answer" if i != 7 else "a sneaky gradient explosion in layer four")
    view = TreeView(s)
    hidden = view.graph.model.by_entry[next(e["id"] for e in s.raw_entries() if "sneaky" in str(e))]
    assert view.nodes[hidden]["folded"] and "sneaky" not in view.nodes[hidden]["search"]
    browser_says(view, type="search", query="Sneaky  EXPLOSION")
    assert view.found == {"query": "Sneaky  EXPLOSION", "keys": [hidden]}
    assert view.search("gradient nowhere") == []
    assert view.search("") == []
    view.close()


def test_a_label_is_found_on_the_node_it_labels_not_where_its_entry_was_written():
    """The label entry hangs below whatever was the leaf when it was set (another branch here): searching the label
    finds the labelled node only, whenever the kernel's answer arrives."""
    s = Session.in_memory()
    write_turn(s, "What is in the data?", "a table")
    first = s.leaf_id
    write_turn(s, "Plot the second column", "a plot")
    s.checkout(first)
    write_turn(s, "Try a log scale instead", "a log plot")
    s.label(first, "baseline")
    s.label(first, "reference")  # relabelled: the old name finds nothing
    view = TreeView(s)
    labelled = view.graph.model.by_entry[first]
    assert view.search("reference") == [labelled]
    assert view.search("baseline") == []
    view.close()
