"""The modules that are clean under mypy stay clean (the whole package is not yet; see pyproject's [tool.mypy])."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]

MYPY_CLEAN = [
    "pi_jupyter/agent/agent.py",
    "pi_jupyter/agent/compaction_runner.py",
    "pi_jupyter/agent/event_log.py",
    "pi_jupyter/agent/extensions.py",
    "pi_jupyter/agent/persistence.py",
    "pi_jupyter/agent/result.py",
    "pi_jupyter/agent/retry.py",
    "pi_jupyter/agent/run_context.py",
    "pi_jupyter/agent/run_state.py",
    "pi_jupyter/agent/settings.py",
    "pi_jupyter/agent/thinking.py",
    "pi_jupyter/agent/tool_hooks.py",
    "pi_jupyter/providers/partial_json.py",
    "pi_jupyter/resources/ignore.py",
    "pi_jupyter/session/appending.py",
    "pi_jupyter/session/moves.py",
    "pi_jupyter/session/reading.py",
    "pi_jupyter/session/store.py",
    "pi_jupyter/session/viewers.py",
]


def test_clean_modules_type_check():
    # errors in the modules these import are somebody else's list; only these files are judged
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--follow-imports=silent", "--no-error-summary"]
    stdout, stderr, status = api.run([*options, *(str(ROOT / f) for f in MYPY_CLEAN)])
    assert status == 0, stdout + stderr
