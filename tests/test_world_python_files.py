"""Files the ``python`` tool writes (``open()``, ``to_csv``, ``np.save``, ``os.remove``, ``rename``) travel with the branch.

Real sessions on disk, the real Agent with the offline model calling the real python tool; the
files are seen through Python's audit events, their content before the call kept at once.
"""

from __future__ import annotations

import asyncio
import os

from pi_jupyter import Agent, Session
from pi_jupyter.world import World, delta_of


def py(code: str) -> str:
    return f"use python\n```python\n{code}\n```"


def make(tmp_path, ns=None):
    session = Session.create(tmp_path / "sessions")
    ns = {} if ns is None else ns
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    return session, ns, world, agent


def run(agent, text):
    return asyncio.run(agent.prompt(text))


def last_delta(session):
    return [d for e in session.raw_branch() for d in [delta_of(e)] if d][-1]


def test_files_written_removed_and_renamed_by_python_come_back_both_ways(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the kernel's folder is the project's, as in a notebook
    (tmp_path / "notes.txt").write_text("the user's notes")
    (tmp_path / "old.txt").write_text("old")
    (tmp_path / "a.txt").write_text("a")
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    code = (
        "def _go():\n"
        "    import os, pathlib\n"
        "    with open('out.csv', 'w') as fh:\n        fh.write('x,y\\n1,2\\n')\n"
        "    pathlib.Path('notes.txt').write_text('rewritten by the agent')\n"
        "    os.remove('old.txt')\n"
        "    os.rename('a.txt', 'b.txt')\n"
        "_go()\n"
    )
    assert run(agent, py(code)).ok
    world.settle()
    leaf = session.leaf_id
    assert last_delta(session).summary() == "wrote b.txt, notes.txt, out.csv; removed a.txt, old.txt"
    report = world.move(start)
    assert (tmp_path / "notes.txt").read_text() == "the user's notes"
    assert (tmp_path / "old.txt").read_text() == "old" and (tmp_path / "a.txt").read_text() == "a"
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "b.txt").exists()
    assert report.line() == "restored a.txt, notes.txt and old.txt; removed b.txt and out.csv (set only on the branch left)"
    world.move(leaf)
    assert (tmp_path / "out.csv").read_text() == "x,y\n1,2\n" and (tmp_path / "notes.txt").read_text() == "rewritten by the agent"
    assert (tmp_path / "b.txt").read_text() == "a" and not (tmp_path / "a.txt").exists() and not (tmp_path / "old.txt").exists()


def test_libraries_that_write_through_python_are_seen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    code = (
        "import numpy as np, pandas as pd, sqlite3\n"
        "pd.DataFrame({'a': [1, 2]}).to_csv('frame.csv', index=False)\n"
        "np.save('arr.npy', np.arange(3))\n"
        "con = sqlite3.connect('db.sqlite'); con.execute('create table t (x)'); con.commit(); con.close()\n"
    )
    assert run(agent, py(code)).ok
    world.settle()
    assert [f.path for f in last_delta(session).files] == ["arr.npy", "db.sqlite", "frame.csv"]
    world.move(start)
    assert not {"frame.csv", "arr.npy", "db.sqlite"} & set(os.listdir(tmp_path))


def test_a_call_that_never_finishes_leaves_nothing_wrapped(tmp_path):
    """A call cancelled before its end (the kernel interrupted) drops its recording: Python's file functions are its own again."""
    import builtins
    import gc

    session, ns, world, agent = make(tmp_path)
    original = builtins.open
    recording = world.python_call(ns, "x = 1")
    assert builtins.open is not original  # wrapped while the call runs
    del recording
    gc.collect()
    assert builtins.open is original and os.remove.__module__ in ("posix", "nt")


def test_a_folder_removed_with_shutil_rmtree_comes_back(tmp_path, monkeypatch):
    """``shutil.rmtree`` removes each file relative to its folder's descriptor: those files are kept all the same."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "deep").mkdir(parents=True)
    (tmp_path / "outputs" / "a.csv").write_text("a")
    (tmp_path / "outputs" / "deep" / "b.csv").write_text("b")
    session, ns, world, agent = make(tmp_path)
    start = session.leaf_id
    assert run(agent, py("def _go():\n    import shutil\n    shutil.rmtree('outputs')\n_go()")).ok
    world.settle()
    assert last_delta(session).summary() == "removed outputs/a.csv, outputs/deep/b.csv"
    assert world.move(start).line() == "restored outputs/a.csv and outputs/deep/b.csv"
    assert (tmp_path / "outputs" / "deep" / "b.csv").read_text() == "b" and (tmp_path / "outputs" / "a.csv").read_text() == "a"


def test_a_file_another_tool_writes_while_python_runs_is_not_the_python_calls(tmp_path, monkeypatch):
    """The calls of one answer run at once: the write tool's file is the write call's, not the sleeping python call's."""
    import json

    monkeypatch.chdir(tmp_path)
    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    python = json.dumps({"code": "import time\ntime.sleep(1.5)\nopen('mine.txt', 'w').write('python')"})
    write = json.dumps({"path": "notes.txt", "content": "the write tool's"})
    assert run(agent, f"call python with {python}\ncall write with {write}").ok
    by_tool = {}
    for e in session.raw_branch():
        d = delta_of(e)
        if d:
            by_tool[e["message"]["toolName"]] = sorted(f.path for f in d.files)
    assert by_tool == {"python": ["mine.txt"], "write": ["notes.txt"]}
