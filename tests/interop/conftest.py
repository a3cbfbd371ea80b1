"""Differential tests against pi itself: pi's npm packages are installed once into cache folders.

Two pi versions are tested: the last 0.x, ``@mariozechner/pi-coding-agent`` (``PI_VERSION``,
0.73.1), and current pi, ``@earendil-works/pi-coding-agent`` (``PI16_VERSION``, 1.6.0),
each installed with ``npm install --ignore-scripts`` into ``$PI_JUPYTER_PI_CACHE`` (default
``~/.cache/pi-jupyter/pi-<version>``), resp. ``$PI_JUPYTER_PI16_CACHE`` (default
``~/.cache/pi-jupyter/earendil-pi-<version>``). Without node or npm every interop test is
skipped with the reason shown in pytest's summary (``-rs``); under
``CI=true`` such a skip is a failure. The installer (``install_pi``) and both fixtures live in
``tests/conftest.py``, shared with the other tests that compare with pi.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pi_npm import PI16_PACKAGE, PI_PACKAGE

HERE = Path(__file__).parent


def _runner(node_modules: Path, package: str):
    def run(script: str, *args: str, timeout: float = 300) -> str:
        env = dict(os.environ, PI_NODE_MODULES=str(node_modules), PI_PACKAGE=package)
        proc = subprocess.run(["node", str(HERE / script), *args], capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"node {script} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        return proc.stdout

    return run


@pytest.fixture(scope="session")
def run_node(pi_node_modules: Path):
    """``run_node(script_name, *args) -> stdout``: run a script of tests/interop with pi 0.73.1 available."""
    return _runner(pi_node_modules, PI_PACKAGE)


@pytest.fixture(scope="session")
def run_node16(pi16_node_modules: Path):
    """``run_node16(script_name, *args) -> stdout``: the same with pi 1.6 (``$PI_PACKAGE`` tells the script which)."""
    return _runner(pi16_node_modules, PI16_PACKAGE)
