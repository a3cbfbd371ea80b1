"""What ``jupyter nbconvert`` makes of a notebook with ``%%pi`` cells: the conversation and the tree, never an empty widget.

The notebook runs in a real kernel through nbclient with its default settings, which save the
widget state (as ``jupyter nbconvert --execute`` and papermill do): the TreeView's widget view
stays in the file. Each export then runs in a fresh ``jupyter nbconvert`` process that reads the
configuration the wheel installs (``jupyter-config/`` becomes ``{prefix}/etc/jupyter/``), and its
result is read as a reader gets it: the HTML with scripts removed, the Markdown and its image
files, the text of the PDF.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
ANSWER = "The notes say the learning rate was 3e-4 and the loss diverged at step 220."
NOTE = "loss nan at step 220 with lr 3e-4"
CHROMIUM = os.environ.get("PI_JUPYTER_CHROMIUM", "/usr/bin/chromium")

SETUP = """%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "openai/gpt-test"
%config PiMagics.base_url = {url!r}
%config PiMagics.thinking = "off"
"""


def study_notebook(folder: Path, wire_server) -> Any:
    """The notebook, not yet run; the wire server answers its ``%%pi`` cell with a ``read`` tool call, then the answer."""
    import nbformat
    from wire.server import openai_reply, tool_call

    (folder / "notes.txt").write_text(NOTE + "\n")
    wire_server.reset()
    wire_server.queue(
        "openai",
        openai_reply(tool_calls=[tool_call("read", {"path": "notes.txt"}, id="call_1")]),
        openai_reply(ANSWER),
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Loss study"),
        nbformat.v4.new_code_cell(SETUP.format(dir=str(folder / "sessions"), url=wire_server.openai_url)),
        nbformat.v4.new_code_cell("%%pi\nRead notes.txt and tell me what went wrong."),
        nbformat.v4.new_code_cell("%pi tree"),
    ]
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory, wire_server) -> Path:
    """A notebook run by nbclient (default ``store_widget_state``): a ``%%pi`` cell with a tool call, then ``%pi tree``."""
    import nbformat
    from nbclient import NotebookClient

    folder = tmp_path_factory.mktemp("nbconvert")
    nb = study_notebook(folder, wire_server)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    client.execute(env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-secret"})
    wire_server.reset()
    # the case this file is about: the widget state was saved, so the tree's widget view stayed in the file
    assert nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(WIDGET_VIEW in o.get("data", {}) for o in nb.cells[3].outputs), nb.cells[3].outputs
    path = folder / "study.ipynb"
    nbformat.write(nb, path)
    return path


def nbconvert(path: Path, *args: str, env: dict[str, str] | None = None) -> None:
    """``jupyter nbconvert`` in a fresh process with the configuration the wheel installs and no user configuration."""
    user = path.parent / "user-config"
    user.mkdir(exist_ok=True)
    run_env = {**os.environ, "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config"), "JUPYTER_CONFIG_DIR": str(user), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", *args, str(path)],
        cwd=path.parent,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def page_text(html: str) -> str:
    """The text a reader sees with JavaScript off: scripts and styles removed, tags dropped."""
    html = re.sub(r"(?is)<(script|style)\b.*?</\1>", "", html)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def svg_pictures(html: str) -> list[str]:
    """Every SVG the page draws without JavaScript: inline ``<svg>`` and ``<img src="data:image/svg+xml;base64,…">``."""
    html = re.sub(r"(?is)<script\b.*?</script>", "", html)
    found = re.findall(r"(?is)<svg\b.*?</svg>", html)
    found += [base64.b64decode(b).decode() for b in re.findall(r'<img[^>]+src="data:image/svg\+xml;base64,([^"]+)"', html)]
    return found


@pytest.mark.kernel
def test_html_shows_the_conversation_and_the_tree_without_javascript(executed):
    nbconvert(executed, "--to", "html")
    html = (executed.parent / "study.html").read_text()
    text = page_text(html)
    assert "Read notes.txt and tell me what went wrong." in text  # the prompt
    assert ANSWER in text
    assert 'read(path="notes.txt")' in text and NOTE in text  # the tool call and its result
    assert "gpt-test" in text  # the status line
    trees = [svg for svg in svg_pictures(html) if "Read notes.txt" in unescape(svg)]
    assert trees, "the tree is not drawn as a picture"
    assert "Error displaying widget" not in html
    # no widget view, no widget state, no widget manager to fetch from a CDN
    assert WIDGET_VIEW not in html and "widget-state+json" not in html
    assert "html-manager" not in html and "unpkg.com" not in html


@pytest.mark.kernel
def test_execute_and_convert_in_one_command(tmp_path, wire_server):
    """``jupyter nbconvert --execute --to html``: the outputs are added inside nbconvert, and still drawn without JavaScript."""
    import nbformat

    path = tmp_path / "fresh.ipynb"
    nbformat.write(study_notebook(tmp_path, wire_server), path)
    try:
        nbconvert(path, "--execute", "--to", "html", env={"OPENAI_API_KEY": "sk-test-not-a-secret"})
    finally:
        wire_server.reset()
    html = (tmp_path / "fresh.html").read_text()
    assert ANSWER in page_text(html) and NOTE in page_text(html)
    assert any("Read notes.txt" in unescape(svg) for svg in svg_pictures(html))
    assert WIDGET_VIEW not in html and "widget-state+json" not in html


@pytest.mark.kernel
def test_markdown_holds_the_transcript_and_the_tree_image(executed):
    nbconvert(executed, "--to", "markdown")
    md = (executed.parent / "study.md").read_text()
    assert ANSWER in unescape(md) and NOTE in unescape(md)
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.(?:svg|png))\)", md)
    assert images, md[-2000:]
    svgs = [executed.parent / name for name in images if name.endswith(".svg")]
    assert svgs and all(p.exists() for p in svgs)
    assert any("Read notes.txt" in unescape(p.read_text()) for p in svgs)  # the tree, as a file beside the page
    assert WIDGET_VIEW not in md


def _playwright_browsers(base: Path) -> dict[str, str]:
    """Where nbconvert's webpdf (Playwright) finds Chromium: its own download if there is one, else the system's.

    nbconvert launches Playwright's Chromium and offers no option for another executable;
    this machine reaches no Playwright download, so the system Chromium is put where Playwright looks.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        own = Path(pw.chromium.executable_path)
    if own.exists():
        return {}
    if not Path(CHROMIUM).exists():
        pytest.skip(f"webpdf needs Playwright's Chromium or a system one at {CHROMIUM}")
    browsers = base / "ms-playwright"
    # .../<browser>-<revision>/<folder>/<executable>: the layout Playwright expects under PLAYWRIGHT_BROWSERS_PATH
    rel = own.relative_to(own.parents[2])
    target = browsers / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(CHROMIUM)
    shell = browsers / rel.parts[0].replace("chromium", "chromium_headless_shell", 1) / "chrome-headless-shell-linux64"
    shell.mkdir(parents=True, exist_ok=True)
    if not (shell / "chrome-headless-shell").exists():
        (shell / "chrome-headless-shell").symlink_to(CHROMIUM)
    return {"PLAYWRIGHT_BROWSERS_PATH": str(browsers), "PLAYWRIGHT_SKIP_VALIDATE_HOST_REQUIREMENTS": "1"}


