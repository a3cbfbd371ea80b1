"""The ``pi-jupyter`` script ends a read-only command as soon as its output is written, and loses none of it.

``context``, ``tree`` and ``info`` end the process with ``os._exit`` once their output is
flushed (freeing a 100k-entry file's objects one by one would only cost time). What a user
sees must not change: every byte on stdout (through a pipe, larger than the pipe's buffer),
the note on stderr, the exit status, a reader that goes away; and ``main()`` called from
Python returns as before, with the garbage collector as it was.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_jupyter.cli.context_cmd import context_json
from pi_jupyter.cli.main import main
from pi_jupyter.session import Session

SCRIPT = [sys.executable, "-m", "pi_jupyter"]  # what the pi-jupyter script runs (cli.main.entry)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as a user's is


def _long_session(folder: Path, turns: int = 150) -> Path:
    """A branch whose context is a few megabytes: more than a pipe holds at once."""
    path = folder / "long.jsonl"
    s = Session.create(path=path, cwd="/w")
    s.append_model_change("offline", "echo")
    for i in range(turns):
        s.append_message({"role": "user", "content": [{"type": "text", "text": f"question {i} " + "x" * 8000}], "timestamp": i})
        s.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {i} é"}], "stopReason": "stop", "timestamp": i}
        )
    s.close()
    return path


def test_a_context_larger_than_a_pipe_arrives_whole(tmp_path: Path) -> None:
    path = _long_session(tmp_path)
    proc = subprocess.run([*SCRIPT, "context", "--json", str(path)], capture_output=True, check=False, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) > 2_000_000 and proc.stdout.endswith(b"}\n")
    out = json.loads(proc.stdout)
    assert len(out["messages"]) == len(out["llm"]) == 300
    assert out["messages"][-1]["content"][0]["text"] == "answer 149 é"
    assert out == context_json(Session.open(path, readonly=True))


@pytest.mark.parametrize("args", [("context",), ("context", "--json"), ("tree",), ("info",)])
def test_each_read_only_command_prints_what_main_prints_in_process(tmp_path: Path, args: tuple[str, ...], capsysbinary) -> None:
    path = _long_session(tmp_path, turns=20)
    with path.open("ab") as fh:
        fh.write(b"not json\n")  # a damaged line: status 1 and a note on stderr
    proc = subprocess.run([*SCRIPT, *args, str(path)], capture_output=True, check=False, env=ENV)
    status = main([*args, str(path)])
    captured = capsysbinary.readouterr()
    assert (proc.returncode, proc.stdout) == (status, captured.out) == (1, captured.out)
    assert proc.stderr == captured.err and b"line 43" in proc.stdout + proc.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    path = _long_session(tmp_path)
    proc = subprocess.Popen([*SCRIPT, "context", "--json", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{"messages'
    proc.stdout.close()  # as `| head -c 10` does
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert b"Traceback" not in err and b"Error" not in err, err


def test_main_in_process_returns_and_leaves_the_collector_as_it_was(tmp_path: Path, capsys) -> None:
    path = _long_session(tmp_path, turns=5)
    assert gc.isenabled()
    for _ in range(2):
        assert main(["context", "--json", str(path)]) == 0
        assert gc.isenabled()
        assert len(json.loads(capsys.readouterr().out)["messages"]) == 10
    gc.disable()
    try:
        assert main(["info", str(path)]) == 0
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
