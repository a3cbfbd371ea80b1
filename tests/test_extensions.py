"""Extensions: hooks, state in custom entries, errors as events, and what reaches the wire."""

from __future__ import annotations

import asyncio
import json
import sys

import pandas as pd
from plugins import install_extensions
from wire.helpers import wire_model
from wire.server import openai_reply, tool_call

from pi_jupyter import Agent, AgentSettings, Session
from pi_jupyter.agent import ToolDecision, ToolResult
from pi_jupyter.agent.agent import RetrySettings
from pi_jupyter.agent.extensions import CANCEL, HANDLED
from pi_jupyter.extensions.audit import AuditExtension
from pi_jupyter.extensions.dataframes import DataFramesExtension

KEY = "sk-test-extension-0123456789abcdef"


def agent_on(wire, tmp_path, namespace=None, extensions=(), tools=("read",)) -> Agent:
    return Agent(
        Session.create(tmp_path),
        model=wire_model(wire),
        api_key=KEY,
        tools=list(tools),
        cwd=str(tmp_path),
        tool_extra={"namespace": namespace} if namespace is not None else None,
        extensions=extensions,
        settings=AgentSettings(retry=RetrySettings(enabled=False)),
    )


class SummaryHook:
    """An extension with one hook, ``before_compact`` or ``before_checkout``: it records each
    request and answers :data:`CANCEL` when ``mode`` is ``"cancel"``, else ``summary``."""

    def __init__(self, name: str, hook: str, summary: str, mode: str = "supply") -> None:
        self.name, self.summary, self.mode = name, summary, mode
        self.requests: list = []
        setattr(self, hook, self._answer)

    def _answer(self, request, ctx):
        self.requests.append(request)
        return CANCEL if self.mode == "cancel" else self.summary


def install_here(tmp_path, monkeypatch, entry_points: dict[str, str], module_source: str) -> None:
    """:func:`plugins.install_extensions`, importable by this process: module ``runs_ext``
    (pop it from ``sys.modules`` at the end of the test)."""
    install_extensions(tmp_path, entry_points, module_source)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sys.modules.pop("runs_ext", None)  # left by a test that failed before its clean-up


def test_audit_never_reaches_the_model_and_the_dataframe_note_does(wire, tmp_path):
    (tmp_path / "notes.txt").write_text("sensitive-looking audit target\n")
    frames = {"sales": pd.DataFrame({"region": ["n", "s"], "revenue": [1.5, 2.5]}), "x": 3}
    wire.queue(
        "openai",
        openai_reply(tool_calls=[tool_call("read", {"path": "notes.txt"}, id="call_1")]),
        openai_reply("I read it."),
        openai_reply("Second answer."),
    )
    agent = agent_on(wire, tmp_path, frames, [AuditExtension(), DataFramesExtension()])
    asyncio.run(agent.prompt("Read notes.txt"))
    asyncio.run(agent.prompt("And now?"))

    bodies = [json.dumps(r.body) for r in wire.requests]
    assert "`sales`: 2 rows" in bodies[0] and "revenue: float64)" in bodies[0] and "`x`" not in bodies[0]
    assert all('"audit"' not in b and "durationMs" not in b and "toolCallId" not in b for b in bodies)
    # the note is sent once: the frames did not change before the second prompt
    assert sum(b.count("Data frames in the notebook") for b in bodies[2:3]) == 1

    s = Session.open(agent.session.path)
    audits = [e for e in s.raw_entries() if e["type"] == "custom" and e["customType"] == "audit"]
    assert len(audits) == 1 and audits[0]["data"]["calls"][0]["tool"] == "read"
    assert audits[0]["data"]["calls"][0]["args"] == {"path": "notes.txt"}
    notes = [e for e in s.raw_entries() if e["type"] == "custom_message" and e["customType"] == "dataframes"]
    assert len(notes) == 1 and notes[0]["display"] is True

    # state comes back from the session's entries in a new process-like setup
    again = Agent(Session.open(agent.session.path), model=wire_model(wire), api_key=KEY)
    audit = again.extensions.add(AuditExtension())
    assert audit.total_calls == 1


def test_a_failing_hook_is_an_extension_error_event_and_the_run_goes_on(wire, tmp_path):
    class Broken:
        name = "broken"

        def before_prompt(self, text, ctx):
            raise RuntimeError("boom")

        def on_event(self, event, ctx):
            if event.type == "turn_end":
                raise ValueError("bad turn")

    wire.queue("openai", openai_reply("fine"))
    agent = agent_on(wire, tmp_path, extensions=[Broken()])
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("hello"))
    assert result.text == "fine"
    errors = [(e.extension_path, e.event, e.error) for e in events if e.type == "extension_error"]
    assert ("broken", "before_prompt", "RuntimeError: boom") in errors
    assert ("broken", "on_event", "ValueError: bad turn") in errors
    assert [m.role for m in Session.open(agent.session.path).context().messages] == ["system", "user", "assistant"]


