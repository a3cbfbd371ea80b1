"""Compaction against pi 1.6 (``pi16_compaction_oracle.mjs``) on sessions holding what pi 1.x writes.

Our agent records the system prompt in the transcript (a leading system message, deltas when tools
or sections change) and users drop or replace entries with context edits. pi 1.6 chooses the cut on
the branch's projection: a system message counts towards the kept budget but is never a cut point
nor summarized, and the compaction entry carries the replayed prompt as ``systemMessage``.
``pi_compatible="1.6"`` must give exactly pi 1.6's preparation; the default the same first kept
entry unless its known fix applies; the entry we write has pi 1.6's shape; pi 1.6 rebuilds the same
context from our compacted file as we do.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_compaction_gen import Builder

from pi_jupyter import Agent, AgentSettings
from pi_jupyter.compaction import CompactionSettings, prepare_compaction
from pi_jupyter.session import Session

from .test_compaction_interop import _prepared
from .test_session_interop import assert_same, ours

pytestmark = pytest.mark.interop

TOOL_READ = {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
TOOL_EDIT = {"name": "edit", "description": "Edit a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}


def _system(b: Builder, **fields: Any) -> str:
    return b.s.append_message({"role": "system", "content": fields.pop("content", ""), **fields, "timestamp": b._ms()})


def _pi16_session(path: str, seed: int) -> tuple[Session, list[str]]:
    """A session as our agent writes it with pi 1.6's features: a leading system message, mid-branch
    deltas (sections, tools), context edits (dropped and replaced entries, a dropped failed attempt),
    custom messages, an earlier compaction with its system snapshot, and a sibling branch."""
    rnd = random.Random(seed)
    s = Session.create(path=path, cwd="/w")
    b = Builder(s, seed=seed)
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    _system(b, sections={"preamble": "You help. " * rnd.randint(5, 60), "cwd": "/w"}, toolsAdded=[TOOL_READ, TOOL_EDIT])
    leaves: list[str] = []
    users: list[str] = []
    for turn in range(rnd.randint(12, 22)):
        kind = rnd.random()
        if kind < 0.15:
            _system(b, sections={"skills": "<skills>" + "s" * rnd.randint(10, 2000) + "</skills>"})
        elif kind < 0.22:
            _system(b, content="Extra rule.", sections={"cwd": None}, toolsRemoved=[{"name": "edit"}])
        users.append(b.user(f"request {turn} " + "word " * rnd.randint(5, 300), images=int(rnd.random() < 0.2)))
        if rnd.random() < 0.3:
            s.append_custom_message("note", "a note " * rnd.randint(1, 80))
        for _ in range(rnd.randint(0, 2)):
            tool = rnd.choice(["read", "edit"])
            b.assistant("working " * rnd.randint(1, 40), [(tool, {"path": f"src/f{rnd.randint(1, 5)}.py"})], total=rnd.randint(0, 9000))
            b.results("line\n" * rnd.randint(1, 400))
        reply = b.assistant("answer " * rnd.randint(1, 200), total=rnd.randint(100, 20000))
        if rnd.random() < 0.2:
            s.edit_context(rnd.choice(users), None if rnd.random() < 0.5 else "(edited) " + "x" * rnd.randint(1, 300))
        if rnd.random() < 0.15:
            s.edit_context(reply, "short answer")
        if turn == 8 and seed % 2 == 0:
            s.append_compaction(f"summary {seed}", users[-3], 12345, {"readFiles": ["a.py"], "modifiedFiles": []})
        if turn in (5, 11):
            leaves.append(s.leaf_id)
    if seed % 3 == 0:  # a failed attempt the user dropped from the context: pi 1.6 cuts past it
        failed = b.assistant("partial", stop="error", errorMessage="overloaded")
        s.edit_context(failed, None)
    leaves.append(s.leaf_id)
    s.checkout(users[len(users) // 2])
    b.assistant("another answer " * 30)
    _system(b, toolsAdded=[{**TOOL_READ, "description": "Read any file"}])
    b.user("on the sibling branch")
    leaves.append(s.leaf_id)
    return s, leaves


@pytest.fixture(scope="module")
def pi16_sessions(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, list[str]]]:
    folder = tmp_path_factory.mktemp("pi16-compaction")
    out = []
    for seed in range(8):
        path = folder / f"pi16-{seed}.jsonl"
        s, leaves = _pi16_session(str(path), seed)
        s.close()
        out.append((path, leaves))
    return out


def _pi16(run_node16: Any, tmp_path: Path, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = tmp_path / f"jobs16-{random.getrandbits(32):08x}.json"
    path.write_text(json.dumps(jobs), encoding="utf-8")
    results = [json.loads(line) for line in run_node16("pi16_compaction_oracle.mjs", str(path), timeout=600).splitlines()]
    for result in results:
        assert result["ok"], result.get("error")
    return results


KEEPS16 = [0, 1, 40, 150, 400, 900, 2000, 4000, 8000, 30000]


def test_pi16_cut_points_on_sessions_with_system_messages_match_pi16(run_node16: Any, tmp_path: Path, pi16_sessions: Any) -> None:
    """``pi_compatible="1.6"`` chooses exactly as pi 1.6's ``prepareCompaction``; the default keeps the same
    first entry unless its known fix applies (pi-10.12a)."""
    jobs = [{"op": "prepare", "file": str(p), "leaf": leaf, "keeps": KEEPS16} for p, leaves in pi16_sessions for leaf in leaves]
    results = _pi16(run_node16, tmp_path, jobs)
    checked = deltas_cut = 0
    for job, theirs in zip(jobs, results, strict=True):
        session = Session.open(job["file"], readonly=True)
        assert session.load_report.ok, str(session.load_report)
        branch = session.raw_branch(job["leaf"])
        for one in theirs["results"]:
            where = f"{Path(job['file']).name}@{job['leaf']} keep={one['keep']}"
            settings = CompactionSettings(keep_recent_tokens=one["keep"])
            exact, fixed = _prepared(branch, settings, "1.6"), _prepared(branch, settings, False)
            if not one["prepared"]:
                assert exact is None and fixed is None, where
                continue
            assert exact is not None, where
            got = {
                "firstKeptEntryId": exact.first_kept_entry_id,
                "isSplitTurn": exact.is_split_turn,
                "tokensBefore": exact.tokens_before,
                "messagesToSummarize": exact.messages_to_summarize,
                "turnPrefixMessages": exact.turn_prefix_messages,
                "previousSummary": exact.previous_summary,
                "fileLists": dict(zip(("readFiles", "modifiedFiles"), exact.file_ops.lists(), strict=True)),
            }
            assert got == {k: v for k, v in one.items() if k not in ("keep", "prepared")}, where
            assert "system" not in [m["role"] for m in exact.messages_to_summarize + exact.turn_prefix_messages]
            kept = branch[exact.first_kept_index]
            assert kept["id"] == exact.first_kept_entry_id and not (kept["type"] == "message" and kept["message"]["role"] == "system")
            recorded = [i for i, e in enumerate(branch) if e["type"] == "message" and e["message"]["role"] == "system"]
            if len([i for i in recorded if i < exact.first_kept_index]) > 1:
                deltas_cut += 1  # a mid-branch delta (not only the leading prompt) lies in the summarized part
            assert fixed is not None, where
            if not fixed.deviations:
                assert fixed.first_kept_entry_id == exact.first_kept_entry_id, where
            else:
                assert set(fixed.deviations) <= {"pi-10.12a"}, where
            checked += 1
    assert checked > 200 and deltas_cut > 20  # many cuts, and many with a system message in the summarized part


def test_our_compaction_entry_and_the_context_after_it_match_pi16(run_node16: Any, tmp_path: Path, pi16_sessions: Any) -> None:
    """The compaction we write has pi 1.6's shape (its ``systemMessage`` snapshot is the replayed prompt and
    tools, ``usage`` what the summary cost) and pi 1.6 rebuilds the same context from our file as we do."""
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": cost}
    jobs, mine = [], []
    for path, leaves in pi16_sessions:
        for leaf in leaves[-2:]:
            branch = Session.open(path, readonly=True).raw_branch(leaf)
            prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=900))
            details = dict(zip(("readFiles", "modifiedFiles"), prep.file_ops.lists(), strict=True))
            ours_path = tmp_path / f"ours-{path.stem}-{leaf}.jsonl"
            ours_path.write_text(path.read_text())
            s = Session.open(ours_path)
            s.checkout(leaf, persist=False)
            cid = s.append_compaction("the summary", prep.first_kept_entry_id, prep.tokens_before, details, from_hook=False, usage=usage)
            s.close()
            mine.append((ours_path, cid))
            jobs.append({"op": "append", "file": str(path), "out": str(tmp_path / f"pi-{path.stem}-{leaf}.jsonl"), "leaf": leaf,
                         "summary": "the summary", "firstKeptEntryId": prep.first_kept_entry_id, "tokensBefore": prep.tokens_before,
                         "details": details, "usage": usage})  # fmt: skip
    results = _pi16(run_node16, tmp_path, jobs)
    context_jobs = [{"op": "context", "file": str(p)} for p, _ in mine]
    cpath = tmp_path / "context-jobs.json"
    cpath.write_text(json.dumps(context_jobs))
    contexts = [json.loads(line) for line in run_node16("pi_session_oracle.mjs", str(cpath)).splitlines()]
    snapshots = 0
    for (ours_path, cid), theirs, pi_ctx in zip(mine, results, contexts, strict=True):
        entry = Session.open(ours_path, readonly=True).raw_entry(cid)
        pi_entry = theirs["entry"]

        def shape(e: dict[str, Any]) -> dict[str, Any]:
            out = {k: v for k, v in e.items() if k not in ("id", "timestamp")}
            if "systemMessage" in out:
                out["systemMessage"] = {k: v for k, v in out["systemMessage"].items() if k != "timestamp"}
            return out

        assert list(entry) == list(pi_entry) and shape(entry) == shape(pi_entry), ours_path.name
        snapshots += "systemMessage" in entry
        assert entry["systemMessage"]["timestamp"] == _iso_ms(entry["timestamp"])  # the snapshot is dated by the compaction
        assert_same(ours(ours_path, pi_ctx["leafId"]), pi_ctx, ours_path.name)
        roles = [m["role"] for m in pi_ctx["messages"]]
        assert roles[:2] == ["system", "compactionSummary"] and roles.count("system") == 1 + roles[2:].count("system")
    assert snapshots == len(mine)


def _iso_ms(ts: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


def test_an_agent_compaction_keeps_what_pi16_keeps_and_pi16_resumes_the_same_context(run_node16: Any, tmp_path: Path) -> None:
    """Our agent records its prompt, narrows its tools mid-session (a delta), compacts, and goes on: pi 1.6 would
    have kept the same first entry, and resumes the file with the same context (snapshot, summary, kept turns)."""
    agent = Agent(Session.create(tmp_path), model="offline/echo", settings=AgentSettings(record_system_prompt=True), tools=["read", "bash"])
    for i in range(3):
        asyncio.run(agent.prompt(f"question {i} " + "detail " * 200))
    agent.tools = [t for t in agent.tools if t.name == "read"]
    for i in range(3, 6):
        asyncio.run(agent.prompt(f"question {i} " + "detail " * 200))
    path = Path(agent.session.path)
    before = tmp_path / "before.jsonl"
    before.write_text(path.read_text())
    leaf = agent.session.leaf_id
    result = asyncio.run(agent.compact(keep_recent_tokens=700))
    [theirs] = _pi16(run_node16, tmp_path, [{"op": "prepare", "file": str(before), "leaf": leaf, "keeps": [700]}])
    assert theirs["results"][0]["firstKeptEntryId"] == result.first_kept_entry_id
    entry = agent.session.raw_entries()[-1]
    assert entry["type"] == "compaction" and [t["name"] for t in entry["systemMessage"]["toolsAdded"]] == ["read"]
    asyncio.run(agent.prompt("after the compaction"))
    cpath = tmp_path / "ctx.json"
    cpath.write_text(json.dumps([{"op": "context", "file": str(path)}]))
    [pi_ctx] = [json.loads(line) for line in run_node16("pi_session_oracle.mjs", str(cpath)).splitlines()]
    assert_same(ours(path, pi_ctx["leafId"]), pi_ctx, "agent session after compaction")
    assert [m["role"] for m in pi_ctx["messages"]][:2] == ["system", "compactionSummary"]
    assert [m["role"] for m in pi_ctx["messages"]].count("system") == 1


def test_a_branch_summary_covers_what_pi16_covers_and_never_what_was_forgotten(run_node16: Any, tmp_path: Path, pi16_sessions: Any) -> None:
    """Leaving a branch with a summary: the entries after the common ancestor, with their latest context
    edits applied as pi 1.6 applies them (a dropped entry is not sent to the summarizer)."""
    from pi_jupyter.compaction import collect_branch_entries, prepare_branch_entries

    jobs, ours_prep = [], []
    for path, leaves in pi16_sessions:
        s = Session.open(path, readonly=True)
        for old, target in ((leaves[-2], leaves[-1]), (leaves[-1], leaves[0]), (leaves[0], leaves[-1])):
            entries = collect_branch_entries(s, old, target).entries
            ours_prep.append((prepare_branch_entries(entries, 0, estimator=lambda m: 1), entries))
            jobs.append({"op": "branch", "file": str(path), "oldLeaf": old, "target": target, "budget": 0})
    results = _pi16(run_node16, tmp_path, jobs)
    edited = 0
    for (prep, entries), theirs in zip(ours_prep, results, strict=True):
        assert prep.messages == theirs["messages"]
        assert dict(zip(("readFiles", "modifiedFiles"), prep.file_ops.lists(), strict=True)) == theirs["fileLists"]
        unedited = prepare_branch_entries(entries, 0, pi_compatible=True, estimator=lambda m: 1)  # pi 0.73.1 ignored edits
        edited += unedited.messages != prep.messages
    assert edited >= 5
    # a secret forgotten on the branch being left is not in the summary request
    secret = "the door code is 4711"
    s = Session.in_memory()
    b = Builder(s)
    start = b.user("start")
    u = b.user(secret)
    b.assistant("noted")
    s.edit_context(u, None)
    prep = prepare_branch_entries(collect_branch_entries(s, s.leaf_id, start).entries)
    assert secret not in json.dumps(prep.messages) and [m["role"] for m in prep.messages] == ["assistant"]
