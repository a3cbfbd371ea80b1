"""A branch carries its world, used as a demanding, adversarial user would: odd names, damage, races, odd objects.

Each case ends in what the user has: one clear line naming the problem and the place, the
session record whole (the conversation still opens), and nothing the user had lost. Real
sessions on disk, the real Agent with the offline model and the real tools, the real store.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.agent.redact import find_secrets
from pi_jupyter.world import FOLDER_NAME, Store, World, delta_of, world_at
from pi_jupyter.world.record import RECORD_TYPE

SECRET = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789"


def py(code: str) -> str:
    return f"use python\n```python\n{code}\n```"


def call(tool: str, **args: object) -> str:
    return f"call {tool} with {json.dumps(args)}"


def make(tmp_path, ns=None, tools=("python", "write", "edit"), session=None):
    session = session or Session.create(tmp_path / "sessions")
    ns = {} if ns is None else ns
    world = World(session, ns, cwd=str(tmp_path), has_secret=lambda text: bool(find_secrets(text)))
    agent = Agent(session, tools=list(tools), cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    return session, ns, world, agent


def run(agent, text):
    result = asyncio.run(agent.prompt(text))
    agent.tool_extra["world"].settle()
    return result


def deltas(session):
    return [d for e in session.raw_branch() for d in [delta_of(e)] if d]


def objects(tmp_path):
    root = tmp_path / "sessions" / FOLDER_NAME / "objects"
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")) if root.is_dir() else []


# ------------------------------------------------------------------------------ names of files


@pytest.mark.parametrize("name", ["notes é 🦜.txt", "with space/and more.txt", "a..b.txt", "-dash.txt", "tab\there.txt"])
def test_odd_file_names_are_recorded_and_restored(tmp_path, name):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    assert run(agent, call("write", path=name, content="branch A")).ok
    leaf = session.leaf_id
    shown = name.replace("\t", "\\t")  # one line: a tab in a name is written as an escape
    assert deltas(session)[-1].summary() == f"wrote {shown}"
    assert world.move(start).line() == f"removed {shown} (set only on the branch left)"
    assert not (tmp_path / name).exists()
    assert world.move(leaf).line() == f"restored {shown}"
    assert (tmp_path / name).read_text() == "branch A"


def _forge(session, path_key: str, content: bytes) -> str:
    """A record someone hand-made (or a damaged file): a world record naming ``path_key``, its data in the store."""
    ref = Store.beside(session.path).put_file(content)
    return session.append_custom(RECORD_TYPE, {"v": 1, "files": [{"path": path_key, "before": None, "after": ref}]})


@pytest.mark.parametrize("key", ["../outside.txt", "/tmp/pi-world-adversarial-abs.txt", "sub/../../outside.txt", "bad\0name.txt"])
def test_a_checkout_never_writes_outside_the_project_whatever_the_record_says(tmp_path, key):
    project = tmp_path / "project"
    project.mkdir()
    session = Session.create(tmp_path / "sessions")
    world = World(session, {}, cwd=str(project))
    start = session.leaf_id
    leaf = _forge(session, key, b"planted")
    world.vars_at = world.files_at = start
    report = world.move(leaf)
    assert not (tmp_path / "outside.txt").exists() and not os.path.exists("/tmp/pi-world-adversarial-abs.txt")
    shown = key.replace("\0", "\\x00")
    assert report.line() == f"could not restore {shown} (outside the project folder: a checkout writes only inside it)"


def test_a_link_that_leads_outside_the_project_is_never_followed(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("not the project's")
    (project / "link").symlink_to(outside)
    (project / "file-link.txt").symlink_to(outside / "secret.txt")
    session = Session.create(tmp_path / "sessions")
    world = World(session, {}, cwd=str(project))
    start = session.leaf_id
    _forge(session, "link/secret.txt", b"planted")
    leaf = _forge(session, "file-link.txt", b"planted too")
    world.vars_at = world.files_at = start
    report = world.move(leaf)
    assert (outside / "secret.txt").read_text() == "not the project's"
    assert report.line() == (
        "could not restore link/secret.txt (outside the project folder: a checkout writes only inside it); "
        "could not restore file-link.txt (outside the project folder: a checkout writes only inside it)"
    )


def test_python_writing_through_a_link_outside_the_project_is_not_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path.parent / (tmp_path.name + "-outside")
    outside.mkdir()
    (tmp_path / "link").symlink_to(outside)
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    assert run(agent, py("def _go():\n    open('link/x.txt', 'w').write('out')\n    open('in.txt', 'w').write('in')\n_go()")).ok
    assert [f.path for f in deltas(session)[-1].files] == ["in.txt"]
    world.move(start)
    assert (outside / "x.txt").read_text() == "out"  # not the project's: left alone


def test_a_file_replaced_by_a_folder_is_left_and_named(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, call("write", path="notes.txt", content="branch A"))
    leaf = session.leaf_id
    (tmp_path / "notes.txt").unlink()
    (tmp_path / "notes.txt").mkdir()
    (tmp_path / "notes.txt" / "mine.txt").write_text("the user's")
    report = world.move(start)
    assert report.line().startswith("left notes.txt as it is: it was changed outside the agent since")
    report = world.move(leaf, force=True)
    assert report.line() == "could not restore notes.txt (a folder is there now)"
    assert (tmp_path / "notes.txt" / "mine.txt").read_text() == "the user's"


# ------------------------------------------------------------------------------ secrets


def test_secrets_are_never_saved_in_values_small_or_large_nor_in_files(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)
    session, ns, world, agent = make(tmp_path)
    code = (
        "import os\n"
        "cfg = {'nested': [{'key': os.environ['OPENAI_API_KEY']}]}\n"
        "rows = [f'row {i}' for i in range(20_000)] + [os.environ['OPENAI_API_KEY']]\n"
        "def _go():\n    open('.env', 'w').write('OPENAI_API_KEY=' + os.environ['OPENAI_API_KEY'])\n_go()"
    )
    assert run(agent, py(code)).ok
    blobs = b"".join(p.read_bytes() for p in objects(tmp_path))
    assert SECRET.encode() not in blobs
    text = open(session.path).read()
    assert SECRET not in text
    delta = deltas(session)[-1]
    reasons = {c.name: c.after.get("unsaved") for c in delta.vars if isinstance(c.after, dict)}
    assert reasons["cfg"] == "dict of 1: holds a secret, not saved"
    assert reasons["rows"] == "list of 20,001: holds a secret, not saved"
    assert {f.path: f.after for f in delta.files}[".env"]["unsaved"] == "holds a secret, not saved"


# ------------------------------------------------------------------------------ a damaged store


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ("truncate", "the saved object {ref} is cut short)"),
        ("flip", "the saved object {ref} is damaged ("),  # (it does not decompress), or (its content does not match its hash)
        ("folder", "the saved object {ref} cannot be read)"),
        ("garbage", "the saved object {ref} is not one of the world's)"),
    ],
)
def test_a_damaged_store_is_one_line_per_name_and_the_rest_comes_back(tmp_path, damage, why):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("import numpy as np\nplan = 'A' * 5000\nkept = np.arange(100_000)"))
    run(agent, call("write", path="notes.txt", content="n" * 5000))
    leaf = session.leaf_id
    world.move(start)
    vars_, files = world_at(session, leaf)
    ref = vars_["plan"]
    path = Store.beside(session.path).path(ref)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        body = bytearray(data)
        body[-3] ^= 0xFF
        path.write_bytes(bytes(body))
    elif damage == "folder":
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(b"garbage, not an object at all")
    fpath = Store.beside(session.path).path(files["notes.txt"])
    fpath.write_bytes(fpath.read_bytes()[:20])
    report = world.move(leaf)
    line = report.line()
    assert f"could not restore plan ({why.format(ref=ref[:12])}" in line
    assert f"could not restore notes.txt (the saved object {files['notes.txt'][:12]} is cut short)" in line
    assert "restored kept and np" in line and ns["kept"][-1] == 99_999
    assert "plan" not in ns and not (tmp_path / "notes.txt").exists()
    assert len(Session.open(session.path).context(leaf).messages) == len(session.context(leaf).messages)


def test_a_session_copied_elsewhere_without_its_store_goes_on_with_a_store_of_its_own(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A'"))
    leaf = session.leaf_id
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(session.path, elsewhere / "copy.jsonl")
    copied = Session.open(elsewhere / "copy.jsonl")
    session2, ns2, world2, agent2 = make(tmp_path, session=copied)
    world2.move(leaf)
    assert world2.last_report.line() == "the saved state of plan is missing (the session's .pi-world folder was not copied with it)"
    assert "plan" not in ns2
    run(agent2, py("more = 2"))
    assert (elsewhere / FOLDER_NAME / "objects").is_dir()
    world2.move(start)
    assert "more" not in ns2
    missing = "the saved state of plan is missing (the session's .pi-world folder was not copied with it)"
    assert world2.move(copied.leaf_id).line() == f"restored more; {missing}"


# ------------------------------------------------------------------------------ two kernels, runs, checkouts


def test_two_kernels_on_one_session_each_keep_their_namespace_and_share_the_store(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    other_session = Session.open(session.path)  # a second kernel on the same file
    _, ns2, world2, agent2 = make(tmp_path, session=other_session)
    run(agent, py("plan = 'A'"))
    leaf_a = session.leaf_id
    other_session.checkout(start)
    agent2.reload()
    world2.move(start)
    run(agent2, py("plan = 'B'"))
    leaf_b = other_session.leaf_id
    assert ns["plan"] == "A" and ns2["plan"] == "B"
    reread = Session.open(session.path)
    assert {leaf_a, leaf_b} <= {e["id"] for e in reread.raw_entries()}
    again = World(reread, ns, cwd=str(tmp_path), tracker=world.tracker)  # the first kernel, having read the file again
    again.vars_at = again.files_at = leaf_a
    assert again.move(leaf_b).line() == "restored plan" and ns["plan"] == "B"  # the second kernel's data, from the shared store


def test_a_checkout_while_another_sessions_run_uses_the_namespace_is_refused(tmp_path):
    """Two sessions of one notebook share its namespace: one runs (in the background), the other is checked out meanwhile."""
    from pi_jupyter.notebook.world_cells import Tracker, attach

    ns: dict = {}
    tracker = Tracker()
    agents = []
    for _ in range(2):
        s = Session.create(tmp_path / "sessions")
        a = Agent(s, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns})
        attach(a, ns, tracker)
        agents.append(a)
    busy, other = agents
    start = other.session.leaf_id
    asyncio.run(other.prompt(py("plan = 'mine'")))
    other.tool_extra["world"].settle()
    started = threading.Event()
    ns["started"] = started
    background = threading.Thread(target=lambda: asyncio.run(busy.prompt(py("started.set()\nimport time\ntime.sleep(1.5)\nx = 1"))))
    background.start()
    assert started.wait(30)
    other.checkout_sync(start)
    line = other.tool_extra["world"].last_report.line()
    background.join()
    assert line == "variables and files not restored: a run is using them; check out again when it ends"
    assert ns["plan"] == "mine" and ns["x"] == 1
    other.checkout_sync(start)
    assert "plan" not in ns


# ------------------------------------------------------------------------------ odd objects


def test_odd_objects_defined_in_the_notebook_come_back_or_are_named(tmp_path):
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    (tmp_path / "data.bin").write_bytes(np.arange(1000, dtype="float64").tobytes())
    session, ns, world, agent = make(tmp_path, ns={"__name__": "__main__"})
    start = session.leaf_id
    code = (
        "import numpy as np, pandas as pd, types\n"
        "class Frame(pd.DataFrame):\n    @property\n    def _constructor(self):\n        return Frame\n"
        "class Point:\n    def __init__(self, x):\n        self.x = x\n"
        f"frame = Frame({{'a': [1, 2]}})\npoint = Point(3)\nsquare = lambda v: v * v\n"
        f"mm = np.memmap({str(tmp_path / 'data.bin')!r}, dtype='float64', mode='r')\n"
        "fake = types.ModuleType('made_up_module')\n"
    )
    assert run(agent, py(code)).ok
    leaf = session.leaf_id
    assert world.move(start).line().startswith("removed ")
    report = world.move(leaf)
    assert type(ns["frame"]).__name__ == "Frame" and ns["frame"]["a"].tolist() == [1, 2]
    assert ns["point"].x == 3 and ns["square"](4) == 16 and isinstance(ns["Point"], type)
    assert report.line() == (
        "restored Frame, Point, frame, mm, np, pd, point, square and types; "
        "could not restore fake (module made_up_module cannot be imported)"
    )
    reasons = {c.name: c.after.get("unsaved") for c in deltas(session)[-1].vars if isinstance(c.after, dict)}
    assert reasons["mm"] == f"numpy memmap of {tmp_path / 'data.bin'}: a view of a file, not saved; open it again"
    assert isinstance(ns["mm"], np.memmap)  # this kernel held it: the same view of the file comes back
    # in a new kernel (the session opened again), what was not saved is named
    fresh: dict = {}
    line = World(Session.open(session.path), fresh, cwd=str(tmp_path)).move(leaf).line()
    assert f"could not restore mm (numpy memmap of {tmp_path / 'data.bin'}: a view of a file, not saved; open it again; %pi rerun " in line
    assert fresh["frame"]["a"].tolist() == [1, 2] and fresh["square"](5) == 25 and pd is not None


def test_an_unsaveable_object_the_branch_deleted_comes_back_in_the_same_kernel(tmp_path):
    import sqlite3

    conn = sqlite3.connect(":memory:")
    session, ns, world, agent = make(tmp_path, ns={"conn": conn, "plan": "kept"})
    start = session.leaf_id
    world.move(start)
    assert run(agent, py("del conn\ndel plan")).ok
    assert not {"conn", "plan"} & set(ns)
    report = world.move(start)
    assert ns["conn"] is conn and ns["plan"] == "kept"
    assert report.line() == "restored conn and plan"


def test_a_deleted_variable_then_checkout_back_and_forth(tmp_path):
    session, ns, world, agent = make(tmp_path, ns={"df": [1, 2, 3]})
    start = session.leaf_id
    world.move(start)
    run(agent, py("del df"))
    leaf = session.leaf_id
    assert world.move(start).line() == "restored df" and ns["df"] == [1, 2, 3]
    assert world.move(leaf).line() == "removed df (set only on the branch left)" and "df" not in ns
    assert world.move(start).line() == "restored df" and ns["df"] == [1, 2, 3]


def test_a_huge_number_of_names_is_recorded_in_bounded_time_and_size(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    t = time.perf_counter()
    assert run(agent, py("for _i in range(20_000):\n    globals()[f'v{_i}'] = _i")).ok
    took = time.perf_counter() - t
    line = open(session.path).read().splitlines()[-2]
    assert len(line) < 2_000_000, len(line)
    delta = deltas(session)[-1]
    assert len(delta.vars) == 20_000 and delta.summary().startswith("set v0, v1, v10, v100, v1000, v10000, v10001")
    assert len(delta.summary()) < 300 and delta.summary().endswith("and 19,990 more")
    world.move(start)
    assert not [k for k in ns if k.startswith("v")]
    assert took < 120  # not a speed test: a guard against hours


def test_a_file_whose_name_holds_a_secret_is_never_shown_and_never_made_under_a_wrong_name(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    assert run(agent, py("def _go():\n    import os\n    open('cache_' + os.environ['OPENAI_API_KEY'] + '.txt', 'w').write('x')\n_go()")).ok
    leaf = session.leaf_id
    assert SECRET not in open(session.path).read()
    (changed,) = deltas(session)[-1].files
    assert SECRET not in changed.path and "REDACTED" in changed.path
    report = world.move(start)
    assert report.line() == f"could not restore {changed.path} (its name held a secret, which the record does not keep)"
    assert (tmp_path / f"cache_{SECRET}.txt").exists()  # left as it is: nothing made or removed under another name
    world.move(leaf)
    assert sorted(os.listdir(tmp_path)) == sorted(["sessions", f"cache_{SECRET}.txt"])


def test_a_fork_while_the_session_runs_leaves_the_world_and_says_so(tmp_path):
    """``%pi fork`` (or the tree's fork) of a session whose run is still going: the namespace is the run's until it ends."""
    from pi_jupyter.notebook.world_cells import Tracker, attach, carry

    ns: dict = {}
    tracker = Tracker()
    session = Session.create(tmp_path / "sessions")
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns})
    attach(agent, ns, tracker)
    asyncio.run(agent.prompt(py("plan = 'A'")))
    agent.tool_extra["world"].settle()
    first = session.leaf_id
    started = threading.Event()
    ns["started"] = started
    background = threading.Thread(target=lambda: asyncio.run(agent.prompt(py("started.set()\nimport time\ntime.sleep(1.5)\nplan = 'B'"))))
    background.start()
    assert started.wait(30)
    forked = session.fork(first)
    fork_agent = Agent(forked, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns})
    attach(fork_agent, ns, tracker)
    line = carry(agent, first, fork_agent)
    background.join()
    agent.tool_extra["world"].settle()  # as a notebook cell does when its run ends
    assert line == "variables and files not restored: a run is using them; check out again when it ends"
    assert ns["plan"] == "B"  # the run ended as it ran
    fork_agent.checkout_sync(forked.leaf_id)  # once it has ended, the fork's first move brings its world
    assert ns["plan"] == "A"


@pytest.mark.timeout(60)
def test_a_pipe_where_a_file_was_never_hangs_a_checkout_or_a_call(tmp_path, monkeypatch):
    """Reading a named pipe waits for a writer forever: the world never reads anything but regular files."""
    monkeypatch.chdir(tmp_path)
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, call("write", path="notes.txt", content="branch A"))
    leaf = session.leaf_id
    (tmp_path / "notes.txt").unlink()
    os.mkfifo(tmp_path / "notes.txt")
    assert world.move(start).line().startswith("left notes.txt as it is: it was changed outside the agent since")
    assert world.move(leaf, force=True).line() == "could not restore notes.txt (something other than a file is there now)"
    # the python tool opening a pipe for writing (without blocking): the call goes on, the pipe is named, not read
    code = (
        "def _go():\n    import os\n    r = os.open('notes.txt', os.O_RDONLY | os.O_NONBLOCK)\n"
        "    os.close(os.open('notes.txt', os.O_WRONLY | os.O_NONBLOCK))\n    os.close(r)\n_go()"
    )
    recorded = len(deltas(session))
    assert run(agent, py(code)).ok
    assert len(deltas(session)) == recorded  # a pipe holds nothing to keep: the call recorded no change


def test_a_call_that_writes_thousands_of_files_records_a_thousand_and_says_the_rest_were_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    code = "def _go():\n    import os\n    os.mkdir('many')\n    for i in range(1100):\n"
    code += "        open(f'many/f{i:04}.txt', 'w').write(str(i))\n_go()"
    assert run(agent, py(code)).ok
    delta = deltas(session)[-1]
    assert len(delta.files) == 1000
    assert delta.summary() == (
        "wrote many/f0000.txt, many/f0001.txt, many/f0002.txt, many/f0003.txt, many/f0004.txt, many/f0005.txt, many/f0006.txt, "
        "many/f0007.txt, many/f0008.txt, many/f0009.txt and 990 more; 1 python command (effects not tracked)"
    )
    report = world.move(start)
    assert report.line().startswith("removed many/f0000.txt") and report.line().endswith(
        "1 python command had effects outside the tracked files"
    )
    assert sorted(os.listdir(tmp_path / "many")) == [f"f{i:04}.txt" for i in range(1000, 1100)]  # the rest, named as untracked
