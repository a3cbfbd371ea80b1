"""pi (and node) from npm, installed once into a cache folder for the tests that compare with pi.

A module of its own, imported by name: ``conftest`` is not a unique module name when the
browser and interop folders have conftest files of their own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PI_VERSION = os.environ.get("PI_JUPYTER_PI_VERSION", "0.73.1")
PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI16_VERSION = os.environ.get("PI_JUPYTER_PI16_VERSION", "1.6.0")
PI16_PACKAGE = "@earendil-works/pi-coding-agent"


def cache_dir(env: str, name: str) -> Path:
    base = os.environ.get(env)
    return Path(base) if base else Path.home() / ".cache" / "pi-jupyter" / name


def install_pi(package: str, version: str, prefix: Path) -> Path:
    """The node_modules folder under ``prefix`` holding ``package@version``; installs it from npm on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("needs node and npm on PATH (pi is a node program); install nodejs to run it")
    pkg = prefix / "node_modules" / package / "package.json"
    if not pkg.exists() or json.loads(pkg.read_text()).get("version") != version:
        prefix.mkdir(parents=True, exist_ok=True)
        if not (prefix / "package.json").exists():
            (prefix / "package.json").write_text('{"name": "pi-jupyter-interop", "private": true}\n')
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", f"{package}@{version}"],
            cwd=prefix,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            pytest.skip(f"could not install {package}@{version} from npm: {proc.stderr.strip()[-400:]}")
    return prefix / "node_modules"