def test_input_context_and_tool_hooks(wire, tmp_path):
    seen_contexts = []

    class Rules:
        name = "rules"

        def on_input(self, text, ctx):
            if text == "/ping":
                return HANDLED
            return text.replace("colour", "color")

        def transform_context(self, messages, ctx):
            seen_contexts.append(len(messages))
            head = 1 if messages and messages[0].role == "system" else 0  # the recorded prompt leads the context
            rest = messages[head:]
            note = type(rest[0])(content="(pruned)") if rest[0].role == "user" else rest[0]
            return [*messages[:head], note, *rest[1:]] if len(rest) > 2 else messages

        def before_tool_call(self, call, ctx):
            if call.args.get("path", "").endswith(".env"):
                return ToolDecision(block=True, reason="secrets files are off limits")
            return None

        def after_tool_call(self, call, ctx):
            return ToolResult.text(call.result.text_content.upper())

    (tmp_path / "a.txt").write_text("hello file\n")
    wire.queue(
        "openai",
        openai_reply(tool_calls=[tool_call("read", {"path": "a.txt"}, id="c1"), tool_call("read", {"path": ".env"}, id="c2")]),
        openai_reply("done"),
        openai_reply("second"),
    )
    agent = agent_on(wire, tmp_path, extensions=[Rules()])
    assert asyncio.run(agent.prompt("/ping")).messages == []
    assert wire.requests == []  # handled: no model call
    asyncio.run(agent.prompt("What colour?"))
    first = wire.requests[0].body["messages"]
    assert "What color?" in json.dumps(first)
    tool_msgs = [m for m in wire.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"].startswith("HELLO FILE")
    assert tool_msgs[1]["content"] == "secrets files are off limits"  # a blocked call never ran, so no after-hook
    asyncio.run(agent.prompt("again"))
    assert "(pruned)" in json.dumps(wire.requests[2].body["messages"])
    assert seen_contexts  # called before every model call


def test_before_compact_can_cancel_or_supply_the_summary(tmp_path):
    keeper = SummaryHook("keeper", "before_compact", "## Goal\n- summary written by the extension")
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off", extensions=[keeper])
    for i in range(4):
        asyncio.run(agent.prompt(f"turn {i} " + "words " * 200))
    keeper.mode = "cancel"
    before = open(agent.session.path, "rb").read()
    try:
        asyncio.run(agent.compact(keep_recent_tokens=100))
        raise AssertionError("expected the compaction to be cancelled")
    except Exception as exc:  # noqa: BLE001
        assert "cancelled by an extension" in str(exc)
    assert open(agent.session.path, "rb").read() == before
    keeper.mode = "supply"
    result = asyncio.run(agent.compact(keep_recent_tokens=100))
    assert result.summary.startswith("## Goal")
    entry = [e for e in agent.session.raw_entries() if e["type"] == "compaction"][-1]
    assert entry["fromHook"] is True and "written by the extension" in entry["summary"]


def test_send_message_and_entry_point_registration(tmp_path, monkeypatch):
    install_here(
        tmp_path,
        monkeypatch,
        {"greeter": "runs_ext:Greeter"},
        (
            "class Greeter:\n"
            "    name = 'greeter'\n"
            "    def setup(self, ctx):\n"
            "        ctx.send_message('greeting', 'The user prefers short answers.', display=False)\n"
        ),
    )
    agent = Agent(Session.create(tmp_path / "s"), model="offline/echo", thinking="off")
    assert agent.extensions.names() == []  # a plain Agent does not load installed extensions by itself
    assert agent.extensions.load_entry_points() == ["greeter"]
    asyncio.run(agent.prompt("hi"))
    ctx = Session.open(agent.session.path).context()
    # the extension's message was sent before the run recorded the prompt; providers fold system messages wherever they are
    assert [m.role for m in ctx.messages] == ["custom", "system", "user", "assistant"]
    assert ctx.messages[0].display is False and "short answers" in ctx.llm()[0].content[0].text
    sys.modules.pop("runs_ext", None)


def test_automatic_compaction_asks_before_compact_too(tmp_path):
    """pi asks session_before_compact before automatic compactions as well as manual ones."""
    from pi_jupyter.providers import offline_model

    keeper = SummaryHook("keeper", "before_compact", "## Goal\n- written by the extension", mode="cancel")
    agent = Agent(Session.create(tmp_path), model=offline_model("small", context_window=4_000), thinking="off", extensions=[keeper])
    events = []
    agent.subscribe(lambda e: events.append(e) if e.type.startswith("auto_compaction") else None)
    for i in range(12):
        asyncio.run(agent.prompt(f"Question {i}: " + "lorem ipsum " * 50))
    assert keeper.requests and keeper.requests[0]["reason"] == "threshold"
    assert keeper.requests[0]["preparation"].messages_to_summarize  # what would be summarized
    assert [e.aborted for e in events if e.type == "auto_compaction_end"][0] is True
    assert not [e for e in agent.session.raw_entries() if e["type"] == "compaction"]
    keeper.mode = "supply"
    asyncio.run(agent.prompt("One more: " + "lorem ipsum " * 50))
    (entry,) = [e for e in agent.session.raw_entries() if e["type"] == "compaction"]
    assert entry["fromHook"] is True and entry["summary"] == "## Goal\n- written by the extension"
    assert events[-1].type == "auto_compaction_end" and events[-1].result["summary"] == entry["summary"]


def test_before_checkout_can_cancel_or_supply_the_branch_summary(tmp_path):
    guide = SummaryHook("guide", "before_checkout", "tried plan A; it failed on outliers")
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off", extensions=[guide])
    asyncio.run(agent.prompt("Plan A"))
    fork_point = agent.session.leaf_id
    asyncio.run(agent.prompt("Plan A fails on outliers"))
    guide.mode = "cancel"
    before = open(agent.session.path, "rb").read()
    try:
        asyncio.run(agent.checkout(fork_point, summarize=True))
        raise AssertionError("expected the checkout to be cancelled")
    except ValueError as exc:
        assert "cancelled by an extension" in str(exc)
    assert open(agent.session.path, "rb").read() == before
    assert guide.requests[0]["entries"][-1]["id"] == agent.session.leaf_id  # the entries the summary would cover
    guide.mode = "supply"
    leaf = asyncio.run(agent.checkout(fork_point, summarize=True, label="back"))
    label = agent.session.raw_entry(leaf)
    summary = agent.session.raw_entry(label["targetId"])
    assert summary["type"] == "branch_summary" and summary["parentId"] == fork_point
    assert summary["summary"] == "tried plan A; it failed on outliers" and summary["fromHook"] is True
    assert agent.messages[-1].role == "branchSummary"


def test_a_broken_entry_point_plugin_is_an_extension_error_not_a_crash(tmp_path, monkeypatch):
    """A plugin that has no hooks or whose class fails to build used to raise out of
    load_entry_points, and with it out of every new notebook agent (state.py loads them)."""
    install_here(
        tmp_path,
        monkeypatch,
        {"hookless": "runs_ext:Hookless", "exploding": "runs_ext:Exploding", "fine": "runs_ext:Fine"},
        (
            "class Hookless:\n"
            "    pass\n"
            "class Exploding:\n"
            "    def __init__(self):\n"
            "        raise RuntimeError('no config file')\n"
            "class Fine:\n"
            "    def on_input(self, text, ctx):\n"
            "        return text\n"
        ),
    )
    agent = Agent(Session.in_memory(), model="offline/echo", thinking="off")
    events = []
    agent.subscribe(events.append)
    assert agent.extensions.load_entry_points() == ["fine"]
    errors = {(e.extension_path, e.event) for e in events if e.type == "extension_error"}
    assert errors == {("hookless", "load"), ("exploding", "load")}
    assert "RuntimeError: no config file" in [e.error for e in events if e.type == "extension_error" and e.extension_path == "exploding"]
    assert asyncio.run(agent.prompt("still works")).ok
    sys.modules.pop("runs_ext", None)


def test_the_dataframe_note_is_sent_again_once_a_compaction_summarized_it_away(tmp_path):
    """The note is skipped when the same one is still in the context; it used to be looked up on
    the raw branch, so after a compaction the model never saw the frames again."""
    frames = {"sales": pd.DataFrame({"region": ["n", "s"], "revenue": [1.5, 2.5]})}
    agent = Agent(
        Session.create(tmp_path), model="offline/echo", thinking="off", tool_extra={"namespace": frames}, extensions=[DataFramesExtension()]
    )
    asyncio.run(agent.prompt("Look at the data " + "words " * 300))
    asyncio.run(agent.prompt("More " + "words " * 300))
    notes = lambda: [e for e in agent.session.raw_entries() if e["type"] == "custom_message" and e["customType"] == "dataframes"]  # noqa: E731
    assert len(notes()) == 1  # unchanged frames: not repeated
    asyncio.run(agent.compact(keep_recent_tokens=100))
    assert not any(getattr(m, "custom_type", None) == "dataframes" for m in agent.messages)  # only the summary mentions it
    asyncio.run(agent.prompt("And now?"))
    assert len(notes()) == 2
    assert any(getattr(m, "custom_type", None) == "dataframes" for m in agent.session.context().messages)


def test_the_dataframe_note_comes_before_the_prompt_so_the_prompt_is_answered(tmp_path):
    """After the prompt, the note read as the newest request: the offline model answered the note
    ("...use the python tool...") with an empty python call instead of answering the user."""
    frames = {"sales": pd.DataFrame({"region": ["n", "s"], "revenue": [1.5, 2.5]})}
    agent = Agent(
        Session.create(tmp_path),
        model="offline/echo",
        thinking="off",
        tools=["read", "python"],
        tool_extra={"namespace": frames},
        extensions=[DataFramesExtension()],
    )
    result = asyncio.run(agent.prompt("Hello, my name is Ada."))
    assert [m.role for m in result.messages] == ["system", "user", "assistant"]  # no tool call
    assert "You said: Hello, my name is Ada." in result.text
    kinds = [(e["type"], e.get("customType") or e.get("message", {}).get("role")) for e in Session.open(agent.session.path).raw_entries()]
    # the note is sent before the run records the prompt (providers fold system messages wherever they are)
    assert kinds[-4:] == [("custom_message", "dataframes"), ("message", "system"), ("message", "user"), ("message", "assistant")]
