"""What a ``%%pi`` turn is told of the notebook: the cells run since its start node's turn, in IPython's own shell.

The kernel tests (``test_notebook_context_kernel.py``) send the same context through the real
vendor SDKs; these run the cell log in IPython's in-process shell, which is quicker and shows
each rule: what a cell is recorded as, what is cut and how, what is kept out, which cells a
branch is told of.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
import threading
import zlib
from pathlib import Path

import pytest

from pi_jupyter import Session
from pi_jupyter.messages import ImageContent, TextContent
from pi_jupyter.messages.notebook_context import NOTEBOOK_CONTEXT_TYPE
from pi_jupyter.notebook.cell_text import NotebookSource, cut_middle
from pi_jupyter.notebook.notebook_context import ContextBudget, last_told, notebook_message

pytest_plugins = ["cell_shell"]  # the fixtures shell and log

KEY = "sk-ant-api03-" + "Q7" * 24


def png(width: int = 3, height: int = 2) -> str:
    """A real PNG (``width`` × ``height``, grey), base64 as a notebook's display data holds it."""
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    body = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + body).decode()


def run(shell, code: str):
    return shell.run_cell(code, store_history=True)


def told(log, session=None, start=None, **budget) -> tuple[str, list[ImageContent], dict]:
    message = notebook_message(log, session or Session.in_memory(), start, budget=ContextBudget(**budget))
    assert message is not None, "nothing to tell"
    assert message.custom_type == NOTEBOOK_CONTEXT_TYPE
    text = message.content[0]
    assert isinstance(text, TextContent)
    return text.text, [b for b in message.content if isinstance(b, ImageContent)], message.details


def test_a_cell_is_told_as_the_user_saw_it(shell, log, capsys):
    first = run(shell, "sales = {'north': 120.5}\nprint('total', sum(sales.values()))")
    run(shell, "import sys\nprint('careful', file=sys.stderr)\nsales['revenue_eur']")
    run(shell, "len(sales) + 41")
    run(shell, "from IPython.display import display\ndisplay({'text/markdown': '**a note**', 'text/plain': 'a note'}, raw=True)")
    text, images, details = told(log)
    assert text.startswith("notebook since your last turn: 4 cells, 1 error\n")
    n = first.execution_count
    assert (
        f"### In[{n}]\n```python\nsales = {{'north': 120.5}}\nprint('total', sum(sales.values()))\n```\nstdout:\n```\ntotal 120.5\n```"
        in text
    )
    failed = text.split(f"### In[{n + 1}]", 1)[1]
    assert failed.startswith(" failed: KeyError: 'revenue_eur'")
    assert "stderr:\n```\ncareful\n```" in failed
    # the traceback names the cell as IPython does and ends with the error
    assert f"Cell In[{n + 1}], line 3, in <module>\n    sales['revenue_eur']\nKeyError: 'revenue_eur'" in failed
    assert f"Out[{n + 2}]:\n```\n42\n```" in text
    assert "display (text/markdown, text/plain):\n```\n**a note**\n```" in text
    assert not images
    assert [c["n"] for c in details["cells"]] == [n, n + 1, n + 2, n + 3]
    assert details["cells"][1]["error"] == "KeyError" and details["errors"] == 1
    # what the user saw is unchanged: the output still went to the cell
    assert "total 120.5" in capsys.readouterr().out


def test_the_agents_own_cells_and_cells_marked_skip_are_not_told(shell, log):
    run(shell, "%%pi\nhello")  # the agent's turn (the magic is not loaded here: the cell fails, and is still not a cell to tell)
    run(shell, "%pi tree")
    run(shell, "password = 'hunter2-but-long'  # pi: skip\nprint(password)")
    run(shell, "visible = 1")
    text, _, details = told(log)
    assert text.startswith("notebook since your last turn: 1 cell, 1 kept out\n")
    assert "visible = 1" in text and "%%pi" not in text and "hunter2" not in text and "%pi tree" not in text
    assert "(1 cell kept out by the user with `# pi: skip`.)" in text
    assert details["skipped"] == 1
    source = NotebookSource(log)
    listed = source.list_cells()
    assert "kept out by the user (# pi: skip)" in listed and "hunter2" not in listed
    skipped = next(r for r in log.records if r.skipped)
    assert "not shown" in source.read_cell(str(skipped.count)) and "hunter2" not in source.read_cell(str(skipped.count))


