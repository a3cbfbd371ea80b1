"""The Binder environment, built the way repo2docker builds it, runs every notebook.

mybinder.org cannot be reached from CI, so this applies ``binder/`` as repo2docker does:
the packages of ``apt.txt`` must be installed (``.ci/run`` installs them with apt), then in a
fresh virtual environment ``pip install -r binder/requirements.txt``, then ``binder/postBuild``
from the repository root, then every notebook runs in that environment with no key. The
same environment is what the README's first command installs (the ``notebook`` extra), so
the quickstart is also run with the pip-only Graphviz forced, as on a machine without ``dot``.

Slow (a fresh install from PyPI, a minute or more with a warm pip cache): marked ``binder``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"

pytestmark = [pytest.mark.binder, pytest.mark.kernel, pytest.mark.timeout(1500)]


def _env(venv: Path) -> dict[str, str]:
    """A clean environment for the fresh venv: its bin first, no PYTHONPATH (so nothing leaks in), no keys."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path = ROOT, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def binder_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("binder") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = _env(venv)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(BINDER / "requirements.txt")], env)
    # repo2docker runs postBuild from the repository root with the environment's python first on PATH
    _run(["bash", str(BINDER / "postBuild")], env)
    return venv


def test_apt_txt_packages_are_what_the_notebooks_need_and_are_installed():
    lines = (BINDER / "apt.txt").read_text(encoding="utf-8").splitlines()
    packages = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert "graphviz" in packages
    if shutil.which("dpkg") is None:
        pytest.fail("dpkg is missing: the Binder test needs a Debian-like machine, as repo2docker's image is")
    for package in packages:
        status = subprocess.run(["dpkg", "-s", package], capture_output=True, text=True)
        assert status.returncode == 0 and "Status: install ok installed" in status.stdout, f"apt.txt package {package!r} is not installed"


def test_binder_environment_installs_pi_jupyter_from_the_repository(binder_venv):
    probe = [str(binder_venv / "bin" / "python"), "-c", "import pi_jupyter; print(pi_jupyter.__file__)"]
    where = _run(probe, _env(binder_venv), cwd=binder_venv)
    assert where.stdout.strip().startswith(str(binder_venv)), where.stdout


def test_every_notebook_runs_in_the_binder_environment(binder_venv):
    done = _run([str(binder_venv / "bin" / "python"), str(ROOT / "tools" / "run_notebooks.py"), "--check"], _env(binder_venv))
    lines = [line for line in done.stdout.splitlines() if line.startswith("notebooks/")]
    assert lines and all(line.endswith(": ok") for line in lines), done.stdout
    assert len(lines) == len(list((ROOT / "notebooks").glob("*.ipynb")))


def test_quickstart_draws_the_tree_with_pip_only_graphviz(binder_venv, tmp_path):
    """The README's first command on a machine without `dot`: graphviz-pure (in the notebook extra) draws the tree."""
    script = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('rn', {str(ROOT / 'tools' / 'run_notebooks.py')!r})\n"
        "rn = importlib.util.module_from_spec(spec); spec.loader.exec_module(rn)\n"
        f"nb = rn.execute(rn.NOTEBOOKS / 'quickstart.ipynb', workdir=__import__('pathlib').Path({str(tmp_path)!r}))\n"
        "tree = next(c for c in nb.cells if c.get('id') == 'tree')\n"
        "print(json.dumps({'problems': rn.problems(nb), 'tree': tree.outputs}))\n"
    )
    env = _env(binder_venv) | {"PI_JUPYTER_RENDERER": "graphviz-pure"}
    done = _run([str(binder_venv / "bin" / "python"), "-c", script], env)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["problems"] == []
    drawn = json.dumps(result["tree"])
    assert "<svg" in drawn, "the tree was not drawn without dot"
