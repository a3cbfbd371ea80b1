"""``pi-jupyter prompt`` run as a user runs it: a subprocess, real SDKs, the wire server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from plugins import install_extensions
from wire.server import http_error, openai_reply, responses_reply, tool_call

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
    assert roles == ["system", "user", "assistant", "toolResult", "assistant"]  # the prompt recorded as pi 1.x does


def test_json_mode_prints_the_header_then_pis_events(tmp_path):
    out = cli("hello", "--json", "--no-session", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == 3
    types = [x["type"] for x in lines[1:]]
    assert types[0] == "agent_start" and types[-2:] == ["agent_end", "agent_settled"] and "message_update" in types


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
    assert [m.role for m in messages] == ["system", "user", "assistant", "toolResult", "assistant"]
    assert messages[2].api == "openai-responses" and messages[2].tool_calls[0].id == "call_7|fc_0"
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


def test_bad_tools_or_thinking_are_refused_before_a_session_file_is_written(tmp_path):
    path = tmp_path / "new.jsonl"
    for bad, word in ((("--tools", "read,nope"), "nope"), (("--thinking", "bogus"), "bogus")):
        out = cli("hi", "--session", str(path), *bad, cwd=tmp_path)
        assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and word in out.stderr, out.stderr
        assert not path.exists()  # no stray header-only session left behind
    assert not (tmp_path / "agent").exists()


def test_the_model_from_pi_jupyter_model_is_named_and_checked_like_model(tmp_path):
    bogus = cli("hi", "--no-session", cwd=tmp_path, env={"PI_JUPYTER_MODEL": "bogus"})
    assert bogus.returncode == 2 and "Traceback" not in bogus.stderr and "PI_JUPYTER_MODEL" in bogus.stderr, bogus.stderr
    no_key = cli("hi", cwd=tmp_path, env={"PI_JUPYTER_MODEL": "anthropic/claude-haiku-4-5"})
    assert no_key.returncode == 2 and no_key.stderr.strip().count("\n") == 0, no_key.stderr
    assert "ANTHROPIC_API_KEY" in no_key.stderr and "PI_JUPYTER_MODEL" in no_key.stderr
    assert not (tmp_path / "agent").exists()
    offline = cli("hi", "--no-session", cwd=tmp_path, env={"PI_JUPYTER_MODEL": "offline/typewriter"})
    assert offline.returncode == 0 and "offline/typewriter" in offline.stderr and "no --model" not in offline.stderr, offline.stderr


def test_without_model_the_offline_model_answers_even_in_a_session_recorded_with_a_vendor(wire, tmp_path):
    # The note on stderr said "the built-in offline model" while the session's recorded vendor model
    # was called (with the key from the environment): no --model must mean offline, as documented.
    path = tmp_path / "run.jsonl"
    env = {"OPENAI_API_KEY": "sk-cli-note-1234567890"}
    wire.queue("openai", openai_reply("from the server"))
    first = cli("one", "--model", "openai/gpt-test", "--base-url", wire.openai_url, "--session", str(path), cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    second = cli("two", "--session", str(path), "--no-tools", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("[offline model]") and "offline/echo, the built-in offline model" in second.stderr
    assert len(wire.requests) == 1
    context = Session.open(path).context()
    assert (context.model.provider, context.model.model_id) == ("offline", "echo")
    # --no-tools on the second run is recorded as a delta that removes the first run's tools
    assert [m.role for m in context.messages] == ["system", "user", "assistant", "system", "user", "assistant"]
    assert context.messages[3].tools_removed and not context.messages[3].tools_added


def test_retries_are_reported_on_stderr_while_they_wait(wire, tmp_path):
    # Without --json nothing said why the command sat silent for 2 + 4 + 8 seconds.
    wire.queue("openai", http_error(503, "service unavailable"), openai_reply("made it"))
    env = {"OPENAI_API_KEY": "sk-cli-retry-1234567890"}
    out = cli("hi", "--model", "openai/gpt-test", "--base-url", wire.openai_url, "--no-session", "--no-tools", cwd=tmp_path, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "made it", out.stderr
    notes = [line for line in out.stderr.splitlines() if "retry" in line]
    assert len(notes) == 1 and "503" in notes[0] and "2s" in notes[0] and "1/3" in notes[0], out.stderr


def test_ctrl_c_keeps_the_partial_answer_as_aborted_and_exits_130(tmp_path):
    import signal

    path = tmp_path / "int.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    command = [
        sys.executable,
        "-m",
        "pi_jupyter",
        "prompt",
        "word " * 300,
        "--model",
        "offline/typewriter",
        "--session",
        str(path),
        "--json",
    ]
    # a terminal's Ctrl-C reaches a program whose SIGINT is the default; pytest run as a background
    # job ignores SIGINT, and a child inherits that, so the child gets the default back here
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for line in proc.stdout:
        if '"text_delta"' in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = Session.open(path).context().messages[-1]
    assert last.role == "assistant" and last.stop_reason == "aborted" and last.text.startswith("[offline model]")


def test_installed_extensions_are_loaded_their_tools_offered_and_their_state_rebuilt(tmp_path):
    """Extensions from the pi_jupyter.extensions entry point group run in prompt mode too, as in
    a notebook and in rpc mode: their tools are offered, their state comes back from the session
    on the next prompt, and a broken one is a note on stderr (an extension_error line with --json)."""
    env = install_extensions(
        tmp_path,
        {"runs": "runs_ext:Runs", "broken": "runs_ext:Broken"},
        (
            "from pi_jupyter import tool\n"
            "@tool\n"
            "def shout(text: str) -> str:\n"
            "    'Say it louder.'\n"
            "    return text.upper()\n"
            "class Runs:\n"
            "    def setup(self, ctx):\n"
            "        self.runs = len(ctx.entries('runs', branch=False))\n"
            "    def before_prompt(self, text, ctx):\n"
            "        if 'shout' not in text:\n"  # the offline model answers the last user-side message
            "            return f'runs so far: {self.runs}'\n"
            "    def on_event(self, event, ctx):\n"
            "        if event.type == 'agent_end':\n"
            "            ctx.append_entry('runs', {'n': self.runs})\n"
            "            self.runs += 1\n"
            "    def tools(self):\n"
            "        return [shout]\n"
            "class Broken:\n"
            "    pass\n"
        ),
    )
    path = tmp_path / "run.jsonl"

    first = cli("one", "--session", str(path), cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "pi-jupyter: extension broken failed (load):" in first.stderr

    second = cli("two", "--session", str(path), "--json", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    lines = [json.loads(line) for line in second.stdout.splitlines()]
    errors = [x for x in lines if x["type"] == "extension_error"]
    assert [(e["extensionPath"], e["event"]) for e in errors] == [("broken", "load")]

    third = cli('call shout with {"text": "quiet please"}', "--session", str(path), cwd=tmp_path, env=env)
    assert third.returncode == 0, third.stderr
    assert "QUIET PLEASE" in third.stdout  # the extension's tool was offered and ran

    raw = [json.loads(line) for line in path.read_text().splitlines()]
    notes = [e["content"] for e in raw if e["type"] == "custom_message" and e["customType"] == "runs"]
    assert notes == ["runs so far: 0", "runs so far: 1"]  # each prompt rebuilt the count from the file
    assert [e["data"]["n"] for e in raw if e["type"] == "custom" and e["customType"] == "runs"] == [0, 1, 2]
