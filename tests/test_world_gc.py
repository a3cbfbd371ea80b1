"""``pi-jupyter gc`` and ``%pi world gc`` as a user meets them: never an object a session still refers to, safe beside writers.

The rule (docs/world.md, *Reclaiming space*): a store serves the session files of its own folder. gc
keeps every object any of them refers to (a damaged line's refs too), every object saved or
used again in the last ``--min-age`` seconds, and removes nothing when a session file of the
folder cannot be read. A session copied to another folder uses the store beside it there;
it never refers to this one, so gc does not look for copies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from pi_jupyter import Session
from pi_jupyter.world import FOLDER_NAME, Store, World, world_at
from pi_jupyter.world.gc import collect
from pi_jupyter.world.values import serialize


def _aged(store: Store, ref: str, seconds: float = 3600) -> None:
    past = time.time() - seconds
    os.utime(store.path(ref), (past, past))


def _session_with(tmp_path, code: str):
    """A session whose python call ran ``code``: (session, namespace, world)."""
    ns: dict = {}
    session = Session.create(tmp_path / "sessions")
    world = World(session, ns, cwd=str(tmp_path))
    recording = world.python_call(ns, code)
    exec(code, ns)  # noqa: S102 - the test's own code, as the python tool would run it
    delta = recording.finish()
    from pi_jupyter.messages import TextContent, ToolResultMessage

    session.append_message(
        ToolResultMessage(tool_call_id="c", tool_name="python", content=[TextContent(text="ok")], details={"world": delta.to_data()})
    )
    return session, ns, world


def test_a_damaged_line_still_keeps_the_objects_it_names(tmp_path):
    session, ns, world = _session_with(tmp_path, "kept = list(range(1000))")
    ref = world_at(session, session.leaf_id)[0]["kept"]
    store = Store.beside(session.path)
    _aged(store, ref)
    text = open(session.path).read()
    damaged = text.replace('"world"', '"world', 1)  # one quote lost: the line no longer parses
    assert damaged != text
    with open(session.path, "w") as fh:
        fh.write(damaged)
    usage = collect(tmp_path / "sessions", min_age_s=0)
    assert store.has(ref) and usage.removed == 0


def test_nothing_is_removed_while_a_session_file_of_the_folder_cannot_be_read(tmp_path):
    session, ns, world = _session_with(tmp_path, "kept = list(range(1000))")
    store = Store.beside(session.path)
    orphan = store.put_value(serialize(list(range(5000))))
    _aged(store, orphan)
    unreadable = tmp_path / "sessions" / "on-a-drive-that-is-gone.jsonl"
    unreadable.symlink_to(tmp_path / "nowhere" / "s.jsonl")
    cli = [sys.executable, "-m", "pi_jupyter", "gc", str(tmp_path / "sessions"), "--min-age", "0"]
    done = subprocess.run(cli, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == f"pi-jupyter: error: {unreadable}: cannot be read (No such file or directory); nothing removed"
    assert store.has(orphan)
    unreadable.unlink()
    assert "; removed 1 (" in subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert not store.has(orphan)


def test_an_old_object_saved_again_is_young_again(tmp_path):
    """A writer that finds its value already stored (deduplicated) must not lose it to a gc that runs before its entry is written."""
    store = Store(tmp_path / "sessions" / FOLDER_NAME)
    value = serialize(list(range(3000)))
    ref = store.put_value(value)
    _aged(store, ref)
    assert store.put_value(value) == ref  # a new call makes the same value: not written again, but used again
    collect(tmp_path / "sessions")  # the default: objects of the last ten minutes are kept
    assert store.has(ref)


def test_a_long_call_keeps_what_it_saved_at_its_start(tmp_path):
    """A python call that runs for longer than the min age: what it saved before running must outlive a gc until its entry is written."""
    ns: dict = {"xs": list(range(2000))}
    session = Session.create(tmp_path / "sessions")
    world = World(session, ns, cwd=str(tmp_path))
    recording = world.python_call(ns, "xs.append(1)")  # xs saved now, as it is before the call
    before = recording.before_slots["xs"]
    _aged(world.store, before)  # ... the call runs for an hour
    ns["xs"].append(1)
    recording.finish()
    collect(tmp_path / "sessions")  # a gc between the end of the call and its entry
    assert world.store.has(before)


def test_gc_beside_busy_writers_never_removes_an_object_a_writer_just_used(tmp_path):
    store = Store(tmp_path / "sessions" / FOLDER_NAME)
    values = [serialize(list(range(i, i + 500))) for i in range(60)]
    refs = [store.put_value(v) for v in values]
    lost: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            for v, ref in zip(values, refs, strict=True):
                try:
                    _aged(Store(tmp_path / "sessions" / FOLDER_NAME), ref)  # old and unused: a gc may take it
                except FileNotFoundError:
                    pass  # taken already (between a check and the aging: the writer would die of it)
                store.put_value(v)  # used again: from here on, a gc must keep it
                if not store.has(ref):
                    lost.append(ref)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(20):
            collect(tmp_path / "sessions")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not lost


def test_gc_removes_the_half_written_leftovers_of_a_crash(tmp_path):
    store = Store(tmp_path / "sessions" / FOLDER_NAME)
    store.put_value(serialize([1, 2, 3]))
    leftover = tmp_path / "sessions" / FOLDER_NAME / "objects" / ".tmp-0123abcd"
    leftover.write_bytes(b"x" * 1000)
    past = time.time() - 3600
    os.utime(leftover, (past, past))
    usage = collect(tmp_path / "sessions")
    assert not leftover.exists() and usage.removed == 1
