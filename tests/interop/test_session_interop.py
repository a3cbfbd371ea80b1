"""pi itself and pi-jupyter read every session file the same way, in both directions.

Each test hands a batch of jobs to one node process running ``pi_session_oracle.mjs`` (pi's
own ``SessionManager``) and compares pi's answers (messages, thinking level, model,
convert_to_llm output, branch, tree, session name) with ours on the same files. Every test
runs against pi 0.73.1 (``@mariozechner``) and pi 1.6.0 (``@earendil-works``): on files without
pi 1.x's new entries both read alike (test_pi16_interop.py covers the new entries).

Deliberate differences, asserted as such:
* a file whose last line is our checkout marker: pi resumes at the marker, we at its
  parent (the target), so pi's branch is ours plus the marker; the context is identical;
* version 1 files get fresh ids in both programs: pi's ids are mapped to ours by position;
  our migration also turns a v1 header's ``branchedFrom`` into ``parentSession``;
* a file with a repeated id (pi's flush re-appends lines): pi's tree lists the entry twice,
  ours once. pi 1.x no longer writes such files (its first flush opens the file exclusively).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiongen import KINDS, pi_steps, write_kind

from pi_jupyter.cli.context_cmd import context_json
from pi_jupyter.session import CHECKOUT_TYPE, Session

pytestmark = pytest.mark.interop


def _fixtures() -> Path:
    """pi's recorded sessions: ``$PI_JUPYTER_PI_FIXTURES``, else the copies in ``tests/fixtures/pi``."""
    env = os.environ.get("PI_JUPYTER_PI_FIXTURES")
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parents[1] / "fixtures" / "pi"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


FIXTURES = _fixtures()
_MISSING: Any = object()


