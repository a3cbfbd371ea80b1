"""A long session in a small window through Anthropic's own SDK (the OpenAI SDK's run is in
test_agent_compaction.py): every request the server receives fits the window, counted over the
whole request body (system prompt, tool definitions and messages), and a fact from turn 1 is
still in the context at turn 200."""

from __future__ import annotations

import asyncio
import json
import math

from wire.helpers import wire_model
from wire.server import anthropic_reply, http_error, text_block

from pi_jupyter import Agent, Session
from pi_jupyter.agent.agent import RetrySettings

FACT = "My name is Ada and the launch code is PINEAPPLE-42."


def test_200_turns_over_the_anthropic_sdk_with_a_small_window_and_tools(wire, tmp_path):
    window = 4_000
    sizes: list[int] = []

    def respond(request):
        body = request.body
        size = math.ceil(len(json.dumps(body, ensure_ascii=False)) / 4)  # everything: system, tools, messages
        sizes.append(size)
        if size > window:
            return http_error(400, f"prompt is too long: {size} tokens > {window} maximum", kind="anthropic")
        last = body["messages"][-1]["content"]
        last = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last if isinstance(p, dict))
        usage = {"input_tokens": size, "output_tokens": 20}
        if "<conversation>" in last:
            keep = "- The launch code is PINEAPPLE-42." if "PINEAPPLE-42" in last else "- (nothing notable)"
            return anthropic_reply([text_block(f"## Goal\n{keep}\n\n## Progress\n### Done\n- [x] earlier turns")], usage=usage)
        return anthropic_reply([text_block("Noted. " + "ok " * 30)], usage=usage)

    wire.respond_with("anthropic", respond)
    model = wire_model(wire, "anthropic-messages", context_window=window, max_tokens=500)
    agent = Agent(Session.create(tmp_path), model=model, api_key="sk-ant-test", thinking="off", tools=["read", "python"])
    agent.settings.retry = RetrySettings(enabled=False)
    asyncio.run(agent.prompt(FACT))
    for turn in range(2, 201):
        result = asyncio.run(agent.prompt(f"Turn {turn}: " + "status update " * 25))
        assert result.ok, (turn, result.error_message)
    assert len(sizes) > 200 and max(sizes) <= window, f"a request of {max(sizes)} tokens was sent to a {window}-token window"
    reopened = Session.open(agent.session.path)
    context = reopened.context()
    assert [m["role"] for m in context.raw_messages[:2]] == ["system", "compactionSummary"]  # the prompt snapshot leads
    assert "PINEAPPLE-42" in context.raw_messages[1]["summary"]
    entries = reopened.raw_entries()
    assert len([e for e in entries if e["type"] == "compaction"]) >= 10
    users = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
    assert len(users) == 200  # every original entry is still in the file
