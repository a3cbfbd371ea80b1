"""Everything a test, a bench or a tool reads is in the repository (or made by the test).

A user's fresh clone has no folder beside it: a test that reads ``/…/shared/fixtures`` passes
on the machine it was written on and fails on theirs. The sources of ``tests/``, ``bench/`` and
``tools/`` are read (not run) and every string literal that is an absolute path is checked: a
path that exists on this machine outside the repository, and outside the system's own folders
(interpreters, ``/tmp``, ``/dev``), is reported with its file and line.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("tests", "bench", "tools")

SYSTEM = ("/tmp", "/dev", "/proc", "/sys", "/usr", "/bin", "/sbin", "/lib", "/etc", "/var", "/opt/conda", "/run")
"""Folders every machine has (or that a test only names, never reads for its content)."""


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py") if ".venv" not in p.parts)


def _outside(literal: str) -> bool:
    """True for a literal that names an existing path outside the repository and the system's folders."""
    if not literal.startswith("/") or "\n" in literal or len(literal) > 300:
        return False
    path = os.path.normpath(literal)
    if path == "/" or any(path == s or path.startswith(s + "/") for s in SYSTEM):
        return False
    if path == str(REPO) or path.startswith(str(REPO) + os.sep):
        return False
    return os.path.exists(path)


def test_no_test_or_bench_reads_a_path_outside_the_repository():
    found = []
    for source in _sources():
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _outside(node.value):
                found.append(f"{source.relative_to(REPO)}:{node.lineno}: {node.value}")
    assert not found, "copy what these read into the repository (tests/fixtures/):\n" + "\n".join(found)


def test_the_check_sees_a_path_outside(tmp_path: Path):
    # the folder beside the checkout is what a fresh clone lacks (a clone in /tmp has a system folder there: the
    # home folder then stands for "outside"); /tmp stands for "a system folder" and is allowed
    system = [s for s in SYSTEM if str(REPO.parent) == s or str(REPO.parent).startswith(s + "/")]
    beside = REPO.parent if not system else Path.home()
    assert _outside(str(beside)) or not beside.exists()
    assert not _outside(str(REPO / "tests" / "fixtures" / "pi"))
    assert not _outside(str(tmp_path))
