""" "forget this" in the live AgentView, driven by a real :class:`Agent` (the offline model, a real ``read`` call).

Browser messages go through ipywidgets' real handler over the recording comm of
``test_agent_view``, shaped as ``agent_view.js`` sends them (``{"type": "forget", "entry": ID}``).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from test_agent_view import custom_msgs, recorded  # noqa: F401 - the fixture is used by name

from pi_jupyter import Agent, Session
from pi_jupyter.notebook.agent_view.view import AgentView
from pi_jupyter.notebook.durable.page_bridge import connect_view, page_token
from pi_jupyter.views.static_html import FORGOTTEN_NOTE


def _agent(tmp_path: Path) -> Agent:
    (tmp_path / "data.csv").write_text("city,temp\nOslo,-3\nLima,19\n")
    return Agent(Session.create(tmp_path / "sessions", cwd=str(tmp_path)), model="offline/echo", tools=["read"], cwd=str(tmp_path))


def _edits(session_path: str) -> list[dict]:
    s = Session.open(session_path, readonly=True)
    return [e for e in s.raw_entries() if e["type"] == "context_edit"]


def test_written_messages_carry_their_entry_and_forget_drops_one_from_the_context(recorded, tmp_path):  # noqa: F811
    agent = _agent(tmp_path)
    view = AgentView(model=agent.model.ref)
    finish = connect_view(view, agent)
    agent.subscribe(view.handle)
    asyncio.run(agent.prompt("use read on `data.csv`"))
    finish()
    view.flush()
    by_kind = {i["kind"]: i for i in view.transcript}
    user_entry = by_kind["user"]["entry"]
    written = {e["id"]: e for e in agent.session.raw_entries()}
    assert written[user_entry]["message"]["role"] == "user"
    assert all(written[i["entry"]]["message"]["role"] == "assistant" for i in view.transcript if i["kind"] == "assistant")
    card = next(b for i in view.transcript if i["kind"] == "assistant" for b in i["blocks"] if b["type"] == "toolCall")
    assert written[card["x"]["entry"]]["message"]["role"] == "toolResult"  # the card's result entry

    view.comm.frontend_says({"type": "forget", "entry": card["x"]["entry"]})
    acted = custom_msgs(view, "acted")[-1]
    assert acted["ok"] and acted["entry"] == card["x"]["entry"] and "not sent any more" in acted["text"]
    assert [e["targetId"] for e in _edits(agent.session.path)] == [card["x"]["entry"]]
    assert all(m.role != "toolResult" for m in agent.session.context().messages)  # what the next request sends
    view.flush()
    card = next(b for i in view.transcript if i["kind"] == "assistant" for b in i["blocks"] if b["type"] == "toolCall")
    assert card["x"]["forgotten"] is True
    # the static rendering that replaces the widget says so under that message, and names the bridge
    html = view.final_bundle()["text/html"]
    assert FORGOTTEN_NOTE in html and f'data-pi-entry="{user_entry}"' in html
    assert f'data-pi-bridge="{page_token()}"' in html and f'data-pi-session="{agent.session.id}"' in html


def test_forget_clicked_during_the_run_is_done_when_the_run_ends(recorded, tmp_path):  # noqa: F811
    agent = _agent(tmp_path)
    view = AgentView(model=agent.model.ref)
    finish = connect_view(view, agent)
    clicked: list[str] = []

    def click_mid_run(event):
        if event.type == "tool_execution_start" and not clicked:
            view.flush()
            user = next(i for i in view.transcript if i["kind"] == "user")
            clicked.append(user["entry"])
            view.comm.frontend_says({"type": "forget", "entry": user["entry"]})

    agent.subscribe(view.handle)
    agent.subscribe(click_mid_run)
    asyncio.run(agent.prompt("use read on `data.csv`"))
    assert clicked and _edits(agent.session.path) == []  # the agent refuses edits mid-run: kept for the end
    assert "when this run ends" in custom_msgs(view, "acted")[-1]["text"]
    finish()
    assert [e["targetId"] for e in _edits(agent.session.path)] == clicked
    assert all(m.role != "user" for m in agent.session.context().messages)


def test_a_refused_forget_says_why_in_one_line_and_marks_nothing(recorded, tmp_path):  # noqa: F811
    agent = _agent(tmp_path)
    view = AgentView(model=agent.model.ref)
    connect_view(view, agent)
    agent.subscribe(view.handle)
    asyncio.run(agent.prompt("hello"))
    for bad in ("no-such-entry", "", None):
        view.comm.frontend_says({"type": "forget", "entry": bad})
        acted = custom_msgs(view, "acted")[-1]
        assert not acted["ok"] and "\n" not in acted["text"] and re.search(r"refused|no entry id", acted["text"]), acted
    assert _edits(agent.session.path) == [] and view.forgotten == []