@pytest.mark.kernel
def test_webpdf_prints_the_answer(executed):
    pypdf = pytest.importorskip("pypdf")
    env = _playwright_browsers(executed.parent)
    nbconvert(executed, "--to", "webpdf", "--WebPDFExporter.disable_sandbox=True", env=env)
    reader = pypdf.PdfReader(executed.parent / "study.pdf")
    text = re.sub(r"\s+", " ", " ".join(page.extract_text() or "" for page in reader.pages))
    assert "notes say the learning rate" in text and NOTE in text
    assert "Error displaying widget" not in text


def test_latex_and_pdf_take_the_tree_as_a_picture(executed):
    """``--to latex`` (what ``--to pdf`` feeds to xelatex) needs pandoc; the PDF itself needs xelatex, which CI does not install."""
    if shutil.which("pandoc") is None:
        pytest.skip("nbconvert's LaTeX export needs pandoc (apt-get install pandoc)")
    nbconvert(executed, "--to", "latex")
    tex = (executed.parent / "study.tex").read_text()
    assert "learning rate was 3e-4" in tex
    pictures = re.findall(r"\{([^{}]+\.png)\}", tex)  # \adjustimage{...}{study_files/study_3_0.png}
    assert pictures and all((executed.parent / p).exists() for p in pictures), pictures  # the tree's PNG, beside the .tex
    assert ".svg}" not in tex
    if shutil.which("xelatex") is None:
        pytest.skip("--to pdf needs xelatex (texlive-xetex), which this machine does not have")
    nbconvert(executed, "--to", "pdf")
    assert (executed.parent / "study.pdf").stat().st_size > 0


