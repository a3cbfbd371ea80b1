"""A branch carries its world: what the agent's tools change, recorded on the branch, brought back by a move.

Real sessions on disk, the real Agent with the offline model calling the real python, write,
edit and bash tools; the world records into the real store beside the session file.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import threading

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.world import FOLDER_NAME, Store, World, delta_of, world_at


def py(code: str) -> str:
    return f"use python\n```python\n{code}\n```"


def make(tmp_path, ns=None, tools=("python", "write", "edit", "bash")):
    session = Session.create(tmp_path / "sessions")
    ns = {} if ns is None else ns
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=list(tools), cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world.recorder()})
    return session, ns, world, agent


def run(agent, text):
    return asyncio.run(agent.prompt(text))


def test_a_rerun_sibling_then_checkout_brings_plan_a_back(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A'"))
    world.settle()
    leaf_a = session.leaf_id
    assert ns["plan"] == "A"
    # a re-run starts from the same node, in the world of that node: plan was set only on branch A
    report = world.move(start)
    session.checkout(start)
    agent.reload()
    assert "plan" not in ns
    assert report.line() == "removed plan (set only on the branch left)"
    run(agent, py("plan = 'B'"))
    world.settle()
    report = world.move(leaf_a)
    assert ns["plan"] == "A"
    assert report.line() == "restored plan"


def test_files_written_and_edited_by_tools_come_back(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, 'call write with {"path": "notes.txt", "content": "branch A"}')
    world.settle()
    leaf_a = session.leaf_id
    world.move(start)
    assert not (tmp_path / "notes.txt").exists()
    session.checkout(start)
    agent.reload()
    run(agent, 'call write with {"path": "notes.txt", "content": "branch B draft"}')
    run(agent, 'call edit with {"path": "notes.txt", "edits": [{"oldText": "B draft", "newText": "B"}]}')
    world.settle()
    assert (tmp_path / "notes.txt").read_text() == "branch B"
    report = world.move(leaf_a)
    assert (tmp_path / "notes.txt").read_text() == "branch A"
    assert report.line() == "restored notes.txt"


def test_a_file_the_user_changed_is_never_overwritten_silently(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, 'call write with {"path": "notes.txt", "content": "branch A"}')
    world.settle()
    (tmp_path / "notes.txt").write_text("my own words")
    report = world.move(start)
    assert (tmp_path / "notes.txt").read_text() == "my own words"
    assert "left notes.txt as it is: it was changed outside the agent since" in report.line() and "--force" in report.line()
    world.vars_at = world.files_at = session.leaf_id
    report = world.move(start, force=True)
    assert not (tmp_path / "notes.txt").exists()
    kept = report.kept_in
    assert report.line() == (
        "removed notes.txt (set only on the branch left); "
        f"your version of notes.txt is kept in entry {kept} (%pi checkout {kept} brings it back)"
    )
    assert world.move(kept).line() == "restored notes.txt" and (tmp_path / "notes.txt").read_text() == "my own words"


def test_the_record_is_refs_in_details_and_the_data_is_in_the_store(tmp_path):
    session, ns, world, agent = make(tmp_path)
    run(agent, py("import json\nbig = list(range(100_000))\nplan = 'A'\ndel_me = 1"))
    run(agent, py("del del_me\nbig.append(-1)"))
    lines = (session.path and open(session.path).read()) or ""
    assert "99999" not in lines  # the data is not inline
    results = [e for e in session.raw_branch() if e.get("type") == "message" and e["message"]["role"] == "toolResult"]
    first, second = (delta_of(e) for e in results)
    whats = {c.name: c.what for c in first.vars}
    assert whats == {"big": "list of 100,000", "del_me": "int", "json": "module json", "plan": "str, 1 chars"}
    assert first.summary() == "set big (list of 100,000), del_me, json (module json), plan"
    assert second.summary() == "set big (list of 100,001); deleted del_me"
    assert (tmp_path / "sessions" / FOLDER_NAME / "objects").is_dir()
    vars_, _files = world_at(session, session.leaf_id)
    assert vars_["del_me"] is None and Store.beside(session.path).get_value(vars_["big"])[-1] == -1


def test_a_change_in_place_is_recorded_and_undone(tmp_path):
    session, ns, world, agent = make(tmp_path, ns={"xs": [1, 2]})
    start = session.leaf_id
    world.move(start)  # the kernel's variables are now the world at the start
    run(agent, py("xs.append(3)"))
    world.settle()
    assert ns["xs"] == [1, 2, 3]
    report = world.move(start)
    assert ns["xs"] == [1, 2] and report.line() == "restored xs"


def test_what_cannot_be_saved_is_named_and_nothing_the_user_had_is_lost(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("import sqlite3, threading\nconn = sqlite3.connect(':memory:')\nlock = threading.Lock()\ngen = (i for i in range(3))"))
    world.settle()
    leaf = session.leaf_id
    delta = delta_of([e for e in session.raw_branch() if e.get("type") == "message" and e["message"]["role"] == "toolResult"][-1])
    reasons = {c.name: c.after.get("unsaved") for c in delta.vars if isinstance(c.after, dict) and "unsaved" in c.after}
    assert reasons == {
        "conn": "sqlite3.Connection: not serializable",
        "lock": "_thread.lock: not serializable",
        "gen": "generator: not serializable",
    }
    conn = ns["conn"]
    world.move(start)
    assert not {"conn", "lock", "gen"} & set(ns)
    assert world.move(leaf).line() == "restored conn, gen, lock, sqlite3 and threading"  # this kernel held them
    assert ns["conn"] is conn
    fresh: dict = {}  # a new kernel: what was never saved is named
    report = World(Session.open(session.path), fresh, cwd=str(tmp_path)).move(leaf)
    call = [e for e in session.raw_branch() if e.get("type") == "message" and e["message"]["role"] == "toolResult"][-1]["message"][
        "toolCallId"
    ]
    assert report.line() == (  # never run by itself: offered
        f"restored sqlite3 and threading; could not restore conn (sqlite3.Connection: not serializable; %pi rerun {call} runs "
        f"`conn = sqlite3.connect(':memory:')` again); could not restore gen (generator: not serializable; %pi rerun {call} runs "
        f"`gen = (i for i in range(3))` again); could not restore lock (_thread.lock: not serializable; %pi rerun {call} runs "
        "`lock = threading.Lock()` again)"
    )
    assert isinstance(fresh["sqlite3"], type(sqlite3)) and isinstance(fresh["threading"], type(threading))


def test_a_session_copied_without_its_store_opens_and_says_what_is_missing(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A'"))
    leaf = session.leaf_id
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    shutil.copy(session.path, copy_dir / "s.jsonl")
    copied = Session.open(copy_dir / "s.jsonl")
    assert len(copied.context(leaf).messages) == len(session.context(leaf).messages)
    other = World(copied, {}, cwd=str(tmp_path))
    other.vars_at = start
    report = other.move(leaf)
    assert report.line() == "the saved state of plan is missing (the session's .pi-world folder was not copied with it)"


def test_a_fresh_kernel_restores_the_recorded_world_but_not_over_the_users_names(tmp_path):
    session, ns, world, agent = make(tmp_path)
    run(agent, py("plan = 'A'\nmine = 1"))
    leaf = session.leaf_id
    session2 = Session.open(session.path)  # a restarted kernel: nothing in its namespace is the world's yet
    fresh = {"mine": "typed by the user"}
    report = World(session2, fresh, cwd=str(tmp_path)).move(leaf)
    assert fresh == {"mine": "typed by the user", "plan": "A"}
    assert report.line().startswith("restored plan; left mine as it is: it was changed outside the agent since")


def test_secrets_in_variables_are_not_saved(tmp_path, monkeypatch):
    from pi_jupyter.agent.redact import find_secrets

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnopqrstuvwxyz0123456789")
    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path), has_secret=lambda text: bool(find_secrets(text)))
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world.recorder()})
    run(agent, py("import os\nkey = os.environ['OPENAI_API_KEY']\ncfg = {'key': key}"))
    store = tmp_path / "sessions" / FOLDER_NAME / "objects"
    blobs = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    assert b"abcdefghijklmnopqrstuvwxyz" not in blobs
    text = open(session.path).read()
    assert "abcdefghijklmnopqrstuvwxyz" not in text and "holds a secret, not saved" in text


def test_bash_commands_are_counted_as_untracked(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, "use bash\n```bash\necho hi > other.txt\n```")
    run(agent, "use bash\n```bash\nrm other.txt\n```")
    world.settle()
    report = world.move(start)
    assert report.line() == "2 bash commands had effects outside the tracked files"


def test_the_context_is_the_same_with_or_without_the_world_details(tmp_path):
    session, ns, world, agent = make(tmp_path)
    run(agent, py("plan = 'A'"))
    lines = [json.loads(line) for line in open(session.path)]
    assert any("world" in (e.get("message") or {}).get("details", {}) for e in lines)
    for e in lines:
        (e.get("message") or {}).get("details", {}).pop("world", None)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(e) + "\n" for e in lines))

    def sent(s):  # what a model is sent: the messages without details (which no provider sends)
        return [m.model_dump(exclude={"details"}) for m in s.context().messages]

    assert sent(Session.open(bare)) == sent(session)


def test_a_full_disk_is_one_line_and_the_record_stays_whole(tmp_path, monkeypatch):
    import errno

    session, ns, world, agent = make(tmp_path)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("pi_jupyter.world.store.os.replace", full)
    result = run(agent, py("plan = 'A'"))
    assert result.stop_reason == "stop"
    delta = delta_of([e for e in session.raw_branch() if e.get("type") == "message" and e["message"]["role"] == "toolResult"][-1])
    assert delta.vars[0].after["unsaved"].startswith("the disk is full: ")
    assert not [p for p in (tmp_path / "sessions" / FOLDER_NAME / "objects").iterdir() if p.name.startswith(".tmp")]


@pytest.mark.parametrize("code", ["len = None\nprint = 1", "del __builtins__", "__builtins__ = {}"])
def test_code_that_rebinds_or_deletes_builtins_is_recorded_and_undone(tmp_path, code):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    result = run(agent, py(code + "\nplan = 'A'"))
    assert result.stop_reason == "stop"
    world.settle()
    assert "plan" in {c.name for e in session.raw_branch() for d in [delta_of(e)] if d for c in d.vars}
    world.move(start)
    assert not {"plan", "len", "print"} & set(ns)


def test_grid_branches_keep_their_files_and_variables_to_themselves(tmp_path):
    from pi_jupyter.experiment import Experiment

    session, ns, world, agent = make(tmp_path, ns={"shared": [0]})
    (tmp_path / "notes.txt").write_text("as the user left it")
    world.move(session.leaf_id)
    code = json.dumps({"code": "shared.append(1); mine = len(shared)"}).replace("{", "{{").replace("}", "}}")
    prompt = (
        'call write with {{"path": "notes.txt", "content": "branch {tone}"}}\n'
        'call edit with {{"path": "notes.txt", "edits": [{{"oldText": "branch", "newText": "edited"}}]}}\n'
        f"call python with {code}"
    )
    exp = Experiment(
        session,
        prompt,
        vary={"tone": ["x", "y"]},
        tools=["write", "edit", "python", "read"],
        cwd=str(tmp_path),
        agent_options={"tool_extra": dict(agent.tool_extra)},
        continue_from="start",
    )
    result = asyncio.run(exp.run())
    assert [r.state for r in result.rows] == ["done", "done"]
    assert (tmp_path / "notes.txt").read_text() == "as the user left it" and ns["shared"] == [0] and "mine" not in ns
    for row, tone in zip(result.rows, "xy", strict=True):
        leaf_world = World(Session.open(session.path), {}, cwd=str(tmp_path / "elsewhere"))
        vars_, files = world_at(leaf_world.session, row.leaf)
        assert leaf_world.store.get_file(files["notes.txt"]) == f"edited {tone}".encode()
        assert leaf_world.store.get_value(vars_["mine"]) == 2 and leaf_world.store.get_value(vars_["shared"]) == [0, 1]
    report = world.move(result.rows[1].leaf)
    assert (tmp_path / "notes.txt").read_text() == "edited y" and ns["shared"] == [0, 1] and ns["mine"] == 2
    assert report.line() == "restored mine, shared and notes.txt"


def test_gc_keeps_what_sessions_refer_to_and_reclaims_the_rest(tmp_path):
    import os
    import subprocess
    import sys

    session, ns, world, agent = make(tmp_path)
    run(agent, py("kept = list(range(1000))"))
    other = Session.create(tmp_path / "sessions")
    other_ns: dict = {}  # a second session of the folder, then deleted: its objects are garbage
    other_world = World(other, other_ns, cwd=str(tmp_path))
    other_agent = Agent(other, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": other_ns, "world": other_world})
    run(other_agent, py("gone = list(range(5000))"))
    os.unlink(other.path)
    folder = tmp_path / "sessions"
    cli = [sys.executable, "-m", "pi_jupyter", "gc", str(folder)]
    dry = subprocess.run([*cli, "--dry-run", "--min-age", "0"], capture_output=True, text=True, check=True).stdout
    assert dry.startswith(f"{folder / FOLDER_NAME}: 2 objects") and "referred to by 1 session files; would remove 1 (" in dry
    done = subprocess.run([*cli, "--min-age", "0"], capture_output=True, text=True, check=True).stdout
    assert "; removed 1 (" in done
    vars_, _ = world_at(session, session.leaf_id)
    assert Store.beside(session.path).get_value(vars_["kept"]) == list(range(1000))
    young = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "1 objects" in young and "removed" not in young
    missing = subprocess.run([sys.executable, "-m", "pi_jupyter", "gc", str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.strip().endswith("no such folder (give the folder of the session files)")


def test_a_checkout_while_a_run_uses_the_namespace_is_refused_in_one_line(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A'"))
    world.settle()
    with world.running():
        report = world.move(start)
    assert report.line() == "variables and files not restored: a run is using them; check out again when it ends"
    assert ns["plan"] == "A"
    assert world.move(start).line() == "removed plan (set only on the branch left)"


def test_a_value_over_the_size_limit_is_named_not_saved(tmp_path):
    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path), limit=100_000)
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    start = session.leaf_id
    run(agent, py("import numpy as np\nbig = np.zeros(1_000_000)\nsmall = np.zeros(10)"))
    world.settle()
    leaf = session.leaf_id
    world.move(start)
    report = world.move(leaf)
    assert "could not restore big (ndarray 1,000,000 float64: 7.6 MB, over the 97.7 KB limit; %pi rerun " in report.line()
    assert ns["small"].shape == (10,) and "big" not in ns


def test_restart_and_run_all_rebuild_the_same_world_on_every_branch(tmp_path):
    """The same cells run twice from the top (two Run Alls): each cell's branches end in the same world."""
    from pi_jupyter.notebook.cells import CellRun, cell_runs, record_run, start_for

    session = Session.create(tmp_path / "sessions")

    def run_all() -> None:
        ns: dict = {}
        world = World(Session.open(session.path), ns, cwd=str(tmp_path))  # a fresh kernel on the same file
        s = world.session
        agent = Agent(s, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
        for cell_id, text in [
            ("load", py("import json\ndata = [3, 1, 2]")),
            ("sort", py("data.sort(); plan = 'sorted'") + '\ncall write with {"path": "out.txt", "content": "sorted"}'),
        ]:
            start, _ = start_for(s, cell_id)
            if start != s.leaf_id:
                s.checkout(start, persist=False)
                agent.reload()
            world.move(start)
            result = run(agent, text)
            world.settle()
            record_run(s, CellRun(cell_id=cell_id, started_from=start, produced=result.entry_ids, end=s.leaf_id))

    run_all()
    run_all()
    session.refresh()
    for cell_id in ("load", "sort"):
        first, second = cell_runs(session, cell_id)
        assert first.end != second.end  # two branches
        assert world_at(session, first.end) == world_at(session, second.end)


def test_a_grid_on_a_session_in_memory_keeps_its_world_in_memory(tmp_path):
    from pi_jupyter.experiment import Experiment

    session = Session.in_memory(str(tmp_path))
    exp = Experiment(session, 'call python with {{"code": "n = {n} * 10"}}', vary={"n": ["1", "2"]}, tools=["python"], cwd=str(tmp_path))
    result = asyncio.run(exp.run())
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    world.vars_at = None
    assert world.move(result.rows[1].leaf).line() == "restored n" and ns["n"] == 20
    assert not (tmp_path / FOLDER_NAME).exists()


def test_a_replayed_grid_rebuilds_the_same_world_on_every_branch(tmp_path):
    from pi_jupyter.experiment import Experiment

    session, ns, world, agent = make(tmp_path, ns={"base": 5})
    world.move(session.leaf_id)
    prompt = 'call python with {{"code": "total = base * {n}"}}\ncall write with {{"path": "t.txt", "content": "{n}"}}'
    options = {"vary": {"n": ["2", "3"]}, "tools": ["python", "write"], "cwd": str(tmp_path), "continue_from": "start"}
    first = asyncio.run(Experiment(session, prompt, agent_options={"tool_extra": dict(agent.tool_extra)}, **options).run())
    again = asyncio.run(Experiment(session, prompt, replay=True, agent_options={"tool_extra": dict(agent.tool_extra)}, **options).run())
    assert again.rows[0].leaf != first.rows[0].leaf
    for a, b in zip(first.rows, again.rows, strict=True):
        assert world_at(session, a.leaf) == world_at(session, b.leaf)
        assert world_at(session, a.leaf)[0]["total"]


def test_odd_objects_never_break_the_call_or_its_record(tmp_path):
    session, ns, world, agent = make(tmp_path)
    code = (
        "class Odd:\n"
        "    @property\n"
        "    def shape(self):\n"
        "        raise ValueError('no shape')\n"
        "    def __reduce__(self):\n"
        "        raise RuntimeError('no pickling')\n"
        "odd = Odd()\n"
        "print('ran')"
    )
    result = run(agent, py(code))
    assert result.stop_reason == "stop"
    tool = [e for e in session.raw_branch() if e.get("type") == "message" and e["message"]["role"] == "toolResult"][-1]
    assert tool["message"]["content"][0]["text"] == "ran"
    delta = delta_of(tool)
    odd = next(c for c in delta.vars if c.name == "odd")
    assert odd.what == "Odd" and odd.after["unsaved"] == "Odd: not serializable"


def test_grid_branches_save_a_shared_object_once_and_each_change_their_own_copy(tmp_path, monkeypatch):
    from pi_jupyter.experiment import Experiment
    from pi_jupyter.world import recorder as recorder_module

    saved: list[str] = []
    real = recorder_module.serialize
    monkeypatch.setattr(recorder_module, "serialize", lambda v, limit: saved.append(type(v).__name__) or real(v, limit))
    session, ns, world, agent = make(tmp_path, ns={"table": {"rows": [1, 2, 3]}})
    exp = Experiment(
        session, 'call python with {{"code": "table[\'rows\'].append({n})"}}', vary={"n": ["4", "5", "6"]}, tools=["python"],
        cwd=str(tmp_path), agent_options={"tool_extra": dict(agent.tool_extra)}, continue_from="start",
    )  # fmt: skip
    result = asyncio.run(exp.run())
    assert ns["table"] == {"rows": [1, 2, 3]}
    assert saved.count("dict") == 4  # once before (shared by the three branches), once after in each branch
    for row, n in zip(result.rows, (4, 5, 6), strict=True):
        assert world.store.get_value(world_at(session, row.leaf)[0]["table"]) == {"rows": [1, 2, 3, n]}
    world.grid_ended()


def test_a_variable_the_user_rebound_is_left_unless_forced(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A'"))
    world.settle()
    leaf_a = session.leaf_id
    world.move(start)
    run(agent, py("plan = 'B'"))
    world.settle()
    ns["plan"] = "mine"  # a cell of the user's own
    report = world.move(leaf_a)
    assert ns["plan"] == "mine"
    assert report.line() == f"left plan as it is: it was changed outside the agent since (%pi checkout {leaf_a} --force restores it)"
    world.vars_at = world.files_at = session.leaf_id
    world.force_next = True
    report = world.move(leaf_a)
    assert report.line().startswith("restored plan; your version of plan is kept in entry ") and ns["plan"] == "A"
    world.move(report.kept_in)
    assert ns["plan"] == "mine"  # a --force never loses what the user had