@pytest.fixture(scope="module", params=["pi-0.73.1", "pi-1.6.0"])
def oracle(request, tmp_path_factory):
    """``oracle(jobs) -> results``: one node process for the whole batch, for each pi version."""
    run_node = request.getfixturevalue("run_node" if request.param == "pi-0.73.1" else "run_node16")
    folder = tmp_path_factory.mktemp("oracle-jobs")
    count = {"n": 0}

    def ask(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        count["n"] += 1
        job_file = folder / f"jobs-{count['n']}.json"
        job_file.write_text(json.dumps(jobs))
        # split on LF only: JSON.stringify leaves U+0085 and U+2028 raw, and str.splitlines splits there
        lines = run_node("pi_session_oracle.mjs", str(job_file)).rstrip("\n").split("\n")
        results = [json.loads(line) for line in lines]
        assert len(results) == len(jobs)
        for job, result in zip(jobs, results, strict=True):
            assert result["ok"], f"pi failed on {job.get('op')} {job.get('file') or job.get('out')}: {result.get('error')}"
        return results

    ask.version = request.param  # type: ignore[attr-defined]
    return ask


def fixture_files() -> list[Path]:
    files = sorted(FIXTURES.glob("*.jsonl"))
    if not files:
        pytest.skip(f"pi's recorded sessions are not at {FIXTURES} (set PI_JUPYTER_PI_FIXTURES)")
    return files


def _tree_flat(session: Session) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    stack = [(node, None, 0) for node in reversed(session.tree())]
    while stack:
        node, parent, depth = stack.pop()
        item: dict[str, Any] = {"id": node.id, "type": node.type, "parent": parent, "depth": depth}
        if node.label is not None:
            item["label"] = node.label
            item["labelTimestamp"] = node.label_timestamp
        out.append(item)
        stack.extend((child, node.id, depth + 1) for child in reversed(node.children))
    return out


def ours(path: str | Path, leaf: Any = _MISSING) -> dict[str, Any]:
    """Our answers in the oracle's shape (the file is only read)."""
    s = Session.open(path, readonly=True)
    ctx = context_json(s) if leaf is _MISSING else context_json(s, leaf)
    leaf_id = s.leaf_id if leaf is _MISSING else leaf
    return {
        "session": s,
        "header": s.header.to_dict(),
        "entryIds": [e["id"] for e in s.raw_entries()],
        "leafId": leaf_id,
        "messages": ctx["messages"],
        "thinkingLevel": ctx.get("thinkingLevel"),
        "model": ctx["model"],
        "llm": ctx["llm"],
        "branchIds": s.branch_ids(leaf_id) if leaf_id is not None else [],
        "treeFlat": _tree_flat(s),
        "sessionName": s.name,
    }


def _translate(pi: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """pi's answer with its (migration-assigned) ids replaced by ours."""

    def m(x: Any) -> Any:
        return mapping.get(x, x) if isinstance(x, str) else x

    out = dict(pi)
    out["leafId"] = m(pi["leafId"])
    out["branchIds"] = [m(i) for i in pi["branchIds"]]
    out["treeFlat"] = [{**n, "id": m(n["id"]), "parent": m(n["parent"])} for n in pi["treeFlat"]]
    out["messages"] = [{**msg, "fromId": m(msg["fromId"])} if "fromId" in msg else msg for msg in pi["messages"]]
    return out


def assert_same(mine: dict[str, Any], pi: dict[str, Any], where: str) -> None:
    """pi and we agree on everything a user of the file sees."""
    if pi["entryIds"] != mine["entryIds"]:
        assert len(pi["entryIds"]) == len(mine["entryIds"]), f"{where}: entry counts differ"
        pi = _translate(pi, dict(zip(pi["entryIds"], mine["entryIds"], strict=True)))
    assert mine["messages"] == pi["messages"], f"{where}: messages differ"
    assert mine["thinkingLevel"] == pi.get("thinkingLevel"), f"{where}: thinking level differs"
    assert mine["model"] == pi["model"], f"{where}: model differs"
    assert mine["llm"] == pi["llm"], f"{where}: convert_to_llm output differs"
    assert mine["sessionName"] == pi["sessionName"], f"{where}: session name differs"
    session: Session = mine["session"]
    if pi["leafId"] != mine["leafId"] and pi["leafId"] in session:
        # pi resumes at our checkout marker, whose parent is the leaf we resume at
        marker = session.raw_entry(pi["leafId"])
        assert marker["type"] == "custom" and marker["customType"] == CHECKOUT_TYPE, f"{where}: leaf differs"
        assert marker["parentId"] == mine["leafId"], f"{where}: the checkout marker does not hang below our leaf"
        assert pi["branchIds"] == [*mine["branchIds"], pi["leafId"]], f"{where}: branch differs beyond the marker"
    else:
        assert mine["leafId"] == pi["leafId"], f"{where}: leaf differs"
        assert mine["branchIds"] == pi["branchIds"], f"{where}: branch differs"
    assert mine["treeFlat"] == pi["treeFlat"], f"{where}: tree differs"


# -- pi's own files ---------------------------------------------------------------------------


def test_pi_fixture_sessions_read_as_pi_reads_them(oracle):
    files = fixture_files()
    results = oracle([{"op": "context", "file": str(f)} for f in files])
    for f, pi in zip(files, results, strict=True):
        mine = ours(f)
        assert len(mine["messages"]) > 400  # real, long sessions
        assert_same(mine, pi, f.name)
        header = dict(mine["header"])
        # our v1 -> v3 migration keeps the v1 header's branchedFrom as parentSession; pi ignores it
        if "branchedFrom" in header and "parentSession" not in pi["header"]:
            assert header.pop("parentSession") == header["branchedFrom"]
        assert header == pi["header"]


def test_pi_fixture_migration_writes_what_pi_writes(oracle, tmp_path):
    files = fixture_files()
    results = oracle([{"op": "migrate", "file": str(f)} for f in files])
    for f, pi in zip(files, results, strict=True):
        copy = tmp_path / f.name
        shutil.copyfile(f, copy)
        copy.chmod(0o644)
        s = Session.open(copy)  # migrates and rewrites the copy
        assert any(p.kind == "migrated" for p in s.load_report.problems)
        mine_lines = [json.loads(line) for line in copy.read_bytes().rstrip(b"\n").split(b"\n")]
        pi_lines = [json.loads(line) for line in pi["text"].rstrip("\n").split("\n")]
        assert len(mine_lines) == len(pi_lines)
        mapping = {p.get("id"): o.get("id") for p, o in zip(pi_lines[1:], mine_lines[1:], strict=True)}
        for p, o in zip(pi_lines[1:], mine_lines[1:], strict=True):
            p = {**p, "id": mapping[p["id"]], "parentId": mapping.get(p["parentId"], p["parentId"])}
            if "firstKeptEntryId" in p:
                p["firstKeptEntryId"] = mapping[p["firstKeptEntryId"]]
            assert o == p
        header = dict(mine_lines[0])
        header.pop("parentSession", None)
        assert header == pi_lines[0]
        # and the migrated file is an ordinary v3 file for both programs now
        again = oracle([{"op": "context", "file": str(copy)}])[0]
        assert_same(ours(copy), again, f"{f.name} after migration")


# -- our files in pi ----------------------------------------------------------------------


def test_files_written_here_read_the_same_in_pi(oracle, tmp_path):
    files = []
    for kind in KINDS:
        for seed in range(3):
            path = tmp_path / f"{kind}-{seed}.jsonl"
            write_kind(kind, str(path), seed=seed).close()
            files.append(path)
    results = oracle([{"op": "context", "file": str(f)} for f in files])
    for f, pi in zip(files, results, strict=True):
        assert_same(ours(f), pi, f.name)


def test_any_leaf_rebuilds_the_same_context_in_pi(oracle, tmp_path):
    path = tmp_path / "branched.jsonl"
    s = write_kind("random", str(path), seed=11)
    s.close()
    leaves: list[Any] = [None, *[e["id"] for e in s.raw_entries()][::7]]
    results = oracle([{"op": "context", "file": str(path), "leaf": leaf} for leaf in leaves])
    for leaf, pi in zip(leaves, results, strict=True):
        mine = ours(path, leaf)
        for key in ("messages", "thinkingLevel", "model", "llm", "branchIds"):
            assert mine[key] == pi[key], f"leaf {leaf}: {key} differs"


def test_checkout_is_where_pi_resumes(oracle, tmp_path):
    path = tmp_path / "checkout.jsonl"
    s = write_kind("linear", str(path), seed=5)
    target = s.branch_ids()[9]
    s.checkout(target)
    s.close()
    pi = oracle([{"op": "context", "file": str(path)}])[0]
    reopened = Session.open(path, readonly=True)
    assert reopened.leaf_id == target
    assert pi["messages"] == reopened.context().raw_messages
    assert pi["branchIds"][:-1] == reopened.branch_ids()
    assert reopened.raw_entry(pi["leafId"])["customType"] == CHECKOUT_TYPE


# -- pi's files here, and pi writing after us ----------------------------------------------


def test_files_written_by_pi_read_the_same_here(oracle, tmp_path):
    seeds = range(12)
    jobs: list[dict[str, Any]] = [{"op": "write", "out": str(tmp_path / f"pi-{s}.jsonl"), "cwd": "/w", "steps": pi_steps(s)} for s in seeds]
    jobs += [{"op": "context", "file": str(tmp_path / f"pi-{s}.jsonl")} for s in seeds]
    results = oracle(jobs)
    for seed, pi in zip(seeds, results[len(seeds) :], strict=True):
        path = tmp_path / f"pi-{seed}.jsonl"
        mine = ours(path)
        assert mine["session"].load_report.ok, mine["session"].load_report
        assert_same(mine, pi, path.name)


def _user(text: str, ms: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms}


def _assistant(text: str, ms: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5",
        "usage": {
            "input": 1,
            "output": 1,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 2,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": ms,
    }


def test_pi_writing_after_us_and_us_after_pi(oracle, tmp_path):
    sources = []
    for kind in ("linear", "checkouts", "random", "unicode"):
        path = tmp_path / f"{kind}.jsonl"
        write_kind(kind, str(path), seed=2).close()
        sources.append(path)
    # a file with no assistant message yet: pi's deferred flush re-appends our lines
    fresh = Session.create(path=tmp_path / "no-reply.jsonl", cwd="/w")
    fresh.append_model_change("openai", "gpt-5")
    fresh.append_message(_user("a question, no reply yet", 1))
    fresh.close()
    sources.append(Path(fresh.path))
    outs = [tmp_path / f"pi-after-{p.name}" for p in sources]
    messages = [_user("pi continues here ✓", 2), _assistant("pi's reply\u2028with a separator", 3)]
    jobs = [{"op": "append", "file": str(src), "out": str(out), "messages": messages} for src, out in zip(sources, outs, strict=True)]
    jobs += [{"op": "context", "file": str(out)} for out in outs]
    results = oracle(jobs)
    appended = results[: len(outs)]
    for out, app, pi in zip(outs, appended, results[len(outs) :], strict=True):
        mine = ours(out)
        s: Session = mine["session"]
        assert not s.load_report.errors, s.load_report
        assert s.leaf_id == app["ids"][-1]
        assert [m["timestamp"] for m in mine["messages"][-2:]] == [2, 3]
        if out.name.endswith("no-reply.jsonl") and oracle.version == "pi-0.73.1":
            # pi 0.x's deferred flush writes the header and first entries twice; pi 1.x no longer does
            kinds = {p.kind for p in s.load_report.problems}
            assert kinds == {"duplicate_header", "duplicate_id"}, s.load_report
            assert mine["messages"] == pi["messages"] and mine["branchIds"] == pi["branchIds"]
            # pi's getTree shows each repeated entry twice; ours once, in the same order
            seen: set[str] = set()
            dedup = [n for n in pi["treeFlat"] if not (n["id"] in seen or seen.add(n["id"]))]
            assert [n["id"] for n in mine["treeFlat"]] == [n["id"] for n in dedup]
        else:
            assert s.load_report.ok, s.load_report
            assert_same(mine, pi, out.name)
        # and we append after pi, then pi reads it all again
        writer = Session.open(out)
        writer.append_message(_user("we are back", 4))
        writer.append_message(_assistant("and so is the reply", 5))
        writer.close()
    again = oracle([{"op": "context", "file": str(out)} for out in outs])
    for out, pi in zip(outs, again, strict=True):
        mine = ours(out)
        assert [m["timestamp"] for m in mine["messages"][-4:]] == [2, 3, 4, 5]
        assert mine["messages"] == pi["messages"] and mine["llm"] == pi["llm"]
        assert mine["branchIds"] == pi["branchIds"]


def test_damaged_files_give_the_context_pi_gives(oracle, tmp_path):
    s = write_kind("linear", str(tmp_path / "base.jsonl"), seed=9)
    s.close()
    lines = Path(s.path).read_bytes().split(b"\n")[:-1]
    damaged = {
        "malformed-middle": b"\n".join([*lines[:20], b'{"type":"message","id":"broken', *lines[20:]]) + b"\n",
        "torn-tail": b"\n".join(lines) + b'\n{"type":"message","id":"torn","parentId":"x","times',
        "blank-and-crlf": b"\r\n".join(lines[:30]) + b"\r\n\r\n  \n" + b"\n".join(lines[30:]) + b"\n",
    }
    files = []
    for name, blob in damaged.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(blob)
        files.append(path)
    results = oracle([{"op": "context", "file": str(f)} for f in files])
    for f, pi in zip(files, results, strict=True):
        mine = ours(f)
        assert_same(mine, pi, f.name)
    assert ours(files[0])["session"].load_report.errors[0].line == 21
    assert ours(files[1])["session"].load_report.errors[0].kind == "torn_tail"


def test_cli_context_json_is_pis_context(oracle, tmp_path):
    path = tmp_path / "cli.jsonl"
    write_kind("extensions", str(path), seed=4).close()
    pi = oracle([{"op": "context", "file": str(path)}])[0]
    proc = subprocess.run([sys.executable, "-m", "pi_jupyter", "context", str(path), "--json"], capture_output=True, check=True)
    out = json.loads(proc.stdout)
    assert set(out) == {"messages", "thinkingLevel", "model", "llm"}
    assert out["messages"] == pi["messages"]
    assert out["llm"] == pi["llm"]
    assert out["model"] == pi["model"] and out["thinkingLevel"] == pi["thinkingLevel"]
