"""python: runs in the given namespace like a cell; output, values, rich reprs, errors, timeouts, threads."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import threading
import time

import pytest

from pi_jupyter.agent.toolbox import PythonTool
from pi_jupyter.agent.toolbox.display import html_to_text
from pi_jupyter.agent.tools import ImageContent, ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal


def ctx(updates=None, signal=None, **extra) -> ToolContext:
    return ToolContext(
        tool_call_id="p",
        signal=signal or AbortSignal(),
        cwd=".",
        update=(updates.append if updates is not None else (lambda _r: None)),
        extra=extra,
    )


def py(tool, code, **kw):
    return asyncio.run(run_tool(tool, {"code": code, **kw}, ctx()))


def test_runs_in_the_given_namespace_and_shows_the_last_expression():
    ns = {"df_rows": 3}
    tool = PythonTool(namespace=ns)
    r = py(tool, "x = df_rows * 2\nprint('computed')\nx + 1")
    assert r.text_content == "computed\nOut: 7" and not r.is_error
    assert ns["x"] == 6  # state persists in the user's namespace
    assert py(tool, "x").text_content == "Out: 6"
    assert py(tool, "y = 1").text_content == "(no output)"
    assert py(tool, "None").text_content == "(no output)"
    assert r.details == {"status": "ok", "result": {"text/plain": "7"}}


def test_stdout_and_stderr_are_captured_in_order_and_nothing_leaks():
    import io

    tool = PythonTool(namespace={})
    before = sys.stdout
    sink = io.StringIO()
    sys.stdout = sink
    try:
        r = py(tool, "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')")
    finally:
        sys.stdout = before
    assert r.text_content == "a\nb\nc"
    assert sink.getvalue() == ""


def test_other_threads_output_is_not_captured():
    import io

    tool = PythonTool(namespace={})
    sink = io.StringIO()
    before, sys.stdout = sys.stdout, sink
    stop = threading.Event()

    def chatter():
        while not stop.is_set():
            print("from another thread")
            time.sleep(0.01)

    t = threading.Thread(target=chatter)
    t.start()
    try:
        r = py(tool, "import time\nfor i in range(3):\n    print(i)\n    time.sleep(0.02)")
    finally:
        stop.set()
        t.join()
        sys.stdout = before
    assert r.text_content == "0\n1\n2"
    assert "from another thread" in sink.getvalue()


def test_exceptions_give_a_short_traceback_of_the_code():
    r = py(PythonTool(namespace={}), "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)")
    assert r.is_error
    text = r.text_content
    assert text.startswith("before\nTraceback (most recent call last):")
    assert "line 5, in <module>" in text and "return 1 / x" in text and text.endswith("ZeroDivisionError: division by zero")
    assert "pi_jupyter" not in text  # our runner's frames are left out
    assert r.details["error"] == {"type": "ZeroDivisionError", "message": "division by zero"}


def test_syntax_errors():
    r = py(PythonTool(namespace={}), "def broken(:\n    pass")
    assert r.is_error and "SyntaxError" in r.text_content and r.details["status"] == "error"


def test_pandas_dataframes_become_text_tables():
    pd = pytest.importorskip("pandas")
    ns = {"pd": pd}
    tool = PythonTool(namespace=ns)
    r = py(tool, "pd.DataFrame({'a': range(3), 'b': list('xyz')})")
    assert r.text_content == "Out:\n   a  b\n0  0  x\n1  1  y\n2  2  z\n\n[3 rows x 2 columns]"
    assert "<table" in r.details["result"]["text/html"]
    big = py(tool, "pd.DataFrame({'v': range(1000)})").text_content
    assert "..." in big and "[1000 rows x 1 columns]" in big and len(big.splitlines()) < 40


def test_rich_reprs_markdown_html_and_images_reach_the_model_once():
    png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

    class Md:
        def _repr_markdown_(self):
            return "**bold**"

    class Html:
        def _repr_html_(self):
            return "<h3>Title</h3><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table><script>x()</script>"

    class Plot:
        def __repr__(self):
            return "<Plot>"

        def _repr_png_(self):
            return png

    ns = {"Md": Md, "Html": Html, "Plot": Plot}
    tool = PythonTool(namespace=ns)
    assert py(tool, "Md()").text_content == "Out: **bold**"
    assert py(tool, "Html()").text_content == "Out:\nTitle\nk | v\na | 1"
    r = py(tool, "Plot()")
    assert r.text_content == "Out:\n<Plot>\n[image/png attached]"
    assert isinstance(r.content[1], ImageContent) and base64.b64decode(r.content[1].data) == png  # the model sees the plot
    assert "image/png" not in r.details["result"]  # stored once: in the content, not again in details
    held = asyncio.run(run_tool(PythonTool(namespace=ns, send_images=False), {"code": "Plot()"}, ctx()))
    assert held.text_content.endswith("[image/png shown to the user, not sent to the model]")
    assert [type(b) for b in held.content] == [type(held.content[0])]
    assert base64.b64decode(held.details["result"]["image/png"]) == png


def test_display_objects_whose_repr_says_nothing_give_their_rich_text():
    # IPython's HTML, Latex and JSON objects (and many libraries' objects) define a __repr__
    # that only names the class; the model should see what the user sees
    pytest.importorskip("IPython")
    pd = pytest.importorskip("pandas")
    from IPython.display import HTML, JSON, Latex

    class Bare:
        def __repr__(self):
            return f"<{__name__}.Bare object at 0x{id(self):x}>"

        def _repr_html_(self):
            return "<b>bare</b>"

    ns = {"HTML": HTML, "Latex": Latex, "JSON": JSON, "Bare": Bare, "pd": pd}
    tool = PythonTool(namespace=ns)
    assert py(tool, "HTML('<h3>Sales</h3><table><tr><td>north</td><td>12</td></tr></table>')").text_content == "Out:\nSales\nnorth | 12"
    assert py(tool, "Latex(r'$x^2$')").text_content == "Out: $x^2$"
    assert py(tool, "JSON({'rows': 3})").text_content == 'Out: {"rows": 3}'
    assert py(tool, "Bare()").text_content == "Out: bare"
    styled = py(tool, "pd.DataFrame({'a': [1, 2]}).style").text_content
    assert styled == "Out:\n| a\n0 | 1\n1 | 2"  # no blank lines between the rows


def test_html_to_text():
    assert html_to_text("<p>a&amp;b</p><ul><li>one</li><li>two</li></ul><style>p{}</style>") == "a&b\none\ntwo"


def test_timeout_stops_pure_python_code():
    ns: dict = {}
    tool = PythonTool(namespace=ns, timeout=0.3)
    r = py(tool, "n = 0\nprint('working')\nwhile True:\n    n += 1")
    assert r.is_error and r.text_content == "working\n[Timed out after 0.3 seconds: the code was interrupted and has stopped.]"
    assert r.details["status"] == "timeout" and "stillRunning" not in r.details
    assert ns["n"] > 0
    assert py(tool, "n > 0").text_content == "Out: True"  # the tool is usable again


def test_code_blocked_in_c_keeps_running_and_later_calls_are_refused_until_it_ends(monkeypatch):
    monkeypatch.setattr("pi_jupyter.agent.toolbox.python._STOP_GRACE", 0.2)
    gate = threading.Event()  # blocked in C (a lock wait) until the test opens the gate
    tool = PythonTool(namespace={"gate": gate}, timeout=0.2)
    r = py(tool, "gate.wait(30)\nprint('late')")
    assert r.is_error and r.details["stillRunning"] is True
    assert "still running in a background thread" in r.text_content and "cannot be killed" in r.text_content
    refused = py(tool, "1 + 1")
    assert refused.is_error and "A previous python call is still running" in refused.text_content
    gate.set()  # the code returns from C, meets the pending interrupt and stops
    for _ in range(400):  # asked until the thread has ended, not after a fixed wait
        again = py(tool, "1 + 1")
        if "still running" not in again.text_content:
            break
        time.sleep(0.05)
    assert again.text_content == "Out: 2"


def test_abort_interrupts_the_code():
    async def scenario():
        signal = AbortSignal()
        started = threading.Event()
        tool = PythonTool(namespace={"started": started}, timeout=None)
        task = asyncio.ensure_future(run_tool(tool, {"code": "started.set()\nwhile True:\n    pass"}, ctx(signal=signal)))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 20)  # the loop is running
        signal.abort()
        return await asyncio.wait_for(task, 5)

    r = asyncio.run(scenario())
    assert r.is_error and r.text_content == "[Aborted: the code was interrupted and has stopped.]"


def test_output_streams_while_the_code_runs():
    # the code prints 'two' only once the update with 'one' has arrived: streaming, shown by order, not by timing
    gate = threading.Event()
    updates = []

    def on_update(partial) -> None:
        updates.append(partial.text_content)
        if partial.text_content == "one\n":
            gate.set()

    context = ToolContext(tool_call_id="p", signal=AbortSignal(), cwd=".", update=on_update)
    code = "print('one')\nassert gate.wait(20), 'no update'\nprint('two')"
    r = asyncio.run(run_tool(PythonTool(namespace={"gate": gate}), {"code": code}, context))
    assert r.text_content == "one\ntwo"
    assert "one\n" in updates and updates.index("one\n") < len(updates)


def test_top_level_await_runs_on_the_event_loop():
    ns: dict = {}
    tool = PythonTool(namespace=ns)
    r = py(tool, "import asyncio\nawait asyncio.sleep(0.01)\nprint('awaited')\nawait asyncio.sleep(0, result=42)")
    assert r.text_content == "awaited\nOut: 42"
    slow = py(PythonTool(namespace={}, timeout=0.2), "import asyncio\nawait asyncio.sleep(10)")
    assert slow.is_error and "Timed out after 0.2 seconds" in slow.text_content


def test_in_thread_false_runs_on_the_callers_thread():
    ns = {"main_ident": threading.get_ident()}
    r = py(PythonTool(namespace=ns, in_thread=False), "import threading\nthreading.get_ident() == main_ident")
    assert r.text_content == "Out: True"
    r = py(PythonTool(namespace=ns), "import threading\nthreading.get_ident() == main_ident")
    assert r.text_content == "Out: False"


def test_namespace_from_the_context_and_a_private_default():
    shared = {"v": 5}
    tool = PythonTool()
    r = asyncio.run(run_tool(tool, {"code": "v * 2"}, ctx(namespace=shared)))
    assert r.text_content == "Out: 10"
    assert py(tool, "w = 1").text_content == "(no output)"
    assert py(tool, "w").text_content == "Out: 1"


def test_long_output_is_tail_truncated_with_the_full_text_saved():
    r = py(PythonTool(namespace={}), "for i in range(2500):\n    print(i)")
    assert r.text_content.splitlines()[0] == "501"
    assert r.text_content.endswith(f"[Output: showing lines 502-2501 of 2501. Full output: {r.details['fullOutputPath']}]")
    with open(r.details["fullOutputPath"]) as fh:
        assert fh.read().splitlines()[:2] == ["0", "1"]
    os.unlink(r.details["fullOutputPath"])


def test_secrets_printed_by_code_are_redacted(monkeypatch):
    monkeypatch.setenv("MY_SECRET_TOKEN", "v3ry-s3cret-t0ken")
    r = py(PythonTool(namespace={}), "import os\nprint(os.environ['MY_SECRET_TOKEN'])\nos.environ['MY_SECRET_TOKEN']")
    assert "v3ry-s3cret-t0ken" not in r.text_content and "v3ry-s3cret-t0ken" not in str(r.details)
    assert r.text_content == "[REDACTED:MY_SECRET_TOKEN]\nOut: '[REDACTED:MY_SECRET_TOKEN]'"


def test_parallel_calls_on_one_namespace_run_one_after_the_other():
    ns = {"log": []}
    tool = PythonTool(namespace=ns)

    async def both():
        code = "import time\nlog.append('start')\ntime.sleep(0.1)\nlog.append('end')"
        return await asyncio.gather(run_tool(tool, {"code": code}, ctx()), run_tool(tool, {"code": code}, ctx()))

    asyncio.run(both())
    assert ns["log"] == ["start", "end", "start", "end"]


def test_cancelling_the_call_interrupts_the_code_too():
    ns = {"done": False}
    tool = PythonTool(namespace=ns, timeout=None)

    started = threading.Event()
    ns["started"] = started

    async def scenario():
        task = asyncio.ensure_future(run_tool(tool, {"code": "started.set()\nwhile True:\n    pass"}, ctx()))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 20)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        # usable again once the interrupted code has stopped (asked until then, not after a fixed wait)
        for _ in range(400):
            r = await run_tool(tool, {"code": "done = True\ndone"}, ctx())
            if "still running" not in r.text_content:
                return r
            await asyncio.sleep(0.05)
        return r

    assert asyncio.run(scenario()).text_content == "Out: True"
