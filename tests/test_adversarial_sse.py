"""A malformed chunk in the middle of a stream is retried alike on all three wire APIs (issue 29).

A proxy or an overloaded server sometimes cuts an SSE event's JSON in half. That is a
transient failure like a dropped connection: the agent asks again (automatic retry, with
its events), the failed attempt stays in the file as a sibling (out of the context), and
the user gets the answer. Each API is driven through its vendor SDK against the wire
server of tests/wire, which sends a few good events, then half an event.
"""

from __future__ import annotations

import asyncio

import pytest
from wire.helpers import wire_model
from wire.server import anthropic_reply, openai_reply, responses_reply, text_block

from pi_jupyter import Agent, AgentSettings, Session
from pi_jupyter.agent.agent import RetrySettings

KEY = "sk-test-sse-abcdefghijklmnopqrstuvwxyz0123456"
REPLIES = {
    "openai-completions": ("openai", lambda text: openai_reply(text, pieces=4)),
    "anthropic-messages": ("anthropic", lambda text: anthropic_reply([text_block(text)])),
    "openai-responses": ("responses", lambda text: responses_reply(text)),
}


@pytest.mark.parametrize("api", sorted(REPLIES))
def test_half_an_event_mid_stream_is_retried_and_the_answer_arrives(wire, tmp_path, api):
    kind, reply = REPLIES[api]
    broken = reply("This answer is cut off")
    broken.events = [*broken.events[:3], b'data: {"type": "content_block_delta", "delta": {"te\n\n']
    wire.queue(kind, broken, reply("The whole answer."))
    session = Session.create(tmp_path)
    agent = Agent(session, model=wire_model(wire, api), api_key=KEY, settings=AgentSettings(retry=RetrySettings(base_delay_ms=5)))
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("Answer, please."))
    assert result.ok and result.text == "The whole answer.", (result.stop_reason, result.error_message)
    retries = [(e.type, e.attempt) for e in events if e.type.startswith("auto_retry")]
    assert retries == [("auto_retry_start", 1), ("auto_retry_end", 1)]
    start = next(e for e in events if e.type == "auto_retry_start")
    assert "Malformed stream" in start.error_message
    assert len(wire.requests_to(kind)) == 2
    # the failed attempt is kept in the file, beside the answer, and is not in the context
    failed = [m for m in session.raw_entries() if (m.get("message") or {}).get("stopReason") == "error"]
    assert len(failed) == 1 and "Malformed stream" in failed[0]["message"]["errorMessage"]
    assert [m.role for m in Session.open(session.path).context().messages] == ["system", "user", "assistant"]
