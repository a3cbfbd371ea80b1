"""A randomized model of a branch's world, driving a real kernel: every value and file is the target's or named.

:class:`WorldModel` runs random sequences of what a notebook user does (``%%pi`` cells whose
offline model calls ``python`` and ``write``, cells of the user's own, re-runs, checkouts with
``--force``, ``--conversation-only`` and ``--world-only``, forks and returns to the first
session, grids, kernel restarts) in a real kernel, and keeps its own model of every node's
world: the values each step leaves, computed from what the code does, never read back from the
world. After each step it reads every variable and file the tools ever touched (values, and
which names are one object) and compares them with the model: a difference is *named* when the
step's output names it (``left … as it is``, ``could not restore …``, …), else *silent*.
The rules it holds the world to are the README's (*What is and is not restored*).

Used by ``tests/test_world_random_kernel.py`` (a short run) and ``bench/bench_world_random.py``
(the long one, with figures).
"""

from __future__ import annotations

import copy
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_client import Kernel

VARS = ("x", "y", "xs", "d", "a", "b", "fh", "conn")
FILES = ("f1.txt", "f2.txt")
UNKNOWN = "?unknown"

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
def bump():
    xs.append(99)
def _pi_probe(_cell=None):
    import json as _json, os as _os
    _g = globals()
    _out = {{"vars": {{}}, "alias": {{}}, "files": {{}}}}
    for _n in {vars!r}:
        if _n not in _g:
            _out["vars"][_n] = ["absent"]
            continue
        _v = _g[_n]
        if hasattr(_v, "readable") and hasattr(_v, "mode"):
            try:
                _p = _v.tell()
            except Exception:
                _p = None
            _out["vars"][_n] = ["handle", _os.path.basename(str(_v.name)), _v.mode, _p]
        elif type(_v).__name__ == "Connection":
            _out["vars"][_n] = ["conn"]
        else:
            _out["vars"][_n] = ["value", _v]
        _out["alias"][_n] = next(_m for _m in {vars!r} if _m in _g and _g[_m] is _v)
    for _f in {files!r}:
        _out["files"][_f] = open(_f).read() if _os.path.isfile(_f) else None
    _s = __import__("pi_jupyter").current_session()
    _out["session"] = [_s.path, _s.leaf_id]
    _r = _g.get("_last")
    from pi_jupyter.notebook.cells import cell_runs as _runs
    _c = _runs(_s, _cell)[-1] if _cell else None
    _st = _c.started_from if _c else None
    _up = _s.raw_entry(_st).get("parentId") if _st else None
    _out["run"] = [_st, _c.end if _c else None, [r.leaf for r in getattr(_r, "rows", [])], _up]
    print("PROBE" + _json.dumps(_out))
