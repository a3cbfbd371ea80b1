"""What a cell does is exactly what it says, in a real kernel: ``{name}`` filling and where the agent's code runs.

Driven as JupyterLab drives the kernel (execute requests with ``cellId``, the widget's Stop as
the comm message the browser sends, the toolbar's interrupt), with the default settings (the
live widget on). What the user checks:

- ``{name}`` is filled in the prose only: an f-string in a code block reaches the agent as
  written (in a grid's branches too), and the cell says what it filled in;
- the agent's python code runs on the kernel's main thread: an object it made is usable in the
  next cell, its settings are the user's, Stop / the timeout / the interrupt stop code that
  sleeps there and keep what it printed, a background run waits for a running cell and says so,
  a grid's branches take turns there.
"""

from __future__ import annotations

import time

import pytest
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.messages import text_of

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
%config PiMagics.thinking = "off"
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.2))  # its answer streams for a while
print("setup-end")
"""

TICKS = """%%pi --tools python
use python
```python
import time
for i in range(100):
    print("tick", i, flush=True)
    time.sleep(2)
```"""


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One kernel for the module (a kernel takes seconds to start on a busy machine); each test starts a session of its own."""
    folder = tmp_path_factory.mktemp("main-thread")
    k = Kernel(str(folder))
    try:
        setup = k.run(SETUP.format(dir=str(folder / "sessions")))
        assert setup.status == "ok", setup.error
        yield k, folder
    finally:
        k.close()


@pytest.fixture
def kernel(shared, request):
    k, _ = shared
    fresh = k.run(f"%pi new {request.node.name[5:45]}", cell_id=f"new-{request.node.name}")
    assert fresh.status == "ok", fresh.error
    return k


@pytest.fixture
def folder(shared):
    """The kernel's working folder."""
    return shared[1]


def session_path(kernel: Kernel) -> str:
    said = kernel.run("from pi_jupyter import current_session\nprint(current_session().path)")
    return said.stdout.strip()


def tool_results(kernel: Kernel) -> list[str]:
    s = Session.open(session_path(kernel), readonly=True)
    out = []
    for e in s.raw_entries():
        if e.get("type") == "message" and e["message"]["role"] == "toolResult":
            out.append("".join(c.get("text", "") for c in e["message"]["content"] if isinstance(c, dict)))
    return out


def wait_for_tick(kernel: Kernel, msg_id: str, tick: str = "tick 1") -> dict:
    """Read the cell's messages until its live tool card shows ``tick`` (the code is running); returns the widget's view data."""
    view = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = kernel.kc.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        data = msg["content"].get("data") or {}
        view = view or data.get("application/vnd.jupyter.widget-view+json")
        comm = msg["content"].get("data", {}) if msg["msg_type"] == "comm_msg" else {}
        if tick in str(comm):
            return view
    raise AssertionError(f"the code never printed {tick!r}")


def test_what_the_agents_code_makes_is_the_users_in_the_next_cell(kernel):
    code = """%%pi --tools python
use python
```python
import sqlite3, threading, decimal
import numpy as np
con = sqlite3.connect(":memory:")
con.execute("create table t (x)")
con.execute("insert into t values (42)")
decimal.getcontext().prec = 6
np.seterr(divide="raise")
print(threading.current_thread().name)
```"""
    ran = kernel.run(code, cell_id="agent")
    assert ran.status == "ok", ran.error
    mine = kernel.run(
        "import decimal, threading\nimport numpy as np\n"
        "print(con.execute('select x from t').fetchall(), decimal.Decimal(1) / decimal.Decimal(7), np.geterr()['divide'],"
        " threading.current_thread().name)",
        cell_id="user",
    )
    assert mine.status == "ok", mine.error  # no "SQLite objects created in a thread can only be used in that same thread"
    assert mine.stdout.split() == ["[(42,)]", "0.142857", "raise", "MainThread"]


