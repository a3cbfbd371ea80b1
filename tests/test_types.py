"""The package stays clean under mypy (.ci/run checks it whole too; this names each folder so a failure says where)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]

MYPY_CLEAN = [
    "pi_jupyter/__init__.py",
    "pi_jupyter/__main__.py",
    "pi_jupyter/agent",
    "pi_jupyter/cli",
    "pi_jupyter/compaction",
    "pi_jupyter/experiment",
    "pi_jupyter/extensions",
    "pi_jupyter/messages",
    "pi_jupyter/notebook",
    "pi_jupyter/providers",
    "pi_jupyter/resources",
    "pi_jupyter/session",
    "pi_jupyter/views",
]


def test_clean_modules_type_check():
    # errors in the modules these import are somebody else's list; only these are judged
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--follow-imports=silent", "--no-error-summary"]
    stdout, stderr, status = api.run([*options, *(str(ROOT / f) for f in MYPY_CLEAN)])
    assert status == 0, stdout + stderr
