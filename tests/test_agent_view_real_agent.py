"""AgentView driven by a real :class:`Agent` (the offline model, a real ``read`` tool call), not a hand-written event stream.

``tests/browser/fake_agent.py`` imitates the agent's events; if the agent's events change,
tests built on it keep passing. Here the widget sees what the agent really emits, over the
recording comm of ``test_agent_view``, and the frontend's merge logic (``Store`` in
``agent_view.js``, run in node) rebuilds the same transcript from the messages sent.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_agent_view import NODE_SCRIPT, _frontend_stream, esm_source, recorded  # noqa: F401 - the fixture is used by name

from pi_jupyter import Agent, Session
from pi_jupyter.notebook.agent_view.view import AgentView


def run_agent(tmp_path: Path, model: str) -> tuple[Agent, AgentView, object]:
    (tmp_path / "data.csv").write_text("city,temp\nOslo,-3\nLima,19\n")
    agent = Agent(Session.create(tmp_path / "sessions", cwd=str(tmp_path)), model=model, tools=["read"], cwd=str(tmp_path))
    view = AgentView(model=agent.model.ref)
    agent.subscribe(view.handle)
    result = asyncio.run(agent.prompt("use read on `data.csv`"))
    view.flush()
    return agent, view, result


def test_the_widget_shows_a_real_agents_turn_with_its_tool_call(recorded, tmp_path):  # noqa: F811
    agent, view, result = run_agent(tmp_path, "offline/echo")
    assert result.ok
    kinds = [item["kind"] for item in view.transcript]
    assert kinds == ["notice", "user", "assistant", "assistant"]
    # the recorded system prompt is a one-line notice, not the prompt's text
    notice = view.transcript[0]["text"]
    assert "\n" not in notice and len(notice) < 200 and agent.system_prompt.splitlines()[0] not in notice
    assert view.transcript[1]["text"] == "use read on `data.csv`"
    call = next(b for b in view.transcript[2]["blocks"] if b["type"] == "toolCall")
    assert call["name"] == "read" and json.loads(call["text"]) == {"path": "data.csv"}
    assert call["x"]["status"] == "done" and call["x"]["output"] == "city,temp\nOslo,-3\nLima,19\n"
    # the tool call's id in the widget is the one the session recorded
    recorded_calls = [
        block["id"]
        for entry in agent.session.raw_entries()
        if entry["type"] == "message" and entry["message"]["role"] == "assistant"
        for block in entry["message"]["content"]
        if block["type"] == "toolCall"
    ]
    assert recorded_calls == [call["id"]]
    final = view.transcript[3]["blocks"][-1]
    assert final["type"] == "text" and "Oslo,-3" in final["text"] and final["text"] == result.text
    assert view.status["state"] == "done" and not view.status["running"]
    assert view.status["tokens"]["input"] == result.usage.input


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the widget's JavaScript")
def test_the_frontend_rebuilds_the_same_transcript_from_a_real_streamed_run(recorded, tmp_path):  # noqa: F811
    _, view, result = run_agent(tmp_path, "offline/typewriter")  # paced deltas: many live ops, not one snapshot
    assert result.ok
    stream = _frontend_stream(view)
    assert sum(1 for m in stream if m["kind"] == "ops") > 1
    data = tmp_path / "input.json"
    scenarios = {"in_order": stream, "ops_only": [m for m in stream if m["kind"] == "ops"]}
    data.write_text(json.dumps({"initial": {"items": [], "seq": 0}, "scenarios": scenarios, "markdown": [], "inline": [], "code": []}))
    script = tmp_path / "run.mjs"
    script.write_text(NODE_SCRIPT)
    module = tmp_path / "agent_view.mjs"
    module.write_text(esm_source())  # the module the widget ships: its parts joined
    proc = subprocess.run(["node", str(script), str(module), str(data)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["in_order"] == view.transcript
    assert out["ops_only"] == view.transcript
