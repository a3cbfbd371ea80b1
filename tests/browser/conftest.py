"""Real-browser test infrastructure: one JupyterLab server per session, Debian's Chromium via Playwright.

See ``/work/shared/tools/browser-testing.md``. The server runs on 127.0.0.1 on a free port
with a token, with its config, runtime, data, settings and workspace folders in a temporary
folder (settings: start the default kernel without asking, no news, no update checks). Kernels
are real ipykernels started by JupyterLab. Screenshots go to ``artifacts/`` at the repo root.

Fixtures: ``jupyter_server`` (session), ``notebook7_server`` (session), ``browser`` (session),
``lab`` (a fresh page per test, with :class:`Lab` helpers: write and open a notebook, wait for
its kernel, run cells, read outputs, save, reload, screenshot) and ``notebook7`` (the same
helpers on Notebook 7). Everything skips with the reason when Chromium, Playwright, JupyterLab
or Notebook is missing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts"
CHROMIUM = os.environ.get("PI_JUPYTER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}
"""User settings of the test servers: JupyterLab's defaults otherwise (widget state NOT saved; see ``save_widget_state``)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class JupyterServer:
    """A running JupyterLab: its base ``url``, ``token``, served ``root`` folder and log file."""

    url: str
    token: str
    root: Path
    log: Path
    proc: subprocess.Popen = field(repr=False)

    def api(self, path: str, method: str = "GET", body: Any = None) -> Any:
        """Call the server's REST API (``path`` like ``/api/kernels``); returns the parsed JSON."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def log_tail(self, n: int = 4000) -> str:
        """The end of the server log (for failure messages)."""
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def _launch(base: Path, app: str) -> JupyterServer:
    """Start ``python -m APP`` (``jupyterlab`` or ``notebook``) isolated in ``base``; wait until it answers."""
    root = base / "notebooks"
    dirs = {name: base / name for name in ("config", "runtime", "data", "settings", "workspaces", "ipython")}
    for d in (root, *dirs.values()):
        d.mkdir(parents=True, exist_ok=True)
    for rel, value in LAB_SETTINGS.items():
        path = dirs["settings"] / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    # the server extension config the wheel installs (the save hook), as an installed package has it
    conf_d = dirs["config"] / "jupyter_server_config.d"
    conf_d.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "jupyter-config" / "jupyter_server_config.d" / "pi_jupyter.json", conf_d / "pi_jupyter.json")
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
        IPYTHONDIR=str(dirs["ipython"]),
        PYTHONUNBUFFERED="1",
    )
    env.pop("JUPYTER_PATH", None)
    port = _free_port()
    token = secrets.token_hex(16)
    app_class = "LabApp" if app == "jupyterlab" else "JupyterNotebookApp"
    cmd = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        # window.jupyterapp: run commands (run all, save) exactly as the menus do.
        f"--{app_class}.expose_app_in_browser=True",
    ]
    if app == "jupyterlab":
        cmd += [
            "--LabApp.news_url=None",
            "--LabApp.extension_manager=readonly",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
    log = base / f"{app}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    server = JupyterServer(url=f"http://127.0.0.1:{port}", token=token, root=root, log=log, proc=proc)
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail(f"{app} exited with {proc.returncode} before answering:\n{server.log_tail()}")
        try:
            server.api("/api/status")
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                proc.terminate()
                pytest.fail(f"{app} did not answer on {server.url} within 90 s:\n{server.log_tail()}")
            time.sleep(0.25)
    return server


def _stop(server: JupyterServer) -> None:
    try:
        server.api("/api/shutdown", method="POST")
    except (urllib.error.URLError, ConnectionError, OSError):
        pass
    try:
        server.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.proc.kill()


def _serve(factory: pytest.TempPathFactory, app: str) -> Any:
    """Start ``app`` (``jupyterlab`` or ``notebook``) for the session, skipping when it is not installed."""
    pytest.importorskip(app, reason=f"browser tests need the {app} package: pip install {app}")
    server = _launch(factory.mktemp(app), app)
    yield server
    _stop(server)


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory: pytest.TempPathFactory):
    """A JupyterLab server for the whole session, isolated from the user's Jupyter folders."""
    yield from _serve(tmp_path_factory, "jupyterlab")


