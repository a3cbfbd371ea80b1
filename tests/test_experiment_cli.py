"""``pi-jupyter experiment`` from a shell: the table, JSON rows, --show, and bad input that writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def cli(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pi_jupyter", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_cli_runs_the_grid_and_prints_the_table(tmp_path):
    out = cli(
        "experiment", "study.jsonl", "--prompt", "Explain it in a {tone} way.",
        "--vary", "model=offline/echo,offline/typewriter", "--vary", "tone='terse, dry',warm", "--score", "length", "--json",
        cwd=str(tmp_path),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [(r["model"], r["tone"], r["state"]) for r in rows] == [
        ("offline/echo", "terse, dry", "done"),
        ("offline/echo", "warm", "done"),
        ("offline/typewriter", "terse, dry", "done"),
        ("offline/typewriter", "warm", "done"),
    ]
    assert all(r["length"] > 0 and "Explain it in a" in r["answer"] for r in rows)
    shown = cli("experiment", "study.jsonl", "--show", cwd=str(tmp_path))
    assert shown.returncode == 0
    assert "terse, dry" in shown.stdout and "4 branches: 4 done" in shown.stdout
    assert json.loads(cli("experiment", "study.jsonl", "--show", "--json", cwd=str(tmp_path)).stdout) == rows


def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path):
    cases = [
        (["--prompt", "Hi {x}", "--vary", "tone=a"], "{x} is bound by no --vary"),
        (["--prompt", "Hi", "--vary", "model="], "--vary model: no values"),
        (["--prompt", "Hi", "--vary", "model=offline/nope"], "unknown model 'offline/nope'"),
        (["--prompt", "Hi", "--budget", "-2"], "--budget -2.0"),
        (["--prompt", "Hi {n}", "--vary", "n=" + ",".join(map(str, range(70)))], "more than the limit of 64"),
        (["--prompt", "Hi {n}", "--vary", "n=a,b", "--repeat", "4", "--until-decided"], "--until-decided: give a --score to decide on"),
        (["--prompt", "Hi {n}", "--vary", "n=a,b", "--executor", "tcp://127.0.0.1:1"], "no Dask scheduler answered there"),
        (["--prompt", "Hi {n}", "--vary", "n=a,b", "--rate-limit", "0"], "--rate-limit 0.0: give requests per second"),
    ]
    for args, message in cases:
        out = cli("experiment", "new.jsonl", *args, cwd=str(tmp_path))
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and out.stdout == ""
        assert not (tmp_path / "new.jsonl").exists()