"""


class Absent:
    def __repr__(self) -> str:
        return "<absent>"

    def __copy__(self) -> Absent:
        return self

    def __deepcopy__(self, memo: Any) -> Absent:
        return self


ABSENT = Absent()


@dataclass
class Handle:
    path: str
    mode: str = "r"
    pos: int = 0
    gen: int = field(default=0, compare=False)
    """The kernel it was opened in (another kernel opens it again)."""


@dataclass(eq=False)
class Conn:
    """A connection: saved nowhere, held by the kernel that made it (``gen``)."""

    gen: int = 0


def same(a: Any, b: Any) -> bool:
    """Two model values that are equal (``UNKNOWN`` equals nothing)."""
    if isinstance(a, str) and a == UNKNOWN or isinstance(b, str) and b == UNKNOWN:
        return False
    return canon(a) == canon(b)


def canon(value: Any) -> list[Any]:
    if value is ABSENT:
        return ["absent"]
    if isinstance(value, Handle):
        return ["handle", value.path, value.mode, value.pos]
    if isinstance(value, Conn):
        return ["conn"]
    return ["value", json.loads(json.dumps(value))]


def from_canon(item: list[Any]) -> Any:
    kind = item[0]
    if kind == "absent":
        return ABSENT
    if kind == "handle":
        return Handle(item[1], item[2], item[3] or 0)
    if kind == "conn":
        return Conn()
    return copy.deepcopy(item[1])


@dataclass
class Node:
    id: str
    parent: str | None
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """key -> (before, after); a var's values are objects of one snapshot (aliasing kept), a file's its text."""


@dataclass
class Pos:
    vars: Any
    files: Any
    leaf: Any


@dataclass
class Counts:
    sequences: int = 0
    steps: int = 0
    checkouts: int = 0
    checked: int = 0
    correct: int = 0
    named: int = 0
    silent: int = 0
    restarts: int = 0

    def line(self) -> str:
        return (
            f"{self.sequences} sequences, {self.steps} steps, {self.checkouts} checkouts, {self.restarts} restarts; "
            f"{self.checked} values checked: {self.correct} correct, {self.named} named, {self.silent} silent"
        )


# ---------------------------------------------------------------------------------------- what code does

Snippet = tuple[str, Any]
"""``(code, effect(vars, files))``: the code the kernel runs and what it does, applied to the model."""


def agent_snippets(rng: random.Random, live: dict[str, Any], files: dict[str, Any], *, grid: bool = False, gen: int = 0) -> list[Snippet]:
    """The python snippets an agent's call may run now (``grid``: none that writes files through python, which a grid does not follow)."""
    n = rng.randint(1, 99)
    out: list[Snippet] = [
        (f"x = {n}", lambda v, f: v.__setitem__("x", n)),
        (f"y = {n} * 2", lambda v, f: v.__setitem__("y", n * 2)),
        (f"xs = [{n}, {n + 1}]", lambda v, f: v.__setitem__("xs", [n, n + 1])),
        (f"d = {{'k': {n}}}", lambda v, f: v.__setitem__("d", {"k": n})),
        (f"a = [{n}]; b = a", lambda v, f: (v.__setitem__("a", [n]), v.__setitem__("b", v["a"]))),
    ]
    if isinstance(live.get("xs"), list):
        out += [(f"xs.append({n})", lambda v, f: v["xs"].append(n)), ("bump()", lambda v, f: v["xs"].append(99))]
    if isinstance(live.get("d"), dict):
        out.append((f"d['k{n}'] = {n}", lambda v, f: v["d"].__setitem__(f"k{n}", n)))
    if isinstance(live.get("a"), list):
        out.append((f"a.append({n})", lambda v, f: v["a"].append(n)))
    if "x" in live:
        out.append(("del x", lambda v, f: v.pop("x")))
    if not grid:
        out += [
            (f"open('f1.txt', 'w').write('p{n}')", lambda v, f: f.__setitem__("f1.txt", f"p{n}")),
            (f"open('f2.txt', 'a').write('+{n}')", lambda v, f: f.__setitem__("f2.txt", _text(f.get("f2.txt")) + f"+{n}")),
            ("import sqlite3; conn = sqlite3.connect(':memory:')", lambda v, f: v.__setitem__("conn", Conn(gen))),
        ]
        if isinstance(files.get("f1.txt"), str):
            out.append(("fh = open('f1.txt')", lambda v, f: v.__setitem__("fh", Handle("f1.txt", gen=gen))))
        if isinstance(files.get("f2.txt"), str):
            out.append(("import os; os.remove('f2.txt')", lambda v, f: f.__setitem__("f2.txt", ABSENT)))
    return out


def user_snippets(rng: random.Random, live: dict[str, Any], files: dict[str, Any]) -> list[tuple[str, Any, set[str]]]:
    """What a cell of the user's own may do now: ``(code, effect, keys it changes)``."""
    n = rng.randint(100, 199)
    out: list[tuple[str, Any, set[str]]] = [
        (f"x = {n}", lambda v, f: v.__setitem__("x", n), {"x"}),
        (f"open('f1.txt', 'w').write('u{n}')", lambda v, f: f.__setitem__("f1.txt", f"u{n}"), {"f1.txt"}),
    ]
    if isinstance(live.get("xs"), list):
        out += [
            (f"xs.append({n})", lambda v, f: v["xs"].append(n), {"xs"}),
            (f"_mine = xs\n_mine.append({n})", lambda v, f: v["xs"].append(n), {"xs"}),
            ("bump()", lambda v, f: v["xs"].append(99), {"xs"}),
        ]
    if isinstance(live.get("d"), dict):
        out.append((f"d['u'] = {n}", lambda v, f: v["d"].__setitem__("u", n), {"d"}))
    if isinstance(live.get("b"), list):
        out.append((f"b.append({n})", lambda v, f: v["b"].append(n), {"a", "b"} if live.get("a") is live.get("b") else {"b"}))
    if "y" in live:
        out.append(("del y", lambda v, f: v.pop("y"), {"y"}))
    if isinstance(files.get("f2.txt"), str):
        out.append((f"open('f2.txt', 'w').write('u{n}')", lambda v, f: f.__setitem__("f2.txt", f"u{n}"), {"f2.txt"}))
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