def test_clear_output_clears_the_record_as_it_clears_the_cell(shell, log):
    run(shell, "from IPython.display import clear_output\nprint('step 1')\nclear_output()\nprint('step 2')")
    text, _, _ = told(log)
    assert "stdout:\n```\nstep 2\n```" in text and "stdout:\n```\nstep 1" not in text


def test_output_of_other_threads_is_not_the_cells(shell, log, capsys):
    stream = sys.stdout
    out: list[str] = []

    def background() -> None:
        import time

        while not out:
            time.sleep(0.001)
        print("from a background thread")

    t = threading.Thread(target=background)
    t.start()
    run(shell, "print('mine')\n__import__('time').sleep(0.05)")
    out.append("go")
    t.join()
    run(shell, "import threading\nt = threading.Thread(target=lambda: print('worker'))\nt.start(); t.join()")
    assert sys.stdout is stream  # the stream object itself is never swapped
    text, _, _ = told(log)
    assert "stdout:\n```\nmine\n```" in text
    assert text.count("stdout:") == 1  # neither the background thread's line nor the worker's
    seen = capsys.readouterr().out
    assert "mine" in seen and "from a background thread" in seen and "worker" in seen  # everyone's output still shows


def test_long_code_and_output_keep_head_and_tail_with_a_note(shell, log):
    run(shell, "for i in range(5000):\n    print('line', i)")
    text, _, _ = told(log)
    assert "line 0\n" in text and "line 4999" in text and "line 2500" not in text
    assert "left out …]" in text
    assert len(text) < 6000
    cut = cut_middle("\n".join(f"row {i}" for i in range(100)), 3, 2, 10_000)
    assert cut.split("\n") == ["row 0", "row 1", "row 2", "[… 95 lines (658B) left out …]", "row 98", "row 99"]


def test_fifty_cells_fit_the_budget_newest_whole_oldest_as_lines(shell, log):
    first = run(shell, "x0 = 0\nprint('value ' * 200, 0)").execution_count
    for i in range(1, 50):
        run(shell, f"x{i} = {i}\nprint('value ' * 200, {i})")
    text, _, details = told(log, chars=6000)
    assert len(text) <= 6000 + 600  # the head line and the note around the cells
    assert f"### In[{first + 49}]\n```python\nx49 = 49" in text  # the newest in full
    assert f"- In[{first}] ran (2 lines of code, printed 1.2KB): `x0 = 0`" in text  # the oldest as one line
    assert [c["n"] for c in details["cells"]] == list(range(first, first + 50))  # every cell is named
    assert details["cells"][-1]["shown"] == "full" and details["cells"][0]["shown"] == "line"


