"""Shared test setup: the wire server fixtures (``wire``, ``wire_server``), pi installed from npm
for the tests that compare with it, and the rule that CI never skips a real-system test silently."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["wire.fixtures"]

# The world's signing key (pi_jupyter.world.trust): one of the run's own, never the user's, for this process and
# every kernel and command it starts (they inherit the environment); a test that plays "another user" sets its own.
os.environ.setdefault("PI_JUPYTER_WORLD_KEY", os.path.join(tempfile.mkdtemp(prefix="pi-world-key-"), "key"))

from pi_npm import PI16_PACKAGE, PI16_VERSION, PI_PACKAGE, PI_VERSION, cache_dir, install_pi  # noqa: E402
from rpc_client import Rpc  # noqa: E402

STRICT_MARKERS = ("browser", "kernel", "interop", "docs")
"""Tests that drive a real system (Chromium, a Jupyter kernel, pi under node) or need the docs extra, which CI
installs: under ``CI=true`` a skip is a failure."""
STRICT_FOLDERS = ("/browser/", "/interop/")


def pytest_collection_modifyitems(session, config, items):
    """Run the real-browser tests last.

    Playwright's sync API keeps an event loop running in the main thread while its browser is
    open (a session-wide fixture), and ``asyncio.run`` refuses to start inside a running loop.
    """
    items.sort(key=lambda item: "/browser/" in str(item.fspath).replace("\\", "/"))


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _strict(path: str, markers: set[str]) -> bool:
    path = path.replace("\\", "/")
    return bool(markers & set(STRICT_MARKERS)) or any(folder in path for folder in STRICT_FOLDERS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under ``CI=true``, a skipped browser, kernel or interop test fails, with the skip's reason.

    Such a skip means Chromium did not launch, a kernel did not start or npm could not install
    pi: the suite did not test what it claims to, and CI must not stay green.
    """
    outcome = yield
    report = outcome.get_result()
    if not (_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    if _strict(str(item.fspath), {m.name for m in item.iter_markers()}):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which must run every browser, kernel, interop and docs test: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped at import (``pytest.importorskip``, a module-level skip)."""
    outcome = yield
    report = outcome.get_result()
    if _ci() and report.skipped and _strict(str(getattr(collector, "path", "")), set()):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which must run every browser, kernel and interop test: {reason}"


@pytest.fixture(scope="session")
def pi_node_modules() -> Path:
    """The node_modules folder holding pi 0.73.1 (``@mariozechner/pi-coding-agent``); installs it on first use.

    Every test that compares with pi asks for this fixture, so it runs alone too (under ``-k``,
    ``-m`` or xdist), not only after the interop tests happened to install pi.
    """
    return install_pi(PI_PACKAGE, PI_VERSION, cache_dir("PI_JUPYTER_PI_CACHE", f"pi-{PI_VERSION}"))


@pytest.fixture(scope="session")
def pi16_node_modules() -> Path:
    """The node_modules folder holding current pi (``@earendil-works/pi-coding-agent``, 1.6.0)."""
    return install_pi(PI16_PACKAGE, PI16_VERSION, cache_dir("PI_JUPYTER_PI16_CACHE", f"earendil-pi-{PI16_VERSION}"))


@pytest.fixture
def rpc(tmp_path: Path):  # the server of ``pi-jupyter rpc`` (tests/rpc_client.py)
    """Start servers in ``tmp_path`` with ``rpc(*args)``; each is killed at the end if still alive."""
    started: list[Rpc] = []

    def start(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, program: list[str] | None = None) -> Rpc:
        server = Rpc(cwd or tmp_path, *args, env=env, program=program)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()
