"""What a reader sees after the kernel is gone, with JupyterLab's DEFAULT settings (widget state not saved).

One notebook of real ``%%pi`` cells (the offline models: streamed thinking and answer, a tool
call that works and one that fails) and ``%pi tree`` runs in JupyterLab and is saved. Then:
the notebook is reopened with its kernel restarted (as JupyterLab does), an untrusted copy is
opened (as a notebook from someone else is), and nbconvert turns it into HTML read with its
scripts removed, and into Markdown. Each shows the prompt, the answer, the tool results and
error, the status line and the tree as a picture; none says "Error displaying widget".
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from html import unescape

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/typewriter"
%config PiMagics.thinking = "low"
%pi new durable-demo
print("setup-end")
"""

TOOLS = """%%pi
Please call python with {{"code": "print(6 * 7, 'is the answer')"}} and call read with {{"path": "no-such-file.txt"}}"""

ANSWER = "%%pi\nExplain **durable outputs** in one line."

TREE = "%pi tree"

NAME = "durable.ipynb"
NO_WIDGET_ERROR = "Error displaying widget"
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def saved(jupyter_server, browser):
    """Run the notebook in JupyterLab with default settings, save it; returns the saved notebook (a dict)."""
    from conftest import _page

    gen = _page(browser, jupyter_server, "lab")
    lab = next(gen)
    try:
        lab.write_notebook(NAME, [SETUP, TOOLS, ANSWER, TREE])
        lab.open_notebook(NAME)
        lab.run_all()
        lab.wait_for_output(0, "setup-end")
        lab.wait_for_output(1, "42 is the answer", timeout=120)
        lab.wait_for_output(2, "durable outputs", timeout=120)
        lab.cell(3).locator(".pitv-root").wait_for(timeout=60_000)
        lab.wait_for_output(2, "pi: stop")
        lab.save()
        lab.screenshot("durable_live.png")
    finally:
        next(gen, None)
    return json.loads((jupyter_server.root / NAME).read_text())


def _check_reader_view(lab) -> None:
    """The reader's view: every conversation and the tree as a picture, no widget error."""
    assert NO_WIDGET_ERROR not in lab.notebook_text()
    tools = lab.shown_output(1, "42 is the answer")
    assert "python(code=\"print(6 * 7, 'is the answer')\")" in tools, tools
    assert "42 is the answer" in tools  # the tool's result
    assert "no-such-file.txt" in tools and "error" in tools  # the failing call, and that it failed
    assert "offline/typewriter" in tools and "done" in tools  # the status line
    answer = lab.show_cell(2).locator(".jp-OutputArea")
    assert "Explain durable outputs in one line." in answer.inner_text()  # the prompt
    assert answer.locator("details summary", has_text="Thought").count() >= 1  # thinking, folded
    tree = lab.show_cell(3).locator(".jp-OutputArea img")
    tree.first.wait_for(timeout=30_000)
    box = tree.first.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 50, box  # a picture, drawn


def test_saved_file_has_no_dangling_widget(saved):
    outputs = [o for cell in saved["cells"][1:] for o in cell.get("outputs", [])]
    kinds = [set(o.get("data", {})) for o in outputs if o.get("output_type") in ("display_data", "execute_result")]
    assert kinds, saved
    assert not any("application/vnd.jupyter.widget-view+json" in k for k in kinds), kinds
    assert any({"image/svg+xml", "image/png"} <= k for k in kinds), kinds  # the tree travels as a picture
    assert "widgets" not in saved["metadata"]  # default settings: no widget state saved


def test_reopened_after_a_kernel_restart(saved, lab):
    lab.path = NAME
    lab.shutdown_kernel()
    lab.open_notebook(NAME)  # JupyterLab starts a fresh kernel, as it does when a notebook is reopened
    _check_reader_view(lab)
    lab.screenshot("durable_reopened.png")


def test_untrusted_copy(saved, lab, jupyter_server):
    import nbformat

    nb = nbformat.reads(json.dumps(saved), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("A copy from a colleague."))  # new content: no longer signed
    nbformat.write(nb, jupyter_server.root / "untrusted.ipynb")
    lab.open_notebook("untrusted.ipynb")
    trusted = lab.page.evaluate(
        "() => { const m = window.jupyterapp.shell.currentWidget.content.model;"
        " return Array.from({length: m.cells.length}, (_, i) => m.cells.get(i).trusted); }"
    )
    assert not any(trusted), trusted
    # one markdown cell was inserted: the code cells moved down by one
    assert NO_WIDGET_ERROR not in lab.notebook_text()
    tools = lab.shown_output(2, "42 is the answer")
    assert "no-such-file.txt" in tools
    lab.shown_output(3, "Explain durable outputs in one line.")
    img = lab.show_cell(4).locator(".jp-OutputArea img")
    img.first.wait_for(timeout=30_000)
    assert img.first.get_attribute("src").startswith("data:image/png")  # SVG is shown only when trusted
    lab.screenshot("durable_untrusted.png")


def test_nbconvert_html_without_scripts_and_markdown(saved, jupyter_server, tmp_path):
    src = jupyter_server.root / NAME
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path), str(src)],
        check=True,
        capture_output=True,
    )
    page = (tmp_path / "durable.html").read_text()
    page = re.sub(r"<script\b.*?</script>", "", page, flags=re.S | re.I)  # what a reader without JavaScript gets
    body = page[page.index("<body") :]
    text = unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<style\b.*?</style>", "", body, flags=re.S)))
    text = re.sub(r"\s+", " ", text)
    assert "42 is the answer" in text and "no-such-file.txt" in text
    assert "Explain durable outputs in one line." in text
    assert "offline/typewriter · done" in text
    pictures = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', body)
    assert pictures and any(b'class="node' in base64.b64decode(p) for p in pictures)  # the tree, drawn
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "markdown", "--output-dir", str(tmp_path), str(src)],
        check=True,
        capture_output=True,
    )
    md = (tmp_path / "durable.md").read_text()
    assert "42 is the answer" in md and "Explain **durable outputs** in one line." in md


def test_notebook7_on_another_server_reads_it_too(saved, notebook7, notebook7_server):
    # another server signs with another secret: the notebook opens untrusted, as one sent by a colleague
    (notebook7_server.root / NAME).write_text(json.dumps(saved))
    notebook7.open_notebook(NAME)
    _check_reader_view(notebook7)
    notebook7.screenshot("durable_notebook7.png")


def test_why_the_widget_must_leave_the_saved_output(lab, jupyter_server):
    """JupyterLab draws a widget view before any other type and does not fall back when its model is gone."""
    import nbformat
    import nbformat.sign

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("# a widget output saved without widget state")
    view = {"version_major": 2, "version_minor": 1, "model_id": "0123456789abcdef0123456789abcdef"}
    cell.outputs = [nbformat.v4.new_output("display_data", data={WIDGET: view, "text/html": "<b>the static fallback</b>"})]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    # signed with the server's secret, as a notebook the user saved: its outputs are trusted
    nbformat.sign.NotebookNotary(data_dir=str(jupyter_server.root.parent / "data")).sign(nb)
    nbformat.write(nb, jupyter_server.root / "dangling.ipynb")
    lab.open_notebook("dangling.ipynb")
    lab.page.wait_for_function(
        "() => { const o = document.querySelector('.jp-OutputArea'); return o && o.innerText.includes('Error displaying widget'); }",
        timeout=30_000,
    )
    assert "the static fallback" not in lab.output_text(0)
    assert lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.content.model.cells.get(0).trusted")
