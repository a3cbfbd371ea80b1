"""A received notebook folder in a real kernel (default settings, offline model): its world is read, nothing in it runs.

The owner's kernel (the owner's key) runs two cells; the folder is then edited as an attacker
would (a crafted pickle under its correct hash, a module planted beside the notebook, a
``{"module": "this"}`` slot) and opened by another user's kernel: the first new ``%%pi`` cell,
checkouts (``--force`` too), compare, fork, the tree, ``%pi world`` and its gc, a replayed cell
and a grid run nothing from it and say in one line what they did not load. The owner's own
objects come back after a restart; a hostile object's pickling never wedges a session.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile_world import add_slots, pickle_body, plant, repoint
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.world import trust, world_at

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = "pi-sessions"
%config PiMagics.model = "offline/echo"
"""
FIRST = "import pandas as pd\ndef plan(x):\n    return x + 1\ndf = pd.DataFrame({'a': [1, 2]})\nn = 5"


def py_cell(code: str, options: str = "--tools python") -> str:
    call = json.dumps({"code": code}).replace("{", "{{").replace("}", "}}")
    return f"%%pi {options}\ncall python with {call}"


def kernel_in(folder: Path, key: Path) -> Kernel:
    k = Kernel(str(folder), env={trust.ENV_KEY: str(key)})
    assert k.run(SETUP).status == "ok"
    return k


def value(kernel: Kernel, expr: str) -> object:
    out = kernel.run(f"import json as _j; print(_j.dumps({expr}))")
    assert out.status == "ok", out.error
    return json.loads(out.stdout.strip().splitlines()[-1])


def owners_notebook(tmp_path: Path) -> tuple[Path, str]:
    """The owner's notebook folder after two cells (c1 sets plan, df and n; c2 sets n again); returns it and the session file."""
    owner = tmp_path / "owner"
    owner.mkdir()
    k = kernel_in(owner, tmp_path / "keys" / "owner")
    try:
        assert k.run(py_cell(FIRST), "c1").status == "ok"
        assert k.run(py_cell("n = 6"), "c2").status == "ok"
    finally:
        k.close()
    (path,) = sorted((owner / "pi-sessions").glob("*.jsonl"))
    return owner, str(path)


def test_a_received_notebook_folder_runs_nothing_and_says_what_it_did_not_load(tmp_path):
    owner, _ = owners_notebook(tmp_path)
    homework = tmp_path / "teacher" / "homework"
    shutil.copytree(owner, homework)
    (path,) = sorted((homework / "pi-sessions").glob("*.jsonl"))
    marker = tmp_path / "MARKER"
    session = Session.open(path, readonly=True)
    refs = world_at(session, session.leaf_id)[0]
    repoint(path, refs["plan"], plant(homework / "pi-sessions", pickle_body(marker), "other-key"))
    (homework / "helpers_evil.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    add_slots(path, {"helpers": {"module": "helpers_evil"}, "zen": {"module": "this"}})
    k = kernel_in(homework, tmp_path / "keys" / "teacher")
    outputs: list[str] = []
    try:
        opened = k.run(f"%pi open {path}")
        assert opened.status == "ok", opened.error
        first = k.run("%%pi\nhello", "new-cell")
        assert first.status == "ok", first.error
        (line,) = [x for x in first.stdout.splitlines() if x.startswith("pi: ")]
        assert line.startswith("pi: restored df, n and pd; could not restore helpers (module helpers_evil is in the session's")
        assert "could not restore zen (module this does something when it is imported" in line
        assert line.endswith(
            "could not restore plan (saved by someone else; `%pi world trust pi-sessions` loads that folder's objects, which can run code)"
        )
        assert value(k, "[n, df['a'].tolist(), 'plan' in globals()]") == [6, [1, 2], False]
        for cell, cell_id in [
            ("%pi checkout c1", None),
            ("%pi checkout c2 --force", None),
            ("%pi compare root c2", None),
            ("%pi tree --text", None),
            ("%pi world", None),
            ("%pi world gc --dry-run", None),
            ("%pi world gc", None),
            ("%pi world trust", None),
            (py_cell("n = 6", "--tools python --replay --pace instant"), "c2"),
            (py_cell("m = n + 1", "--tools python --repeat 2"), "grid"),
            ("%pi fork", None),
            ("%%pi\nafter the fork", "after-fork"),
        ]:
            out = k.run(cell, cell_id)
            outputs.append(out.stdout + out.stderr + json.dumps(out.data("text/plain")) + json.dumps(out.data("text/html")))
            assert out.status == "ok", (cell, out.error)
            assert not marker.exists(), cell
        assert "plan" not in json.loads(json.dumps(value(k, "sorted(k for k in globals() if not k.startswith('_'))")))
    finally:
        k.close()
    everything = "\n".join(outputs) + first.stdout
    assert "Zen of Python" not in everything and "Beautiful is better than ugly" not in everything
    assert "not loaded: plan (saved by someone else" in everything  # compare names what it did not load
    assert "no trusted folders" in everything


def test_the_owners_objects_come_back_after_a_restart(tmp_path):
    owner, path = owners_notebook(tmp_path)
    k = kernel_in(owner, tmp_path / "keys" / "owner")  # a new kernel: the restarted one
    try:
        assert k.run(f"%pi open {path}").status == "ok"
        first = k.run("%%pi\nwhat do we have?", "c3")
        assert first.status == "ok", first.error
        assert "pi: restored df, n, pd and plan" in first.stdout
        assert value(k, "[plan(2), n]") == [3, 6]
    finally:
        k.close()


def test_a_hostile_object_never_wedges_the_session(tmp_path):
    k = kernel_in(tmp_path, tmp_path / "keys" / "me")
    try:
        assert k.run("import pi_jupyter.world.values as _v; _v.SAVE_DEADLINE = 2").status == "ok"
        for body, why in [
            ("raise SystemExit(3)", "pickling it raised SystemExit"),
            ("import time; time.sleep(3600)", "pickling it took over 2 s"),
        ]:
            code = f"class Evil:\n    def __reduce__(self):\n        {body}\nevil = Evil()"
            out = k.run(py_cell(code), timeout=120)
            assert out.status == "ok", out.error
            assert any(f"evil (not saved: Evil: {why})" in md for md in out.data("text/markdown"))
            assert k.run("%pi status").stdout.strip().splitlines()[-1] == "state    idle"
        code = "class Evil:\n    def __reduce__(self):\n        import time; time.sleep(3600)\nevil = Evil()"
        assert k.run("_v.SAVE_DEADLINE = 600").status == "ok"
        started = k.run(py_cell(code, "--tools python --background"))
        assert started.status == "ok", started.error
        import time

        deadline = time.monotonic() + 60
        while "running" not in k.run("%pi status").stdout.strip().splitlines()[-1]:
            assert time.monotonic() < deadline
        while "pi-world save" not in k.run("import threading; print([t.name for t in threading.enumerate()])").stdout:
            assert time.monotonic() < deadline, "the pickling never started"
        aborted = k.run("%pi abort")
        assert aborted.stdout.strip() == "aborted; the partial answer is kept as 'aborted'"
        after = k.run(py_cell("x = 2"))
        assert after.status == "ok", after.error
        assert value(k, "x") == 2
    finally:
        k.close()
