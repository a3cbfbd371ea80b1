"""The agent records its system prompt and tool set in the transcript as pi 1.x does: a leading
system message, then a delta only when something changed between runs; the request carries the
prompt once (from the transcript), and a pi 1.6 session's own prompt sections are replaced."""

from __future__ import annotations

import asyncio
import json

import pytest
from wire.helpers import wire_model
from wire.server import openai_reply

from pi_jupyter import Agent, AgentSettings, Session
from pi_jupyter.agent.agent import RetrySettings
from pi_jupyter.session import ContextEditError


def recording_agent(wire, session: Session, **kw) -> Agent:
    settings = AgentSettings(record_system_prompt=True, retry=RetrySettings(enabled=False))
    return Agent(session, model=wire_model(wire), api_key="sk-test", settings=settings, thinking="off", **kw)


def system_entries(session: Session) -> list[dict]:
    return [e["message"] for e in session.raw_entries() if e["type"] == "message" and e["message"]["role"] == "system"]


def test_prompt_and_tools_are_recorded_once_then_only_changes(wire, tmp_path):
    wire.queue("openai", openai_reply("one"), openai_reply("two"), openai_reply("three"))
    agent = recording_agent(wire, Session.create(tmp_path), tools=["read", "bash"])
    events: list = []
    agent.subscribe(events.append)
    asyncio.run(agent.prompt("first"))
    starts = [(e.type, getattr(getattr(e, "message", None), "role", None)) for e in events][:6]
    # as pi 1.6 announces its recorded prompt: right after turn_start, before the user's message
    assert starts == [
        ("agent_start", None), ("turn_start", None), ("message_start", "system"), ("message_end", "system"),
        ("message_start", "user"), ("message_end", "user"),
    ]  # fmt: skip
    asyncio.run(agent.prompt("second"))
    [lead] = system_entries(agent.session)
    assert lead["sections"] == {"preamble": agent.system_prompt}
    assert [t["name"] for t in lead["toolsAdded"]] == ["read", "bash"]
    requests = wire.requests_to("openai")
    for request in requests:
        system = [m for m in request.body["messages"] if m["role"] in ("system", "developer")]
        assert [m["content"] for m in system] == [agent.system_prompt]  # once, not doubled by the transcript
        assert [t["function"]["name"] for t in request.body["tools"]] == ["read", "bash"]
    agent.tools = [t for t in agent.tools if t.name == "read"]
    asyncio.run(agent.prompt("third"))
    lead, delta = system_entries(agent.session)
    assert delta.get("toolsRemoved") == [{"name": "bash"}] and "toolsAdded" not in delta
    assert delta["sections"] == {"preamble": agent.system_prompt}  # the tool list in the prompt changed too
    last = wire.requests_to("openai")[-1].body
    assert [t["function"]["name"] for t in last["tools"]] == ["read"]
    assert [m["content"] for m in last["messages"] if m["role"] == "system"] == [agent.system_prompt]
    reopened = Session.open(agent.session.path)
    assert reopened.load_report.ok and [m.role for m in reopened.context().llm()].count("system") == 2