def test_the_wheel_installs_the_nbconvert_configuration():
    """The file sits where every ``jupyter nbconvert`` reads it (nbconvert reads no ``.d`` folder) and names a real preprocessor."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    shared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared["jupyter-config/jupyter_nbconvert_config.py"] == "etc/jupyter/jupyter_nbconvert_config.py"
    from traitlets.config import Config
    from traitlets.utils.importstring import import_item

    from pi_jupyter.notebook.durable.nbconvert import NAME, PiDurableOutputs, enable

    assert import_item(NAME) is PiDurableOutputs
    config = Config()
    enable(config)
    enable(config)  # once only (the server and a config file may both ask)
    assert config.Exporter.default_preprocessors.to_dict()["inserts"] == [(5, NAME)]  # right after ExecutePreprocessor
    mine = Config({"Exporter": {"default_preprocessors": ["nbconvert.preprocessors.ExecutePreprocessor", "mine.Step"]}})
    enable(mine)
    assert mine.Exporter.default_preprocessors == ["nbconvert.preprocessors.ExecutePreprocessor", NAME, "mine.Step"]
    assert "durable.nbconvert import enable" in (ROOT / "jupyter-config/jupyter_nbconvert_config.py").read_text()


@pytest.mark.kernel
def test_sanitized_views_keep_the_tree_picture_and_the_transcript(executed):
    """What sanitizing viewers show: nbconvert's ``sanitize_html`` (JupyterLab's export offers it) and a GitHub-like allowlist."""
    from test_static_render import github, text_of_html

    nbconvert(executed, "--to", "html", "--HTMLExporter.sanitize_html=True", "--output", "sanitized")
    html = (executed.parent / "sanitized.html").read_text()
    assert ANSWER in page_text(html) and NOTE in page_text(html)
    assert any("Read notes.txt" in unescape(svg) for svg in svg_pictures(html))

    # the executed notebook as nbconvert writes it (--to notebook), read as GitHub would: sanitized HTML, pictures as images
    nbconvert(executed, "--to", "notebook", "--output", "shared")
    nb = json.loads((executed.parent / "shared.ipynb").read_text())
    outputs = [o for cell in nb["cells"] for o in cell.get("outputs", []) if "data" in o]
    assert outputs and all(WIDGET_VIEW not in o["data"] for o in outputs)
    assert "widgets" not in nb["metadata"]
    shown = " ".join(text_of_html(github("".join(o["data"]["text/html"]))) for o in outputs if "text/html" in o["data"])
    assert ANSWER in shown and NOTE in shown
    pictures = [o["data"] for o in outputs if "image/svg+xml" in o["data"]]
    assert pictures and all("image/png" in p for p in pictures)  # an untrusted JupyterLab draws the PNG


def _output(model_id: str, marked: bool) -> dict:
    data = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": model_id}, "image/png": "iVBOR", "text/plain": "x"}
    meta = {"pi_jupyter": {"durable": ["image/png", "text/plain"]}} if marked else {}
    return {"output_type": "display_data", "data": data, "metadata": meta}


def _model(anywidget_id: str | None, layout: str) -> dict:
    state = {"layout": f"IPY_MODEL_{layout}"}
    if anywidget_id:
        state["_anywidget_id"] = anywidget_id
    return {"model_module": "anywidget", "model_name": "AnyModel", "state": state}


LAYOUT = {"model_module": "@jupyter-widgets/base", "model_name": "LayoutModel", "state": {}}


def test_other_widgets_and_the_layouts_they_share_are_left_alone():
    from pi_jupyter.notebook.durable.nbconvert import PiDurableOutputs

    models = {
        "tree": _model("pi_jupyter.notebook.tree_view.display.DurableTreeView", "L1"),
        "done": _model("pi_jupyter.notebook.agent_view.view.AgentView", "L2"),  # a finished run: no output shows it
        "slider": _model(None, "L2"),  # shares a layout with a pi widget
        "L1": LAYOUT,
        "L2": LAYOUT,
        "odd": "not a model",
    }
    nb = {
        "cells": [{"cell_type": "code", "source": "", "outputs": [_output("tree", True), _output("slider", False)]}],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": models}}},
    }
    PiDurableOutputs().preprocess(nb, {})
    pi, slider = nb["cells"][0]["outputs"]
    assert pi["data"] == {"image/png": "iVBOR", "text/plain": "x"}
    assert WIDGET_VIEW in slider["data"]  # not ours
    assert set(models) == {"slider", "L2", "odd"}  # pi widgets and the layout only they used are gone


def test_no_state_left_means_no_widget_metadata_and_odd_metadata_is_ignored():
    from pi_jupyter.notebook.durable.nbconvert import drop_pi_widget_state

    nb = {
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {"t": _model("pi_jupyter.x.Y", "L"), "L": LAYOUT}}}}
    }
    assert drop_pi_widget_state(nb) == 2 and nb["metadata"] == {}
    for odd in (
        {},
        {"metadata": None},
        {"metadata": {"widgets": []}},
        {"metadata": {"widgets": {STATE: {"state": []}}}},
    ):
        assert drop_pi_widget_state(odd) == 0


def test_a_users_own_preprocessors_still_run(tmp_path):
    """The installed file inserts into the list; a user's ``c.Exporter.preprocessors.append(...)`` keeps working beside it."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1", outputs=[nbformat.from_dict(_output("tree", True))])]
    path = tmp_path / "plain.ipynb"
    nbformat.write(nb, path)
    user = tmp_path / "user-config"
    user.mkdir()
    (tmp_path / "mark_it.py").write_text("def mark(nb, resources):\n    nb.cells[0].source = 'MARKED_BY_USER'\n    return nb, resources\n")
    (user / "jupyter_nbconvert_config.py").write_text("c.Exporter.preprocessors.append('mark_it.mark')\n")
    nbconvert(path, "--to", "html", env={"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    html = (tmp_path / "plain.html").read_text()
    assert "MARKED_BY_USER" in html  # the user's preprocessor ran
    assert WIDGET_VIEW not in html and 'src="data:image/png;base64,iVBOR' in html  # and ours


@pytest.mark.kernel
def test_jupyterlab_export_menu_gives_the_same_page(executed):
    """JupyterLab's "Save and Export Notebook As → HTML" runs nbconvert inside the server, with the server's configuration."""
    import socket
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    user = executed.parent / "user-config"
    user.mkdir(exist_ok=True)
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config"), "JUPYTER_CONFIG_DIR": str(user)}
    args = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=t0ken", "--allow-root"]
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", *args, f"--ServerApp.root_dir={executed.parent}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/nbconvert/html/{executed.name}?download=false"
        request = urllib.request.Request(url, headers={"Authorization": "token t0ken"})
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    html = response.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.5)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a server slow to shut down (a loaded CI machine) is not what this test checks
            server.kill()
            server.wait(timeout=30)
    assert ANSWER in page_text(html) and NOTE in page_text(html)
    assert any("Read notes.txt" in unescape(svg) for svg in svg_pictures(html))
    assert WIDGET_VIEW not in html and "widget-state+json" not in html
