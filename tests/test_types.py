"""The package stays clean under mypy, every folder of it.

This is the very run `.ci/run` makes before the tests (``python -m mypy pi_jupyter`` from the
repository's root, with pyproject.toml's settings), so it shares mypy's cache and costs seconds
after it; mypy names the file and line of each error.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_type_checks_clean(monkeypatch):
    monkeypatch.chdir(ROOT)  # the same paths as .ci/run's command, so the same cache entries
    stdout, stderr, status = api.run(["pi_jupyter"])
    assert status == 0, stdout + stderr
    checked = int(stdout.split(" in ")[-1].split()[0])  # "Success: no issues found in N source files"
    modules = sum(1 for _ in (ROOT / "pi_jupyter").rglob("*.py"))
    assert checked == modules, f"mypy checked {checked} files of the package's {modules}"