def test_a_pi16_branch_gets_our_prompt_in_place_of_pis_sections(wire, tmp_path):
    path = tmp_path / "pi.jsonl"
    rows = [
        {"type": "session", "version": 3, "id": "p", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": str(tmp_path)},
        {
            "type": "message",
            "id": "s1",
            "parentId": None,
            "timestamp": "2026-12-01T00:00:01.000Z",
            "message": {
                "role": "system",
                "content": "",
                "sections": {"preamble": "pi's own intro", "tools": "<tools>...</tools>", "cwd": "<cwd>/w</cwd>"},
                "toolsAdded": [{"name": "grep", "description": "pi's grep", "parameters": {"type": "object"}}],
                "timestamp": 1,
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    wire.queue("openai", openai_reply("hi"))
    agent = recording_agent(wire, Session.open(path), tools=["read"])
    asyncio.run(agent.prompt("hello"))
    _, delta = system_entries(agent.session)
    assert delta["sections"] == {"tools": None, "cwd": None, "preamble": agent.system_prompt}
    assert delta["toolsRemoved"] == [{"name": "grep"}] and [t["name"] for t in delta["toolsAdded"]] == ["read"]
    body = wire.requests_to("openai")[-1].body
    assert [m["content"] for m in body["messages"] if m["role"] == "system"] == [agent.system_prompt]
    assert [t["function"]["name"] for t in body["tools"]] == ["read"]


def test_compaction_and_branch_summary_entries_record_what_their_summary_cost(tmp_path):
    from pi_jupyter.cli.info_cmd import session_summary

    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off")
    for n in range(4):
        asyncio.run(agent.prompt(f"question {n} " + "words " * 200))
    first_answer = agent.session.branch_ids()[3]
    asyncio.run(agent.compact(keep_recent_tokens=100))
    compaction = agent.session.raw_entry(agent.session.leaf_id)
    assert compaction["type"] == "compaction" and compaction["usage"]["totalTokens"] > 0
    asyncio.run(agent.checkout(first_answer, summarize=True))
    summary = agent.session.raw_entry(agent.session.leaf_id)
    assert summary["type"] == "branch_summary" and summary["usage"]["totalTokens"] > 0
    info = session_summary(Session.open(agent.session.path))
    replies = [e["message"] for e in agent.session.raw_entries() if e.get("message", {}).get("role") == "assistant"]
    answers = sum(m["usage"]["totalTokens"] for m in replies)
    assert info["tokens"]["totalTokens"] == answers + compaction["usage"]["totalTokens"] + summary["usage"]["totalTokens"]


def test_pi_context_shows_what_the_next_request_sends_on_a_pi16_branch(tmp_path):
    from pi_jupyter.notebook.context_view import context_report

    path = tmp_path / "pi.jsonl"
    system = {"role": "system", "content": "", "sections": {"preamble": "PI-ONLY-PROMPT"}, "toolsAdded": [], "timestamp": 1}
    rows = [
        {"type": "session", "version": 3, "id": "p", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": str(tmp_path)},
        {"type": "message", "id": "s1", "parentId": None, "timestamp": "2026-12-01T00:00:01.000Z", "message": system},
        {"type": "message", "id": "u1", "parentId": "s1", "timestamp": "2026-12-01T00:00:02.000Z", "message": {"role": "user"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    agent = Agent(Session.open(path), model="offline/echo", tools=["read"])
    report = context_report(agent)
    assert "PI-ONLY-PROMPT" not in report and agent.system_prompt.splitlines()[0] in report
    assert "**1. user**" in report and "system**" not in report  # folded into the prompt, as the providers fold it


def test_context_edits_and_extension_entries_are_announced_as_pi16_does(tmp_path):
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off")
    asyncio.run(agent.prompt("my key is sk-announce-1"))
    events: list = []
    agent.subscribe(events.append)
    user_id = agent.session.branch_ids()[-2]
    edit_id = agent.edit_context(user_id, None)
    [announced] = [e.to_dict() for e in events if e.type == "entry_appended"]
    assert announced["entry"]["id"] == edit_id and announced["entry"]["targetId"] == user_id
    assert [m.role for m in agent.messages] == ["system", "assistant"]  # the agent's own messages were rebuilt
    with pytest.raises(ContextEditError, match="does not contribute editable model content"):
        agent.edit_context(agent.session.branch_ids()[0], None)  # the model_change entry


def test_a_rerun_from_the_start_goes_through_the_recorded_prompt_and_a_change_writes_a_sibling(tmp_path):
    settings = AgentSettings(record_system_prompt=True)
    agent = Agent(Session.create(tmp_path), model="offline/echo", settings=settings, tools=["read", "bash"], thinking="off")
    start = agent.session.leaf_id
    asyncio.run(agent.prompt("first"))
    [lead] = [e for e in agent.session.raw_entries() if e["type"] == "message" and e["message"]["role"] == "system"]
    agent.session.checkout(start)
    agent.reload()
    again = asyncio.run(agent.prompt("first, again"))
    assert [m.role for m in again.messages] == ["user", "assistant"]  # nothing recorded twice
    assert [m.role for m in agent.session.context().messages] == ["system", "user", "assistant"]
    assert len(agent.session.child_ids(lead["id"])) == 2
    # from the same start with fewer tools: the recorded prompt no longer fits, a new one is written beside it
    agent.session.checkout(start)
    agent.reload()
    agent.tools = [t for t in agent.tools if t.name == "read"]
    narrowed = asyncio.run(agent.prompt("first, read only"))
    assert [m.role for m in narrowed.messages] == ["system", "user", "assistant"]
    system = narrowed.messages[0]
    assert [t["name"] for t in system.tools_added] == ["read"]
    assert agent.session.raw_entry(narrowed.entry_ids[0])["parentId"] == lead["parentId"]
    assert Session.open(agent.session.path).load_report.ok
