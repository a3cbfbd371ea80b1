"""The agent against a third-party mock server with fault injection (``llmock``), on all three wire APIs.

Our own wire server (tests/wire) speaks each vendor's format as we read it; llmock is written
by others, so it also catches what we misread. Faults: tool-call arguments cut in half,
429 with ``Retry-After``, a context overflow with nothing to compact, and a 404 from
``/v1/responses`` on an OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel
from wire.helpers import wire_model
from wire.server import http_error, openai_reply

pytest.importorskip("llmock", reason="llmock is in the test extra: pip install -e .[test]")

from llmock.scenarios import Fail, Match, ToolFault  # noqa: E402
from llmock.testing import LLMockServer  # noqa: E402

from pi_jupyter import Agent, AgentSettings, Session  # noqa: E402
from pi_jupyter.agent.agent import RetrySettings  # noqa: E402
from pi_jupyter.agent.tools import Tool, ToolContext, ToolResult  # noqa: E402
from pi_jupyter.providers.base import Model  # noqa: E402
from pi_jupyter.providers.tool_args import INVALID_KEY  # noqa: E402

APIS = ["openai-completions", "openai-responses", "anthropic-messages"]


@pytest.fixture(scope="module")
def server():
    with LLMockServer() as srv:
        yield srv


@pytest.fixture
def mock(server: LLMockServer) -> LLMockServer:
    server.state.scenarios.clear()
    return server


def model_for(server: LLMockServer, api: str, **fields: Any) -> Model:
    anthropic = api == "anthropic-messages"
    return Model(
        id="claude-3-5-sonnet" if anthropic else "gpt-4o",
        provider="thirdparty",
        api=api,
        base_url=server.base_url("anthropic" if anthropic else "openai"),
        compat={"no_api_key": True},
        **fields,
    )


class BashArgs(BaseModel):
    command: str


class RecordingBash(Tool[BashArgs]):
    """Stands in for ``bash``: records what it would have run."""

    name = "bash"
    description = "Run a shell command."
    parameters = BashArgs

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def execute(self, args: BashArgs, ctx: ToolContext) -> ToolResult:
        self.ran.append(args.command)
        return ToolResult.text("done")


def run(agent: Agent, text: str) -> tuple[Any, list[Any]]:
    events: list[Any] = []
    agent.subscribe(events.append)
    return asyncio.run(agent.prompt(text)), events


@pytest.mark.parametrize("api", APIS)
def test_cut_tool_arguments_are_neither_repaired_nor_run(mock: LLMockServer, tmp_path, api: str) -> None:
    mock.state.scenarios.add(ToolFault("malformed_arguments"))
    bash = RecordingBash()
    session = Session.create(tmp_path, cwd=str(tmp_path))
    agent = Agent(session, model=model_for(mock, api), tools=[bash], settings=AgentSettings(retry=RetrySettings(enabled=False)))
    result, events = run(agent, "run a command")
    assert bash.ran == []  # a repaired half would have run here
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert len(ends) == 1 and ends[0].is_error
    error = ends[0].result["content"][0]["text"]
    assert "not valid JSON" in error and "did not run" in error
    # the session keeps exactly what arrived, and no arguments that could be run
    reopened = Session.open(session.path, readonly=True)
    calls = [
        block
        for entry in reopened.raw_entries()
        if entry["type"] == "message" and entry["message"]["role"] == "assistant"
        for block in entry["message"]["content"]
        if block["type"] == "toolCall"
    ]
    assert len(calls) == 1
    assert calls[0]["arguments"] == {}
    raw = calls[0][INVALID_KEY]
    assert raw.startswith('{"command": "') and not raw.endswith("}")
    results = [e["message"] for e in reopened.raw_entries() if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    assert results[0]["isError"] is True and results[0]["toolCallId"] == calls[0]["id"]
    assert result.ok


@pytest.mark.parametrize("api", APIS)
def test_retry_after_is_honoured_and_shown(mock: LLMockServer, api: str) -> None:
    mock.state.scenarios.add(Fail(429, retry_after=1.0))
    settings = AgentSettings(retry=RetrySettings(base_delay_ms=5))
    agent = Agent(Session.in_memory(), model=model_for(mock, api), tools=[], settings=settings)
    result, events = run(agent, "hello")
    starts = [e for e in events if e.type == "auto_retry_start"]
    assert [(e.delay_ms, e.retry_after_ms) for e in starts] == [(1000, 1000)]
    assert starts[0].to_dict()["retryAfterMs"] == 1000
    assert result.ok


def test_retry_after_is_capped_by_the_retry_settings(mock: LLMockServer) -> None:
    mock.state.scenarios.add(Fail(503, retry_after=3600))
    settings = AgentSettings(retry=RetrySettings(base_delay_ms=5, max_delay_ms=200))
    agent = Agent(Session.in_memory(), model=model_for(mock, "openai-completions"), tools=[], settings=settings)
    result, events = run(agent, "hello")
    starts = [e for e in events if e.type == "auto_retry_start"]
    assert [(e.delay_ms, e.retry_after_ms) for e in starts] == [(200, 3_600_000)]
    assert result.ok


@pytest.mark.parametrize("header", ["1", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_plain_retry_after_seconds_and_dates_are_read(wire, header: str) -> None:
    # seconds as HTTP has them (no -ms variant), and a date already past (wait 0)
    wire.queue("openai", http_error(429, "Rate limit reached", headers={"retry-after": header}), openai_reply("fine"))
    settings = AgentSettings(retry=RetrySettings(base_delay_ms=5))
    agent = Agent(Session.in_memory(), model=wire_model(wire), api_key="sk-test", tools=[], settings=settings)
    result, events = run(agent, "hello")
    starts = [e for e in events if e.type == "auto_retry_start"]
    expected = 1000 if header == "1" else 0
    assert [(e.delay_ms, e.retry_after_ms) for e in starts] == [(expected, expected)]
    assert result.text == "fine"


def test_overflow_with_nothing_to_compact_says_so_and_what_to_do(mock: LLMockServer, tmp_path) -> None:
    mock.state.scenarios.add(Fail(400, code="context_length_exceeded", message="This model's maximum context length was exceeded."))
    agent = Agent(Session.create(tmp_path, cwd=str(tmp_path)), model=model_for(mock, "openai-completions"), tools=[])
    result, events = run(agent, "a first prompt that is already too long")
    assert not result.ok
    ends = [e for e in events if e.type == "auto_compaction_end"]
    assert len(ends) == 1
    message = ends[0].error_message or ""
    assert "nothing could be compacted" in message and "larger context window" in message and "thirdparty/gpt-4o" in message


def test_404_from_responses_names_the_endpoint_and_chat_completions(mock: LLMockServer) -> None:
    mock.state.scenarios.add(Fail(404, message="Not Found", match=Match(path="*responses*")))
    model = model_for(mock, "openai-responses")
    agent = Agent(Session.in_memory(), model=model, tools=[], settings=AgentSettings(retry=RetrySettings(enabled=False)))
    result, _ = run(agent, "hello")
    assert result.stop_reason == "error"
    message = result.error_message or ""
    assert message.startswith("404")
    assert f"{mock.base_url('openai')}/responses" in message and "chat completions" in message


def test_the_widget_shows_the_wait_the_server_asked_for(mock: LLMockServer, monkeypatch) -> None:
    import comm
    from test_agent_view import RecordingComm

    from pi_jupyter.notebook.agent_view.view import AgentView

    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    mock.state.scenarios.add(Fail(429, retry_after=1.0))
    agent = Agent(
        Session.in_memory(),
        model=model_for(mock, "anthropic-messages"),
        tools=[],
        settings=AgentSettings(retry=RetrySettings(base_delay_ms=5)),
    )
    view = AgentView(model=agent.model.ref)
    agent.subscribe(view.handle)
    result, _ = run(agent, "hello")
    view.flush()
    assert result.ok
    # what the frontend was sent while the retry waited (the notice then says the retry succeeded)
    sent = json.dumps(view.comm.sent)
    assert "Retrying (attempt 1/3) in 1.0 s (the server asked for 1 s)" in sent
