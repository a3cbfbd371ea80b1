"""The suite's cached npm installs on a busy machine: two runs at once, or one killed halfway, never leave a half package.

A stand-in ``npm`` (a script first on PATH) writes a package in two steps, the way a real install
lands files one after another, and logs each call; it can be told to stop between the steps
until a file appears (another run is then started against the same cache) or to hang there
(the run is killed). Whatever happens, a reader finds no folder or a whole one, and npm runs once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

FAKE_NPM = textwrap.dedent(
    """\
    #!{python}
    import os, sys, time, pathlib
    spec = sys.argv[-1]
    package, version = spec.rsplit("@", 1)
    with open(os.environ["FAKE_NPM_LOG"], "a") as log:
        log.write(spec + "\\n")
    home = pathlib.Path("node_modules") / package
    home.mkdir(parents=True, exist_ok=True)
    (home / "package.json").write_text('{{"version": "%s"}}' % version)
    pathlib.Path(os.environ["FAKE_NPM_HALF"]).write_text("half")  # half installed: the second file is not there yet
    go = os.environ.get("FAKE_NPM_GO")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    (home / "build").mkdir(exist_ok=True)
    (home / "build" / "index.mjs").write_text("export {{}};")
    """
)

INSTALL = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from pi_npm import install_pi
modules = install_pi("@scope/tool", "1.2.3", Path({prefix!r}))
print("OK", (modules / "@scope/tool/build/index.mjs").exists())
"""


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("npm", FAKE_NPM.format(python=sys.executable)), ("node", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_NPM_LOG": str(tmp_path / "npm.log"),
        "FAKE_NPM_HALF": str(tmp_path / "half"),
        "FAKE_NPM_GO": str(tmp_path / "go"),
    }


def start(env: dict[str, str], prefix: Path) -> subprocess.Popen[str]:
    code = INSTALL.format(tests=str(TESTS), prefix=str(prefix))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Until ``path`` exists (the stand-in npm got there), or the process died (then say why)."""
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the install ended early: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.01)


def whole(prefix: Path) -> bool:
    return (prefix / "node_modules/@scope/tool/build/index.mjs").exists()


def test_two_runs_at_once_install_once_and_neither_sees_half_a_package(fake, tmp_path):
    prefix = tmp_path / "cache" / "tool-1.2.3"
    first = start(fake, prefix)
    wait_for(Path(fake["FAKE_NPM_HALF"]), first)  # the first run's npm is halfway
    assert not prefix.exists()  # it installs elsewhere: nothing half-done where readers look
    second = start(fake, prefix)  # it waits for the first one's lock (it does not install beside it)
    Path(fake["FAKE_NPM_GO"]).write_text("go")
    for proc in (first, second):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.strip() == "OK True", err
    assert Path(fake["FAKE_NPM_LOG"]).read_text().splitlines() == ["@scope/tool@1.2.3"]  # npm ran once
    assert whole(prefix) and json.loads((prefix / ".pi-jupyter-installed").read_text())["version"] == "1.2.3"
    assert [p.name for p in prefix.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_run_killed_halfway_leaves_nothing_the_next_run_trusts(fake, tmp_path):
    prefix = tmp_path / "cache" / "tool-1.2.3"
    killed = start(fake, prefix)
    wait_for(Path(fake["FAKE_NPM_HALF"]), killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert not whole(prefix)  # the half package is in a temporary folder, not in the cache's place
    Path(fake["FAKE_NPM_GO"]).write_text("go")
    again = start(fake, prefix)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and out.strip() == "OK True", err
    assert whole(prefix)
    assert [p.name for p in prefix.parent.iterdir() if p.name.endswith(".tmp")] == []  # the killed run's leftovers are gone


def test_a_folder_from_before_the_marker_or_half_installed_is_installed_again(fake, tmp_path):
    prefix = tmp_path / "cache" / "tool-1.2.3"
    half = prefix / "node_modules/@scope/tool"
    half.mkdir(parents=True)
    (half / "package.json").write_text('{"version": "1.2.3"}')  # what a killed in-place install left: no build/
    Path(fake["FAKE_NPM_GO"]).write_text("go")
    proc = start(fake, prefix)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip() == "OK True", err
    assert whole(prefix) and Path(fake["FAKE_NPM_LOG"]).read_text().splitlines() == ["@scope/tool@1.2.3"]