def test_the_interrupt_stops_the_agents_code_and_keeps_what_it_printed(kernel):
    msg_id = kernel.send(TICKS, cell_id="ticks")
    wait_for_tick(kernel, msg_id)
    kernel.interrupt()  # the code sleeps on the main thread: the interrupt wakes it
    stopped = kernel.collect(msg_id, timeout=60)
    assert stopped.status == "error" and stopped.reply["ename"] == "RunStopped", stopped.error
    (result,) = tool_results(kernel)
    assert result.startswith("tick 0\ntick 1\n") and result.endswith(
        "[Interrupted by the kernel's interrupt: the code was interrupted and has stopped.]"
    )
    assert "Tool execution was aborted" not in result
    again = kernel.run("print('still here')", cell_id="after")
    assert again.stdout == "still here\n"


def test_stop_reaches_the_agents_code_while_it_runs_on_the_main_thread(kernel):
    msg_id = kernel.send(TICKS, cell_id="stop")
    view = wait_for_tick(kernel, msg_id)
    # the browser's Stop: a comm message to the widget, which reaches the kernel while the main thread runs the code
    stop = {"comm_id": view["model_id"], "data": {"method": "custom", "content": {"type": "stop"}}}
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_msg", stop))
    stopped = kernel.collect(msg_id, timeout=60)
    assert stopped.status == "error" and "Stop was pressed" in stopped.reply["evalue"]
    (result,) = tool_results(kernel)
    assert result.startswith("tick 0\ntick 1\n") and result.endswith("[Aborted: the code was interrupted and has stopped.]")
    assert len(result.splitlines()) < 10  # stopped at once, not after the timeout


def test_the_timeout_wakes_code_that_sleeps(kernel):
    kernel.run("%config PiMagics.tool_timeout = 1")
    try:
        ran = kernel.run("%%pi --tools python\nuse python\n```python\nimport time\nprint('before')\ntime.sleep(60)\nprint('after')\n```")
    finally:
        kernel.run("%config PiMagics.tool_timeout = 30")
    assert ran.status == "ok", ran.error
    (result,) = tool_results(kernel)
    assert result == "before\n[Timed out after 1 seconds: the code was interrupted and has stopped.]"


def test_a_background_run_waits_for_the_running_cell_and_says_so(kernel):
    path = session_path(kernel)
    # a tool call as the session file writes it (the notebook context records these cells' code, which names it too)
    assert kernel.run("""CALL = '"type":"toolCall"'""").status == "ok"
    started = kernel.run(
        "%%pi --background --name bg --tools python --model offline/slow\n"
        "use python\n```python\nimport threading\nprint('agent on', threading.current_thread().name)\n```",
        cell_id="bg",
    )
    assert started.status == "ok", started.error
    # the user's cell starts while the slow model streams, and holds the main thread until a while after the call came
    busy = kernel.run(
        f"import time\nwhile CALL not in open({path!r}).read():\n    time.sleep(0.05)\ntime.sleep(1.5)\nprint('user cell done')",
        cell_id="busy",
    )
    assert busy.stdout == "user cell done\n"
    waited = kernel.run("r = await bg\nprint(r.stop_reason)", cell_id="await")
    assert waited.stdout == "stop\n", waited.error
    (result,) = tool_results(kernel)
    assert result.startswith("agent on MainThread\n[Waited "), (result, path, busy.stdout, started.stdout)
    assert result.endswith(" s for the kernel's main thread (a cell was running there) before the code ran.]")
    # a cell that waits for a background run lends it the main thread: no deadlock, with .result() and with await
    # stopped while it waits for its turn: it says it never ran
    calls = open(path).read().count('"type":"toolCall"')
    kernel.run(
        "%%pi --background --name bg3 --tools python --model offline/slow\nuse python\n```python\nprint('never')\n```", cell_id="bg3"
    )
    stopped = kernel.run(
        f"import time\nwhile open({path!r}).read().count(CALL) <= {calls}:\n    time.sleep(0.05)\n"
        "time.sleep(1.2)\nbg3.abort()\nwhile not bg3.done:  # this cell keeps the main thread: the call cannot start\n"
        "    time.sleep(0.05)\nprint(bg3.result(30).stop_reason)",
        cell_id="abort-waiting",
    )
    assert stopped.stdout == "aborted\n", stopped.error
    assert tool_results(kernel)[-1] == "[Aborted before the code ran: it was waiting for the kernel's main thread.]"
    for how in ("bg2.result(60)", "await bg2"):
        kernel.run(
            "%%pi --background --name bg2 --tools python --model offline/echo\nuse python\n```python\nprint('lent')\n```", cell_id="bg2"
        )
        done = kernel.run(f"r2 = {how}\nprint(r2.stop_reason)", cell_id="wait")
        assert done.stdout == "stop\n", (how, done.error)


