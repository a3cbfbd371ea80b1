"""A session folder from elsewhere is data, never code: crafted objects, records, links and pipes, opened as a victim would.

Each folder is made by the package itself (the owner's kernel, the owner's key) and then edited
the way an attacker would (see ``hostile_world``): a value replaced by a crafted pickle named
by its correct hash, with no signature, a zeroed, a forged or another key's signature; module
slots naming a module planted in the folder; links and pipes where the store expects files.
The victim opens it with their own key. Nothing may run (the payload's marker file stays
absent), nothing outside the folder is written or removed, nothing hangs, and one line names
what was not loaded while everything else comes back. The owner's own objects still load, in
a fresh process and with the key carried to another place; plain data needs no trust at all.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hostile_world import SIGNATURES, add_slots, pickle_body, plant, repoint

from pi_jupyter import Agent, Session
from pi_jupyter.agent.redact import find_secrets
from pi_jupyter.world import FOLDER_NAME, Store, World, delta_of, trust, world_at

ENV = trust.ENV_KEY
CODE = """import pandas as pd, numpy as np
def plan(x):
    return x + 1
df = pd.DataFrame({"a": [1.5, 2.5], "s": ["x", "y"], "c": pd.Categorical(["u", "v"])})
arr = np.arange(5)
n = 5
"""
HINT = "loads that folder's objects, which can run code"


def py(code: str) -> str:
    return f"use python\n```python\n{code}\n```"


@dataclass
class Folder:
    project: Path
    sessions: Path
    path: str
    start: str
    leaf: str
    refs: dict
    marker: Path


def owner_folder(tmp_path: Path, monkeypatch, code: str = CODE) -> Folder:
    """The owner's project: one python call set a function, a frame, an array and a number (the owner's key)."""
    monkeypatch.setenv(ENV, str(tmp_path / "keys" / "owner"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)  # the kernel's folder is the notebook's
    session = Session.create(project / "pi-sessions")
    ns: dict = {"__name__": "__main__"}
    world = World(session, ns, cwd=str(project))
    agent = Agent(session, tools=["python"], cwd=str(project), tool_extra={"namespace": ns, "world": world})
    start = session.leaf_id
    assert asyncio.run(agent.prompt(py(code))).ok
    world.settle()
    refs = world_at(session, session.leaf_id)[0]
    return Folder(project, project / "pi-sessions", session.path, start, session.leaf_id, refs, tmp_path / "MARKER")


def victim(tmp_path: Path, monkeypatch, folder: Folder, ns: dict | None = None) -> tuple[World, dict]:
    monkeypatch.setenv(ENV, str(tmp_path / "keys" / "victim"))
    ns = {} if ns is None else ns
    return World(Session.open(folder.path), ns, cwd=str(folder.project)), ns


def hint(folder: Folder, *, fresh_process: bool = False) -> str:
    """The hint as the line gives it: the folder relative to the working folder (the project) when inside it.

    The command is the shell's (``pi-jupyter trust``) in a plain process and the magic inside IPython: an
    earlier test of the same run may have left an IPython shell in this process.
    """
    from pi_jupyter.world.trust import SHELL_HINT, command_form

    form = SHELL_HINT if fresh_process else command_form()
    return f"`{form.format(folder=os.path.relpath(folder.sessions))}` {HINT}"


# ------------------------------------------------------------------------------ crafted objects


@pytest.mark.parametrize("signature", SIGNATURES)
def test_a_crafted_pickle_under_its_correct_hash_is_not_loaded_and_everything_else_comes_back(tmp_path, monkeypatch, signature):
    """Someone edits the owner's shared folder: the owner's own next checkout loads the rest and names the crafted object."""
    folder = owner_folder(tmp_path, monkeypatch)
    ref = plant(folder.sessions, pickle_body(folder.marker), signature, victim_key=trust.user_key())  # forged: the owner's key id
    repoint(folder.path, folder.refs["plan"], ref)
    ns: dict = {}
    line = World(Session.open(folder.path), ns, cwd=str(folder.project)).move(folder.leaf).line()
    assert not folder.marker.exists()
    why = {
        "piw1": "saved by someone else, or by pi-jupyter before objects were signed",
        "unsigned": "saved by someone else, or by pi-jupyter before objects were signed",
        "forged": "its signature does not match: it was changed after it was saved",
        "other-key": "saved by someone else",
    }[signature]
    assert line == f"restored arr, df, n, np and pd; could not restore plan ({why}; {hint(folder)})"
    assert ns["df"]["c"].tolist() == ["u", "v"] and ns["arr"].tolist() == [0, 1, 2, 3, 4] and "plan" not in ns


def test_the_owners_objects_come_back_in_a_fresh_process_and_wherever_the_key_is_carried(tmp_path, monkeypatch):
    folder = owner_folder(tmp_path, monkeypatch)
    check = (
        "import sys\nfrom pi_jupyter import Session\nfrom pi_jupyter.world import World\n"
        f"ns = {{}}\nline = World(Session.open({folder.path!r}), ns, cwd={str(folder.project)!r}).move({folder.leaf!r}).line()\n"
        "print(line)\nprint(ns['plan'](2) if 'plan' in ns else 'no plan')\n"
    )

    def fresh(key: str) -> list[str]:
        env = dict(os.environ, **{ENV: key})
        done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()

    assert fresh(str(tmp_path / "keys" / "owner")) == ["restored arr, df, n, np, pd and plan", "3"]
    elsewhere = tmp_path / "another-machine" / "my.key"
    elsewhere.parent.mkdir()
    shutil.copy(tmp_path / "keys" / "owner", elsewhere)  # the user carries the key file (README: $PI_JUPYTER_WORLD_KEY)
    assert fresh(str(elsewhere)) == ["restored arr, df, n, np, pd and plan", "3"]
    stranger = fresh(str(tmp_path / "keys" / "stranger"))
    said = f"restored arr, df, n, np and pd; could not restore plan (saved by someone else; {hint(folder, fresh_process=True)})"
    assert stranger == [said, "no plan"]
    assert oct((tmp_path / "keys" / "owner").stat().st_mode & 0o777) == "0o600"  # made on the first save, for its user alone


def test_plain_data_someone_else_saved_checks_out_with_no_trust_step(tmp_path, monkeypatch):
    code = (
        "import numpy as np, pandas as pd, datetime, decimal, pathlib\n"
        "frame = pd.DataFrame({'x': np.linspace(0, 1, 1000), 'n': np.arange(1000), 'label': [f'item {i}' for i in range(1000)],\n"
        "                      'kind': pd.Categorical(['a', 'b'] * 500), 'when': pd.date_range('2024', periods=1000, tz='UTC'),\n"
        "                      'maybe': pd.array([1, None] * 500, dtype='Int64')}).set_index('label')\n"
        "series = frame['x'].rename('x2')\n"
        "grid = np.arange(12.0).reshape(3, 4).T\nwords = np.array(['a', 'bb'])\n"
        "config = {'lr': 0.1, 'layers': (64, 32), 'tags': {'a', 'b'}, 'seed': 2**70, 'when': datetime.date(2024, 1, 2),\n"
        "          'price': decimal.Decimal('1.10'), 'data': pathlib.Path('data/x.csv'), 1: [1 + 2j, b'raw', None]}\n"
        "count = 3\nratio = 0.25\nname = 'exp-1'\n"
    )
    folder = owner_folder(tmp_path, monkeypatch, code)
    owner_ns: dict = {}
    exec(code, owner_ns)  # noqa: S102 - the same values, to compare with what comes back
    world, ns = victim(tmp_path, monkeypatch, folder)
    line = world.move(folder.leaf).line()
    assert line == "restored config, count, datetime, decimal, frame, grid, name, np, pathlib, pd and 3 more"
    assert {"ratio", "series", "words"} <= set(ns)
    for key in ("frame", "series"):
        assert ns[key].equals(owner_ns[key]) and type(ns[key].index) is type(owner_ns[key].index)
    assert ns["frame"].dtypes.equals(owner_ns["frame"].dtypes) and ns["series"].name == "x2"
    assert np.array_equal(ns["grid"], owner_ns["grid"]) and ns["words"].dtype == owner_ns["words"].dtype
    assert ns["config"] == owner_ns["config"] and ns["count"] == 3 and ns["name"] == "exp-1"
    assert ns["grid"].flags.writeable  # a view of the bytes read, as a copy the user can change


def test_trusting_a_folder_loads_what_it_held_then_not_what_came_later_and_can_be_revoked(tmp_path, monkeypatch):
    from pi_jupyter.world.values import serialize

    folder = owner_folder(tmp_path, monkeypatch)
    before = {p: p.stat().st_mtime_ns for p in folder.sessions.rglob("*")}
    env = dict(os.environ, **{ENV: str(tmp_path / "keys" / "victim")})
    cli = [sys.executable, "-m", "pi_jupyter", "trust"]
    done = subprocess.run([*cli, str(folder.sessions)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"trusted {folder.sessions}: 1 object saved by someone else will load (a pickle can run code); objects added to the folder"
        f" later are not covered; `pi-jupyter trust --revoke {folder.sessions}` undoes it"
    )
    listed = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120).stdout
    assert f"  {folder.sessions}: 1 object, since " in listed and str(tmp_path / "keys" / trust.TRUST_NAME) in listed
    assert {p: p.stat().st_mtime_ns for p in folder.sessions.rglob("*")} == before  # nothing written into the folder
    world, ns = victim(tmp_path, monkeypatch, folder)
    assert world.move(folder.leaf).line() == "restored arr, df, n, np, pd and plan" and ns["plan"](2) == 3

    def twice(x):
        return 2 * x

    monkeypatch.setenv(ENV, str(tmp_path / "keys" / "owner"))
    later = Store(folder.sessions / FOLDER_NAME).put_value(serialize(twice))  # the owner saves more, after the trust
    monkeypatch.setenv(ENV, str(tmp_path / "keys" / "victim"))
    with pytest.raises(Exception, match="saved by someone else"):
        Store(folder.sessions / FOLDER_NAME).get_value(later)
    done = subprocess.run([*cli, "--revoke", str(folder.sessions)], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == f"{folder.sessions} is no longer trusted: its objects saved by someone else are not loaded"
    world, ns = victim(tmp_path, monkeypatch, folder)
    assert "could not restore plan (saved by someone else" in world.move(folder.leaf).line()


# ------------------------------------------------------------------------------ names in a record


def test_module_slots_import_only_installed_modules_never_one_planted_in_the_folder(tmp_path, monkeypatch, capsys):
    folder = owner_folder(tmp_path, monkeypatch)
    planted = f"open({str(folder.marker)!r}, 'w').write('imported')\n"
    (folder.project / "helpers_evil.py").write_text(planted)
    (folder.sessions / "helpers_evil2.py").write_text(planted)
    shadowed = next(m for m in ("colorsys", "sndhdr", "wave", "netrc", "mailcap") if m not in sys.modules)
    (folder.project / f"{shadowed}.py").write_text(planted)  # shadows a standard module not imported yet
    monkeypatch.chdir(folder.project)
    monkeypatch.syspath_prepend(str(folder.project))  # the kernel's folder is on sys.path, as in a notebook
    monkeypatch.syspath_prepend(str(folder.sessions))
    slots = {
        "helpers": {"module": "helpers_evil"},
        "helpers2": {"module": "helpers_evil2"},
        "std": {"module": shadowed},
        "zen": {"module": "this"},
        "fly": {"module": "antigravity"},
        "runner": {"module": "json.__main__"},
        "j": {"module": "json"},
        "odd": {"module": "os; print(1)"},
    }
    add_slots(folder.path, slots)
    world, ns = victim(tmp_path, monkeypatch, folder)
    line = world.move(folder.leaf).line()
    assert not folder.marker.exists() and "Zen of Python" not in capsys.readouterr().out
    assert {"this", "antigravity", "helpers_evil", "helpers_evil2", shadowed} & set(sys.modules) == set()
    in_folder = (
        "is in the session's or the project's folder, not installed: a checkout imports only installed modules"
        " (import it yourself if you trust it)"
    )
    acts = "does something when it is imported; a checkout does not import it (import it yourself)"
    for clause in (
        f"could not restore helpers (module helpers_evil {in_folder})",
        f"could not restore helpers2 (module helpers_evil2 {in_folder})",
        f"could not restore std (module {shadowed} {in_folder})",
        f"could not restore zen (module this {acts})",
        f"could not restore fly (module antigravity {acts})",
        f"could not restore runner (module json.__main__ {acts})",
        "could not restore odd (not a module name)",
    ):
        assert clause in line
    assert ns["j"] is sys.modules["json"]


def test_a_records_variable_names_are_data_not_commands(tmp_path, monkeypatch):
    folder = owner_folder(tmp_path, monkeypatch)
    n_ref = folder.refs["n"]
    names = {"__builtins__": n_ref, "get_ipython": n_ref, "not a name": n_ref, "for": n_ref, "_private": n_ref}
    add_slots(folder.path, {**names, "dots": "../" * 8 + "etc/passwd"})  # a ref is a content hash, never a path
    world, ns = victim(tmp_path, monkeypatch, folder, {"__builtins__": __builtins__})
    line = world.move(folder.leaf).line()
    assert "could not restore dots (the saved object ../../../../ is not named as the world names objects)" in line
    for name in ("__builtins__", "get_ipython", "not a name", "for", "_private"):
        assert f"could not restore {name} (not a variable name the world keeps)" in line
    assert ns["__builtins__"] is __builtins__ and "get_ipython" not in ns and ns["n"] == 5


# ------------------------------------------------------------------------------ a hostile file system


def test_a_restore_never_writes_through_a_link_named_as_its_temporary_file(tmp_path, monkeypatch):
    outside = tmp_path / "outside.txt"
    outside.write_text("not the project's")
    folder = owner_folder(tmp_path, monkeypatch, "def _go():\n    open('notes.txt', 'w').write('branch A')\n_go()")
    (folder.project / "notes.txt").unlink()
    (folder.project / "notes.txt.pi-restore").symlink_to(outside)  # the name the temporary file used to have
    os.link(outside, folder.project / ".notes.txt.pi-restore")
    world, ns = victim(tmp_path, monkeypatch, folder)
    world.files_at = folder.start
    assert world.move(folder.leaf).line() == "restored notes.txt"
    assert (folder.project / "notes.txt").read_text() == "branch A" and outside.read_text() == "not the project's"
    assert sorted(p.name for p in folder.project.iterdir()) == [".notes.txt.pi-restore", "notes.txt", "notes.txt.pi-restore", "pi-sessions"]


def test_a_restore_on_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch):
    folder = owner_folder(tmp_path, monkeypatch, "def _go():\n    open('data.bin', 'wb').write(bytes(range(256)) * 4096)\n_go()")
    (folder.project / "data.bin").unlink()
    script = (
        "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))  # the disk fills 100 KB into the file\n"
        "from pi_jupyter import Session\nfrom pi_jupyter.world import World\n"
        f"w = World(Session.open({folder.path!r}), {{}}, cwd={str(folder.project)!r})\nw.files_at = {folder.start!r}\n"
        f"print(w.move({folder.leaf!r}).line())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "could not restore data.bin (File too large)"
    assert sorted(p.name for p in folder.project.iterdir()) == ["pi-sessions"]  # no data.bin, no partial temporary file


@pytest.mark.timeout(120)
def test_gc_never_follows_a_link_out_of_the_store_nor_hangs_on_a_pipe(tmp_path, monkeypatch):
    folder = owner_folder(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    old = time.time() - 7200
    for i in range(3):
        (elsewhere / f"precious{i}").write_text("keep me")
        os.utime(elsewhere / f"precious{i}", (old, old))
    objects = folder.sessions / FOLDER_NAME / "objects"
    linked, odd = [p for p in ("ab", "cd", "ef", "01", "23", "45") if not (objects / p).exists()][:2]
    (objects / linked).symlink_to(elsewhere)  # a folder of objects that leads out of the store
    (objects / odd).mkdir()
    (objects / odd / ("e" * 38)).symlink_to(elsewhere / "precious0")  # an object that is a link
    os.mkfifo(objects / odd / ("f" * 38))  # an object that is a pipe
    cli = [sys.executable, "-m", "pi_jupyter", "gc", str(folder.sessions), "--min-age", "0"]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious0", "precious1", "precious2"]
    assert (objects / linked).is_symlink() and (objects / odd / ("e" * 38)).is_symlink()
    world, ns = victim(tmp_path, monkeypatch, folder)
    assert (
        world.move(folder.leaf).line()
        == "restored arr, df, n, np and pd; could not restore plan (saved by someone else; " + hint(folder) + ")"
    )
    os.mkfifo(folder.sessions / "pipe.jsonl")  # a session file that is a pipe: gc says so, removes nothing
    (folder.sessions / "zero.jsonl").symlink_to("/dev/zero")
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().startswith(
        f"pi-jupyter: error: {folder.sessions / 'pipe.jsonl'}: is a named pipe (FIFO), not a regular file"
    )
    assert done.stderr.strip().endswith("; nothing removed")


@pytest.mark.timeout(120)
def test_pipes_links_and_lying_lengths_in_the_store_never_hang_nor_allocate(tmp_path, monkeypatch):
    import resource

    folder = owner_folder(tmp_path, monkeypatch)
    store = Store(folder.sessions / FOLDER_NAME)
    for name in ("plan", "df", "arr", "n"):
        store.path(folder.refs[name]).unlink()
    os.mkfifo(store.path(folder.refs["plan"]))
    store.path(folder.refs["df"]).symlink_to("/dev/zero")
    import struct

    store.path(folder.refs["arr"]).write_bytes(struct.pack("<4sccQ", b"PIW1", b"v", b"r", 3_100_000_000) + b"x" * 12)  # 26 bytes
    fake_zstd = b"\x28\xb5\x2f\xfd\xa4" + (3_100_000_000).to_bytes(4, "little") + b"\x00" * 8
    store.path(folder.refs["n"]).write_bytes(struct.pack("<4sccQ", b"PIW1", b"v", b"z", 3_100_000_000) + fake_zstd)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    world, ns = victim(tmp_path, monkeypatch, folder)
    line = world.move(folder.leaf).line()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    plan, df, arr, n = (folder.refs[k][:12] for k in ("plan", "df", "arr", "n"))
    assert line == (
        "restored np and pd; "
        f"could not restore arr (the saved object {arr} is cut short); "
        f"could not restore df (the saved object {df} is not one of the world's (it is a link: not followed)); "
        f"could not restore n (the saved object {n} is damaged (it does not decompress)); "
        f"could not restore plan (the saved object {plan} is not one of the world's (it is a named pipe (FIFO): not followed))"
    )
    assert grown_mb < 200, grown_mb


# ------------------------------------------------------------------------------ every reader is a reader


@pytest.mark.timeout(300)
def test_every_shell_command_reads_a_crafted_folder_without_running_it(tmp_path, monkeypatch):
    folder = owner_folder(tmp_path, monkeypatch)
    ref = plant(folder.sessions, pickle_body(folder.marker), "other-key")
    repoint(folder.path, folder.refs["plan"], ref)
    add_slots(folder.path, {"zen": {"module": "this"}})
    page = tmp_path / "page.html"
    commands = [
        ["info", folder.path],
        ["tree", folder.path],
        ["context", folder.path],
        ["export", folder.path, "-o", str(page)],
        ["export", folder.path, "--format", "markdown", "-o", str(tmp_path / "page.md")],
        ["gc", str(folder.sessions), "--dry-run"],
        ["gc", str(folder.sessions)],
        ["class", str(folder.sessions), "-o", str(tmp_path / "class.html")],
        ["trust"],
        [
            "experiment",
            folder.path,
            "--prompt",
            "with k = {k}, use python\n```python\nm = n + 1\n```",
            "--vary",
            "k=1,2",
            "--tools",
            "python",
        ],  # noqa: E501
    ]
    env = dict(os.environ, **{ENV: str(tmp_path / "keys" / "victim")})
    for words in commands:
        done = subprocess.run(
            [sys.executable, "-m", "pi_jupyter", *words], capture_output=True, text=True, timeout=120, env=env, cwd=folder.project
        )
        assert done.returncode in (0, 1), (words, done.stderr)
        assert not folder.marker.exists(), words
        assert "Zen of Python" not in done.stdout, words
    assert page.exists()


def test_compare_describes_what_it_may_not_load_from_the_record_as_escaped_capped_text(tmp_path, monkeypatch):
    from pi_jupyter.views.compare.world import compare_worlds

    folder = owner_folder(tmp_path, monkeypatch)
    ref = plant(folder.sessions, pickle_body(folder.marker), "unsigned")
    text = (
        Path(folder.path)
        .read_text()
        .replace(folder.refs["plan"], ref)
        .replace('"what":"function"', '"what":"\\u001b[31m' + "x" * 5000 + '"')
    )
    Path(folder.path).write_text(text)
    monkeypatch.setenv(ENV, str(tmp_path / "keys" / "victim"))
    session = Session.open(folder.path)
    found = compare_worlds(session, [("start", folder.start), ("leaf", folder.leaf)])
    assert not folder.marker.exists()
    row = next(r for r in found.rows if r.key == "plan")
    assert row.cells[1].startswith("\\x1b[31mxxx") and len(row.cells[1]) <= 120 and "\x1b" not in str(found)
    assert found.note == f"not loaded: plan (saved by someone else, or by pi-jupyter before objects were signed; {hint(folder)})"
    assert "\x1b" not in found._repr_html_() and found.note in str(found)


def test_the_class_view_does_not_follow_a_students_link_out_of_the_folder(tmp_path, monkeypatch):
    from pi_jupyter.views.class_view.view import class_view

    folder = owner_folder(tmp_path, monkeypatch)
    private = tmp_path / "private"
    private.mkdir()
    shutil.copy(folder.path, private / "diary.jsonl")
    Path(private / "diary.jsonl").write_text(Path(private / "diary.jsonl").read_text().replace("plan(x)", "SECRET_DIARY(x)"))
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    shutil.copy(folder.path, submissions / "alice.jsonl")
    (submissions / "bob.jsonl").symlink_to(private / "diary.jsonl")
    view = class_view(submissions)
    assert [s.student for s in view.folder.sessions] == ["alice"]
    assert [(n.name, n.why) for n in view.folder.unreadable] == [("bob.jsonl", "a link to a file outside the folder: not read")]


@pytest.mark.timeout(300)
def test_dask_workers_never_unpickle_a_crafted_start(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from pi_jupyter.experiment import experiment
    from pi_jupyter.experiment.dask_executor import DaskExecutor

    folder = owner_folder(tmp_path, monkeypatch)
    ref = plant(folder.sessions, pickle_body(folder.marker), "other-key")
    repoint(folder.path, folder.refs["plan"], ref)
    monkeypatch.setenv(ENV, str(tmp_path / "keys" / "victim"))  # the workers start with the victim's environment
    session = Session.open(folder.path)
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=40
    )
    try:
        with distributed.Client(cluster) as client:
            result = asyncio.run(
                experiment(session, "k = {k}; use python\n```python\nm = n + 1\nprint(m)\n```", vary={"k": ["1", "2"]}, tools=["python"],
                           cwd=str(folder.project), executor=DaskExecutor(client=client), continue_from="leaf")
            )  # fmt: skip
    finally:
        cluster.close()
    assert [r.state for r in result.rows] == ["done", "done"]
    assert not folder.marker.exists()
    printed = [
        [
            e["message"]["content"][0]["text"]
            for e in Session.open(folder.path).raw_branch(r.leaf)
            if (e.get("message") or {}).get("toolName") == "python"
        ][-1]
        for r in result.rows
    ]
    assert [p.splitlines()[0] for p in printed] == ["6", "6"]  # n came back in both branches (plain data); plan did not


# ------------------------------------------------------------------------------ issue 41: hostile objects and secrets in arrays


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("raise SystemExit(3)", "Evil: pickling it raised SystemExit"),
        ("raise KeyboardInterrupt", "Evil: pickling it raised KeyboardInterrupt"),
        ("import time\n        time.sleep(3600)", "Evil: pickling it took over 1 s"),
    ],
)
def test_a_hostile_object_is_named_not_saved_and_the_run_ends(tmp_path, monkeypatch, body, why):
    from pi_jupyter.world import values

    monkeypatch.setattr(values, "SAVE_DEADLINE", 1.0)
    session = Session.create(tmp_path / "sessions")
    ns: dict = {"__name__": "__main__"}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    sleepy = "    def __getattr__(self, name):\n        import time\n        time.sleep(3600)\n"  # describing it must not ask it anything
    code = f"class Evil:\n    def __reduce__(self):\n        {body}\n{sleepy}evil = Evil()\nok = 1"
    started = time.monotonic()
    result = asyncio.run(agent.prompt(py(code)))  # SystemExit never escapes it
    assert result.ok and not agent.is_running and time.monotonic() - started < 60
    (delta,) = [d for e in session.raw_branch() for d in [delta_of(e)] if d]
    assert delta.summary() == f"set Evil (class), evil (not saved: {why}), ok"
    asyncio.run(agent.prompt(py("after = 2")))  # the session goes on
    assert ns["after"] == 2


def test_secrets_in_arrays_of_text_or_bytes_are_never_saved(tmp_path, monkeypatch):
    secret = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    session = Session.create(tmp_path / "sessions")
    ns: dict = {"__name__": "__main__"}
    world = World(session, ns, cwd=str(tmp_path), has_secret=lambda text: bool(find_secrets(text)))
    agent = Agent(session, tools=["python"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    code = (
        "import os, numpy as np, pandas as pd\nkey = os.environ['OPENAI_API_KEY']\n"
        "as_bytes = np.array([key.encode()])\nas_text = np.array([key])\nas_uint8 = np.frombuffer(key.encode(), dtype=np.uint8)\n"
        "in_frame = pd.DataFrame({'k': [key, 'x']})\nin_text_col = pd.DataFrame({'k': pd.array([key], dtype='string')})\n"
        "fine = np.array(['nothing to see'])\n"
    )
    assert asyncio.run(agent.prompt(py(code))).ok
    blobs = b"".join(p.read_bytes() for p in (tmp_path / "sessions" / FOLDER_NAME).rglob("*") if p.is_file())
    for form in (secret.encode(), secret.encode("utf-32-le")):
        assert form not in blobs
    (delta,) = [d for e in session.raw_branch() for d in [delta_of(e)] if d]
    unsaved = {c.name for c in delta.vars if isinstance(c.after, dict) and "holds a secret" in c.after.get("unsaved", "")}
    assert unsaved == {"key", "as_bytes", "as_text", "as_uint8", "in_frame", "in_text_col"}
    assert isinstance(world_at(session, session.leaf_id)[0]["fine"], str)