@pytest.fixture(scope="session")
def notebook7_server(tmp_path_factory: pytest.TempPathFactory):
    """A Jupyter Notebook 7 server (the classic-looking single-document app), isolated like JupyterLab's."""
    yield from _serve(tmp_path_factory, "notebook")


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium driven by Playwright (never Playwright's own downloaded browser)."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests need Playwright: pip install playwright (do not run `playwright install`)")
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    except Exception as exc:  # noqa: BLE001 - any launch failure is a reason to skip, shown to the user
        pw.stop()
        pytest.skip(f"could not launch Chromium at {CHROMIUM}: {exc}")
    yield b
    b.close()
    pw.stop()


class Lab:
    """One browser page on the JupyterLab server, with helpers for notebooks."""

    def __init__(self, server: JupyterServer, page: Any, app: str = "lab") -> None:
        self.server = server
        self.page = page
        self.app = app  # "lab" (JupyterLab) or "notebook" (Notebook 7): they open documents at different URLs
        self.console: list[str] = []
        page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda err: self.console.append(f"pageerror: {err}"))
        self.path: str | None = None

    # -- notebooks

    def write_notebook(self, name: str, cells: list[str]) -> Path:
        """Write a notebook of code ``cells`` into the served folder; returns its path."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        path = self.server.root / name
        nbformat.write(nb, path)
        return path

    def open_notebook(self, name: str, timeout: float = 60) -> None:
        """Open ``name`` (relative to the served folder) and wait until its kernel is connected and idle."""
        self.path = name
        # ?reset: start from an empty workspace, so notebooks an earlier test opened are not restored
        if self.app == "lab":
            self.page.goto(f"{self.server.url}/lab/tree/{name}?reset&token={self.server.token}")
        else:
            self.page.goto(f"{self.server.url}/notebooks/{name}?token={self.server.token}")
        self.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout * 1000)
        self.page.wait_for_function("() => !!window.jupyterapp", timeout=timeout * 1000)
        self.wait_for_kernel(timeout)

    def kernel(self) -> dict[str, Any] | None:
        """The kernel model (``execution_state``, ``connections``) of the open notebook's session."""
        for s in self.server.api("/api/sessions"):
            if s.get("path") == self.path or s.get("notebook", {}).get("path") == self.path:
                return self.server.api(f"/api/kernels/{s['kernel']['id']}")
        return None

    def wait_for_kernel(self, timeout: float = 60) -> None:
        """Wait until the notebook's kernel has a browser connection and is idle (the toolbar says idle too early)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.kernel()
            if last and last.get("connections", 0) >= 1 and last.get("execution_state") == "idle":
                # The panel's own session context must be ready too before commands act on it.
                ready = self.page.evaluate(
                    "() => { const w = window.jupyterapp.shell.currentWidget;"
                    " return !!(w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel"
                    " && w.sessionContext.session.kernel.connectionStatus === 'connected'); }"
                )
                if ready:
                    return
            time.sleep(0.2)
        raise AssertionError(f"kernel for {self.path} not ready after {timeout} s: {last}\n{self.server.log_tail(1500)}")

    def command(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Run a JupyterLab command (e.g. ``runmenu:run-all``, ``docmanager:save``)."""
        return self.page.evaluate("([n, a]) => window.jupyterapp.commands.execute(n, a)", [name, args or {}])

    def run_all(self) -> None:
        """Run every cell, as the Run menu's Run All Cells does."""
        self.command("runmenu:run-all")

    def run_cell(self, index: int) -> None:
        """Start running the cell at ``index`` (made active first); returns without waiting for it to finish."""
        self.page.evaluate(
            "(i) => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = i;"
            " void window.jupyterapp.commands.execute('notebook:run-cell'); }",
            index,
        )

    def append_and_run(self, source: str) -> None:
        """Add a code cell holding ``source`` at the end of the notebook and start running it."""
        self.page.evaluate(
            "async (src) => { const app = window.jupyterapp; const nb = app.shell.currentWidget.content;"
            " nb.activeCellIndex = nb.widgets.length - 1;"
            " await app.commands.execute('notebook:insert-cell-below');"
            " nb.activeCell.model.sharedModel.setSource(src);"
            " void app.commands.execute('notebook:run-cell'); }",
            source,
        )

    def cell(self, index: int) -> Any:
        """A locator for the cell at ``index``."""
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").nth(index)

    def show_cell(self, index: int, timeout: float = 15) -> Any:
        """The cell at ``index``, made active and scrolled into view (a locator).

        JupyterLab 4 renders only the cells near the viewport (its default windowing), so a long
        notebook's cells are found by making them active, not by their position in the DOM.
        """
        self.page.evaluate(
            "async (i) => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = i;"
            " await nb.scrollToItem(i, 'start'); }",
            index,
        )
        cell = self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell.jp-mod-active")
        cell.wait_for(timeout=timeout * 1000)
        return cell

    def output_text(self, index: int) -> str:
        """The text of the cell's output area ("" when it has none)."""
        area = self.cell(index).locator(".jp-OutputArea")
        return area.inner_text() if area.count() else ""

    def wait_for_output(self, index: int, text: str, timeout: float = 60) -> str:
        """Wait until the output of cell ``index`` contains ``text``; returns the whole output text."""
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            out = self.output_text(index)
            if text in out:
                # stream output arrives in pieces: return once it has stopped changing
                settle = time.monotonic() + 5
                while time.monotonic() < settle:
                    time.sleep(0.3)
                    again = self.output_text(index)
                    if again == out:
                        break
                    out = again
                return out
            if "Traceback" in out or "Error" in out.split("\n")[0]:
                raise AssertionError(f"cell {index} failed:\n{out}")
            time.sleep(0.1)
        raise AssertionError(f"cell {index} output has no {text!r} after {timeout} s:\n{out}\nconsole:\n" + "\n".join(self.console[-20:]))

    def notebook_text(self) -> str:
        """All the text of the open notebook, the cells out of view included.

        Chromium's ``innerText`` leaves out what ``content-visibility: auto`` skips, and JupyterLab's
        default windowing puts it on every cell far from the viewport: a scan for an error over the
        whole notebook reads ``textContent``, which holds every cell's words as scrolling would show them.
        """
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").evaluate("el => el.textContent")

    def shown_output(self, index: int, text: str, timeout: float = 120) -> str:
        """The output text of cell ``index`` once it holds ``text``, read with the cell scrolled into view.

        JupyterLab 4 renders only the cells near the viewport, so an earlier cell's output read
        by its position alone can be empty (or another cell's) while the view shows a later cell.
        """
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            area = self.show_cell(index).locator(".jp-OutputArea")
            out = area.inner_text() if area.count() else ""
            if text in out:
                return out
            time.sleep(0.5)
        raise AssertionError(f"cell {index} has no {text!r} after {timeout} s:\n{out}")

    def wait_for_execution_count(self, index: int, timeout: float = 60) -> None:
        """Wait until cell ``index`` has run (its prompt shows a number)."""
        prompt = self.cell(index).locator(".jp-InputPrompt")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = prompt.inner_text().strip()
            if any(ch.isdigit() for ch in text):
                return
            time.sleep(0.1)
        raise AssertionError(f"cell {index} did not run within {timeout} s")

    def watch_stream(self, view: Any, timeout: float = 90) -> int:
        """Sample the text of an AgentView (a ``.piav-root`` locator) until it is done; returns how many times it grew.

        A streamed answer grows in many steps; one that arrives at once grows once or twice.
        The run is over when the view says ``done`` or when the static rendering replaced it.
        """
        lengths: list[int] = []
        state = None
        deadline = time.monotonic() + timeout
        probe = "els => els.length ? [els[0].querySelector('.piav-body').innerText.length, els[0].dataset.state] : null"
        while time.monotonic() < deadline:
            seen = view.evaluate_all(probe)
            if seen is None:
                state = "replaced"
                break
            lengths.append(seen[0])
            state = seen[1]
            if state == "done":
                break
            time.sleep(0.05)
        assert state in ("done", "replaced"), f"the view never finished ({state}); console: {self.console[-10:]}"
        return sum(1 for a, b in zip(lengths, lengths[1:], strict=False) if b > a)

    def stop_while_streaming(self, cell: int, min_chars: int = 10, timeout: float = 30) -> str:
        """Wait until the AgentView in cell ``cell`` streams answer text, click its Stop, wait for the static "Stopped".

        A finished run replaces its widget with the static rendering; returns that output's text.
        """
        self.page.wait_for_function(
            "([i, n]) => { const c = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];"
            " const r = c && c.querySelector('.piav-root'); const t = r && r.querySelector('.piav-assistant .piav-text');"
            " return r && r.dataset.state === 'streaming' && t && t.innerText.length > n; }",
            arg=[cell, min_chars],
            timeout=timeout * 1000,
        )
        self.cell(cell).locator(".piav-root button.piav-stop").click()
        return self.wait_for_static(cell, "Stopped", timeout)

    def wait_for_static(self, cell: int, text: str, timeout: float = 60) -> str:
        """Wait until cell ``cell`` shows the static rendering of its run (the widget gone) holding ``text``."""
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            static = self.cell(cell).locator(".jp-OutputArea .pi-static")
            if static.count() and not self.cell(cell).locator(".piav-root").count():
                out = static.first.inner_text()
                if text in out:
                    return self.output_text(cell)
            time.sleep(0.1)
        raise AssertionError(f"cell {cell} has no static output with {text!r} after {timeout} s:\n{self.output_text(cell)}")

    def save(self, timeout: float = 30) -> None:
        """Save the notebook and wait until the panel is no longer dirty."""
        self.command("docmanager:save")
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && !w.context.model.dirty; }",
            timeout=timeout * 1000,
        )

    def shutdown_kernel(self) -> None:
        """Shut down the open notebook's kernel session (its widget models go with it)."""
        for s in self.server.api("/api/sessions"):
            if s.get("path") == self.path:
                self.server.api(f"/api/sessions/{s['id']}", method="DELETE")

    def reload(self, timeout: float = 60) -> None:
        """Reload the page (the kernel keeps running) and wait for the notebook and its kernel again."""
        self.page.reload()
        self.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout * 1000)
        self.page.wait_for_function("() => !!window.jupyterapp", timeout=timeout * 1000)
        self.wait_for_kernel(timeout)

    def set_widget_state_saving(self, on: bool) -> None:
        """Turn the widget manager's ``saveState`` setting on or off (through the settings API, as the editor does)."""
        plugin = "@jupyter-widgets/jupyterlab-manager:plugin"
        self.server.api(f"/lab/api/settings/{plugin}", method="PUT", body={"raw": json.dumps({"saveState": on})})

    def settled(self, locator: Any = None, frames: int = 8, timeout: float = 30) -> None:
        """Wait until ``locator`` (else the page) stops moving: its box, scroll position, transforms and computed
        colours unchanged over ``frames`` animation frames in a row. What a fixed pause hoped for (a fit after a
        resize, a theme's transition, a hover's fade), waited for as it happens, however slow the machine."""
        handle = (locator or self.page.locator("body")).element_handle()
        self.page.wait_for_function(
            """([el, frames]) => {
              const parts = [];
              for (const e of [el, ...el.querySelectorAll("svg, g.pi-graph, .pitv-viewport, .jp-WindowedPanel-outer, button")]) {
                const r = e.getBoundingClientRect(), s = getComputedStyle(e);
                parts.push([r.x, r.y, r.width, r.height, e.scrollTop, s.transform, s.opacity, s.color, s.backgroundColor].join(","));
              }
              const now = parts.join("|");
              const w = (el.__piSettle = el.__piSettle || { last: null, same: 0 });
              w.same = now === w.last ? w.same + 1 : 0;
              w.last = now;
              return w.same >= frames;
            }""",
            arg=[handle, frames],
            polling="raf",
            timeout=timeout * 1000,
        )

    def screenshot(self, name: str, locator: Any = None) -> Path:
        """Save a PNG into ``artifacts/`` at the repo root (of ``locator`` if given, else the page)."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        (locator or self.page).screenshot(path=str(path))
        return path


def _page(browser: Any, server: JupyterServer, app: str) -> Any:
    """A fresh browser context and page on ``server`` with the :class:`Lab` helpers (closed after the test)."""
    before = {s["id"] for s in server.api("/api/sessions")}
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield Lab(server, page, app=app)
    context.close()
    # the kernels this test started go with it: left running, some forty of them filled a 2-core runner's memory
    for session in server.api("/api/sessions"):
        if session["id"] not in before:
            try:
                server.api(f"/api/sessions/{session['id']}", method="DELETE")
            except (OSError, ValueError):  # already gone (the test shut it down itself): the server answers 404
                pass


@pytest.fixture
def lab(jupyter_server: JupyterServer, browser: Any):
    """A fresh browser context and page on the session's JupyterLab (closed after the test)."""
    yield from _page(browser, jupyter_server, "lab")


@pytest.fixture
def save_widget_state(lab: Lab):
    """Opt in to JupyterLab's "save widget state" for one test (the default is off), restored afterwards."""
    lab.set_widget_state_saving(True)
    yield lab
    lab.set_widget_state_saving(False)


@pytest.fixture
def notebook7(notebook7_server: JupyterServer, browser: Any):
    """A fresh browser page on the session's Notebook 7 server, with the :class:`Lab` helpers."""
    yield from _page(browser, notebook7_server, "notebook")
