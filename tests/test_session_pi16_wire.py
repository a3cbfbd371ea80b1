"""A pi 1.x session where the user made the model forget a pasted secret (``context_edit`` with
``null``) never sends that secret again, over each of our three APIs through the vendors' own SDKs
(the local wire server records the request body); the transcript's system prompt and tool set
are replaced by ours through a recorded delta, so the request carries one prompt and our tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from wire.helpers import wire_model
from wire.server import anthropic_reply, openai_reply, responses_reply, text_block

from pi_jupyter import Agent, Session
from pi_jupyter.agent.agent import RetrySettings

SECRET = "ghp_wireSecret0123456789abcdefABCDEF"
PROMPT = "PI16-PROMPT: you help."
TS = "2026-12-01T00:00:01.000Z"
LOOKUP = {"name": "lookup", "description": "Look a word up", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}


def pi16_session(path: Path) -> Path:
    """What pi 1.6 writes when the user pastes a token, then removes it (and the echo) from the context."""
    rows = [
        {"type": "session", "version": 3, "id": "pi16", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": str(path.parent)},
        {
            "type": "message",
            "id": "s1",
            "parentId": None,
            "timestamp": TS,
            "message": {"role": "system", "content": "", "sections": {"preamble": PROMPT}, "toolsAdded": [LOOKUP], "timestamp": 1},
        },
        {"type": "message", "id": "u1", "parentId": "s1", "timestamp": TS, "message": {"role": "user", "content": f"use {SECRET}"}},
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": TS,
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Deploying with {SECRET}."}],
                "api": "openai-completions",
                "provider": "openai",
                "model": "gpt-test",
                "usage": {"input": 5, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 10, "cost": {"total": 0}},
                "stopReason": "stop",
                "timestamp": 3,
            },
        },
        {"type": "context_edit", "id": "e1", "parentId": "a1", "timestamp": TS, "targetId": "u1", "replacement": None},
        {"type": "context_edit", "id": "e2", "parentId": "e1", "timestamp": TS, "targetId": "a1", "replacement": {"content": "Deploying."}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("api", "kind", "reply"),
    [
        ("anthropic-messages", "anthropic", lambda: anthropic_reply([text_block("done")])),
        ("openai-completions", "openai", lambda: openai_reply("done")),
        ("openai-responses", "responses", lambda: responses_reply("done")),
    ],
)
def test_a_forgotten_secret_is_never_sent(wire, tmp_path, api, kind, reply):
    path = pi16_session(tmp_path / "s.jsonl")
    wire.queue(kind, reply())
    agent = Agent(Session.open(path), model=wire_model(wire, api), api_key="sk-test-key", thinking="off", tools=["read"])
    agent.settings.retry = RetrySettings(enabled=False)
    result = asyncio.run(agent.prompt("Status?"))
    assert result.ok, result.error_message
    [request] = wire.requests_to(kind)
    body = request.raw.decode()
    assert SECRET not in body and "ghp_" not in body
    assert "Deploying." in body and "Status?" in body  # the edited reply and the new prompt are sent
    # continuing pi's session records our prompt and tools as a delta (as pi 1.x would): the request
    # carries ours once, not pi's prompt and its tool beside them
    assert json.dumps(agent.system_prompt)[1:-1] in body and PROMPT not in body
    tool_names = json.dumps(request.body.get("tools", []))
    assert '"lookup"' not in tool_names and '"read"' in tool_names
    delta = Session.open(path).raw_entries()[-3]["message"]
    assert delta["role"] == "system" and delta["toolsRemoved"] == [{"name": "lookup"}]
    assert SECRET in path.read_text()  # the file keeps the original (pi's contract: edits hide, never delete)
