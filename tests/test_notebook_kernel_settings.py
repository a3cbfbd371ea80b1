"""Settings changed between cells, an interrupt during a tool call, display() in a tool: in a real kernel."""

from __future__ import annotations

import json
import time

import pytest
from kernel_client import Kernel

from pi_jupyter import Session

pytestmark = pytest.mark.kernel


def _start(tmp_path, *setup: str) -> Kernel:
    k = Kernel(str(tmp_path))
    lines = ["%load_ext pi_jupyter", f"%config PiMagics.session_dir = {str(tmp_path / 'sessions')!r}", *setup]
    ran = k.run("\n".join(lines))
    assert ran.status == "ok", ran.error
    return k


def _session(tmp_path) -> Session:
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    return Session.open(files[0], readonly=True)


PYTHON_CELL = "%%pi\nuse python\n```python\n{code}\n```"


def test_confirm_and_model_set_after_a_cell_apply_to_the_next_cell(tmp_path):
    # the project's settings file chooses one model; %config at run time beats it
    (tmp_path / "pyproject.toml").write_text('[tool.pi-jupyter]\nmodel = "offline/typewriter"\nthinking = "off"\n')
    k = _start(tmp_path)
    try:
        first = k.run(PYTHON_CELL.format(code="open('first.txt', 'w').write('x')"), cell_id="c1")
        assert first.status == "ok", first.error
        assert (tmp_path / "first.txt").exists()  # confirm is "none": python ran without asking
        assert k.run('%config PiMagics.confirm = "mutating"\n%config PiMagics.model = "offline/echo"').status == "ok"

        second = k.run(PYTHON_CELL.format(code="open('second.txt', 'w').write('x')"), cell_id="c2")
        assert second.status == "ok", second.error
        assert not (tmp_path / "second.txt").exists()  # nobody could be asked (no stdin): refused
        models = [m.model for m in _session(tmp_path).context().messages if m.role == "assistant"]
        assert models[0] == "typewriter" and set(models[-2:]) == {"echo"}

        # and back: settings keep applying, cell after cell
        assert k.run('%config PiMagics.confirm = "none"\n%config PiMagics.tools = ["read"]').status == "ok"
        third = k.run(PYTHON_CELL.format(code="open('third.txt', 'w').write('x')"), cell_id="c3")
        assert third.status == "ok", third.error
        assert not (tmp_path / "third.txt").exists()  # python is no longer offered
        status = k.run("%pi status").stdout
        assert "tools    read\n" in status and "offline/echo" in status
    finally:
        k.close()


def test_bad_settings_are_refused_on_one_line_and_the_old_value_stays(tmp_path):
    k = _start(tmp_path, '%config PiMagics.model = "offline/echo"')
    try:
        for line, says in (
            ("%config PiMagics.tools = 'read,python'", "not one string"),
            ("%config PiMagics.tool_timeout = -5", "tool_timeout must be a number of seconds"),
            ("%config PiMagics.thinking = 'hgih'", "thinking must be one of"),
        ):
            ran = k.run(line)
            text = ran.stderr + json.dumps(ran.error or {})
            assert says in text, (line, ran.outputs)
            assert "Traceback" not in text
        assert k.run("%%pi\nstill fine?", cell_id="c1").status == "ok"
        shown = k.run("m = get_ipython()._pi_magics\nprint(m.tools, m.tool_timeout, repr(m.thinking))").stdout
        assert shown.strip() == "['read', 'ls', 'grep', 'find', 'python', 'notebook'] 60 ''"
    finally:
        k.close()


def test_an_interrupt_during_a_tool_call_stops_the_code_and_the_next_cell_works(tmp_path):
    k = _start(tmp_path, '%config PiMagics.model = "offline/echo"')
    ticks = tmp_path / "ticks.txt"
    try:
        code = "import time\nfor i in range(2000):\n    open('ticks.txt', 'a').write('.')\n    time.sleep(0.01)"
        msg_id = k.send(PYTHON_CELL.format(code=code), cell_id="slow")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (ticks.exists() and len(ticks.read_text()) >= 10):
            time.sleep(0.05)  # until the code has been running a while (ten ticks), however slow the machine
        k.interrupt()
        result = k.collect(msg_id, timeout=60)
        assert result.status == "error" and result.reply["ename"] == "RunStopped"
        count = len(ticks.read_text())
        time.sleep(0.5)
        assert len(ticks.read_text()) == count < 2000  # the code stopped
        messages = _session(tmp_path).context().messages
        call = next(m for m in messages if m.role == "assistant" and m.tool_calls)
        results = [m for m in messages if m.role == "toolResult"]
        # the call got its result (the next request stays valid), and it says it was stopped
        assert [r.tool_call_id for r in results] == [call.tool_calls[0].id]
        assert results[0].is_error and "Interrupted by the kernel's interrupt" in results[0].text
        after = k.run("%%pi\nStill there?", cell_id="next")
        assert after.status == "ok", after.error
    finally:
        k.close()


def test_display_inside_the_python_tool_is_redacted_and_the_model_reads_it(tmp_path):
    secret = "QZ7XW9FG3HJ5LM8PU2WQZ"
    k = Kernel(str(tmp_path), env={"SHOWN_API_KEY": secret})
    try:
        setup = [
            "%load_ext pi_jupyter",
            f"%config PiMagics.session_dir = {str(tmp_path / 'sessions')!r}",
            '%config PiMagics.model = "offline/echo"',
        ]
        assert k.run("\n".join(setup)).status == "ok"
        code = (
            "import os\n"
            "from IPython.display import HTML, Markdown, display, clear_output\n"
            "key = os.environ['SHOWN_API_KEY']\n"
            "display(HTML('<b>' + key + '</b>'))\n"
            "display(Markdown('the key: ' + key))\n"
            "display({'text/plain': 'plain ' + key, 'application/x-anything': {'k': key}}, raw=True)\n"
            "clear_output()\n"
            "print('done')"
        )
        ran = k.run(PYTHON_CELL.format(code=code), cell_id="c1")  # code in a fence is sent as written: its braces are Python's
        assert ran.status == "ok", ran.error
        shown = json.dumps(ran.outputs)
        assert secret not in shown
        assert "<b>[REDACTED:SHOWN_API_KEY]</b>" in ran.data("text/html")
        assert "the key: [REDACTED:SHOWN_API_KEY]" in ran.data("text/markdown")
        assert {"k": "[REDACTED:SHOWN_API_KEY]"} in ran.data("application/x-anything")
        assert ran.data("application/vnd.jupyter.widget-view+json")  # clear_output() did not remove the agent's view
        result = next(m for m in _session(tmp_path).context().messages if m.role == "toolResult")
        assert result.text == (
            "[display text/plain, text/html]\n[REDACTED:SHOWN_API_KEY]\n"
            "[display text/plain, text/markdown]\nthe key: [REDACTED:SHOWN_API_KEY]\n"
            "[display text/plain, application/x-anything]\nplain [REDACTED:SHOWN_API_KEY]\ndone"
        )
        assert secret not in next((tmp_path / "sessions").glob("*.jsonl")).read_text()
        assert secret not in k.run("%pi log 100").stdout
    finally:
        k.close()
