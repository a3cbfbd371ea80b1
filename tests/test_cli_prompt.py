"""``pi-jupyter prompt`` run as a user runs it: a subprocess, real SDKs, the wire server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from wire.server import openai_reply, responses_reply, tool_call

from pi_jupyter import Session


def cli(*args: str, cwd, env=None, stdin: str | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full_env.update(env or {})
    full_env["PI_CODING_AGENT_DIR"] = str(cwd / "agent")
    command = [sys.executable, "-m", "pi_jupyter", "prompt", *args]
    return subprocess.run(command, cwd=cwd, env=full_env, input=stdin, capture_output=True, text=True, timeout=120)


def test_offline_answer_saved_in_pis_folder(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    out = cli("use read on `data.csv`", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "a,b" in out.stdout and "offline model" in out.stderr
    files = list((tmp_path / "agent" / "sessions").glob("*/*.jsonl"))
    assert len(files) == 1
    roles = [m.role for m in Session.open(files[0]).context().messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


def test_json_mode_prints_the_header_then_pis_events(tmp_path):
    out = cli("hello", "--json", "--no-session", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == 3
    types = [x["type"] for x in lines[1:]]
    assert types[0] == "agent_start" and types[-1] == "agent_end" and "message_update" in types


def test_a_real_sdk_against_a_compatible_server_and_continuing_a_session(wire, tmp_path):
    wire.require_key = "sk-cli-test-1234567890"
    wire.queue("openai", openai_reply("first answer"), openai_reply("second answer"))
    env = {"OPENAI_API_KEY": "sk-cli-test-1234567890"}
    path = tmp_path / "run.jsonl"
    args = ("--model", "openai/gpt-test", "--base-url", wire.openai_url, "--session", str(path), "--no-tools")
    first = cli("one", *args, cwd=tmp_path, env=env)
    assert first.returncode == 0 and first.stdout.strip() == "first answer", first.stderr
    second = cli("-", *args, cwd=tmp_path, env=env, stdin="two")
    assert second.stdout.strip() == "second answer"
    sent = wire.requests[-1].body["messages"]
    assert [m["role"] for m in sent[-3:]] == ["user", "assistant", "user"]
    assert "sk-cli-test" not in path.read_text() + first.stdout + first.stderr + second.stderr


def test_an_openai_reasoning_model_keeps_its_reasoning_across_a_tool_call(wire, tmp_path):
    # The built-in OpenAI models speak the Responses API; the encrypted reasoning item goes back with the tool result.
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    wire.queue(
        "responses",
        responses_reply(reasoning="I should look at the file.", tool_calls=[tool_call("read", {"path": "data.csv"}, id="call_7")]),
        responses_reply("The file has columns a and b.", reasoning="It has two columns."),
    )
    path = tmp_path / "gpt.jsonl"
    args = ("--model", "openai/gpt-5-mini", "--base-url", wire.openai_url, "--thinking", "low", "--tools", "read", "--session", str(path))
    out = cli("what is in data.csv?", *args, cwd=tmp_path, env={"OPENAI_API_KEY": "sk-cli-responses-123456"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "The file has columns a and b."
    second = wire.requests[1].body["input"]
    kinds = [item.get("type", item.get("role")) for item in second]
    assert kinds == ["developer", "user", "reasoning", "function_call", "function_call_output"]
    assert second[2]["encrypted_content"] == "enc-wire" and second[3]["id"] == "fc_0"
    assert second[4]["call_id"] == "call_7" and "a,b" in second[4]["output"]
    messages = Session.open(path).context().messages
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[1].api == "openai-responses" and messages[1].tool_calls[0].id == "call_7|fc_0"
    assert "sk-cli-responses" not in path.read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    no_key = cli("hi", "--model", "anthropic/claude-sonnet-4-5", cwd=tmp_path)
    assert no_key.returncode == 2 and no_key.stderr.strip().count("\n") == 0 and "ANTHROPIC_API_KEY" in no_key.stderr
    unknown = cli("hi", "--model", "nonsense", cwd=tmp_path)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    folder = cli("hi", "--session", str(tmp_path), cwd=tmp_path)
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    empty = cli("   ", cwd=tmp_path)
    assert empty.returncode == 2 and "empty" in empty.stderr