NAMED = [
    ("user", re.compile(r"left (.+?) as (?:it is|they are)")),
    ("user", re.compile(r"could not tell whether (.+?) changed")),
    ("lost", re.compile(r"could not restore (.+?) \(")),
    ("lost", re.compile(r"the saved state of (.+?) is missing")),
]


def named_in(text: str) -> dict[str, str]:
    """The keys a step's output names as not the target's, with how (``user``: left as it is; ``lost``: not restored)."""
    out: dict[str, str] = {}
    for how, pattern in NAMED:
        for m in pattern.finditer(text):
            for name in re.split(r", | and ", m.group(1)):
                out.setdefault(name.strip(), how)
    return out


# ---------------------------------------------------------------------------------------- the model


class Silent(AssertionError):
    """A value or file that is neither the target's nor named by the step's output."""


class WorldModel:
    """One sequence of random steps in a fresh kernel under ``root`` (see the module notes)."""

    def __init__(self, root: Path, seed: int, counts: Counts | None = None, *, strict: bool = True) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.seed = seed
        self.counts = counts or Counts()
        self.strict = strict
        self.log: list[str] = []
        self.nodes: dict[str, Node] = {}
        self.vars: dict[str, Any] = {}
        self.files: dict[str, Any] = {f: ABSENT for f in FILES}
        self.user: set[str] = set()
        self.pos: dict[str, Pos] = {}
        self.current = ""
        self.first = ""
        self.cells: dict[tuple[str, str], Any] = {}
        self.kernel: Kernel | None = None
        self.cell_no = 0
        self.silent: list[str] = []
        self.gen = 0
        self.members: dict[str, dict[Any, None]] = {}
        """The nodes of each session (a fork holds those of the path it copied)."""

    # ------------------------------------------------------------ the kernel
    def start(self) -> None:
        self.kernel = Kernel(str(self.root))
        self._run(SETUP.format(dir=str(self.root / "sessions"), vars=VARS, files=FILES), check=True)

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None

    def _run(self, code: str, cell_id: str | None = None, *, check: bool = False) -> str:
        assert self.kernel is not None
        out = self.kernel.run(code, cell_id, timeout=300)
        text = out.stdout + out.stderr + "".join(str(x) for x in out.data("text/plain"))
        if check and out.status != "ok":
            raise AssertionError(f"{code!r} failed: {out.error} {text}")
        return text

    def probe(self, cell: str | None = None) -> dict[str, Any]:
        text = self._run(f"_pi_probe({cell!r})", check=True)
        line = next(x for x in text.splitlines() if x.startswith("PROBE"))
        return json.loads(line[5:])

    # ------------------------------------------------------------ worlds of nodes
    def path(self, node: Any) -> list[Node]:
        out = []
        while node is not None:
            n = self.nodes[node]
            out.append(n)
            node = n.parent
        return out[::-1]

    def fold(self, node: Any) -> dict[str, Any]:
        world: dict[str, Any] = {}
        for n in self.path(node):
            for k, (_b, after) in n.changes.items():
                world[k] = after
        return world

    def targets(self, current: Any, target: Any) -> dict[str, tuple[Any, Any, bool]]:
        """key -> (now, then, moved) for a move from ``current`` (``UNKNOWN``: a fresh kernel) to ``target``, as README says."""
        to = self.path(target)
        then_fold = self.fold(target)
        if current == UNKNOWN:
            return {k: (UNKNOWN, v, True) for k, v in then_fold.items()}
        frm = self.path(current)
        k = 0
        while k < min(len(frm), len(to)) and frm[k].id == to[k].id:
            k += 1
        left, right = frm[k:], to[k:]
        at_fork: dict[str, Any] = {}
        for n in to[:k]:
            for key, (_b, after) in n.changes.items():
                at_fork[key] = after
        touched: dict[str, None] = {}
        for n in (*left, *right):
            for key, (before, _a) in n.changes.items():
                touched[key] = None
                at_fork.setdefault(key, before)
        now, then = dict(at_fork), dict(at_fork)
        for n in left:
            for key, (_b, after) in n.changes.items():
                now[key] = after
        for n in right:
            for key, (_b, after) in n.changes.items():
                then[key] = after
        out = {key: (now[key], then[key], not same(now[key], then[key])) for key in touched}
        for key, value in then_fold.items():
            out.setdefault(key, (value, value, False))
        return out

    # ------------------------------------------------------------ what a move should leave
    def expect_move(self, current: Any, target: Any, *, force: bool = False, files_current: Any = None) -> dict[str, str]:
        """Apply a move to the model; the keys left to the user (``user``) or not restorable (``lost``)."""
        plan = self.targets(current, target)
        fplan = self.targets(current if files_current is None else files_current, target)
        left: dict[str, str] = {}
        restore: dict[str, Any] = {}
        for key, (now, then, moved) in plan.items():
            if key in FILES:
                continue
            live = self.vars.get(key, ABSENT)
            if same(live, then):
                continue
            if live is ABSENT and then is not ABSENT and (moved or now == UNKNOWN or key not in self.user):
                restore[key] = then
            elif key in self.user and not force and not (moved and now != UNKNOWN and same(live, now)):
                left[key] = "user"
            else:
                restore[key] = then
        for key, (now, then, moved) in fplan.items():
            if key not in FILES:
                continue
            live = self.files.get(key, ABSENT)
            if live == then or (live is ABSENT and then is ABSENT):
                continue
            if live is ABSENT and (moved or key not in self.user):
                restore[key] = then
            elif key in self.user and not force and not (moved and live == now):
                left[key] = "user"
            else:
                restore[key] = then
        self._restore(restore, plan, left)
        return left

    def _restore(self, restore: dict[str, Any], plan: dict[str, Any], left: dict[str, str]) -> None:
        # names that were one object at the target come back as one (the world restores a group whole)
        whole = dict(restore)
        for value in restore.values():
            for other, (_n, then, _m) in plan.items():
                if other not in whole and other not in FILES and other not in left and then is value and isinstance(value, (list, dict)):
                    whole[other] = then
        copies = copy.deepcopy({k: v for k, v in whole.items() if k not in FILES and not isinstance(v, (Handle, Conn))})
        for key, value in whole.items():
            if key in FILES:
                self.files[key] = value
            elif value is ABSENT:
                self.vars.pop(key, None)
            elif isinstance(value, Conn) and value.gen != self.gen:
                self.vars.pop(key, None)
                left[key] = "lost"
            elif isinstance(value, Handle) and value.gen != self.gen and not isinstance(self.files.get(value.path), str):
                self.vars.pop(key, None)
                left[key] = "lost"
            elif isinstance(value, (Handle, Conn)):
                self.vars[key] = value
            else:
                self.vars[key] = copies[key]
            self.user.discard(key)

    # ------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        """The live variables and files as one frozen snapshot (names that are one object stay one)."""
        live = {k: v for k, v in self.vars.items() if not isinstance(v, (Handle, Conn))}
        frozen = copy.deepcopy(live)
        frozen.update({k: v for k, v in self.vars.items() if isinstance(v, (Handle, Conn))})
        frozen.update({f: self.files.get(f, ABSENT) for f in FILES})
        return frozen

    def changed(self, before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        out = {}
        for key in (*VARS, *FILES):
            b, a = before.get(key, ABSENT), after.get(key, ABSENT)
            if not same(b, a) or (key in VARS and _root(before, key) != _root(after, key)):
                out[key] = (b, a)
        return out

    def node(self, nid: Any, parent: Any, changes: dict[str, tuple[Any, Any]]) -> None:
        if not isinstance(nid, str):
            self._silent(f"no node id where one was expected (parent {parent}): {nid!r}")
            return
        self.nodes.setdefault(nid, Node(nid, parent, changes))
        self.members.setdefault(self.current, {})[nid] = None

    def record_users(self, start: Any) -> dict[str, tuple[Any, Any]]:
        """What a run starting at ``start`` records first: the user's own values that differ from that node's world."""
        world = self.fold(start)
        out = {}
        for key in sorted(self.user & set(world)):
            live = self.files.get(key, ABSENT) if key in FILES else self.vars.get(key, ABSENT)
            if not same(live, world[key]):
                out[key] = (world[key], live)
        if out:
            snap = self.snapshot()
            out = {k: (b, snap.get(k, ABSENT)) for k, (b, _l) in out.items()}
        return out

    # ------------------------------------------------------------ steps
    def cell_start(self, start: Any) -> tuple[dict[str, str], dict[str, tuple[Any, Any]]]:
        pos = self.pos[self.current]
        left = self.expect_move(pos.vars, start, files_current=pos.files)
        return left, self.record_users(start)

    def agent_cell(self, rerun: bool) -> str:
        pos = self.pos[self.current]
        mine = [c for (s, c) in self.cells if s == self.current]
        if rerun and mine:
            cid = self.rng.choice(mine)
            start, end = self.cells[self.current, cid]
            on_path = [n.id for n in self.path(pos.leaf)] if pos.leaf is not None else []
            if not (pos.leaf in (start, end) or end in on_path):  # a re-run forks from its start only below its last run
                start = pos.leaf
        else:
            self.cell_no += 1
            cid, start = f"c{self.cell_no}", pos.leaf
        left, record = self.cell_start(start)
        self.user -= set(record)
        picks = self.rng.sample(agent_snippets(self.rng, self.vars, self.files, gen=self.gen), k=self.rng.choice((1, 1, 2)))
        calls = ["call python with " + braces(json.dumps({"code": "\n".join(code for code, _ in picks)}))]
        before = self.snapshot()
        for _code, effect in picks:
            effect(self.vars, self.files)
        free = [f for f in FILES if f not in "".join(c for c, _ in picks)]  # the calls of one answer run at once: never one file twice
        if free and self.rng.random() < 0.3:
            target, text = self.rng.choice(free), f"w{self.rng.randint(0, 99)}"
            calls.append("call write with " + braces(json.dumps({"path": target, "content": text})))
            self.files[target] = text
        after = self.snapshot()
        changes = self.changed(before, after)
        self.user -= set(changes)
        out = self._run("%%pi --tools python,write --name _last\n" + "\n".join(calls), cid)
        state = self.probe(cid)
        started, end, _rows, up = state["run"]
        if record:
            if up != start and up not in self.nodes:  # entries that change no world came first (a new session's model and thinking level)
                self.node(up, start, {})
            elif up != start:
                self._silent(f"the record of {cid}'s run hangs from {up}, not from its start {start}")
            self.node(started, up, record)
        elif started != start and started not in self.nodes:
            self.node(started, start, {})
        elif started != start:
            self._silent(f"the run of {cid} started from {started}, not {start} (no change of the user's to record)")
        self.node(end, started, changes)
        self.cells[self.current, cid] = (started, end)
        self.pos[self.current] = Pos(end, end, end)
        self.log.append(f"cell {cid}{' (re-run)' if rerun else ''} from {start}: {[c for c, _ in picks]} {calls[1:]} -> {end}")
        return self.check(out, state, left)

    def user_cell(self) -> str:
        code, effect, keys = self.rng.choice(user_snippets(self.rng, self.vars, self.files))
        effect(self.vars, self.files)
        self.user |= keys
        out = self._run(code)
        self.log.append(f"user: {code!r}")
        return self.check(out, self.probe(), {})

    def checkout(self) -> str:
        pos = self.pos[self.current]
        target = self.rng.choice([*self.members.get(self.current, {}), None])
        mode = self.rng.choices(["both", "force", "conversation", "world", "world-force"], weights=[5, 2, 2, 2, 1])[0]
        self.counts.checkouts += 1
        flag = {"both": "", "force": " --force", "conversation": " --conversation-only", "world": " --world-only"}
        flag["world-force"] = " --world-only --force"
        out = self._run(f"%pi checkout {target or 'root'}{flag[mode]}")
        self.log.append(f"checkout {target} ({mode}) from {pos.vars}: {out.strip()[-300:]!r}")
        entry = _entry(out)
        if mode == "conversation":
            plan = {k: t for k, t in self.targets(pos.vars, target).items() if k not in FILES}
            plan.update({k: t for k, t in self.targets(pos.files, target).items() if k in FILES})  # after a restart: where the files are
            snap = self.snapshot()
            record = {}
            for key, (_now, then, _moved) in plan.items():
                live = snap.get(key, ABSENT)
                if not same(live, then):
                    record[key] = (then, live)
            at = target
            if record:
                if entry is None:
                    self._silent(f"a checkout of the conversation alone recorded no world where {sorted(record)} differ: {out!r}")
                self.node(entry, target, record)
                at = entry
            self.user -= set(plan)
            self.pos[self.current] = Pos(at, at, at)
            return self.check(out, self.probe(), {})
        force = mode in ("force", "world-force")
        if force:
            trial = copy.deepcopy((self.vars, self.files, self.user))
            users = self.expect_move(pos.vars, target, files_current=pos.files)
            self.vars, self.files, self.user = trial
            mine = {k for k, how in users.items() if how == "user"}
            if mine:
                forced = _forced(out)
                if forced is None:
                    self._silent(f"--force kept no version of the user's though {sorted(mine)} were theirs: {out!r}")
                base = pos.vars if pos.vars != UNKNOWN else pos.leaf  # after a restart the record hangs from the leaf
                world = self.fold(base)
                plan = self.targets(base, target)
                snap = self.snapshot()
                self.node(forced, base, {k: (world.get(k, plan[k][0]), snap.get(k, ABSENT)) for k in mine})
        left = self.expect_move(pos.vars, target, force=force, files_current=pos.files)
        if mode.startswith("world"):
            leaf = pos.leaf
            plan = self.targets(target, leaf)
            snap = self.snapshot()
            record = {k: (then, snap.get(k, ABSENT)) for k, (_now, then, _m) in plan.items() if not same(snap.get(k, ABSENT), then)}
            at = leaf
            if record:
                self.node(entry, leaf, record)
                at = entry
                self.user -= set(record)
            self.pos[self.current] = Pos(at, at, at)
        else:
            self.pos[self.current] = Pos(target, target, target)
        return self.check(out, self.probe(), left)

    def fork(self) -> str:
        pos = self.pos[self.current]
        choices = list(self.members.get(self.current, {}))
        if not choices:
            return self.user_cell()
        target = self.rng.choice(choices)
        out = self._run(f"%pi fork {target}")
        state = self.probe()
        new = state["session"][0]
        left = self.expect_move(pos.vars, target, files_current=pos.files)
        self.members[new] = {n.id: None for n in self.path(target)}
        self.current = new
        self.pos[new] = Pos(target, target, target)
        self.log.append(f"fork {target} -> {new}")
        return self.check(out, state, left)

    def back(self) -> str:
        if self.current == self.first:
            return self.checkout()
        pos = self.pos[self.current]
        home = self.pos[self.first]
        target = home.vars if home.vars != UNKNOWN else home.leaf
        out = self._run(f"%pi open {self.first}")
        left = self.expect_move(pos.vars, target, files_current=pos.files)
        self.current = self.first
        self.pos[self.first] = Pos(target, target, target)
        self.log.append(f"back to the first session at {target}")
        return self.check(out, self.probe(), left)

    def grid(self) -> str:
        pos = self.pos[self.current]
        self.cell_no += 1
        cid, start = f"g{self.cell_no}", pos.leaf
        left, record = self.cell_start(start)
        self.user -= set(record)
        code, effect = self.rng.choice(agent_snippets(self.rng, self.vars, self.files, grid=True, gen=self.gen))
        calls = ["call python with " + braces(json.dumps({"code": code}))]
        before = self.snapshot()
        scratch_vars, scratch_files = copy.deepcopy((self.vars, self.files))
        effect(scratch_vars, scratch_files)
        if self.rng.random() < 0.5:
            target, text = self.rng.choice(FILES), f"g{self.rng.randint(0, 99)}"
            calls.append("call write with " + braces(json.dumps({"path": target, "content": text})))
            scratch_files[target] = text
        keep = self.vars, self.files
        self.vars, self.files = scratch_vars, scratch_files
        changes = self.changed(before, self.snapshot())
        self.vars, self.files = keep
        out = self._run("%%pi --tools python,write --repeat 2 --name _last\n" + "\n".join(calls), cid)
        state = self.probe(cid)
        started = state["run"][0]
        if record:
            self.node(started, start, record)
        elif started != start and started not in self.nodes:  # entries that change no world came first (a new kernel's model)
            self.node(started, start, {})
        elif started != start:
            self._silent(f"the grid {cid} started from {started}, not {start} (no change of the user's to record)")
        for leaf in state["run"][2]:
            self.node(leaf, started, copy.deepcopy(changes))  # one copy: names that are one object stay one
        goes_on = state["session"][1]
        self.pos[self.current] = Pos(started, started, started)
        left.update(self.expect_move(started, goes_on))
        self.pos[self.current] = Pos(goes_on, goes_on, goes_on)
        self.log.append(f"grid {cid} from {start}: {code!r} -> {state['run'][2]}, goes on from {goes_on}")
        return self.check(out, state, left)

    def restart(self) -> str:
        self.close()
        self.counts.restarts += 1
        self.gen += 1
        self.vars, self.user = {}, {k for k in self.user if k in FILES}  # the files, and the user's edits of them, outlive the kernel
        for path, pos in self.pos.items():
            self.pos[path] = Pos(UNKNOWN, pos.leaf, pos.leaf)
        self.start()
        out = self._run(f"%pi open {self.current}")
        self.log.append("restart")
        return self.check(out, self.probe(), {})

    # ------------------------------------------------------------ checking
    def check(self, out: str, state: dict[str, Any], left: dict[str, str]) -> str:
        named = named_in(out)
        for key in (*VARS, *FILES):
            want = canon(self.files.get(key, ABSENT)) if key in FILES else canon(self.vars.get(key, ABSENT))
            raw = state["files"][key] if key in FILES else state["vars"][key]
            got = (["absent"] if raw is None else ["value", raw]) if key in FILES else raw
            if want == ["absent"] and got == ["absent"]:
                continue
            self.counts.checked += 1
            alias_ok = key in FILES or got[0] == "absent" or state["alias"].get(key) == _root(self.vars, key)
            if want == got and alias_ok:
                self.counts.correct += 1
                continue
            if key in named:
                self.counts.named += 1
                self._adopt(key, got, state, named[key])
                continue
            model, kernel = f"{want} ({_root(self.vars, key)})", f"{got} ({state['alias'].get(key)})"
            self._silent(f"{key}: the model holds {model}, the kernel {kernel}; output: {out.strip()[-400:]!r}")
            self._adopt(key, got, state, "user")
        return out

    def _adopt(self, key: str, got: list[Any], state: dict[str, Any], how: str) -> None:
        value = from_canon(got)
        if key in FILES:
            self.files[key] = value
        elif value is ABSENT:
            self.vars.pop(key, None)
        else:
            root = state["alias"].get(key)
            self.vars[key] = self.vars[root] if root != key and root in self.vars else value
        if how == "user":
            self.user.add(key)
        else:
            self.user.discard(key)

    def _silent(self, what: str) -> None:
        self.counts.silent += 1
        self.silent.append(what)
        if self.strict:
            raise Silent(f"seed {self.seed}: {what}\nsteps:\n  " + "\n  ".join(self.log))

    # ------------------------------------------------------------ a sequence
    STEPS = (("agent", 6), ("rerun", 2), ("user", 4), ("checkout", 5), ("fork", 1), ("back", 1), ("grid", 1), ("restart", 1))

    def run(self, steps: int) -> None:
        """One sequence: a first cell, then ``steps - 1`` random steps."""
        self.counts.sequences += 1
        self.start()
        try:
            self.pos[""] = Pos(None, None, None)
            self.agent_cell(rerun=False)
            state = self.probe()
            self.first = self.current = state["session"][0]
            self.pos[self.first] = self.pos.pop("")
            self.members[self.first] = self.members.pop("", {})
            self.cells = {(self.first, c): s for (_p, c), s in self.cells.items()}
            self.counts.steps += 1
            names, weights = zip(*self.STEPS, strict=True)
            for _ in range(steps - 1):
                kind = self.rng.choices(names, weights=weights)[0]
                self.counts.steps += 1
                {
                    "agent": lambda: self.agent_cell(rerun=False), "rerun": lambda: self.agent_cell(rerun=True), "user": self.user_cell,
                    "checkout": self.checkout, "fork": self.fork, "back": self.back, "grid": self.grid, "restart": self.restart,
                }[kind]()  # fmt: skip
        finally:
            self.close()


def _root(values: dict[str, Any], key: str) -> Any:
    value = values.get(key, ABSENT)
    if value is ABSENT:
        return None
    return next(k for k in VARS if k in values and values[k] is value)


def _entry(out: str) -> str | None:
    m = re.search(r"recorded on the branch as entry ([0-9a-f]+)", out) or re.search(r"leaf is now ([0-9a-f]+)", out)
    return m.group(1) if m else None


def _forced(out: str) -> str | None:
    m = re.search(r"is kept in entry ([0-9a-f]+)", out)
    return m.group(1) if m else None
