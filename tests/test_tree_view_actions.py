"""TreeView actions that must not surprise: what is offered, what a failure leaves behind, what the lens says.

Driven by the comm messages the browser sends (``_handle_msg``), on real sessions with the
offline model: "Compact up to here" is offered only where a compaction has something to do,
a refused or failed compaction leaves the leaf and the file as they were, no Python class
name reaches the status line, and the context lens on the current node counts what the next
request sends, the same as ``%pi context``.
"""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

from pi_jupyter import Agent, AgentSettings
from pi_jupyter.agent.extensions import CANCEL
from pi_jupyter.agent.sync import run_blocking
from pi_jupyter.compaction import CompactionSettings
from pi_jupyter.notebook.context_view import context_report
from pi_jupyter.notebook.tree_view.view import TreeView
from pi_jupyter.session import Session


def browser_says(view, **content) -> None:
    """Deliver ``content`` as a custom message from the frontend."""
    view._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def lines(path: str) -> int:
    return len(Path(path).read_text(encoding="utf-8").splitlines())


def node_titled(view: TreeView, start: str) -> str:
    return next(k for k, n in view.nodes.items() if n["title"].startswith(start))


class CancelCompaction:
    """An extension that cancels every compaction (as a user's policy extension might)."""

    name = "no-compaction"

    def before_compact(self, request, ctx):
        return CANCEL


def test_compact_is_not_offered_where_nothing_would_be_compacted_and_a_refusal_changes_nothing(tmp_path):
    agent = Agent(Session.create(path=tmp_path / "short.jsonl"), model="offline/echo")
    run_blocking(agent.prompt("first question"))
    run_blocking(agent.prompt("second question"))
    view = TreeView(agent)
    first = node_titled(view, "You: first question")
    browser_says(view, type="select", key=first)
    assert view.details["compactWhy"].startswith("nothing to compact up to here yet")  # the button is disabled with this reason
    leaf, size = agent.session.leaf_id, lines(agent.session.path)

    browser_says(view, type="action", action="compact", key=first)  # sent anyway (an old page, a script)

    assert view.status["kind"] == "error" and view.status["text"].startswith("Nothing to compact up to here yet")
    assert "NothingToCompact" not in view.status["text"] and "Error" not in view.status["text"]
    assert agent.session.leaf_id == leaf and view.leaf == node_titled(view, "You: second question")  # nothing moved
    assert lines(agent.session.path) == size  # nothing written


def long_agent(path: Path, **options) -> Agent:
    """An agent that keeps only 50 recent tokens, after four long turns: compaction has work to do."""
    settings = AgentSettings(compaction=CompactionSettings(keep_recent_tokens=50))
    agent = Agent(Session.create(path=path), model="offline/echo", settings=settings, **options)
    for i in range(4):
        run_blocking(agent.prompt(f"question {i} " + "words " * 200))
    return agent


def test_compact_is_offered_where_it_works(tmp_path):
    view = TreeView(long_agent(tmp_path / "long.jsonl"))
    browser_says(view, type="select", key=node_titled(view, "You: question 2"))
    assert view.details["compactWhy"] == ""


def test_a_compaction_that_fails_after_its_checkout_puts_the_leaf_back(tmp_path):
    agent = long_agent(tmp_path / "cancel.jsonl", extensions=[CancelCompaction()])
    view = TreeView(agent)
    leaf = agent.session.leaf_id
    context_before = agent.session.context().raw_messages

    browser_says(view, type="action", action="compact", key=node_titled(view, "You: question 2"))

    assert view.status == {**view.status, "kind": "error", "text": "compaction cancelled by an extension"}
    assert agent.session.leaf_id == leaf and Session.open(agent.session.path, readonly=True).leaf_id == leaf
    assert agent.session.context().raw_messages == context_before
    assert not [e for e in agent.session.raw_entries() if e["type"] == "compaction"]


def test_the_lens_on_the_current_node_after_forget_counts_what_pi_context_counts(tmp_path):
    agent = Agent(Session.create(path=tmp_path / "lens.jsonl"), model="offline/echo", tools=["python"], tool_extra={"namespace": {}})
    run_blocking(agent.prompt("hello"))
    result = run_blocking(agent.prompt("use python:\n```python\n1 + 1\n```"))
    tool_result = next(e for e in result.entry_ids if agent.session.entry(e).message.role == "toolResult")
    view = TreeView(agent)
    current = view.leaf
    browser_says(view, type="select", key=current)
    browser_says(view, type="action", action="lens", key=current)
    assert view.last_lens.state_of(tool_result) == "in"

    browser_says(view, type="action", action="forget", key=current, entry=tool_result)

    assert view.status["kind"] == "ok", view.status
    report = context_report(agent)  # what %pi context shows
    sent = int(re.search(r"^(\d+) messages, about ([\d,]+) tokens", report, re.M).group(1))
    tokens = int(re.search(r"^(\d+) messages, about ([\d,]+) tokens", report, re.M).group(2).replace(",", ""))
    assert (view.last_lens.sent_messages, view.last_lens.sent_tokens) == (sent, tokens), (view.last_lens.headline(), report)
    assert view.last_lens.state_of(tool_result) == "dropped"  # listed as not sent: the request carries a placeholder
    assert "1 message forgotten (context edits)" in view.lens["headline"]
    assert json.loads(json.dumps(view.lens))["headline"].startswith(f"Next request from {agent.session.leaf_id}")
    assert f"{sent} messages" in view.lens["headline"]


def test_the_tree_picture_kept_in_the_notebook_says_when_it_was_drawn(tmp_path):
    from pi_jupyter.notebook.tree_view.display import DURABLE_TREE_TYPES, show_tree

    agent = Agent(Session.create(path=tmp_path / "picture.jsonl"), model="offline/echo")
    run_blocking(agent.prompt("first question"))
    shell = types.SimpleNamespace(kernel=object(), _pi_magics=types.SimpleNamespace(widget=True, state=None))
    view = show_tree(agent, [], shell=shell)  # what %pi tree returns in a kernel
    data, metadata = view._repr_mimebundle_()
    assert set(metadata["pi_jupyter"]["durable"]) <= set(DURABLE_TREE_TYPES)
    kept = {k: v for k, v in data.items() if k in metadata["pi_jupyter"]["durable"]}  # what the saved file keeps
    assert kept["text/plain"].startswith("Drawn at ") and "when the cell ran" in kept["text/plain"]
    if "image/svg+xml" in kept:
        assert "when the cell ran" in kept["image/svg+xml"] and "You: first question" in kept["image/svg+xml"]
        assert "when the cell ran" not in view.svg  # the live view has no such line