def test_the_interrupt_stops_a_background_runs_code_and_its_run(kernel, folder):
    marked = TICKS.replace("import time\n", "import time\nopen('running.txt', 'w').close()\n")
    kernel.run(marked.replace("%%pi ", "%%pi --background --name bg "), cell_id="bgticks")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (folder / "running.txt").exists():
        time.sleep(0.05)
    time.sleep(2.5)  # a tick or two; the kernel reads the interrupt on its control thread, the code runs on the main one
    kernel.interrupt()
    done = kernel.run("print(bg.result(60).stop_reason)", cell_id="check")
    assert done.stdout == "aborted\n", done.error
    (result,) = tool_results(kernel)
    assert result.startswith("tick 0\n") and "[Interrupted by the kernel's interrupt" in result


def test_a_grids_branches_take_turns_on_the_main_thread(kernel):
    grid = """%%pi --tools python --repeat 3
use python
```python
import sys, threading, time
log = sys.__dict__.setdefault("grid_log", [])
log.append(("start", threading.current_thread().name))
time.sleep(0.3)
log.append(("end", threading.current_thread().name))
```"""
    ran = kernel.run(grid, cell_id="grid")
    assert ran.status == "ok", ran.error
    log = kernel.run("import sys\nprint(sys.grid_log)", cell_id="log")
    assert log.stdout.strip() == str([("start", "MainThread"), ("end", "MainThread")] * 3)


FSTRING = """%%pi --tools python
With counter at {counter}, use python:
```python
counter = globals().get("counter", 0) + 1
print(f"branch {counter}")
```"""


def test_an_f_string_in_a_code_block_reaches_the_agent_as_written(kernel):
    kernel.run("counter = 100", cell_id="counter")
    ran = kernel.run(FSTRING, cell_id="fstring")
    assert ran.status == "ok", ran.error
    saved = ran.data("text/html")[-1]  # the output the notebook keeps says what was filled in
    assert "Filled in {counter} = 100; braces in code sent as written" in saved
    assert r"Filled in \{counter\} = 100" in ran.data("text/markdown")[-1]  # as Markdown shows braces
    s = Session.open(session_path(kernel), readonly=True)
    prompt = next(text_of(m.content, "") for m in s.context().messages if m.role == "user")
    assert prompt.startswith("With counter at 100, use python:") and 'print(f"branch {counter}")' in prompt
    assert tool_results(kernel) == ["branch 101"]  # the code's own f-string, run by the agent

    # a grid takes the same rule in every branch: {tone} is filled in the prose, the code is each branch's as written
    grid = kernel.run(FSTRING.replace("--tools python", "--tools python --vary tone=terse,warm").replace("With", "In a {tone} way, with"))
    assert grid.status == "ok", grid.error
    assert "pi: Filled in {tone} per branch (terse, warm), {counter} = 101; braces in code sent as written" in grid.stdout
    assert tool_results(kernel)[1:] == ["branch 102", "branch 102"]  # each branch from the world of the start (counter 101)
    refused = kernel.run("%%pi --vary n=1,2\nuse python\n```python\nprint({n})\n```", cell_id="refused")
    assert refused.status == "error" and "--vary n: the prompt has no {n} outside code" in refused.error["evalue"]
    # a varied name read inside a field's expression is used (the experiment notebook's {INSTRUCTIONS[how]})
    kernel.run("INSTRUCTIONS = {'words': ' Answer in words.', 'python': ' Use python.'}", cell_id="instructions")
    indexed = kernel.run("%%pi --vary how=words,python\nWhat is 2 + 2?{INSTRUCTIONS[how]}", cell_id="indexed")
    assert indexed.status == "ok", indexed.error
