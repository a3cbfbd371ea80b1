"""Installing npm packages (pi, node) once into the interop cache folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def _cache_dir(env: str, name: str) -> Path:
    base = os.environ.get(env)
    return Path(base) if base else Path.home() / ".cache" / "pi-jupyter" / name


def _install(package: str, version: str, prefix: Path) -> Path:
    """The node_modules folder under ``prefix`` holding ``package@version``; installs it on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("interop tests need node and npm on PATH (pi is a node program); install nodejs to run them")
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
