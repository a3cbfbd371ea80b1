"""A model that never stops calling tools cannot run forever (issue 29): the turn limit.

The wire server here answers every request with a tool call, as a broken or adversarial
model server would. A run stops after ``max_turns`` model calls (default
:data:`DEFAULT_MAX_TURNS`) with a reply the user sees: stop reason ``error`` and the message
"Turn limit reached: ...". The tool results of the last turn stay in the file, the stopped
reply does not reach the model again, and a new prompt continues from there. The limit is
set with ``AgentSettings.max_turns``, ``--max-turns`` (``prompt`` and ``rpc``), RPC
``set_max_turns`` and ``%config PiMagics.max_turns``; 0 means no limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest
from rpc_client import entries
from test_notebook_magics import ip  # noqa: F401 - a fixture
from wire.server import openai_reply, tool_call

from pi_jupyter import Agent, Session
from pi_jupyter.agent.settings import AgentSettings
from pi_jupyter.notebook.config import PiConfig
from pi_jupyter.notebook.failure import CellFailed

KEY = "sk-test-turns-abcdefghijklmnopqrstuvwxyz0123"
DEFAULT_MAX_TURNS = AgentSettings().max_turns


def always_a_tool_call(wire) -> None:
    wire.queue_default("openai", openai_reply(tool_calls=[tool_call("ls", {"path": "."})]))


def agent_on(wire, tmp_path, **settings) -> Agent:
    session = Session.open(tmp_path / "s.jsonl", create=True)
    return Agent(
        session,
        model="openai/gpt-test",
        base_url=wire.openai_url,
        api_key=KEY,
        tools=["ls"],
        cwd=str(tmp_path),
        settings=AgentSettings(**settings),
    )


def test_the_default_limit_stops_a_model_that_always_calls_a_tool(wire, tmp_path):
    always_a_tool_call(wire)
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    env.pop("PI_JUPYTER_MODEL", None)
    argv = [sys.executable, "-m", "pi_jupyter", "prompt", "--model", "openai/gpt-test", "--base-url", wire.openai_url]
    proc = subprocess.Popen(
        [*argv, "--tools", "ls", "--session", str(tmp_path / "s.jsonl"), "list the files"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while proc.poll() is None:
            if len(wire.requests_to("openai")) > DEFAULT_MAX_TURNS:  # fails at once, not after a timeout
                pytest.fail(f"the run went past {DEFAULT_MAX_TURNS} model calls: no turn limit")
            time.sleep(0.05)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1
    assert len(wire.requests_to("openai")) == DEFAULT_MAX_TURNS
    notes = [line for line in err.splitlines() if "Turn limit" in line]
    assert len(notes) == 1 and f"{DEFAULT_MAX_TURNS} turns" in notes[0] and "Traceback" not in err
    saved = [e["message"] for e in entries(tmp_path / "s.jsonl") if e["type"] == "message"]
    assert saved[-2]["role"] == "toolResult"  # the last turn's tool result is kept
    assert saved[-1]["role"] == "assistant" and saved[-1]["stopReason"] == "error"
    assert saved[-1]["errorMessage"].startswith("Turn limit reached")


def test_agent_setting_stops_continues_and_the_stop_is_not_sent_back(wire, tmp_path):
    always_a_tool_call(wire)
    agent = agent_on(wire, tmp_path, max_turns=3)
    events: list[str] = []
    agent.subscribe(lambda e: events.append(e.type))
    result = asyncio.run(agent.prompt("list the files"))
    assert result.stop_reason == "error" and "Turn limit reached" in (result.error_message or "")
    assert "3 turns" in result.error_message
    assert len(wire.requests_to("openai")) == 3
    assert events[-2:] == ["turn_end", "agent_end"]
    # a new prompt continues after the last tool result; the stopped reply is not in the request
    wire.queue_default("openai", None)
    wire.queue("openai", openai_reply(text="Here are the files."))
    result = asyncio.run(agent.prompt("go on"))
    assert result.ok and result.text == "Here are the files."
    body = wire.requests_to("openai")[-1].body
    roles = [m["role"] for m in body["messages"]]
    assert roles[-2:] == ["tool", "user"] and "Turn limit" not in json.dumps(body)


def test_zero_means_no_limit(wire, tmp_path):
    replies = [openai_reply(tool_calls=[tool_call("ls", {"path": "."})])] * (DEFAULT_MAX_TURNS + 5)
    wire.queue("openai", *replies, openai_reply(text="done at last"))
    agent = agent_on(wire, tmp_path, max_turns=0)
    result = asyncio.run(agent.prompt("keep going"))
    assert result.ok and result.text == "done at last"
    assert len(wire.requests_to("openai")) == DEFAULT_MAX_TURNS + 6


def test_rpc_flag_and_set_max_turns(rpc, wire, tmp_path):
    always_a_tool_call(wire)
    args = ("--no-session", "--model", "openai/gpt-test", "--base-url", wire.openai_url, "--tools", "ls", "--max-turns", "2")
    server = rpc(*args, env={"OPENAI_API_KEY": KEY})
    server.timeout = 30.0
    server.send({"id": "p1", "type": "prompt", "message": "loop"})
    last = server.until("agent_end")["messages"][-1]
    assert last["stopReason"] == "error" and last["errorMessage"].startswith("Turn limit reached") and "2 turns" in last["errorMessage"]
    server.until("agent_settled")
    assert server.data({"id": "m", "type": "set_max_turns", "maxTurns": 4}) is None
    server.send({"id": "p2", "type": "prompt", "message": "loop again"})
    last = server.until("agent_end")["messages"][-1]
    assert "4 turns" in last["errorMessage"]
    bad = server.call({"id": "b", "type": "set_max_turns", "maxTurns": -1})
    assert bad["success"] is False and "maxTurns" in bad["error"]
    assert server.finish() == 0
    assert len(wire.requests_to("openai")) == 6


def test_config_setting_in_a_notebook(ip, wire, monkeypatch, request):  # noqa: F811 - the fixture
    always_a_tool_call(wire)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    ip.run_line_magic("config", f"PiMagics.base_url = {wire.openai_url!r}")
    request.addfinalizer(lambda: ip.run_line_magic("config", "PiMagics.base_url = ''"))  # the shell outlives the test
    ip.run_line_magic("config", "PiMagics.model = 'openai/gpt-test'")
    ip.run_line_magic("config", "PiMagics.max_turns = 2")
    request.addfinalizer(lambda: ip.run_line_magic("config", "PiMagics.max_turns = 100"))
    # the run ended in an error reply, so the cell ends in an error that says why (Run All stops there)
    with pytest.raises(CellFailed, match="Turn limit reached: stopped after 2 turns"):
        ip.run_cell_magic("pi", "--tools ls", "loop")
    assert len(wire.requests_to("openai")) == 2
    ip.run_line_magic("config", "PiMagics.max_turns = 3")  # applies from the next cell
    with pytest.raises(CellFailed, match="stopped after 3 turns"):
        ip.run_cell_magic("pi", "--tools ls", "loop again")
    assert len(wire.requests_to("openai")) == 5
    with pytest.raises(ValueError, match="max_turns must be a number of turns"):
        PiConfig.validate_settings({"max_turns": -3}, "pyproject.toml")


def test_the_cell_output_shows_why_the_run_stopped(wire, tmp_path):
    """What the notebook keeps of the run (the static rendering of the widget) names the turn limit."""
    from pi_jupyter.notebook.agent_view.view import AgentView

    always_a_tool_call(wire)
    agent = agent_on(wire, tmp_path, max_turns=2)
    view = AgentView(model=agent.model.ref)
    agent.subscribe(view.handle)
    asyncio.run(agent.prompt("loop"))
    bundle = view.final_bundle()
    assert "Turn limit reached" in bundle["text/html"] and "Turn limit reached" in bundle["text/markdown"]
