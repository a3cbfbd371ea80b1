"""Differential tests against pi itself: pi's npm package is installed once into a cache folder.

The package is ``@mariozechner/pi-coding-agent`` (version ``PI_VERSION``), installed with
``npm install --ignore-scripts`` into ``$PI_JUPYTER_PI_CACHE`` (default
``~/.cache/pi-jupyter/pi-<version>``). The installer is the ``pi_node_modules`` fixture of
``tests/conftest.py``, shared with the other tests that compare with pi. Without node or npm
every interop test is skipped with the reason shown in pytest's summary (``-rs``); under
``CI=true`` such a skip is a failure.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


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
