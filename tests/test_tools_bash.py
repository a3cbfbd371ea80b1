"""bash: real subprocesses; exit codes, streamed updates, tail truncation with the full output saved, timeout, abort."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from pi_jupyter.agent.toolbox import BashTool
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal


def ctx(cwd, updates=None, signal=None) -> ToolContext:
    return ToolContext(
        tool_call_id="b",
        signal=signal or AbortSignal(),
        cwd=str(cwd),
        update=(updates.append if updates is not None else (lambda _r: None)),
    )


def bash(cwd, command, **kw):
    return asyncio.run(run_tool(BashTool(), {"command": command, **kw}, ctx(cwd)))


def test_output_and_exit_code(tmp_path):
    r = bash(tmp_path, "echo out; echo err >&2; pwd")
    assert not r.is_error and r.text_content == f"out\nerr\n{tmp_path}\n" and r.details == {"exitCode": 0}
    r = bash(tmp_path, "echo partial; exit 7")
    assert r.is_error and r.text_content == "partial\n\n\nCommand exited with code 7" and r.details == {"exitCode": 7}
    assert bash(tmp_path, "true").text_content == "(no output)"


def test_a_command_killed_by_a_signal_says_so(tmp_path):
    r = bash(tmp_path, "kill -TERM $$")
    assert r.is_error and r.text_content == "(no output)\n\nCommand was terminated by SIGTERM"
    assert r.details == {"exitCode": -15}


def test_missing_working_directory(tmp_path):
    r = asyncio.run(run_tool(BashTool(cwd=tmp_path / "gone"), {"command": "true"}, ctx(tmp_path)))
    assert r.is_error and r.text_content.startswith(f"Working directory does not exist: {tmp_path / 'gone'}")


def test_long_output_keeps_the_tail_and_saves_everything_to_a_file(tmp_path):
    r = bash(tmp_path, "seq 1 3000")
    body, notice = r.text_content.rsplit("\n\n", 1)
    path = r.details["fullOutputPath"]
    assert body.splitlines()[0] == "1002" and body.splitlines()[-1] == "3000"
    assert notice == f"[Showing lines 1002-3001 of 3001. Full output: {path}]"
    assert r.details["truncation"]["truncatedBy"] == "lines" and r.details["exitCode"] == 0
    with open(path) as fh:
        assert fh.read() == "".join(f"{i}\n" for i in range(1, 3001))
    os.unlink(path)


def test_one_huge_line_shows_its_end(tmp_path):
    r = bash(tmp_path, "head -c 60000 /dev/zero | tr '\\0' x")
    assert r.text_content.endswith(f"[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {r.details['fullOutputPath']}]")
    os.unlink(r.details["fullOutputPath"])


def test_partial_output_streams_through_updates(tmp_path):
    updates = []
    r = asyncio.run(run_tool(BashTool(), {"command": "echo first; sleep 0.3; echo second"}, ctx(tmp_path, updates)))
    assert r.text_content == "first\nsecond\n"
    texts = [u.text_content for u in updates]
    assert texts[0] == ""  # pi's initial empty update
    assert "first\n" in texts and texts[-1] == "first\nsecond\n"


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "survived"
    r = bash(tmp_path, f"(sleep 1; touch {marker}) & echo started $!; sleep 30", timeout=0.5)
    started, child = r.text_content.split("\n", 1)[0].split()
    assert r.is_error and started == "started" and r.text_content.endswith("\n\n\nCommand timed out after 0.5 seconds")
    assert "exitCode" not in (r.details or {})
    # the background child is gone (waited for as an event: its process ends, whether killed or done)
    while _alive(int(child)):
        time.sleep(0.05)
    assert not marker.exists()  # it died with the group: it never got to touch the file


def test_abort_signal_kills_the_command(tmp_path):
    async def scenario():
        signal = AbortSignal()
        printed = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_update(partial) -> None:
            if "go" in partial.text_content:  # the command is running: abort it now, whatever the load
                loop.call_soon_threadsafe(printed.set)

        context = ToolContext(tool_call_id="b", signal=signal, cwd=str(tmp_path), update=on_update)
        task = asyncio.ensure_future(run_tool(BashTool(), {"command": "echo go; sleep 30"}, context))
        await asyncio.wait_for(printed.wait(), 20)
        signal.abort()
        return await asyncio.wait_for(task, 5)

    r = asyncio.run(scenario())
    assert r.is_error and r.text_content == "go\n\n\nCommand aborted"


def test_background_children_do_not_hang_the_call(tmp_path):
    r = asyncio.run(asyncio.wait_for(run_tool(BashTool(), {"command": "sleep 5 & echo done"}, ctx(tmp_path)), 4))
    assert r.text_content == "done\n"


def test_secrets_in_the_environment_are_redacted_from_output(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_API_KEY", "s3cr3t-value-xyz")
    r = bash(tmp_path, "echo key=$SERVICE_API_KEY")
    assert r.text_content == "key=[REDACTED:SERVICE_API_KEY]\n"


def test_the_full_output_file_is_redacted_too(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", "tok-abcdefgh-123")
    r = bash(tmp_path, "for i in $(seq 1 2100); do echo line $i $SERVICE_TOKEN; done")
    with open(r.details["fullOutputPath"]) as fh:
        saved = fh.read()
    assert "tok-abcdefgh-123" not in saved and saved.count("[REDACTED:SERVICE_TOKEN]") == 2100
    os.unlink(r.details["fullOutputPath"])


@pytest.mark.parametrize("timeout", [None, 0])
def test_no_timeout_means_none(tmp_path, timeout):
    assert bash(tmp_path, "sleep 0.2; echo ok", timeout=timeout).text_content == "ok\n"


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone: it runs no more code)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
