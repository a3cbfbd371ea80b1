"""The world's rules pinned to what the user gets, one test per rule a slip in the code would break.

Each rule here was broken on purpose once (a bug planted in ``world/``: the earliest value of a
name winning over the latest, the "inside the project" check without its separator, ``--force``
never reset, gc keeping only the objects named *after*, a compressed object not checked against
its hash, ``inplace=False`` read as in place, a file opened for appending not followed), and
each failed a test here. The tests use real sessions on disk, the real Agent with the offline
model calling the real tools, the real store.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.world import Store, World, delta_of, world_at
from pi_jupyter.world.gc import collect
from pi_jupyter.world.record import RECORD_TYPE


def py(code: str) -> str:
    return f"use python\n```python\n{code}\n```"


def call(tool: str, **args: object) -> str:
    return f"call {tool} with {json.dumps(args)}"


def make(tmp_path, ns=None, cwd=None):
    session = Session.create(tmp_path / "sessions")
    ns = {} if ns is None else ns
    world = World(session, ns, cwd=str(cwd or tmp_path))
    agent = Agent(session, tools=["python", "write", "edit"], cwd=str(cwd or tmp_path), tool_extra={"namespace": ns, "world": world})
    world.attach(agent)  # its checkouts move the world, a run that ends leaves it at the leaf
    return session, ns, world, agent


def run(agent, text):
    result = asyncio.run(agent.prompt(text))
    agent.tool_extra["world"].settle()
    return result


# ------------------------------------------------------------------------------ the latest value wins


def test_the_latest_value_on_the_path_is_what_every_move_restores(tmp_path):
    session, ns, world, agent = make(tmp_path)
    root = session.leaf_id
    for v in "ABC":
        run(agent, py(f"plan = '{v}'") + "\n" + call("write", path="notes.txt", content=f"notes {v}"))
    end = session.leaf_id
    # from the root of the same branch
    world.move(root)
    assert "plan" not in ns and not (tmp_path / "notes.txt").exists()
    assert world.move(end).line() == "restored plan and notes.txt"
    assert ns["plan"] == "C" and (tmp_path / "notes.txt").read_text() == "notes C"
    # from a sibling branch that set them once
    world.move(root)
    session.checkout(root)
    agent.reload()
    run(agent, py("plan = 'S'") + "\n" + call("write", path="notes.txt", content="notes S"))
    assert world.move(end).line() == "restored plan and notes.txt"
    assert ns["plan"] == "C" and (tmp_path / "notes.txt").read_text() == "notes C"
    # in a fresh kernel (nothing known), and in what %pi world, compare and fork read
    fresh: dict = {}
    (tmp_path / "notes.txt").unlink()
    World(Session.open(session.path), fresh, cwd=str(tmp_path)).move(end)
    assert fresh["plan"] == "C" and (tmp_path / "notes.txt").read_text() == "notes C"
    vars_, files = world_at(session, end)
    assert world.store.get_value(vars_["plan"]) == "C" and world.store.get_file(files["notes.txt"]) == b"notes C"
    # back from the end to the middle of the branch: the value after the second call
    middle = [e["id"] for e in session.raw_branch(end) if delta_of(e)][3]  # plan and notes.txt of the second turn
    world.move(end)
    assert world.move(middle).line() == "restored plan and notes.txt" and ns["plan"] == "B"


# ------------------------------------------------------------------------------ inside the project: the separator


def test_a_folder_whose_name_starts_like_the_project_is_outside_it(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    evil = tmp_path / "proj-evil"
    project.mkdir()
    evil.mkdir()
    session = Session.create(tmp_path / "sessions")
    world = World(session, {}, cwd=str(project))
    start = session.leaf_id
    ref = Store.beside(session.path).put_file(b"planted")
    leaf = session.append_custom(RECORD_TYPE, {"v": 1, "files": [{"path": "../proj-evil/x.txt", "before": None, "after": ref}]})
    world.vars_at = world.files_at = start
    report = world.move(leaf)
    assert not (evil / "x.txt").exists()
    assert report.line() == "could not restore ../proj-evil/x.txt (outside the project folder: a checkout writes only inside it)"
    # and python writing there is not the project's either: not recorded, never restored
    session2, ns, world2, agent = make(tmp_path / "two", cwd=project)
    monkeypatch.chdir(project)
    run(agent, py("open('../proj-evil/y.txt', 'w').write('mine')\nopen('inside.txt', 'w').write('in')"))
    assert [f.path for d in map(delta_of, session2.raw_branch()) if d for f in d.files] == ["inside.txt"]


# ------------------------------------------------------------------------------ --force acts once


def test_force_is_for_one_move_only_the_next_move_leaves_the_users_version(tmp_path):
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A'") + "\n" + call("write", path="notes.txt", content="A"))
    leaf_a = session.leaf_id
    world.move(start)
    session.checkout(start)
    agent.reload()
    run(agent, py("plan = 'B'") + "\n" + call("write", path="notes.txt", content="B"))
    leaf_b = session.leaf_id
    ns["plan"] = "mine"
    (tmp_path / "notes.txt").write_text("mine")
    world.force_next = True
    forced = world.move(leaf_a)
    assert ns["plan"] == "A" and (tmp_path / "notes.txt").read_text() == "A"
    assert forced.line().startswith("restored plan and notes.txt")
    assert world.force_next is False
    ns["plan"] = "mine again"
    (tmp_path / "notes.txt").write_text("mine again")
    plain = world.move(leaf_b)
    assert ns["plan"] == "mine again" and (tmp_path / "notes.txt").read_text() == "mine again"
    assert plain.line().startswith("left plan and notes.txt as they are: they were changed outside the agent since")
    also = world.move(leaf_a, force=True)
    assert also.line().startswith("restored plan and notes.txt")
    ns["plan"] = "third"
    assert "left plan as it is" in world.move(leaf_b).line() and ns["plan"] == "third"


# ------------------------------------------------------------------------------ gc keeps both sides


def test_gc_keeps_what_a_checkout_back_needs_the_values_and_files_before_each_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("the user's own data\n")
    session, ns, world, agent = make(tmp_path, ns={"rows": [1, 2]})
    start = session.leaf_id
    world.move(start)  # the user's rows are what the world holds at the start
    run(agent, py("rows.append(3)\nopen('data.csv', 'w').write('rewritten')"))
    run(agent, call("edit", path="data.csv", edits=[{"oldText": "rewritten", "newText": "edited"}]))
    store = Store.beside(session.path)
    for ref, _size in store.refs():  # every object old enough for gc to judge it
        os.utime(store.path(ref), (1, 1))
    collect(tmp_path / "sessions", min_age_s=0)
    report = world.move(start)
    assert report.line() == "restored rows and data.csv"
    assert ns["rows"] == [1, 2] and (tmp_path / "data.csv").read_text() == "the user's own data\n"


# ------------------------------------------------------------------------------ every object is checked against its hash


@pytest.mark.parametrize("kind", ["value", "file"])
def test_an_object_rewritten_with_other_content_is_refused_compressed_or_not(tmp_path, kind):
    import zstandard

    from pi_jupyter.world.object_file import HEADER

    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    run(agent, py("plan = 'A' * 50_000\nsmall = 'ab'") + "\n" + call("write", path="notes.txt", content="n" * 50_000))
    leaf = session.leaf_id
    world.move(start)
    vars_, files = world_at(session, leaf)
    ref = vars_["plan"] if kind == "value" else files["notes.txt"]
    path = world.store.path(ref)
    head = path.read_bytes()[: HEADER.size]
    _magic, _kind, codec, size, *_signed = HEADER.unpack(head)
    assert codec == b"z"  # compressed: the damage below decompresses cleanly
    body = bytearray(zstandard.ZstdDecompressor().decompress(path.read_bytes()[HEADER.size :], max_output_size=size))
    body[-10] = ord("B")  # one letter of the value changed, the object still well formed
    path.write_bytes(head + zstandard.ZstdCompressor(level=1).compress(bytes(body)))
    line = world.move(leaf).line()
    name = "plan" if kind == "value" else "notes.txt"
    assert f"could not restore {name} (the saved object {ref[:12]} is damaged (its content does not match its hash))" in line
    assert (name not in ns) if kind == "value" else not (tmp_path / "notes.txt").exists()
    # a raw (small) object too
    small = world.store.path(vars_["small"])
    data = bytearray(small.read_bytes())
    data[-2] ^= 0x01
    small.write_bytes(bytes(data))
    world.move(start)
    assert "could not restore small (the saved object" in world.move(leaf).line()


# ------------------------------------------------------------------------------ what the agent only reads is never saved


def test_a_value_the_agent_only_reads_is_not_copied_into_the_store(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"a": [1.0, None, 3.0], "b": ["x", "y", "z"]})
    session, ns, world, agent = make(tmp_path, ns={"df": frame})
    code = "clean = df.dropna(inplace=False)\nfilled = df.fillna(0, inplace=False)\nn = len(df.sort_values('a', inplace=False))"
    run(agent, py(code))
    (delta,) = [d for d in map(delta_of, session.raw_branch()) if d]
    assert sorted(c.name for c in delta.vars) == ["clean", "filled", "n"]
    saved = [world.store.get_value(r) for r, _ in world.store.refs()]
    assert not any(isinstance(v, pd.DataFrame) and v["a"].isna().any() for v in saved)  # the user's df, with its gap
    # and inplace=True is a change in place: recorded, and undone by a checkout back
    start = session.leaf_id
    world.move(start)
    run(agent, py("df.dropna(inplace=True)"))
    assert len(ns["df"]) == 2
    assert world.move(start).line() == "restored df" and len(ns["df"]) == 3


# ------------------------------------------------------------------------------ every way python writes a file


@pytest.mark.parametrize("mode", ["a", "ab", "a+", "r+", "w", "x"])
def test_a_file_python_opens_for_writing_in_any_mode_comes_back(tmp_path, monkeypatch, mode):
    monkeypatch.chdir(tmp_path)
    if mode != "x":
        (tmp_path / "log.txt").write_text("first line\n")
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    text = "b'second line\\n'" if "b" in mode else "'second line\\n'"
    run(agent, py(f"with open('log.txt', {mode!r}) as _fh:\n    _fh.write({text})"))
    (delta,) = [d for d in map(delta_of, session.raw_branch()) if d]
    assert delta.summary() == "wrote log.txt"
    assert world.move(start).line() == ("removed log.txt (set only on the branch left)" if mode == "x" else "restored log.txt")
    assert (mode == "x" and not (tmp_path / "log.txt").exists()) or (tmp_path / "log.txt").read_text() == "first line\n"


# ------------------------------------------------------------------------------ names that are one object stay one


def test_names_that_were_one_object_come_back_as_one_when_only_one_of_them_changed(tmp_path):
    session, ns, world, agent = make(tmp_path)
    run(agent, py("a = [1, 2]\nb = a\nc = {'inner': a}"))
    one = session.leaf_id
    run(agent, py("b = 'rebound'"))  # only b moves between the two nodes; a and c are the same at both
    assert world.move(one).line() == "restored b"
    assert ns["b"] is ns["a"] and ns["c"]["inner"] is ns["a"]
    run(agent, py("a.append(3)"))  # through one name: every name that shares it changed with it
    assert ns["b"] == [1, 2, 3]
    three = session.leaf_id
    world.move(one)
    assert ns["a"] == [1, 2] and ns["b"] is ns["a"] and ns["c"]["inner"] is ns["a"]
    fresh: dict = {}  # a new kernel: from the store, still one object
    World(Session.open(session.path), fresh, cwd=str(tmp_path)).move(three)
    assert fresh["a"] == [1, 2, 3] and fresh["b"] is fresh["a"] and fresh["c"]["inner"] is fresh["a"]


# ------------------------------------------------------------------------------ rewinding one side


def test_a_world_brought_into_the_conversation_is_left_as_that_node_held_it(tmp_path):
    from pi_jupyter.world.rewind import rewind

    session, ns, world, agent = make(tmp_path)
    root = session.leaf_id
    run(agent, py("y = 16"))
    one = session.leaf_id
    run(agent, py("a = [86]\nb = a") + "\n" + call("write", path="notes.txt", content="two"))
    two = session.leaf_id
    line = asyncio.run(rewind(world, agent, one, "world"))
    assert line.startswith(f"brought the world of {one} into this conversation (the conversation did not move): removed a, b and notes.txt")
    assert session.branch_ids()[-2] == two and "a" not in ns and ns["y"] == 16  # the conversation is still two's
    asyncio.run(rewind(world, agent, root, "world"))
    assert "y" not in ns
    asyncio.run(rewind(world, agent, two, "both"))
    assert ns["y"] == 16 and ns["a"] is ns["b"] and (tmp_path / "notes.txt").read_text() == "two"
    # back to the world brought in and the one before: each as recorded
    world.move(one)
    assert ns == {"y": 16} | {k: v for k, v in ns.items() if k.startswith("__")} and not (tmp_path / "notes.txt").exists()


def test_a_conversation_only_checkout_that_fails_leaves_the_next_checkout_a_whole_one(tmp_path):
    from pi_jupyter.world.rewind import rewind

    session, ns, world, agent = make(tmp_path)
    root = session.leaf_id
    run(agent, py("plan = 'A'"))
    with pytest.raises(Exception, match="not found"):
        asyncio.run(rewind(world, agent, "no-such-entry", "conversation"))
    assert world.stay_next is False
    ns["plan"] = "mine"
    agent.checkout_sync(root)  # a plain checkout, as the tree's or another caller's: the world moves with it
    assert world.position == root and world.take_line().startswith("left plan as it is")
    with pytest.raises(Exception, match="not found"):
        asyncio.run(rewind(world, agent, "no-such-entry", "both", force=True))
    assert world.force_next is False
    line = asyncio.run(rewind(world, agent, root, "both"))
    assert line == f"checked out {root}; leaf is now {root}" and ns["plan"] == "mine"  # at the root, plan is the user's own
    line = asyncio.run(rewind(world, agent, root, "conversation"))
    assert ns["plan"] == "mine" and "(the conversation only)" in line


# ------------------------------------------------------------------------------ grids and forks


def test_a_grid_branch_runs_the_notebooks_functions_in_its_own_world(tmp_path):
    from pi_jupyter.experiment import Experiment

    session, ns, world, agent = make(tmp_path, ns={"xs": [1, 2]})
    exec("def bump():\n    xs.append(99)\n", ns)  # noqa: S102 - a function defined in a cell of the notebook
    ns["bump"].__module__ = "__main__"
    world.move(session.leaf_id)
    exp = Experiment(
        session, 'call python with {{"code": "bump()"}}', repeat=2, tools=["python"], cwd=str(tmp_path),
        agent_options={"tool_extra": dict(agent.tool_extra)}, continue_from="start",
    )  # fmt: skip
    result = asyncio.run(exp.run())
    assert ns["xs"] == [1, 2]  # the notebook's own list: no branch reached it through bump's globals
    for row in result.rows:
        assert world.store.get_value(world_at(session, row.leaf)[0]["xs"]) == [1, 2, 99]
    world.grid_ended()
    assert world.move(result.rows[0].leaf).line() == "restored xs" and ns["xs"] == [1, 2, 99]


def test_after_a_restart_a_fork_moves_the_files_from_where_the_session_left_them(tmp_path):
    from pi_jupyter.notebook.world_cells import Tracker, attach, carry

    session, ns, world, agent = make(tmp_path)
    run(agent, call("write", path="notes.txt", content="one"))
    one = session.leaf_id
    run(agent, call("write", path="other.txt", content="two"))
    # a restarted kernel: the session opened again (the files on disk are where it left them), then forked at one
    tracker, fresh = Tracker(), {}
    reopened = Session.open(session.path)
    first = Agent(reopened, tools=["write"], cwd=str(tmp_path), tool_extra={"namespace": fresh})
    attach(first, fresh, tracker)
    forked = reopened.fork(one)
    follow = Agent(forked, tools=["write"], cwd=str(tmp_path), tool_extra={"namespace": fresh})
    attach(follow, fresh, tracker)
    assert carry(first, one, follow) == "removed other.txt (set only on the branch left)"
    assert not (tmp_path / "other.txt").exists() and (tmp_path / "notes.txt").read_text() == "one"


def test_commands_whose_effects_are_not_tracked_are_counted_once_on_the_paths_between(tmp_path):
    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["bash", "python"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    world.attach(agent)
    asyncio.run(agent.prompt("use bash\n```bash\necho shared > shared.txt\n```"))
    fork = session.leaf_id
    asyncio.run(agent.prompt("use bash\n```bash\necho one > one.txt\n```"))
    asyncio.run(agent.prompt(py("plan = 'one'")))
    one = session.leaf_id
    agent.checkout_sync(fork)
    asyncio.run(agent.prompt(py("plan = 'two'")))
    assert world.move(one).line() == "restored plan; 1 bash command had effects outside the tracked files"
    assert world.move(fork).line() == "removed plan (set only on the branch left); 1 bash command had effects outside the tracked files"


def test_a_world_brought_from_another_branch_is_undone_by_a_checkout_of_the_conversation_it_came_into(tmp_path):
    from pi_jupyter.world.rewind import rewind

    session, ns, world, agent = make(tmp_path)
    root = session.leaf_id
    run(agent, py("y = 16\na = [1]\nb = a"))
    two = session.leaf_id
    asyncio.run(rewind(world, agent, root, "both"))
    run(agent, py("x = 5"))
    three = session.leaf_id
    line = asyncio.run(rewind(world, agent, two, "world"))
    assert "restored a, b and y; removed x" in line and "x" not in ns and ns["a"] is ns["b"]
    back = asyncio.run(rewind(world, agent, three, "both"))
    assert back == f"checked out {three}; leaf is now {three}\nrestored x; removed a, b and y (set only on the branch left)"
    assert ns["x"] == 5 and not {"a", "b", "y"} & set(ns)


def test_names_that_were_one_object_before_a_call_rebound_them_come_back_as_one(tmp_path):
    shared = [1, 2]
    session, ns, world, agent = make(tmp_path, ns={"a": shared, "b": shared})
    start = session.leaf_id
    world.move(start)  # the user's a and b: one list, never the world's until the agent rebinds them
    run(agent, py("a = 'x'\nb = 'y'"))
    assert world.move(start).line() == "restored a and b"
    assert ns["a"] == [1, 2] and ns["a"] is ns["b"]


def test_a_name_sharing_an_object_the_code_changes_keeps_its_content_from_before_the_call(tmp_path):
    session, ns, world, agent = make(tmp_path)
    root = session.leaf_id
    run(agent, py("a = [1]\nb = a"))
    ns["b"].append(2)  # a cell of the user's, through b (as a notebook reads it: b, and a with it, may have changed)
    world.tracker.touched({"b"}, ns)
    assert world.move(root).line().startswith("left a and b as they are")
    session.checkout(root)
    agent.reload()
    start = session.leaf_id
    run(agent, py("a.append(3)"))  # through a: b changes with it, and both are kept as they were just before
    assert ns["b"] == [1, 2, 3]
    assert world.move(start).line() == "restored a and b"
    assert ns["a"] == [1, 2] and ns["b"] is ns["a"]
