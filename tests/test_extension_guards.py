"""A guard that fails fails closed; an observer that fails fails open.

An extension hook whose answer can stop or narrow what runs or what is sent (``before_tool_call``,
``on_input``, ``transform_context``, ``after_tool_call``, ``before_compact``, ``before_checkout``)
is a guard: when its own code raises, what it guards does not happen (the tool call is refused,
the prompt or request is not sent, the tool's output is withheld, the compaction does not run),
the extension and its error are named, the run goes on where it can, and the user is told in
one ``extension_error`` line. Observers (``on_event``, ``before_prompt``, ``setup``) still fail
open (``test_extensions.py``).
"""

from __future__ import annotations

import asyncio
import json

from wire.helpers import sent_since, wire_model
from wire.server import openai_reply, tool_call

from pi_jupyter import Agent, AgentSettings, Session
from pi_jupyter.agent.agent import RetrySettings

KEY = "sk-test-extension-0123456789abcdef"


def agent_with(wire, tmp_path, ext, namespace=None) -> tuple[Agent, list]:
    agent = Agent(
        Session.create(tmp_path),
        model=wire_model(wire),
        api_key=KEY,
        tools=["python"],
        cwd=str(tmp_path),
        tool_extra={"namespace": namespace if namespace is not None else {}},
        extensions=[ext],
        settings=AgentSettings(retry=RetrySettings(enabled=False)),
    )
    events: list = []
    agent.subscribe(events.append)
    return agent, events


def errors(events) -> list[tuple[str, str, str]]:
    return [(e.extension_path, e.event, e.error) for e in events if e.type == "extension_error"]


def tool_texts(wire_request) -> list[str]:
    return [m["content"] for m in wire_request.body["messages"] if m["role"] == "tool"]


def test_a_broken_before_tool_call_refuses_the_call_and_the_run_goes_on(wire, tmp_path):
    class Guard:
        name = "no-rm"

        def before_tool_call(self, call, ctx):
            if "rm " in call.args["cmd"]:  # a bug: python calls have "code", not "cmd"
                return None
            return None

    ns: dict = {}
    wire.queue("openai", openai_reply(tool_calls=[tool_call("python", {"code": "ran = True"}, id="c1")]), openai_reply("done"))
    agent, events = agent_with(wire, tmp_path, Guard(), ns)
    result = asyncio.run(agent.prompt("clean up"))
    assert "ran" not in ns  # the guarded call never ran
    assert result.text == "done"  # the run went on
    (refusal,) = tool_texts(wire.requests[1])
    assert "no-rm" in refusal and "before_tool_call" in refusal and "KeyError" in refusal and "not run" in refusal
    (error,) = errors(events)  # the user's one line
    assert error[:2] == ("no-rm", "before_tool_call") and "KeyError" in error[2]


def test_a_broken_on_input_sends_nothing(wire, tmp_path):
    class Filter:
        name = "scrubber"

        def on_input(self, text, ctx):
            raise RuntimeError("pattern file missing")

    agent, events = agent_with(wire, tmp_path, Filter())
    result = asyncio.run(agent.prompt("my card is 4111 1111 1111 1111"))
    assert wire.requests == []  # nothing went to the model
    assert result.stop_reason == "error" and "scrubber" in (result.error_message or "")
    assert "4111" not in open(agent.session.path).read()  # nor into the file
    assert [e[:2] for e in errors(events)] == [("scrubber", "on_input")]


def test_a_broken_transform_context_stops_the_request(wire, tmp_path):
    class Pruner:
        name = "pruner"

        def transform_context(self, messages, ctx):
            raise ValueError("cannot prune")

    agent, events = agent_with(wire, tmp_path, Pruner())
    result = asyncio.run(agent.prompt("a long history"))
    assert wire.requests == []
    assert result.stop_reason == "error" and "pruner" in (result.error_message or "") and "not sent" in result.error_message
    assert [e[:2] for e in errors(events)] == [("pruner", "transform_context")]


def test_a_broken_after_tool_call_withholds_the_output(wire, tmp_path):
    class Mask:
        name = "mask"

        def after_tool_call(self, call, ctx):
            raise RuntimeError("mask broken")

    wire.queue(
        "openai",
        openai_reply(tool_calls=[tool_call("python", {"code": "print('ACCOUNT-' + str(9900 + 31))"}, id="c1")]),
        openai_reply("ok"),
    )
    agent, events = agent_with(wire, tmp_path, Mask())
    result = asyncio.run(agent.prompt("show it"))
    assert result.text == "ok"
    body = json.dumps(wire.requests[1].body)
    assert "ACCOUNT-9931" not in body and "mask" in body and "withheld" in body
    assert [e[:2] for e in errors(events)] == [("mask", "after_tool_call")]


def test_a_broken_before_compact_cancels_the_compaction(wire, tmp_path):
    class Keeper:
        name = "keeper"

        def before_compact(self, request, ctx):
            raise RuntimeError("cannot decide")

    wire.queue_default("openai", openai_reply("noted"))
    agent, events = agent_with(wire, tmp_path, Keeper())
    for text in ("one", "two", "three"):
        asyncio.run(agent.prompt(text))
    sent_since(wire)
    try:
        asyncio.run(agent.compact(keep_recent_tokens=1))
    except Exception as exc:  # noqa: BLE001 - the refusal, as the user reads it
        said = str(exc)
    else:
        said = ""
    assert wire.requests == []  # no summary was asked for
    assert not any(e.get("type") == "compaction" for e in agent.session.raw_entries())
    assert "keeper" in said
    assert [e[:2] for e in errors(events)] == [("keeper", "before_compact")]
