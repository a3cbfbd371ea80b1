"""``%%pi`` in a real kernel, driven as JupyterLab drives it (execute requests carrying ``cellId``)."""

from __future__ import annotations

import json
import os
import time

import pytest
from kernel_client import Kernel

from pi_jupyter import Session

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
%config PiMagics.thinking = "off"
"""


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(str(tmp_path))
    try:
        setup = k.run(SETUP.format(dir=str(tmp_path / "sessions")))
        assert setup.status == "ok", setup.error
        yield k
    finally:
        k.close()


def session_of(tmp_path) -> Session:
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    return Session.open(files[0], readonly=True)


def test_cells_run_in_order_and_every_turn_is_persisted(kernel, tmp_path):
    first = kernel.run("%%pi\nMy name is Ada.", cell_id="c1")
    assert first.status == "ok", first.error
    markdown = first.data("text/markdown")
    assert markdown and "My name is Ada." in markdown[-1]  # the saved transcript
    assert first.data("application/vnd.jupyter.widget-view+json")
    summary = first.data("text/plain")[-1]
    assert summary.startswith("pi: stop") and "new entries" in summary

    second = kernel.run("x = 6 * 7\n", cell_id="c2")
    assert second.status == "ok"
    # {x} is filled in the prose; the code block is sent as written, braces and all
    third = kernel.run('%%pi --name r\nx is {x}; use python\n```python\nprint(x * 2, "{x}")\n```', cell_id="c3")
    assert third.status == "ok", third.error
    check = kernel.run("print(r.text)\nprint(_.stop_reason, len(r.entry_ids))", cell_id="c4")
    assert "84 {x}" in check.stdout and "stop 5" in check.stdout  # the notebook context, the prompt, the call, its result, the answer

    s = session_of(tmp_path)
    roles = [m.role for m in s.context().messages]
    # the prompt recorded first; the third turn is told what the notebook ran since the first (x = 6 * 7)
    assert roles == ["system", "user", "assistant", "custom", "user", "assistant", "toolResult", "assistant"]
    assert "x = 6 * 7" in s.context().messages[3].content[0].text
    sent = s.context().messages[4].content[0].text
    assert sent.startswith("x is 42; use python") and sent.endswith('print(x * 2, "{x}")\n```')
    assert s.name is None  # the kernel was not told its notebook (no JPY_SESSION_NAME): a session of its own, unnamed
    # each cell record carries the In [n] the notebook shows for that cell
    counts = {e["data"]["cellId"]: e["data"]["executionCount"] for e in s.raw_entries() if e.get("customType") == "pi_jupyter.cell"}
    assert counts == {"c1": first.reply["execution_count"], "c3": third.reply["execution_count"]}


def firsts_below(s: Session, parent: str) -> list[str]:
    """The prompts of the turns that start below ``parent``, through the notebook context a turn may begin with."""
    out = []
    for child in s.child_ids(parent):
        entry = s.raw_entry(child)
        if entry["type"] == "custom_message":
            entry = s.raw_entry(s.child_ids(child)[0])
        out.append(entry["message"]["content"][0]["text"])
    return out


def test_rerunning_a_cell_forks_a_sibling_and_later_cells_follow_it(kernel, tmp_path):
    assert kernel.run("%%pi\nFirst question.", cell_id="a").status == "ok"
    assert kernel.run("%%pi\nSecond question.", cell_id="b").status == "ok"
    again = kernel.run("%%pi\nSecond question, rephrased.", cell_id="b")
    assert again.status == "ok", again.error
    assert "forked" in again.data("text/plain")[-1]
    assert kernel.run("%%pi\nThird question.", cell_id="c").status == "ok"

    s = session_of(tmp_path)
    users = {e["message"]["content"][0]["text"]: e for e in s.raw_entries() if e["type"] == "message" and e["message"]["role"] == "user"}
    first_answer = s.child_ids(users["First question."]["id"])
    assert users["Second question."]["parentId"] == users["Second question, rephrased."]["parentId"] == first_answer[0]
    branch_texts = [m.content[0].text for m in s.context().messages if m.role == "user"]
    assert branch_texts == ["First question.", "Second question, rephrased.", "Third question."]

    # a fresh kernel on the same session finds its place: re-running cell "a" forks from the root
    kernel.run("%reset -f\n%unload_ext pi_jupyter")
    fresh = kernel.run("%load_ext pi_jupyter\n%pi open " + s.path, cell_id="z")
    assert fresh.status == "ok", fresh.error
    rerun = kernel.run("%%pi\nFirst question, again.", cell_id="a")
    assert rerun.status == "ok", rerun.error
    s = Session.open(s.path, readonly=True)
    # the first cell's run began by recording the system prompt: its re-run shares that entry (the
    # session's preamble) instead of writing a second, identical one; the two answers are siblings under it
    system = s.raw_entry(users["First question."]["parentId"])
    assert system["message"]["role"] == "system"
    assert len([e for e in s.raw_entries() if e["type"] == "message" and e["message"]["role"] == "system"]) == 1
    assert firsts_below(s, system["id"]) == ["First question.", "First question, again."]
    # the re-run is told what the notebook ran since its start (the %reset cell), before its prompt
    assert [m.role for m in s.context().messages] == ["system", "custom", "user", "assistant"]
    again = kernel.run("%%pi\nFirst question, once more.", cell_id="a")
    assert again.status == "ok", again.error
    assert "forked" in again.data("text/plain")[-1]  # the cell's start is unchanged: its runs stay siblings
    s = Session.open(s.path, readonly=True)
    assert firsts_below(s, system["id"]) == ["First question.", "First question, again.", "First question, once more."]


def test_interrupt_aborts_cleanly_and_the_kernel_keeps_working(kernel, tmp_path):
    msg_id = kernel.send("%%pi --model offline/typewriter\n" + "word " * 400, cell_id="slow")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        files = list((tmp_path / "sessions").glob("*.jsonl"))
        if files and '"role":"user"' in files[0].read_text():
            break
        time.sleep(0.1)
    time.sleep(0.5)
    kernel.interrupt()
    result = kernel.collect(msg_id, timeout=60)
    assert result.status == "error" and result.reply["ename"] == "RunStopped"
    s = session_of(tmp_path)
    last = s.context().messages[-1]
    assert last.role == "assistant" and last.stop_reason == "aborted"
    # one or two lines naming the kept entry, not a traceback through threading and the prompt
    shown = result.reply["traceback"]
    partial = [e["id"] for e in s.raw_entries() if e["type"] == "message" and e["message"]["role"] == "assistant"][-1]
    assert 1 <= len(shown) <= 2 and partial in shown[0] and "Traceback" not in "".join(shown), shown
    assert last.text  # the partial answer is kept
    ok = kernel.run("%%pi\nStill there?", cell_id="next")
    assert ok.status == "ok", ok.error
    # no task lingers on the agent loop, and no extra loop thread was started
    probe = (
        "import asyncio, threading\n"
        "loop = get_ipython()._pi_magics.state.runner.loop\n"
        "async def others():\n    return len(asyncio.all_tasks()) - 1\n"
        "print(asyncio.run_coroutine_threadsafe(others(), loop).result())\n"
        "print(sum(t.name == 'pi-jupyter-agents' for t in threading.enumerate()))"
    )
    alive = kernel.run(probe)
    assert alive.stdout.split() == ["0", "1"], alive.error


def test_errors_are_one_line_not_tracebacks(kernel, tmp_path):
    bad_option = kernel.run("%%pi --nope\nhi")
    assert bad_option.status == "error" and bad_option.error["ename"] == "UsageError"
    unknown_name = kernel.run("%%pi\nWhat is {undefined_thing}?")
    assert "undefined_thing" in unknown_name.error["evalue"] and unknown_name.error["ename"] == "UsageError"
    no_key = kernel.run("%%pi --model anthropic/claude-sonnet-4-5\nhi")
    assert no_key.error["ename"] == "UsageError" and "ANTHROPIC_API_KEY" in no_key.error["evalue"]
    missing = kernel.run("%pi open /nonexistent/file.jsonl")
    assert missing.error["ename"] == "UsageError" and "no session file" in missing.error["evalue"]
    unknown_model = kernel.run("%%pi --model nosuch/thing\nhi")
    assert unknown_model.error["ename"] == "UsageError" and "'nosuch/thing'" in unknown_model.error["evalue"]
    no_folder = kernel.run("%%pi --session /nonexistent/dir/x.jsonl\nhi")
    assert no_folder.error["ename"] == "UsageError" and "no folder /nonexistent/dir" in no_folder.error["evalue"]
    assert not os.path.exists("/nonexistent/dir")
    model_line = kernel.run("%pi model anthropic/claude-sonnet-4-5")
    assert model_line.error["ename"] == "UsageError" and model_line.error["evalue"].startswith("%pi model: no API key")
    kernel.run("%%pi\nhello", cell_id="h")
    unknown_entry = kernel.run("%pi checkout zzzzzzzz")
    assert unknown_entry.error["ename"] == "UsageError" and "zzzzzzzz" in unknown_entry.error["evalue"]
    literal = kernel.run("%%pi --name lit\nA dict looks like {{'a': 1}}.", cell_id="lit")
    assert literal.status == "ok", literal.error
    assert "{'a': 1}" in kernel.run("print(lit.prompt)").stdout


def test_background_run_returns_a_handle_and_a_busy_session_is_refused(kernel, tmp_path):
    bg = kernel.run("%%pi --background --name job --model offline/typewriter\n" + "word " * 100, cell_id="bg")
    assert bg.status == "ok"
    assert "BackgroundRun" in bg.data("text/plain")[-1]
    busy = kernel.run("%%pi\nanother", cell_id="other")
    assert busy.error["ename"] == "UsageError" and "busy" in busy.error["evalue"]
    done = kernel.run("job.abort()\nres = job.result(timeout=30)\nprint(res.stop_reason)")
    assert done.stdout.strip() == "aborted"
    after = kernel.run("%%pi\nnow free?", cell_id="after")
    assert after.status == "ok", after.error


def test_nbclient_runs_the_quickstart_in_order_and_a_rerun_forks(tmp_path):
    """The README's notebook, run headless as nbclient / papermill run it (they send no cell ids)."""
    import shutil
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    src = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"
    shutil.copy(src, tmp_path / "quickstart.ipynb")
    nb = nbformat.read(tmp_path / "quickstart.ipynb", as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
        pi_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.startswith("%%pi")]
        # every %%pi cell finished before the next cell ran: its summary line is its last output
        for i in pi_cells:
            assert nb.cells[i].outputs[-1]["data"]["text/plain"].startswith("pi: stop"), nb.cells[i].outputs
        # run the first %%pi cell again in the same kernel: its new answer is a sibling
        again = nb.cells[pi_cells[0]]
        client.execute_cell(again, pi_cells[0])
        assert "forked" in again.outputs[-1]["data"]["text/plain"]
    files = list((tmp_path / "pi-sessions").glob("*.jsonl"))
    assert len(files) == 1
    s = Session.open(files[0], readonly=True)
    users = [e for e in s.raw_entries() if e["type"] == "message" and e["message"]["role"] == "user"]
    first, rerun = users[0], users[-1]  # the first %%pi cell, and its re-run (the last prompt sent)
    assert rerun["message"]["content"] == first["message"]["content"]
    # the first cell began by recording the system prompt: its re-run goes through that entry, a sibling under it
    # (each was told what the notebook ran before it: the setup cell's, just above its prompt)
    told, retold = s.raw_entry(first["parentId"]), s.raw_entry(rerun["parentId"])
    assert told["type"] == retold["type"] == "custom_message" and "%pi new quickstart" in told["content"][0]["text"]
    system = s.raw_entry(told["parentId"])
    assert system["message"]["role"] == "system" and retold["parentId"] == system["id"]
    assert [e["message"]["role"] for e in s.raw_entries() if e["type"] == "message"].count("system") == 1
    assert s.name == "quickstart"