def test_a_key_a_cell_printed_is_never_told_even_at_a_cut(shell, log, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-" + "x9" * 10)
    run(shell, f"print({KEY!r})\nimport os\nprint(os.environ['MY_SERVICE_TOKEN'])")
    # a key in a huge output, where the kernel keeps only the head and the tail
    run(shell, f"print('a' * 16379 + {KEY!r} + '\\n' + 'b\\n' * 50000)")
    text, _, details = told(log)
    assert KEY not in text and KEY[:20] not in text and "x9x9x9x9" not in text
    assert "[REDACTED:anthropic-key]" in text and "[REDACTED:MY_SERVICE_TOKEN]" in text
    assert KEY not in str(details)


def test_plots_are_attached_newest_first_within_the_budget(shell, log):
    small = png(4, 3)
    figure = {"image/png": small, "text/plain": "<Figure size 4x3 with 1 Axes>"}
    for _ in range(6):
        run(shell, f"from IPython.display import display\ndisplay({figure!r}, raw=True)")
    run(shell, "display({'image/png': 'A' * 5_000_000, 'text/plain': 'huge'}, raw=True)")
    text, images, details = told(log, images=4)
    assert len(images) == 4 and all(i.mime_type == "image/png" and i.data == small for i in images)
    assert details["images"] == 4
    assert text.count(", attached below]") == 4 and "[image 1: image/png 4×3," in text and "[image 4:" in text
    assert text.count("not attached (image budget)") == 2
    assert "too large to attach" in text
    assert "```\n<Figure size" not in text  # the picture says it; its repr says nothing more


def test_a_branch_is_told_what_ran_since_its_own_start(shell, log, tmp_path):
    session = Session.in_memory()
    run(shell, "a = 1")
    m1 = notebook_message(log, session, session.leaf_id)
    record = session.append_custom_message(m1.custom_type, m1.content, display=True, details={**m1.details, "upTo": log.current_seq})
    session.append_message({"role": "user", "content": "first"})
    turn1 = session.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    run(shell, "b = 2")
    second, _, _ = told(log, session, turn1)
    assert "b = 2" in second and "a = 1" not in second
    assert last_told(session, turn1, log).seq == session.raw_entry(record)["details"]["upTo"]
    # a turn written by another kernel (or before this one started): the next one is told the kernel changed
    old = Session.create(tmp_path)
    user = old.append_message({"role": "user", "content": "from yesterday"})
    old.close()
    path = Path(old.path)
    path.write_text(re.sub(r'"timestamp":"[^"]*"', '"timestamp":"2001-01-01T00:00:00.000Z"', path.read_text()))
    old = Session.open(path, readonly=True)
    assert last_told(old, user, log).changed
    changed, _, details = told(log, old, user)
    assert changed.startswith("notebook since your last turn: kernel restarted,") and details["kernelChanged"]


def test_the_notebook_tool_reads_cells_and_describes_variables_without_values(shell, log):
    import asyncio

    from pi_jupyter.agent.toolbox import NotebookTool
    from pi_jupyter.agent.tools import ToolContext, run_tool
    from pi_jupyter.providers import AbortSignal

    pd = pytest.importorskip("pandas")
    n = run(shell, "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'revenue': [1.5, 2.0]})").execution_count
    run(shell, f"api_token = {KEY!r}\nnote = 'short text'")
    ns = shell.user_ns
    ctx = ToolContext(tool_call_id="t1", signal=AbortSignal(), cwd=".", extra={"notebook": NotebookSource(log), "namespace": ns})

    def call(**args):
        return asyncio.run(run_tool(NotebookTool(), args, ctx))

    listed = call(action="cells").text_content
    assert f"In[{n}] ran" in listed
    read = call(action="read", cell=f"In[{n}]").text_content
    assert "sales = pd.DataFrame" in read
    assert call(action="read", cell="In[99999]").is_error
    variables = call(action="variables").text_content
    line = next(x for x in variables.splitlines() if x.startswith("- sales:"))
    assert line.startswith("- sales: pandas.DataFrame 2×2, columns: region ") and ", revenue float64, " in line  # object or str dtype
    assert f"api_token: str, {len(KEY)} chars (the name says secret: not shown)" in variables and KEY not in variables
    assert "note: str, 10 chars = 'short text'" in variables
    assert "pd (pandas)" in variables and "In:" not in variables
    deep = call(action="variables", name="sales").text_content
    assert deep.startswith("sales: pandas.DataFrame 2×2") and "missing values: none" in deep and "1.5" not in deep
    assert pd is not None


def test_the_record_is_one_folded_line_in_every_view_and_forget_and_compaction_treat_it_like_any_message(shell, log, tmp_path):
    import asyncio

    from pi_jupyter import Agent
    from pi_jupyter.notebook.agent_view.view import AgentView
    from pi_jupyter.views.graph.digraph import GraphOptions, build_model
    from pi_jupyter.views.lens import context_lens
    from pi_jupyter.views.static_html import render_html
    from pi_jupyter.views.transcript import transcript_markdown

    run(shell, "import math\nmath.sqrt(-1)")
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off")
    message = notebook_message(log, agent.session, agent.session.leaf_id)
    view = AgentView()
    agent.subscribe(view.handle)
    result = asyncio.run(agent.prompt("Why did that fail?", context=[message]))
    line = "notebook since your last turn: 1 cell, 1 error"
    assert "With it I was sent the notebook since my last turn: 1 cell, 1 error." in result.text  # the offline model says so
    assert "failed with ValueError: math domain error" in result.text
    record = result.entry_ids[0] if agent.session.raw_entry(result.entry_ids[0])["type"] == "custom_message" else result.entry_ids[1]
    session = agent.session
    # the widget, its saved rendering, the transcript: one line, the text a click away
    bundle = view.final_bundle()
    assert f"<summary>{line}</summary>" in bundle["text/html"] and "math.sqrt(-1)" in bundle["text/html"]
    assert f"*{line}* (sent to the model with the prompt below)" in bundle["text/markdown"]
    assert "math.sqrt(-1)" not in bundle["text/markdown"]
    assert f"<summary>{line}</summary>" in render_html(agent.messages)
    assert f"*{line}*" in transcript_markdown(agent.messages)
    view.close()
    # the lens: sent, as one line
    lens = context_lens(session)
    assert lens.state_of(record) == "in" and next(e for e in lens.entries if e.entry_id == record).preview.startswith(line)
    # the tree: one turn, titled by its prompt (the record joins the turn it leads into)
    model = build_model(session, GraphOptions())
    titles = [n.title for n in model.nodes.values() if n.title.startswith("You")]
    assert titles == ["You: Why did that fail?"]
    # forget drops it from what is sent, like any message; the file keeps it
    agent.edit_context(record, None)
    assert "math.sqrt" not in json.dumps([m.to_dict() for m in agent.messages if m.role != "system"])
    assert "math.sqrt" in Path(session.path).read_text()
    # compaction summarizes it like any message
    agent.edit_context(record, "notebook since your last turn: 1 cell (edited)")
    for n in range(3):  # enough history that a summary is shorter (a compaction that would grow the context is refused)
        asyncio.run(agent.prompt(f"And now, {n}? " + "words " * 200))
    asyncio.run(agent.compact(keep_recent_tokens=1))
    summary = [e for e in session.raw_entries() if e["type"] == "compaction"][-1]["summary"]
    assert "notebook since your last turn: 1 cell (edited)" in summary


def test_a_replay_is_not_thrown_off_by_the_notebook_it_runs_in(shell, log, tmp_path):
    """A class replaying a lecture runs its own cells: each turn is told of those, and the recording still plays."""
    import asyncio

    from pi_jupyter import Agent
    from pi_jupyter.providers.replay import ReplayProvider

    run(shell, "lecture_data = [1, 2, 3]")
    teacher = Agent(Session.create(tmp_path / "lecture"), model="offline/echo", thinking="off")
    told = notebook_message(log, teacher.session, teacher.session.leaf_id)
    recorded = asyncio.run(teacher.prompt("What is in my data?", context=[told]))
    run(shell, "class_data = [4, 5, 6]\nprint('a different notebook')")
    player = ReplayProvider(teacher.session.path)
    student = Agent(Session.create(tmp_path / "class"), model=player.model, stream=player.stream, thinking="off")
    message = notebook_message(log, student.session, student.session.leaf_id)
    assert "class_data" in message.content[0].text  # the class's own cells
    replayed = asyncio.run(student.prompt("What is in my data?", context=[message]))
    assert replayed.ok and replayed.text == recorded.text  # the recording's answer, not a divergence
