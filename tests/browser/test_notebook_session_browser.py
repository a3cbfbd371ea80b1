"""Which conversation a notebook continues, in a real JupyterLab with its default settings.

As a user makes them: *File > New > Notebook* (``Untitled.ipynb``), run, save, rename it; a new
notebook gets the free name ``Untitled.ipynb`` again and must never see the first one's
conversation; the renamed one is duplicated (the file browser's *Duplicate*: the contents API
copies the file) and the copy goes on in a fork, said once; a kernel restart continues. The
model is a local OpenAI-compatible server, so what is checked is the request bodies it received.
"""

from __future__ import annotations

import pytest
from wire.helpers import sent_since

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

FOLDER = "owning"
KEY = "sk-test-wire-0000000000000000000000"


def setup_cell(wire) -> str:
    return (
        f"import os; os.environ['OPENAI_API_KEY'] = {KEY!r}\n"
        "%load_ext pi_jupyter\n"
        '%config PiMagics.model = "openai/gpt-test"\n'
        f"%config PiMagics.base_url = {wire.openai_url!r}\n"
        '%config PiMagics.thinking = "off"\n'
        "print('setup-end')"
    )


def open_lab(lab) -> None:
    """JupyterLab with an empty workspace, its file browser in ``FOLDER``."""
    lab.page.goto(f"{lab.server.url}/lab/tree/{FOLDER}?reset&token={lab.server.token}")
    lab.page.wait_for_function("() => !!window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:create-new')", timeout=60_000)


def new_untitled(lab) -> str:
    """File > New > Notebook in ``FOLDER``; returns the path JupyterLab gave it."""
    # the command's own widget, not whichever is current: the notebook open before stays current for a moment
    path = lab.page.evaluate(
        "async (cwd) => { const w = await window.jupyterapp.commands.execute('notebook:create-new', {cwd}); return w.context.path; }",
        FOLDER,
    )
    lab.page.wait_for_function(
        "(p) => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && w.context.path === p; }",
        arg=path,
        timeout=90_000,  # a new notebook's panel can take a while on a loaded 2-core machine (CI)
    )
    lab.path = path
    lab.wait_for_kernel()
    return lab.path


def save_untitled_as(lab, name: str) -> None:
    """The first save of an untitled notebook: JupyterLab asks for a name (its default), the user types one."""
    lab.page.evaluate("() => { void window.jupyterapp.commands.execute('docmanager:save'); }")
    field = lab.page.locator(".jp-Dialog input").first
    field.wait_for(timeout=30_000)
    field.fill(name)
    lab.page.locator(".jp-Dialog .jp-mod-accept").first.click()
    lab.page.wait_for_function(
        "(p) => { const w = window.jupyterapp.shell.currentWidget; return w && w.context.path === p && !w.context.model.dirty; }",
        arg=f"{FOLDER}/{name}",
        timeout=30_000,
    )
    lab.path = f"{FOLDER}/{name}"


def open_existing(lab, path: str) -> None:
    """File > Open of ``path``; waits until its panel is the current one."""
    lab.page.evaluate("async (p) => { await window.jupyterapp.commands.execute('docmanager:open', {path: p}); }", path)
    lab.page.wait_for_function(
        "(p) => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && w.context.path === p; }",
        arg=path,
        timeout=90_000,  # as for a new notebook: opening a panel can take a while on a loaded 2-core machine (CI)
    )
    lab.path = path
    lab.wait_for_kernel()


def run_in(lab, index: int, source: str) -> None:
    """Type ``source`` into cell ``index`` (added at the end when it does not exist) and run it."""
    lab.page.evaluate(
        "async ([i, src]) => { const app = window.jupyterapp; const nb = app.shell.currentWidget.content;"
        " while (nb.widgets.length <= i) { nb.activeCellIndex = nb.widgets.length - 1;"
        " await app.commands.execute('notebook:insert-cell-below'); }"
        " nb.activeCellIndex = i; nb.activeCell.model.sharedModel.setSource(src);"
        " void app.commands.execute('notebook:run-cell'); }",
        [index, source],
    )


def ask(lab, wire, index: int, prompt: str) -> str:
    """Run the setup cell, then ``%%pi`` with ``prompt`` in cell ``index``; returns that cell's output once the run ended."""
    run_in(lab, 0, setup_cell(wire))
    lab.wait_for_output(0, "setup-end")
    run_in(lab, index, f"%%pi\n{prompt}")
    return lab.wait_for_static(index, "noted")


def session_files(server):
    from pi_jupyter import Session

    return [Session.open(p, readonly=True) for p in sorted((server.root / FOLDER / "pi-sessions").glob("*.jsonl"))]


def short(session) -> str:
    return session.id.replace("-", "")[-8:]


def test_a_notebook_owns_its_conversation_in_jupyterlab(lab, jupyter_server, wire):
    from wire.server import openai_reply

    wire.queue_default("openai", openai_reply("noted"))
    (jupyter_server.root / FOLDER).mkdir(exist_ok=True)
    open_lab(lab)

    first = new_untitled(lab)
    assert first == f"{FOLDER}/Untitled.ipynb"
    out = ask(lab, wire, 1, "The code word is ZEBRA-ALPHA-71.")
    assert "ZEBRA-ALPHA-71" in sent_since(wire)
    (zebra,) = session_files(jupyter_server)
    assert f"Untitled · {short(zebra)}" in out
    save_untitled_as(lab, "zebra.ipynb")  # renamed at its first save, after its first run

    # a new notebook gets the free name Untitled.ipynb again: it must start its own conversation
    second = new_untitled(lab)
    assert second == f"{FOLDER}/Untitled.ipynb"
    out = ask(lab, wire, 1, "What is the code word?")
    body = sent_since(wire)
    assert "What is the code word?" in body and "ZEBRA" not in body
    fresh = next(s for s in session_files(jupyter_server) if s.id != zebra.id)
    assert f"Untitled · {short(fresh)}" in out and short(zebra) not in out
    lab.screenshot("notebook_owns_new_untitled.png", lab.cell(1))
    save_untitled_as(lab, "second.ipynb")

    # the file browser's Duplicate on the renamed one: the copy goes on in a fork, said once
    copy = lab.page.evaluate(f"async () => (await window.jupyterapp.serviceManager.contents.copy('{FOLDER}/zebra.ipynb', '{FOLDER}')).path")
    open_existing(lab, copy)
    out = ask(lab, wire, 2, "In the copy: the fruit is MANGO-42.")
    assert "ZEBRA-ALPHA-71" in sent_since(wire)
    assert out.count("copy of zebra.ipynb") == 1, out
    assert f"forked from Untitled · {short(zebra)}" in out
    lab.screenshot("notebook_owns_copy.png", lab.cell(2))
    lab.save()

    # the renamed original, its kernel restarted (as Kernel > Restart does): the same conversation, without the copy's turn
    open_existing(lab, f"{FOLDER}/zebra.ipynb")
    # restarted, and answering again (its reply to a kernel-info request is the event), before the next cell
    lab.page.evaluate(
        "async () => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
        " await k.restart(); await k.requestKernelInfo(); }"
    )
    lab.wait_for_kernel()
    out = ask(lab, wire, 2, "What is the fruit?")
    body = sent_since(wire)
    assert "ZEBRA-ALPHA-71" in body and "MANGO" not in body
    assert f"· {short(zebra)}" in out and "copy of" not in out
    assert len(session_files(jupyter_server)) == 3  # the first, the new Untitled's, the copy's fork