def test_no_key_in_outputs_session_or_log(wire, tmp_path):
    from wire.server import openai_reply

    key = "sk-proj-SECRETSECRETSECRET0123456789"
    wire.require_key = key
    wire.queue("openai", openai_reply("hello from the wire"))
    k = Kernel(str(tmp_path), env={"OPENAI_API_KEY": key})
    try:
        setup = k.run(SETUP.format(dir=str(tmp_path / "sessions")) + f"\n%config PiMagics.base_url = {wire.openai_url!r}")
        assert setup.status == "ok", setup.error
        run = k.run("%%pi --model openai/gpt-test\nhi", cell_id="k1")
        assert run.status == "ok", run.error
        log = k.run("%pi log 100\n%pi status\nfrom pi_jupyter import current_agent\nprint(repr(current_agent()))")
        everything = json.dumps([run.outputs, log.outputs])
        assert "hello from the wire" in everything  # the key was sent: the server requires it
        session_text = "".join(p.read_text() for p in (tmp_path / "sessions").glob("*.jsonl"))
        assert key not in everything and key not in session_text
    finally:
        k.close()


def test_two_background_runs_on_different_sessions_proceed_together(kernel, tmp_path):
    # asserted from the order of their events, not from wall-clock sums (which a loaded runner skews)
    slow = "%%pi --background --model offline/typewriter --session {name} --name {var}\n" + "word " * 80
    assert kernel.run(slow.format(name="alpha", var="a"), cell_id="a").status == "ok"
    assert kernel.run(slow.format(name="beta", var="b"), cell_id="b").status == "ok"
    probe = kernel.run(
        "import threading\n"
        "log, lock = [], threading.Lock()\n"
        "magics = get_ipython().magics_manager.registry['PiMagics']\n"
        "def tap(name):\n"
        "    def on(event):\n"
        "        with lock:\n"
        "            log.append((name, event.type))\n"
        "    return on\n"
        "for agent in magics.state.agents.values():\n"
        "    agent.subscribe(tap('a' if agent.session.name == 'alpha' else 'b'))\n"
        "print(a.done, b.done)"
    )
    assert probe.stdout.split() == ["False", "False"], (probe.stdout, probe.error)  # both still streaming
    done = kernel.run(
        "ra, rb = a.result(timeout=60), b.result(timeout=60)\n"
        "deltas = [name for name, kind in log if kind == 'message_update']\n"
        "switches = sum(1 for x, y in zip(deltas, deltas[1:]) if x != y)\n"
        "print(ra.stop_reason, rb.stop_reason, ra.session.path != rb.session.path, deltas.count('a') > 5, deltas.count('b') > 5, switches)"
    )
    *flags, switches = done.stdout.split()
    assert flags == ["stop", "stop", "True", "True", "True"], (done.stdout, done.error)
    # one after the other would switch once at most; side by side, their deltas interleave
    assert int(switches) >= 4, done.stdout


