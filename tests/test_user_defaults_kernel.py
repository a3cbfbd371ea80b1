"""A notebook with nothing configured: the user's own defaults, not the settings most tests pin.

Most notebook tests pin ``offline/echo``, ``thinking=off`` and a session folder. A new user sets
none of them: ``%load_ext pi_jupyter`` and a ``%%pi`` cell. This drives a real kernel that way
(the default model, thinking level, session folder, tools and grid concurrency) through a tool
call, a re-run, a checkout back and a grid, and checks what the user ends up with: the file where
the manual (docs/notebook.md, Settings) says it goes, the levels it records, and the variables the next cell sees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.agent.settings import AgentSettings
from pi_jupyter.experiment import load_experiment

pytestmark = pytest.mark.kernel


def _value(kernel: Kernel, expr: str) -> object:
    out = kernel.run(f"import json as _j; print(_j.dumps({expr}))")
    assert out.status == "ok", out.error
    return json.loads(out.stdout.strip().splitlines()[-1])


def _session(folder: Path) -> Session:
    files = sorted(folder.glob("*.jsonl"))
    assert len(files) == 1, files
    return Session.open(files[0], readonly=True)


def test_nothing_configured_a_tool_call_a_rerun_a_checkout_and_a_grid(tmp_path):
    k = Kernel(str(tmp_path), env={"PI_JUPYTER_CONFIG": str(tmp_path / "no-user-config.toml")})
    try:
        assert k.run("%load_ext pi_jupyter").status == "ok"
        cell = "%%pi --tools python\nuse python\n```python\nplan = {value!r}\nprint('plan is', plan)\n```"
        first = k.run(cell.format(value="A"), "plan")
        assert first.status == "ok", first.error
        assert _value(k, "plan") == "A"
        folder = tmp_path / "pi-sessions"  # the default session folder (docs/notebook.md, Settings), beside the notebook
        s = _session(folder)
        levels = [e["thinkingLevel"] for e in s.raw_branch() if e["type"] == "thinking_level_change"]
        models = [(e["provider"], e["modelId"]) for e in s.raw_branch() if e["type"] == "model_change"]
        assert levels == [AgentSettings().default_thinking_level] and models == [("offline", "echo")]
        tool_output = [e for e in s.raw_branch() if (e.get("message") or {}).get("role") == "toolResult"]
        assert "plan is A" in tool_output[0]["message"]["content"][0]["text"]

        second = k.run(cell.format(value="B"), "plan")  # the same cell again: a sibling branch
        assert second.status == "ok", second.error
        assert _value(k, "plan") == "B"
        s = _session(folder)
        from pi_jupyter.notebook.cells import cell_runs

        first_end = cell_runs(s, "plan")[0].end
        back = k.run(f"%pi checkout {first_end}")
        assert back.status == "ok", back.error
        assert _value(k, "plan") == "A"  # the world came back with the conversation

        grid = k.run("%%pi --tools python --repeat 3\nuse python\n```python\nn = globals().get('n', 0) + 1\nprint(n)\n```", "grid")
        assert grid.status == "ok", grid.error
        rows = load_experiment(_session(folder)).rows
        assert len(rows) == 3 and all(r.state == "done" for r in rows)
        printed = []
        for r in rows:
            results = [e for e in _session(folder).raw_branch(r.leaf) if (e.get("message") or {}).get("role") == "toolResult"]
            printed.append(results[-1]["message"]["content"][0]["text"].splitlines()[0])
        assert printed == ["1", "1", "1"]  # at the default concurrency, no branch saw another's variables
    finally:
        k.close()
