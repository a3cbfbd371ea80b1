"""pi (and node) from npm, installed once into a cache folder for the tests that compare with pi.

A module of its own, imported by name: ``conftest`` is not a unique module name when the
browser and interop folders have conftest files of their own.

Several test runs share the cache (``~/.cache/pi-jupyter``): two at once on a busy machine, or
one killed halfway. So an install never happens in place: under a lock (``flock`` on a file
beside the folder), npm installs into a temporary folder, a marker naming the package and its
version is written last, and the folder is renamed into place. A reader sees either no folder,
or a whole one with its marker; a folder without the marker (an install killed halfway, or one
made before this rule) is installed again, and temporary folders left by killed runs are removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PI_VERSION = os.environ.get("PI_JUPYTER_PI_VERSION", "0.73.1")
PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI16_VERSION = os.environ.get("PI_JUPYTER_PI16_VERSION", "1.6.0")
PI16_PACKAGE = "@earendil-works/pi-coding-agent"
MARKER = ".pi-jupyter-installed"
"""Written last into a finished install: ``{"package": ..., "version": ...}``."""


def cache_dir(env: str, name: str) -> Path:
    base = os.environ.get(env)
    return Path(base) if base else Path.home() / ".cache" / "pi-jupyter" / name


def installed(prefix: Path, package: str, version: str) -> bool:
    """True when ``prefix`` holds a finished install of ``package@version`` (its marker says so)."""
    try:
        marker = json.loads((prefix / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker == {"package": package, "version": version} and (prefix / "node_modules" / package / "package.json").is_file()


@contextlib.contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    """Hold the install lock of ``prefix`` (a file beside it; the lock goes with the process, a killed one included)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def install_pi(package: str, version: str, prefix: Path) -> Path:
    """The node_modules folder under ``prefix`` holding ``package@version``; installs it from npm on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("needs node and npm on PATH (pi is a node program); install nodejs to run it")
    if installed(prefix, package, version):
        return prefix / "node_modules"
    with _locked(prefix):
        if installed(prefix, package, version):  # another run installed it while this one waited
            return prefix / "node_modules"
        for stale in prefix.parent.glob(f".{prefix.name}.*.tmp"):  # left by a killed run (none runs now: the lock is ours)
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.", suffix=".tmp", dir=prefix.parent))
        try:
            (work / "package.json").write_text('{"name": "pi-jupyter-interop", "private": true}\n')
            proc = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", f"{package}@{version}"],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0:
                pytest.skip(f"could not install {package}@{version} from npm: {proc.stderr.strip()[-400:]}")
            (work / MARKER).write_text(json.dumps({"package": package, "version": version}))
            old = prefix.parent / f".{prefix.name}.old.tmp"
            if prefix.exists():
                shutil.rmtree(old, ignore_errors=True)
                prefix.rename(old)  # a half-installed or older folder: out of the way, then removed
            work.rename(prefix)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return prefix / "node_modules"