def test_mutating_tools_ask_on_the_input_line_and_a_no_is_reported(kernel, tmp_path):
    assert kernel.run('%config PiMagics.confirm = "mutating"').status == "ok"
    cell = "%%pi --name r{n}\nuse python\n```python\nopen('made-{n}.txt', 'w').write('x')\n```"
    refused, prompts = kernel.run_answering(cell.format(n=1), ["n"], cell_id="q1")
    assert refused.status == "ok", refused.error
    assert prompts and "pi wants to run python" in prompts[0] and "Allow? [y/N]" in prompts[0]
    assert not (tmp_path / "made-1.txt").exists()
    out = kernel.run("print(r1.messages[3].is_error, r1.messages[3].content[0].text)").stdout  # after system, user, assistant
    assert out.startswith("True") and "refused" in out.lower()
    allowed, _ = kernel.run_answering(cell.format(n=2), ["y"], cell_id="q2")
    assert allowed.status == "ok" and (tmp_path / "made-2.txt").exists()
    # nbclient and papermill cannot answer: the call is refused, the run goes on
    silent = kernel.run(cell.format(n=3), cell_id="q3")
    assert silent.status == "ok" and not (tmp_path / "made-3.txt").exists()


def test_other_commands_in_a_kernel(kernel, tmp_path):
    (tmp_path / ".pi" / "skills" / "plots").mkdir(parents=True)
    (tmp_path / ".pi" / "skills" / "plots" / "SKILL.md").write_text(
        "---\nname: plots\ndescription: Make clear plots.\n---\nUse matplotlib.\n"
    )
    assert kernel.run("%%pi\nFirst.", cell_id="x1").status == "ok"
    skills = kernel.run("%pi skills")
    assert "plots" in json.dumps(skills.outputs) and "Make clear plots." in json.dumps(skills.outputs)
    shown = kernel.run("%pi context")
    context = json.dumps(shown.outputs)
    # a text frontend (terminal, nbconvert --to script/markdown) reads the report, not an object repr
    assert "System prompt" in shown.data("text/plain")[-1]
    assert "System prompt" in context and "<available_skills>" in context and "First." in context
    ext = kernel.run("%pi ext load pi_jupyter.extensions.audit\n%pi ext")
    assert "audit: setup, on_event" in ext.stdout
    bad = kernel.run("%pi ext load no.such.module")
    assert bad.error["ename"] == "UsageError" and "no.such.module" in bad.error["evalue"]
    assert kernel.run("%pi label x1 first-answer").status == "ok"
    assert kernel.run("%%pi\nSecond.", cell_id="x2").status == "ok"
    tree = kernel.run("%pi tree --text")
    assert "first-answer" in json.dumps(tree.outputs)
    compare = kernel.run("c = %pi compare first-answer x2\nprint(type(c).__name__, len(c.branches))")
    assert compare.stdout.split() == ["Comparison", "2"], compare.error
    unknown = kernel.run("%pi frobnicate")
    assert unknown.error["ename"] == "UsageError" and "unknown command" in unknown.error["evalue"]
