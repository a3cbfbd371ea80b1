"""The rewrite that lets a blocking ``%%pi`` cell hear its widget: only whole ``%%pi`` cells, only while loaded."""

from __future__ import annotations

import pytest
from cell_shell import own_shell
from IPython.core.inputtransformer2 import TransformerManager

from pi_jupyter.notebook.async_cell import await_pi_cells, install, kernel_hears_comms_while_awaiting, stop_note, uninstall


def _lines(cell: str) -> list[str]:
    return TransformerManager().transform_cell(cell).splitlines(keepends=True)


def test_only_pi_cells_are_awaited_and_only_while_the_extension_is_loaded(tmp_path, monkeypatch):

    monkeypatch.chdir(tmp_path)
    with own_shell() as shell:  # a shell of our own, whatever ran before in this process
        shell.run_line_magic("load_ext", "pi_jupyter")
        cell = _lines("%%pi --model offline/echo\nWhat's {x!r} with 'quotes' and \"doubles\"?\n")
        (out,) = await_pi_cells(cell)
        assert out.startswith("await get_ipython()._pi_magics.pi_async('--model offline/echo', ")
        compile(out, "<cell>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT: valid Python
        for other in ("%%time\nx = 1\n", "x = 1\n", "print('get_ipython().run_cell_magic(\\'pi\\', \\'\\', \\'x\\')')\n"):
            assert await_pi_cells(_lines(other)) == _lines(other)
        assert not kernel_hears_comms_while_awaiting(shell)  # a terminal IPython has no kernel: nothing changes
        assert install(shell) is False
        shell.run_line_magic("unload_ext", "pi_jupyter")
        assert await_pi_cells(cell) == cell  # unloaded: IPython reports the unknown magic itself
        uninstall(shell)  # harmless when not installed


@pytest.mark.kernel
def test_a_kernel_that_cannot_hear_stop_says_so_once_and_a_capable_one_says_nothing(tmp_path):
    from kernel_client import Kernel

    k = Kernel(str(tmp_path))
    try:
        quiet = k.run("%load_ext pi_jupyter")
        assert quiet.status == "ok" and quiet.stdout == "", quiet.stdout  # ipykernel 7, %autoawait on: Stop just works
        k.run("%unload_ext pi_jupyter\n")
        told = k.run("%autoawait off\n%load_ext pi_jupyter")
        lines = told.stdout.strip().splitlines()
        assert len(lines) == 1 and "Stop button of a blocking %%pi cell acts only once the answer ends" in lines[0], told.stdout
        assert "interrupt (■)" in lines[0] and "%autoawait asyncio" in lines[0]
    finally:
        k.close()


def test_an_ipykernel_6_kernel_gets_the_upgrade_hint(tmp_path, monkeypatch):

    monkeypatch.chdir(tmp_path)
    with own_shell() as shell:
        assert stop_note(shell) is None  # a terminal IPython: no widgets, nothing to say
        shell.kernel = object()  # an ipykernel 6 kernel object: it has no _main_asyncio_lock
        note = stop_note(shell)
        assert note is not None and "hears widget messages only between cells" in note and "pip install 'ipykernel>=7'" in note


@pytest.mark.kernel
def test_interrupt_of_a_cell_that_blocks_the_old_way_ends_in_two_lines_too(tmp_path):
    """With ``%autoawait off`` (as on ipykernel 6) the cell waits on the main thread; ■ still stops it cleanly."""
    from kernel_client import Kernel

    from pi_jupyter import Session

    k = Kernel(str(tmp_path))
    try:
        setup = k.run(f"%autoawait off\n%load_ext pi_jupyter\n%config PiMagics.session_dir = {str(tmp_path / 's')!r}")
        assert setup.status == "ok", setup.error
        msg_id = k.send("%%pi --model offline/typewriter\n" + "word " * 400, cell_id="slow")
        k.until(msg_id, _AnswerStreams())  # the answer's text is streaming into the view (past its thinking): then interrupt
        k.interrupt()
        result = k.collect(msg_id, timeout=60)
        assert result.status == "error" and result.reply["ename"] == "RunStopped"
        (path,) = (tmp_path / "s").glob("*.jsonl")
        s = Session.open(path, readonly=True)
        last = s.context().messages[-1]
        assert last.role == "assistant" and last.stop_reason == "aborted" and last.text
        partial = [e["id"] for e in s.raw_entries() if e["type"] == "message" and e["message"]["role"] == "assistant"][-1]
        shown = result.reply["traceback"]
        assert len(shown) == 2 and partial in shown[0] and "Traceback" not in "".join(shown), shown
        assert k.run("%%pi --model offline/echo\nStill there?").status == "ok"
    finally:
        k.close()


class _AnswerStreams:
    """True once the pieces the cell sent to its view hold the answer's own words ("You said"), not only its thinking."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def __call__(self, msg: dict) -> bool:
        data = msg["content"].get("data") if msg["msg_type"] == "comm_msg" else None
        sent = data.get("content") if isinstance(data, dict) and data.get("method") == "custom" else None  # a widget's own message
        for op in (sent.get("ops") or []) if isinstance(sent, dict) else []:
            if op.get("o") == "d":
                self.pieces += op.get("t") or []
        return "You said" in "".join(self.pieces)
