"""Redaction never breaks a JSON line (issue 29): it works inside string values, never across JSON syntax.

The audit found that an ``http://host:port/…`` in one value and an ``@domain`` in a later one
(tool arguments, two messages, a name and a prompt) made the whole-line redaction read
``port/…","field":"me`` as the password of a URL and cut it out, quotes and all: an RPC
client, a ``prompt --json`` reader or a log reader could no longer read the line. Every
emitter is held to two properties here, over arbitrary strings with URLs, ``@domains``,
keys, quotes, backslashes and unicode: every line it writes parses, holds what was given
with each string redacted on its own, and holds no planted secret. Then the real processes
(RPC server, ``prompt --json``, ``Agent.log_events``) are run on the case the audit found.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_notebook_magics import ip  # noqa: F401 - a fixture
from wire.server import openai_reply

from pi_jupyter.agent.event_log import log_events
from pi_jupyter.agent.events import MessageEndEvent
from pi_jupyter.agent.redact import redact
from pi_jupyter.cli.rpc_server import Output
from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage
from pi_jupyter.session import Session

ENV_NAME, ENV_SECRET = "SVC_TOKEN", "8273645190827364"
PATTERN_SECRET = "sk-" + "FGHJLMPQUWXZFGHJLMPQUWXZFG"
URL_SECRET = "Zq9Wv8Xu7Ty6"
ODD_NAME, ODD_SECRET = "ODD_PASSWORD", 'p"a\\ss\u00e9\x01w0rd'  # characters JSON escapes: not found as is in a line
PLANTED = [ENV_SECRET, PATTERN_SECRET, URL_SECRET, ODD_SECRET]

PIECES = [
    "http://localhost:8888/lab",
    "https://example.com:443/a/b?q=1#f",
    "http://[::1]:8080/x",
    "@example.com",
    "me@example.org",
    "@",
    "://",
    ":",
    '"',
    "\\",
    '\\"',
    '","x":"',
    "}",
    "]",
    ",",
    "\u2028",
    "\u00e9t\u00e9",
    "\U0001f600",
    "\x00",
    "\ud800",  # a lone surrogate: the line is written in ASCII then
    "\t",
    " ",
    "\n",
    ENV_SECRET,
    ODD_SECRET,
    f" {PATTERN_SECRET} ",  # a key format needs a word boundary before it ("disk-usage-..." is no key)
    f"postgres://admin:{URL_SECRET}@db.internal/prod",
    "Bearer ",
]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=10).map("".join)
values = st.recursive(
    st.one_of(texts, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=12,
)


def redacted_each(value: Any) -> Any:
    """What a line must hold: every string (keys too) redacted on its own, nothing else changed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted_each(v) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[redact(k)] = redacted_each(v)
        return out
    return value


def check_lines(raw: str, expected: list[Any]) -> None:
    assert raw.endswith("\n")
    lines = raw[:-1].split("\n")  # LF framing: a string's newline is escaped, so LF ends lines only
    assert len(lines) == len(expected)
    for line, want in zip(lines, expected, strict=True):
        assert json.loads(line) == want, line
        for secret in PLANTED:
            assert secret not in line and json.dumps(secret)[1:-1] not in line


@pytest.fixture
def planted_env(monkeypatch):
    monkeypatch.setenv(ENV_NAME, ENV_SECRET)
    monkeypatch.setenv(ODD_NAME, ODD_SECRET)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=values)
def test_every_rpc_line_parses_and_holds_no_planted_secret(planted_env, obj):
    stream = io.BytesIO()
    Output(stream).write({"type": "response", "data": obj})
    check_lines(stream.getvalue().decode("utf-8"), [{"type": "response", "data": redacted_each(obj)}])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(texts, min_size=1, max_size=4))
def test_every_log_events_line_parses_and_holds_no_planted_secret(planted_env, parts):
    writers: list[Any] = []

    def subscribe(fn):
        writers.append(fn)
        return lambda: None

    out = io.StringIO()
    log_events(subscribe, out)
    message = AssistantMessage(content=[TextContent(text=t) for t in parts])
    writers[0](MessageEndEvent(message=message))
    line = json.loads(out.getvalue())
    assert [b["text"] for b in line["message"]["content"]] == [redact(t) for t in parts]
    for secret in PLANTED:
        assert secret not in out.getvalue()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(texts, min_size=2, max_size=3))
