"""A world is exact or named: each class of silent mismatch the randomized model found, moved through as a user moves.

Cells in a real kernel driven as JupyterLab drives it (default settings, the offline model
told to call tools): ``--force`` acting on every key of the target, open files, going back to
a session after ``%pi fork``, a grid after the user changed a value in place, a hand edit
between two agent writes, names that share objects, the three ways to rewind, and the offer to
run again what cannot be restored. Each ends on what the next cell sees and the line printed.
"""

from __future__ import annotations

import json

import pytest
from kernel_client import Kernel

from pi_jupyter import Session

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
"""


def braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def cell(code: str | None = None, write: tuple[str, str] | None = None, options: str = "--tools python,write") -> str:
    """A ``%%pi`` cell whose answer runs ``code`` with python and/or writes a file."""
    calls = []
    if code is not None:
        calls.append("call python with " + braces(json.dumps({"code": code})))
    if write is not None:
        calls.append("call write with " + braces(json.dumps({"path": write[0], "content": write[1]})))
    return f"%%pi {options}\n" + "\n".join(calls)


def value(kernel: Kernel, expr: str) -> object:
    out = kernel.run(f"import json as _j; print(_j.dumps({expr}))")
    assert out.status == "ok", out.error
    return json.loads(out.stdout.strip().splitlines()[-1])


def ok(kernel: Kernel, code: str, cell_id: str | None = None) -> str:
    out = kernel.run(code, cell_id)
    assert out.status == "ok", (out.error, out.stdout, out.stderr)
    return out.stdout


def last_line(stdout: str) -> str:
    return stdout.strip().splitlines()[-1]


def start(tmp_path, env=None) -> Kernel:
    k = Kernel(str(tmp_path), env=env)
    ok(k, SETUP.format(dir=str(tmp_path / "sessions")))
    return k


@pytest.fixture
def kernel(tmp_path):
    k = start(tmp_path)
    try:
        yield k
    finally:
        k.close()


def test_force_restores_every_key_of_the_target_and_keeps_the_users_version(kernel, tmp_path):
    ok(kernel, cell("plan = 'A'", ("notes.txt", "A"), "--tools python,write --name a"), "a")
    ok(kernel, cell("plan = 'B'", ("notes.txt", "B"), "--tools python,write --name b"), "b")
    ok(kernel, "plan = 'mine'; open('notes.txt', 'w').write('mine')")
    a = value(kernel, "a.leaf_id")
    left = last_line(ok(kernel, f"%pi checkout {a}"))
    hint = f"%pi checkout {a} --force"
    assert left == f"left plan and notes.txt as they are: they were changed outside the agent since ({hint} restores them)"
    forced = last_line(ok(kernel, hint))  # exactly the hint: every key of the target, the current node included
    kept = forced.split("kept in entry ")[1].split(" ")[0]
    assert (
        forced
        == f"restored plan and notes.txt; your version of plan and notes.txt is kept in entry {kept} (%pi checkout {kept} brings them back)"
    )
    assert value(kernel, "[plan, open('notes.txt').read()]") == ["A", "A"]
    # the version --force replaced is one checkout away
    ok(kernel, f"%pi checkout {kept}")
    assert value(kernel, "[plan, open('notes.txt').read()]") == ["mine", "mine"]
    # the flag is for one move: the next plain checkout leaves the user's version again
    ok(kernel, "plan = 'again'")
    assert last_line(ok(kernel, "%pi checkout {b.leaf_id}")).startswith("restored notes.txt; left plan as it is")
    assert value(kernel, "[plan, open('notes.txt').read()]") == ["again", "B"]


def test_open_files_are_handles_never_their_content(kernel, tmp_path):
    (tmp_path / "big.txt").write_text("first line\n" + "x" * 4_000_000 + "\n")
    code = "fh = open('big.txt')\nfh.readline()\nsame = open('big.txt')\nout = open('out.txt', 'w')"
    ok(kernel, cell(code, options="--tools python --name files"), "files")
    store = tmp_path / "sessions" / ".pi-world"
    assert sum(p.stat().st_size for p in store.rglob("*") if p.is_file()) < 200_000  # the 4 MB file was not read into the store
    assert value(kernel, "[fh is not same, fh.tell() > 0, same.tell()]") == [True, True, 0]  # two handles, two values
    ok(kernel, "%pi checkout root")
    assert value(kernel, "[n in globals() for n in ('fh', 'same', 'out')]") == [False, False, False]
    ok(kernel, "%pi checkout {files.leaf_id}")
    assert value(kernel, "[fh.readline().strip()[:3], same.tell(), fh is not same]") == ["xxx", 0, True]  # the very handles
    leaf = value(kernel, "files.leaf_id")
    call = value(
        kernel,
        "[e['message']['toolCallId'] for e in files.session.raw_branch() if (e.get('message') or {}).get('role') == 'toolResult'][-1]",
    )
    kernel.close()
    fresh = start(tmp_path)  # a restart: the handles are opened again where they were, the file for writing is not
    try:
        path = sorted((tmp_path / "sessions").glob("*.jsonl"))[0]
        ok(fresh, f"%pi open {path}")
        line = last_line(ok(fresh, f"%pi checkout {leaf}"))
        assert "reopened fh (open file big.txt (mode 'r', at 11)): a new handle on the same file" in line
        assert "reopened same (open file big.txt (mode 'r', at 0)): a new handle on the same file" in line
        assert (
            f"could not restore out (open file out.txt (mode 'w', at 0): a handle for writing is not opened again after a restart "
            f"(that could empty the file); %pi rerun {call} runs `out = open('out.txt', 'w')` again)"
        ) in line
        assert value(fresh, "[fh.read(3), same.read(5), 'out' in globals()]") == ["xxx", "first", False]
        assert last_line(ok(fresh, f"%pi rerun {call}")) == f"reran {call}: out (_io.TextIOWrapper) made again"
        assert value(fresh, "[out.mode, out.name]") == ["w", "out.txt"]
    finally:
        fresh.close()


def test_back_to_the_first_session_after_a_fork_its_world_comes_back(kernel, tmp_path):
    ok(kernel, cell("plan = 'A'", ("notes.txt", "A"), "--tools python,write --name a"), "a")
    first = value(kernel, "a.session.path")
    a = value(kernel, "a.leaf_id")
    ok(kernel, f"%pi fork {a}")
    ok(kernel, cell("plan = 'B'; extra = 1", ("notes.txt", "B")), "in-fork")
    assert value(kernel, "[plan, open('notes.txt').read(), 'extra' in globals()]") == ["B", "B", True]
    back = ok(kernel, f"%pi open {first}")
    assert last_line(back) == "pi: restored plan and notes.txt; removed extra (set only on the branch left)"
    assert last_line(ok(kernel, f"%pi checkout {a}")) == f"checked out {a}; leaf is now {a}"
    assert value(kernel, "[plan, open('notes.txt').read(), 'extra' in globals()]") == ["A", "A", False]
    # and with --session: a cell of the fork, then a cell of the first session
    fork = sorted(set(map(str, (tmp_path / "sessions").glob("*.jsonl"))) - {first})[0]
    ok(kernel, cell("print(plan)", options=f"--tools python --session {fork}"), "fork-again")
    assert value(kernel, "[plan, open('notes.txt').read(), extra]") == ["B", "B", 1]
    out = ok(
        kernel,
        cell("seen = [plan, open('notes.txt').read(), 'extra' in globals()]", options=f"--tools python --session {first}"),
        "first-again",
    )
    assert "pi: restored plan and notes.txt; removed extra (set only on the branch left)" in out
    assert value(kernel, "seen") == ["A", "A", False]


def test_a_grid_starts_from_the_live_values_and_the_users_change_is_kept(kernel, tmp_path):
    ok(kernel, cell("xs = [1, 2]", options="--tools python"), "make")
    ok(kernel, "_mine = xs\n_mine.append(3)")  # in place, in a cell of the user's own, through a name of the user's
    out = ok(kernel, cell("print('branch sees', xs); xs.append(4)", options="--tools python --repeat 2 --name grid"), "grid")
    assert "pi: kept your own xs (recorded on the branch as entry " in out
    kept = out.split("recorded on the branch as entry ")[1].split(")")[0]
    session = Session.open(value(kernel, "grid.session.path"), readonly=True)
    from pi_jupyter.experiment import load_experiment

    printed = [
        [
            b["text"]
            for e in session.raw_branch(r.leaf)
            if (e.get("message") or {}).get("role") == "toolResult"
            for b in e["message"]["content"]
        ][-1]
        for r in load_experiment(session).rows
    ]
    assert [p.splitlines()[0] for p in printed] == ["branch sees [1, 2, 3]", "branch sees [1, 2, 3]"]
    assert value(kernel, "xs") == [1, 2, 3, 4]
    ok(kernel, f"%pi checkout {kept}")
    assert value(kernel, "xs") == [1, 2, 3]  # the user's version is a node of the tree


def test_a_hand_edit_between_two_agent_writes_is_the_second_calls_start(kernel, tmp_path):
    ok(kernel, cell(write=("notes.txt", "agent A"), options="--tools write --name first"), "one")
    (tmp_path / "notes.txt").write_text("my edit")
    out = ok(kernel, cell(write=("notes.txt", "agent B"), options="--tools write --name second"), "two")
    assert "pi: kept your own notes.txt (recorded on the branch as entry " in out
    ok(kernel, "%pi checkout {second.started_from}")
    assert (tmp_path / "notes.txt").read_text() == "my edit"
    ok(kernel, "%pi checkout {first.leaf_id}")
    assert (tmp_path / "notes.txt").read_text() == "agent A"
    ok(kernel, "%pi checkout {second.leaf_id}")
    assert (tmp_path / "notes.txt").read_text() == "agent B"


def test_names_that_share_objects_stay_one_after_checkouts_and_a_restart(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%%pi ...", id=i) for i in ("one", "two")]
    path = tmp_path / "alias.ipynb"
    nbformat.write(nb, path)
    env = {"JPY_SESSION_NAME": str(path)}
    k = start(tmp_path, env)
    try:
        ok(
            k,
            cell(
                "a = [1, 2]; b = a; c = {'inner': a}; arr = __import__('numpy').arange(6); view = arr[2:4]",
                options="--tools python --name one",
            ),
            "one",
        )
        ok(k, cell("a.append(3); view[0] = 99", options="--tools python --name two"), "two")
        assert value(k, "[b, c['inner'] is a, int(arr[2])]") == [[1, 2, 3], True, 99]
        ok(k, "%pi checkout {one.leaf_id}")
        assert value(k, "[a, b is a, c['inner'] is a, int(arr[2]), bool(__import__('numpy').shares_memory(view, arr))]") == [
            [1, 2],
            True,
            True,
            2,
            True,
        ]
        ok(k, "view[1] = -1")  # a cell of the user's, through the view: the array follows, and both are the user's now
        assert value(k, "int(arr[3])") == -1
        line = last_line(ok(k, "%pi checkout {two.leaf_id}"))
        assert line.startswith("restored a, b and c; left arr and view as they are: they were changed outside the agent since")
        assert value(k, "[a, b is a, c['inner'] is a, int(arr[2]), int(arr[3])]") == [[1, 2, 3], True, True, 2, -1]
        ok(k, "%pi checkout {two.leaf_id} --force")
        assert value(k, "[int(arr[2]), int(arr[3]), bool(__import__('numpy').shares_memory(view, arr))]") == [99, 3, True]
        one = value(k, "one.leaf_id")
    finally:
        k.close()
    k = start(tmp_path, env)  # a restart: from the store, the names are still one object
    try:
        ok(k, f"%pi checkout {one}")
        assert value(k, "[a, b is a, c['inner'] is a, int(arr[2])]") == [[1, 2], True, True, 2]
    finally:
        k.close()


def test_rewind_the_conversation_the_world_or_both(kernel, tmp_path):
    ok(kernel, cell("plan = 'A'", ("notes.txt", "A"), "--tools python,write --name a"), "a")
    ok(kernel, cell("plan = 'B'", ("notes.txt", "B"), "--tools python,write --name b"), "b")
    a, b = value(kernel, "a.leaf_id"), value(kernel, "b.leaf_id")
    messages = value(kernel, "len(b.session.context().messages)")
    # the world alone: the conversation stays at b, the variables and files are a's
    brought = last_line(ok(kernel, f"%pi checkout {a} --world-only"))
    assert brought.startswith(
        f"brought the world of {a} into this conversation (the conversation did not move): "
        "restored plan and notes.txt; recorded on the branch as entry "
    )
    assert value(kernel, "[plan, open('notes.txt').read()]") == ["A", "A"]
    assert value(kernel, "len(__import__('pi_jupyter').current_session().context().messages)") == messages
    out = kernel.run(cell("print('next cell sees', plan)", options="--tools python"), "next")
    assert out.status == "ok" and "next cell sees A" in "".join(out.data("text/html"))
    assert value(kernel, "len(__import__('pi_jupyter').current_session().context().messages)") > messages
    # the conversation alone: back at b's node, the live world (a's) stays
    kept = last_line(ok(kernel, f"%pi checkout {b} --conversation-only"))
    assert kept.startswith(f"checked out {b} (the conversation only); leaf is now ")
    assert kept.endswith(
        "the variables and files stay as they were: plan and notes.txt differ from that node's world, recorded on the branch as entry "
        + kept.split("entry ")[-1]
    )
    assert value(kernel, "[plan, open('notes.txt').read()]") == ["A", "A"]
    # both: b's world
    assert last_line(ok(kernel, f"%pi checkout {b}")) == "restored plan and notes.txt"
    assert value(kernel, "[plan, open('notes.txt').read()]") == ["B", "B"]


def test_a_value_the_world_cannot_compare_is_named_never_called_restored(kernel, tmp_path):
    ok(
        kernel,
        cell("import sqlite3; conn = sqlite3.connect(':memory:', check_same_thread=False); x = 1", options="--tools python --name made"),
        "made",
    )
    ok(kernel, "conn.execute('create table t (v int)')")  # a cell of the user's changes the connection in place
    line = last_line(ok(kernel, "%pi checkout {made.leaf_id}"))
    assert line == "could not tell whether conn changed (sqlite3.Connection: a cell may have changed it in place): left as it is"
    assert value(kernel, "conn.execute('select count(*) from t').fetchone()[0]") == 0  # the user's connection, table and all
