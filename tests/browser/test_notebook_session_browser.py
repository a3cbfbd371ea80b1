"""Which conversation a notebook continues, in a real JupyterLab with its default settings.

As a user goes: *File > New > Notebook* (``Untitled.ipynb``), run, rename it in the file browser
while its kernel runs (its session's name follows); a new notebook gets the free name
``Untitled.ipynb`` again and must never see the first one's conversation; *Kernel > Restart*, then
**new** cells typed at the bottom (``%pi status`` first) continue it; moved into a subfolder and
restarted, it still does; *Duplicate*, then a new cell first: the copy goes on in a fork, said
once; and after a **server** restart (its own server, on the same folders) a new cell continues.
The model is a local OpenAI-compatible server, so what is checked is the request bodies it received.
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


def session_files(server, folder: str = FOLDER):
    from pi_jupyter import Session

    return [Session.open(p, readonly=True) for p in sorted((server.root / folder / "pi-sessions").glob("*.jsonl"))]


def append(lab, source: str) -> int:
    """Type ``source`` into a new cell at the bottom and run it (a cell the saved file does not hold); returns its index."""
    return lab.page.evaluate(
        "async (src) => { const app = window.jupyterapp; const nb = app.shell.currentWidget.content;"
        " nb.activeCellIndex = nb.widgets.length - 1; await app.commands.execute('notebook:insert-cell-below');"
        " nb.activeCell.model.sharedModel.setSource(src); void app.commands.execute('notebook:run-cell');"
        " return nb.activeCellIndex; }",
        source,
    )


def go_on(lab, wire, *lines: str, prompt: str | None = None) -> list[str]:
    """After a restart: new cells only, the setup, then each ``%pi`` line, then ``%%pi`` with ``prompt``; their outputs."""
    index = append(lab, setup_cell(wire))
    lab.wait_for_output(index, "setup-end")
    outs = []
    for line in lines:
        index = append(lab, line)
        outs.append(lab.wait_for_output(index, "session"))
    if prompt is not None:
        index = append(lab, f"%%pi\n{prompt}")
        outs.append(lab.wait_for_static(index, "noted"))
    lab.last_cell = index
    return outs


def restart(lab) -> None:
    """*Kernel > Restart* of the open notebook, waited for."""
    # restarted, and answering again (its reply to a kernel-info request is the event), before the next cell
    lab.page.evaluate(
        "async () => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
        " await k.restart(); await k.requestKernelInfo(); }"
    )
    lab.wait_for_kernel()


def rename(lab, old: str, new: str) -> None:
    """Rename or move ``old`` in the file browser (the contents API, as a drag or *Rename* does); the open panel follows."""
    lab.page.evaluate("async ([a, b]) => { await window.jupyterapp.serviceManager.contents.rename(a, b); }", [old, new])
    lab.page.wait_for_function(
        "(p) => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && w.context.path === p; }",
        arg=new,
        timeout=30_000,
    )
    lab.path = new


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

    # renamed in the file browser while its kernel runs: the next cell continues, under the new name
    rename(lab, first, f"{FOLDER}/zebra.ipynb")
    (out,) = go_on(lab, wire, prompt="What is the code word?")
    assert "ZEBRA-ALPHA-71" in sent_since(wire)
    assert f"zebra · {short(zebra)}" in out, out
    lab.save()

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

    # Kernel > Restart, then new cells only, %pi status first: the notebook's conversation, not a new one
    open_existing(lab, f"{FOLDER}/zebra.ipynb")
    restart(lab)
    status, out = go_on(lab, wire, "%pi status", prompt="And the code word again?")
    assert f"zebra · {short(zebra)}" in status, status
    assert "ZEBRA-ALPHA-71" in sent_since(wire)
    lab.save()

    # moved into a subfolder, then restarted: still its conversation, and no new session beside it
    (jupyter_server.root / FOLDER / "done").mkdir()
    rename(lab, f"{FOLDER}/zebra.ipynb", f"{FOLDER}/done/zebra.ipynb")
    restart(lab)
    (out,) = go_on(lab, wire, prompt="Still there?")
    assert "ZEBRA-ALPHA-71" in sent_since(wire)
    assert f"zebra · {short(zebra)}" in out and not (jupyter_server.root / FOLDER / "done" / "pi-sessions").exists(), out
    lab.save()

    # Duplicate, then a new cell first in the copy: a fork of the conversation, said once
    copy = lab.page.evaluate(
        f"async () => (await window.jupyterapp.serviceManager.contents.copy('{FOLDER}/done/zebra.ipynb', '{FOLDER}/done')).path"
    )
    open_existing(lab, copy)
    status, out = go_on(lab, wire, "%pi status", prompt="In the copy: the fruit is MANGO-42.")
    assert "ZEBRA-ALPHA-71" in sent_since(wire)
    assert (status + out).count("copy of zebra.ipynb") == 1 and "copy of zebra.ipynb" in status, status
    assert f"forked from zebra · {short(zebra)}" in out
    lab.screenshot("notebook_owns_copy.png", lab.show_cell(lab.last_cell))
    lab.save()
    assert {s.id for s in session_files(jupyter_server)} == {zebra.id, fresh.id}  # zebra's and the new Untitled's
    (fork,) = session_files(jupyter_server, f"{FOLDER}/done")  # the copy's fork, in the copy's session folder
    assert fork.header.parent_session and fork.id != zebra.id


def test_after_a_server_restart_a_new_cell_continues(browser, tmp_path, wire):
    """The server stopped and started again on the same folders: the notebook reopened, a new cell continues."""
    from conftest import _launch, _page, _stop
    from wire.server import openai_reply

    wire.queue_default("openai", openai_reply("noted"))
    base = tmp_path / "server"
    server = _launch(base, "jupyterlab")
    try:
        lab = next(pages := _page(browser, server, "lab"))
        lab.write_notebook("study.ipynb", [setup_cell(wire), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
        lab.open_notebook("study.ipynb")
        lab.run_all()
        lab.wait_for_static(1, "noted")
        lab.save()
        assert "ZEBRA-ALPHA-71" in sent_since(wire)
        (only,) = session_files(server, "")
        next(pages, None)  # closes the page
    finally:
        _stop(server)
    server = _launch(base, "jupyterlab")
    try:
        lab = next(pages := _page(browser, server, "lab"))
        lab.open_notebook("study.ipynb")
        (out,) = go_on(lab, wire, prompt="What is the code word?")
        assert "ZEBRA-ALPHA-71" in sent_since(wire)
        assert f"study · {short(only)}" in out and [s.id for s in session_files(server, "")] == [only.id]
        next(pages, None)  # closes the page
    finally:
        _stop(server)
