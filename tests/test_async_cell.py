"""The rewrite that lets a blocking ``%%pi`` cell hear its widget: only whole ``%%pi`` cells, only while loaded."""

from __future__ import annotations

from IPython.core.inputtransformer2 import TransformerManager

from pi_jupyter.notebook.async_cell import await_pi_cells, install, kernel_hears_comms_while_awaiting, uninstall


def _lines(cell: str) -> list[str]:
    return TransformerManager().transform_cell(cell).splitlines(keepends=True)


def test_only_pi_cells_are_awaited_and_only_while_the_extension_is_loaded(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(tmp_path)
    InteractiveShell.clear_instance()  # a shell of our own, whatever ran before in this process
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pi_jupyter")
    try:
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
    finally:
        InteractiveShell.clear_instance()