def test_every_prompt_json_line_of_a_real_run_parses(planted_env, parts):
    from pi_jupyter import Agent
    from pi_jupyter.cli.json_events import write_pi_events

    session = Session.in_memory()
    for i, text in enumerate(parts):  # history the run's agent_end does not repeat, but message events do
        session.append_message(UserMessage.text(f"q{i}") if i % 2 else AssistantMessage(content=[TextContent(text=text)]))
    agent = Agent(session, model="offline/echo", tools=[])
    out = io.StringIO()
    write_pi_events(agent, out)
    asyncio.run(agent.prompt("\n".join(parts)))
    for line in out.getvalue().split("\n")[:-1]:  # LF framing (splitlines would also split at U+2028)
        json.loads(line)
        for secret in PLANTED:
            assert secret not in line


# ------------------------------------------------------------------ the real processes, on the audit's case

CALL = 'call grep with {"pattern": "http://localhost:8888/lab", "path": "me@example.com"}'
"""The offline model calls grep with these arguments: a URL with a port in one value, an @domain in the next."""
ARGS = {"pattern": "http://localhost:8888/lab", "path": "me@example.com"}


def _args_seen(objs: list[dict[str, Any]]) -> list[Any]:
    return [o["args"] for o in objs if o.get("type") == "tool_execution_start"]


def test_prompt_json_lines_parse_and_keep_the_tool_arguments(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pi_jupyter", "prompt", "--json", "--no-session", CALL],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    objs = [json.loads(line) for line in proc.stdout.splitlines()]  # every line parses
    assert _args_seen(objs) == [ARGS]
    assert "http://localhost:8888/lab" in proc.stdout and "me@example.com" in proc.stdout


def test_rpc_events_messages_entries_and_tree_parse_and_keep_the_tool_arguments(rpc, tmp_path):
    server = rpc("--session", str(tmp_path / "s.jsonl"))
    server.send({"id": "p", "type": "prompt", "message": CALL})
    server.until("agent_settled")
    assert _args_seen(server.seen) == [ARGS]
    messages = server.data({"id": "m", "type": "get_messages"})["messages"]
    calls = [b for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"]
    assert calls[0]["arguments"] == ARGS
    entries = server.data({"id": "e", "type": "get_entries"})["entries"]
    assert any(b.get("arguments") == ARGS for e in entries for b in (e.get("message") or {}).get("content") or [] if isinstance(b, dict))
    nodes, found = list(server.data({"id": "t", "type": "get_tree"})["tree"]), []
    while nodes:
        node = nodes.pop()
        nodes.extend(node["children"])
        content = (node["entry"].get("message") or {}).get("content")
        found.extend(b["arguments"] for b in content or [] if isinstance(b, dict) and b.get("type") == "toolCall")
    assert found == [ARGS]
    assert server.finish() == 0  # every line was read with json.loads by the client


def test_agent_log_events_lines_parse_and_keep_the_tool_arguments(tmp_path):
    from pi_jupyter import Agent

    agent = Agent(Session.in_memory(), model="offline/echo", tools=["grep"], cwd=str(tmp_path))
    log = tmp_path / "events.jsonl"
    stop = agent.log_events(log)
    asyncio.run(agent.prompt(CALL))
    stop()
    objs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [o["args"] for o in objs if o["type"] == "tool_execution_start"] == [ARGS]


def test_pi_log_lines_parse_and_hold_no_key_the_model_repeated(ip, wire, monkeypatch, capsys, request):  # noqa: F811 - the fixture
    """``%pi log`` prints the events of the notebook's session: a key in the model's answer is redacted there too."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-notebook-" + "k" * 24)
    wire.queue("openai", openai_reply(text=f"Your key is {PATTERN_SECRET} and the lab is at http://localhost:8888/lab"))
    wire.queue("openai", openai_reply(text="me@example.com"))
    ip.run_line_magic("config", f"PiMagics.base_url = {wire.openai_url!r}")
    request.addfinalizer(lambda: ip.run_line_magic("config", "PiMagics.base_url = ''"))  # the shell outlives the test
    ip.run_line_magic("config", "PiMagics.model = 'openai/gpt-test'")
    ip.run_cell_magic("pi", "", "What is my key?")
    ip.run_cell_magic("pi", "", "And my address?")
    capsys.readouterr()
    ip.run_line_magic("pi", "log 200")
    printed = capsys.readouterr().out
    lines = printed.split("\n")[:-1]
    objs = [json.loads(line) for line in lines]  # every line parses
    assert PATTERN_SECRET not in printed and "[REDACTED:openai-key]" in printed
    assert any(o.get("type") == "message_end" for o in objs)
