"""Differential tests against pi itself: pi's npm package is installed once into a cache folder.

The package is ``@mariozechner/pi-coding-agent`` (version ``PI_VERSION``), installed with
``npm install --ignore-scripts`` into ``$PI_JUPYTER_PI_CACHE`` (default
``~/.cache/pi-jupyter/pi-<version>``). Without node or npm every interop test is skipped
with the reason shown in pytest's summary (``-rs``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PI_VERSION = os.environ.get("PI_JUPYTER_PI_VERSION", "0.73.1")
HERE = Path(__file__).parent


def _cache_dir() -> Path:
    base = os.environ.get("PI_JUPYTER_PI_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "pi-jupyter" / f"pi-{PI_VERSION}"


@pytest.fixture(scope="session")
def pi_node_modules() -> Path:
    """The node_modules folder holding pi; installs it on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("interop tests need node and npm on PATH (pi is a node program); install nodejs to run them")
    prefix = _cache_dir()
    pkg = prefix / "node_modules" / "@mariozechner" / "pi-coding-agent" / "package.json"
    if not pkg.exists() or json.loads(pkg.read_text()).get("version") != PI_VERSION:
        prefix.mkdir(parents=True, exist_ok=True)
        if not (prefix / "package.json").exists():
            (prefix / "package.json").write_text('{"name": "pi-jupyter-interop", "private": true}\n')
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", f"@mariozechner/pi-coding-agent@{PI_VERSION}"],
            cwd=prefix,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            pytest.skip(f"could not install pi {PI_VERSION} from npm: {proc.stderr.strip()[-400:]}")
    return prefix / "node_modules"


@pytest.fixture(scope="session")
def run_node(pi_node_modules: Path):
    """``run_node(script_name, *args) -> stdout``: run a script of tests/interop with pi available."""

    def run(script: str, *args: str, timeout: float = 300) -> str:
        env = dict(os.environ, PI_NODE_MODULES=str(pi_node_modules))
        proc = subprocess.run(["node", str(HERE / script), *args], capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"node {script} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        return proc.stdout

    return run
