"""Compaction and branch summaries against pi itself (``pi_compaction_oracle.mjs`` runs pi 0.73.1).

``pi_compatible=True`` must give exactly pi's answers: cut points, preparations, token
estimates, serialized conversations, summary requests (system prompt, prompt text, output
limit, reasoning) and the finished compaction / branch summary. The default mode must keep
the same first entry as pi, except where it fixes one of pi's bugs; those cases report the
bug's code, and the tests that show them name the bug.

The real pi session fixtures are version 1 files; both sides migrate them with the ids
``00000001``, ``00000002``, ... (pi through a patched ``crypto.randomUUID``).
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
import sessiongen
from test_compaction_gen import Builder, HashSummarizer, js_digest, random_session

from pi_jupyter.compaction import (
    BranchSummarySettings,
    CompactionSettings,
    NothingToCompact,
    collect_branch_entries,
    compact,
    conversation_text,
    estimate_context_tokens,
    estimate_tokens_pi,
    generate_branch_summary,
    prepare_branch_entries,
    prepare_compaction,
    to_llm_dicts,
)
from pi_jupyter.compaction.entries import message_for_branch_summary, message_for_compaction
from pi_jupyter.session import Session
from pi_jupyter.session.index import EntryIndex
from pi_jupyter.session.migrate import migrate
from pi_jupyter.session.rebuild import context_from_path

pytestmark = pytest.mark.interop

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"  # pi's recorded sessions, kept in the repo
FIXTURE_FILES = sorted(FIXTURES.glob("*.jsonl"))
KEEPS = [0, 1, 50, 200, 1000, 3000, 5000, 8000, 20000, 50000, 100000, 10**9]
KNOWN_FIXES = {"pi-10.12a", "pi-10.12b", "pi-10.13a"}


def _oracle(run_node: Any, tmp_path: Path, jobs: list[dict[str, Any]]) -> list[Any]:
    path = tmp_path / f"jobs-{random.getrandbits(32):08x}.json"
    path.write_text(json.dumps(jobs), encoding="utf-8")
    return json.loads(run_node("pi_compaction_oracle.mjs", str(path), timeout=600))


def _load_pi_file(path: Path) -> EntryIndex:
    """A pi file as pi reads it (blank and unparseable lines skipped), migrated with pi's deterministic test ids."""
    objects = []
    for line in path.read_text(encoding="utf-8").strip().split("\n"):
        try:
            objects.append(json.loads(line))
        except ValueError:
            continue
    header, entries = objects[0], [o for o in objects[1:] if o.get("type") != "session"]
    counter = iter(range(1, 10**9))
    migrate(header, entries, new_id=lambda used: f"{next(counter):08x}")
    index = EntryIndex()
    for entry in entries:
        index.add(entry)
    return index


def _check_preparation(branch: list[dict], theirs: dict[str, Any], where: str) -> None:
    """pi-compatible preparation == pi's, and the fixed one keeps the same entry unless a known fix applies."""
    keep = theirs["keep"]
    settings = CompactionSettings(keep_recent_tokens=keep)
    if not theirs["prepared"]:
        with pytest.raises(NothingToCompact):
            prepare_compaction(branch, settings, pi_compatible=True)
        return
    ours = prepare_compaction(branch, settings, pi_compatible=True)
    pp = theirs["preparation"]
    got = {
        "firstKeptEntryId": ours.first_kept_entry_id,
        "isSplitTurn": ours.is_split_turn,
        "tokensBefore": ours.tokens_before,
        "messagesToSummarizeCount": len(ours.messages_to_summarize),
        "turnPrefixMessagesCount": len(ours.turn_prefix_messages),
        "historyText": js_digest(conversation_text(ours.messages_to_summarize)),
        "turnPrefixText": js_digest(conversation_text(ours.turn_prefix_messages)),
        "previousSummary": ours.previous_summary,
        "fileLists": dict(zip(("readFiles", "modifiedFiles"), ours.file_ops.lists(), strict=True)),
    }
    assert got == pp, f"{where} keep={keep}"
    assert ours.boundary_start == theirs["boundaryStart"]
    cut = theirs["cut"]
    assert (ours.cut.first_kept_index, ours.cut.turn_start_index, ours.cut.is_split_turn) == (
        cut["firstKeptEntryIndex"],
        cut["turnStartIndex"],
        cut["isSplitTurn"],
    )
    # the default mode chooses as current pi (1.6, checked against pi 1.6 itself below), with its known fixes
    current, fixed = _prepared(branch, settings, "1.6"), _prepared(branch, settings, False)
    if fixed is None or current is None:
        assert fixed is None and current is None, f"{where} keep={keep}"
    elif fixed.deviations:
        assert set(fixed.deviations) <= KNOWN_FIXES, fixed.deviations
    else:
        assert fixed.first_kept_entry_id == current.first_kept_entry_id, f"{where} keep={keep}"
        assert fixed.messages_to_summarize + fixed.turn_prefix_messages == current.messages_to_summarize + current.turn_prefix_messages


def _prepared(branch: list[dict], settings: CompactionSettings, mode: Any) -> Any:
    try:
        return prepare_compaction(branch, settings, pi_compatible=mode)
    except NothingToCompact:
        return None


@pytest.fixture(scope="module")
def fixture_results(run_node: Any, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    if not FIXTURE_FILES:
        pytest.skip(f"no pi fixtures in {FIXTURES}")
    jobs: list[dict[str, Any]] = []
    for f in FIXTURE_FILES:
        jobs.append({"op": "prepare", "file": str(f), "keeps": KEEPS})
        jobs.append({"op": "prepare", "file": str(f), "keeps": [1000, 20000, 50000], "compact": True})
        jobs.append({"op": "prepare", "file": str(f), "keeps": [20000], "compact": True, "customInstructions": "focus on the tests"})
        jobs.append({"op": "estimate", "file": str(f)})
    return _oracle(run_node, tmp_path_factory.mktemp("fixtures"), jobs)


def test_fixture_preparations_match_pi(fixture_results: list[Any]) -> None:
    for i, f in enumerate(FIXTURE_FILES):
        index = _load_pi_file(f)
        branch = index.path(index.order[-1]["id"])
        for theirs in fixture_results[4 * i]:
            _check_preparation(branch, theirs, f.name)


def test_fixture_summary_requests_and_results_match_pi_byte_for_byte(fixture_results: list[Any]) -> None:
    for i, f in enumerate(FIXTURE_FILES):
        index = _load_pi_file(f)
        branch = index.path(index.order[-1]["id"])
        for job_at, custom in ((4 * i + 1, None), (4 * i + 2, "focus on the tests")):
            for theirs in fixture_results[job_at]:
                prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=theirs["keep"]), pi_compatible=True)
                summarizer = HashSummarizer()
                result = asyncio.run(compact(prep, summarizer, custom_instructions=custom))
                ours = [
                    {
                        "systemPrompt": r.system_prompt,
                        "prompt": js_digest(r.prompt_text),
                        "maxTokens": r.max_tokens,
                        "reasoning": r.reasoning,
                    }
                    for r in summarizer.requests
                ]
                pis = [{**r, "reasoning": r["reasoning"] is not None} for r in theirs["requests"]]
                assert ours == pis, f"{f.name} keep={theirs['keep']}"
                assert result.to_pi() == theirs["result"]


def test_fixture_token_estimates_match_pi(fixture_results: list[Any]) -> None:
    for i, f in enumerate(FIXTURE_FILES):
        index = _load_pi_file(f)
        theirs = fixture_results[4 * i + 3]
        branch = index.path(index.order[-1]["id"])
        assert [e["id"] for e in branch] == theirs["ids"]
        ours = [[e["id"], estimate_tokens_pi(m)] for e in branch if (m := _entry_message(e)) is not None]
        assert ours == theirs["perEntry"]
        context = estimate_context_tokens(context_from_path(branch)["messages"], estimate_tokens_pi)
        assert context.model_dump() == {
            "tokens": theirs["context"]["tokens"],
            "usage_tokens": theirs["context"]["usageTokens"],
            "trailing_tokens": theirs["context"]["trailingTokens"],
            "last_usage_index": theirs["context"]["lastUsageIndex"],
        }


def _entry_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    if entry.get("type") == "compaction":
        return message_for_branch_summary(entry)
    return message_for_compaction(entry)


# -------------------------------------------------------------------------------- generated sessions


def _leaves(session: Session, rnd: random.Random, inner: int = 4) -> list[str]:
    entries = session.raw_entries()
    parents = {e.get("parentId") for e in entries}
    tips = [e["id"] for e in entries if e["id"] not in parents]
    return tips[:8] + rnd.sample([e["id"] for e in entries], min(inner, len(entries)))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, list[str]]]:
    folder = tmp_path_factory.mktemp("generated")
    rnd = random.Random(7)
    files: list[tuple[Path, list[str]]] = []
    for seed in range(10):
        path = folder / f"random-{seed}.jsonl"
        s = random_session(str(path), seed, turns=50)
        files.append((path, _leaves(s, rnd)))
        s.close()
    for kind in sessiongen.KINDS:
        path = folder / f"kind-{kind}.jsonl"
        s = sessiongen.write_kind(kind, str(path), seed=3)
        files.append((path, _leaves(s, rnd)))
        s.close()
    return files


def test_generated_preparations_match_pi(run_node: Any, tmp_path: Path, generated: list[tuple[Path, list[str]]]) -> None:
    keeps = [0, 1, 30, 100, 300, 700, 1500, 3000, 6000, 20000]
    jobs = [{"op": "prepare", "file": str(p), "leaf": leaf, "keeps": keeps} for p, leaves in generated for leaf in leaves]
    results = _oracle(run_node, tmp_path, jobs)
    checked = 0
    for job, theirs in zip(jobs, results, strict=True):
        session = Session.open(job["file"], readonly=True)
        branch = session.raw_branch(job["leaf"])
        for one in theirs:
            _check_preparation(branch, one, f"{Path(job['file']).name}@{job['leaf']}")
            checked += 1
    assert checked == len(jobs) * len(keeps)


def test_generated_compactions_match_pi_byte_for_byte(run_node: Any, tmp_path: Path, generated: list[tuple[Path, list[str]]]) -> None:
    jobs = [{"op": "prepare", "file": str(p), "leaf": leaves[0], "keeps": [100, 1500], "compact": True} for p, leaves in generated]
    results = _oracle(run_node, tmp_path, jobs)
    compared = 0
    for job, theirs in zip(jobs, results, strict=True):
        branch = Session.open(job["file"], readonly=True).raw_branch(job["leaf"])
        for one in theirs:
            if not one["prepared"]:
                continue
            prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=one["keep"]), pi_compatible=True)
            summarizer = HashSummarizer()
            result = asyncio.run(compact(prep, summarizer))
            assert [js_digest(r.prompt_text) for r in summarizer.requests] == [r["prompt"] for r in one["requests"]]
            assert [r.max_tokens for r in summarizer.requests] == [r["maxTokens"] for r in one["requests"]]
            assert result.to_pi() == one["result"], job["file"]
            compared += 1
    assert compared >= len(jobs)


def test_generated_branch_summaries_match_pi(run_node: Any, tmp_path: Path, generated: list[tuple[Path, list[str]]]) -> None:
    rnd = random.Random(11)
    jobs = []
    for path, leaves in generated:
        ids = [e["id"] for e in Session.open(path, readonly=True).raw_entries()]
        pairs = [[rnd.choice(leaves), rnd.choice(ids)] for _ in range(6)] + [[leaves[0], leaves[-1]]]
        for budget in (0, 300, 3000):
            jobs.append({"op": "branch", "file": str(path), "pairs": pairs, "budget": budget})
        jobs.append(
            {"op": "branch", "file": str(path), "pairs": pairs[:3], "summarize": True, "contextWindow": 20000, "reserveTokens": 16384}
        )
        jobs.append(
            {
                "op": "branch",
                "file": str(path),
                "pairs": pairs[3:5],
                "summarize": True,
                "customInstructions": "files only",
                "replaceInstructions": True,
            }
        )
    results = _oracle(run_node, tmp_path, jobs)
    for job, theirs in zip(jobs, results, strict=True):
        session = Session.open(job["file"], readonly=True)
        for one in theirs:
            got = collect_branch_entries(session, one["oldLeaf"], one["target"])
            assert [e["id"] for e in got.entries] == one["entryIds"] and got.common_ancestor_id == one["commonAncestorId"]
            if not job.get("summarize"):
                prep = prepare_branch_entries(got.entries, job["budget"], pi_compatible=True)
                assert len(prep.messages) == one["messageCount"] and prep.total_tokens == one["totalTokens"]
                assert js_digest(conversation_text(prep.messages)) == one["text"]
                assert dict(zip(("readFiles", "modifiedFiles"), prep.file_ops.lists(), strict=True)) == one["fileLists"]
                continue
            if not got.entries:
                continue  # pi's navigateTree does not summarize an empty branch
            summarizer = HashSummarizer()
            result = asyncio.run(
                generate_branch_summary(
                    got.entries,
                    summarizer,
                    context_window=job.get("contextWindow", 128000),
                    settings=BranchSummarySettings(reserve_tokens=job.get("reserveTokens", 16384)),
                    custom_instructions=job.get("customInstructions"),
                    replace_instructions=job.get("replaceInstructions", False),
                    pi_compatible=True,
                )
            )
            assert result is not None
            assert result.summary == one["summary"]["summary"]
            assert result.details == {
                "readFiles": one["summary"].get("readFiles", []),
                "modifiedFiles": one["summary"].get("modifiedFiles", []),
            }
            assert [(js_digest(r.prompt_text), r.max_tokens, r.reasoning) for r in summarizer.requests] == [
                (r["prompt"], r["maxTokens"], r["reasoning"] is not None) for r in one["requests"]
            ]


def test_tricky_messages_estimate_and_serialize_like_pi(run_node: Any, tmp_path: Path) -> None:
    long_astral = "ab" + "🎉" * 1200
    messages = [
        {"role": "user", "content": "plain \u2028 line sep"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "x"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "text"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "deep"},
                {
                    "type": "toolCall",
                    "id": "1",
                    "name": "f",
                    "arguments": {"b": 1.0, "10": 2, "2": 1e21, "a": [1e-7, 0.1, -0.0, 'é"\\\n\t\u0001'], "c": {}},
                },
                {"type": "text", "text": "answer"},
                {"type": "thinking", "thinking": "more"},
            ],
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            "stopReason": "stop",
        },
        {
            "role": "toolResult",
            "toolCallId": "1",
            "toolName": "f",
            "content": [{"type": "text", "text": long_astral}, {"type": "image", "data": "x"}],
        },
        {"role": "toolResult", "toolCallId": "2", "toolName": "f", "content": [{"type": "text", "text": "x" * 2000}]},
        {
            "role": "bashExecution",
            "command": "make",
            "output": "out",
            "exitCode": 3,
            "cancelled": False,
            "truncated": True,
            "fullOutputPath": "/tmp/o",
        },
        {"role": "bashExecution", "command": "sleep", "output": "", "cancelled": True, "truncated": False},
        {"role": "bashExecution", "command": "hidden", "output": "zzz", "excludeFromContext": True},
        {"role": "custom", "customType": "t", "content": [{"type": "text", "text": "custom blocks"}], "display": True},
        {"role": "custom", "customType": "t", "content": "custom string"},
        {"role": "branchSummary", "summary": "branch", "fromId": "abc"},
        {"role": "compactionSummary", "summary": "compact", "tokensBefore": 5},
        {"role": "assistant", "content": [], "usage": {"totalTokens": 77}, "stopReason": "aborted"},
        {"role": "unknownRole", "content": "ignored"},
    ]
    (theirs,) = _oracle(run_node, tmp_path, [{"op": "messages", "messages": messages}])
    assert [estimate_tokens_pi(m) for m in messages] == theirs["estimates"]
    context = estimate_context_tokens(messages, estimate_tokens_pi)
    assert (context.tokens, context.usage_tokens, context.trailing_tokens, context.last_usage_index) == (
        theirs["context"]["tokens"],
        theirs["context"]["usageTokens"],
        theirs["context"]["trailingTokens"],
        theirs["context"]["lastUsageIndex"],
    )
    assert conversation_text(messages) == theirs["serialized"]
    assert [m["content"] for m in to_llm_dicts(messages)] == [m["content"] for m in theirs["llm"]]


# -------------------------------------------------------------------------------- pi's bugs, shown by pi


def _write(tmp_path: Path, name: str, build: Any) -> tuple[Path, Session]:
    path = tmp_path / name
    s = Session.create(path=path, cwd="/work/project")
    build(s, Builder(s))
    return path, s


def test_pi_10_11_pi_drops_the_previous_summary_on_a_split_turn(run_node: Any, tmp_path: Path) -> None:
    """pi-design §10 item 11, with pi's own compact(): "No prior history." replaces the previous summary."""

    def build(s: Session, b: Builder) -> None:
        for i in range(3):
            b.turn(f"early request {i}", rounds=1)
        long_turn = b.user("the long agentic turn")
        b.assistant("step", [("read", {"path": "a.py"})])
        b.results("y" * 400)
        s.append_compaction(
            "PREVIOUS SUMMARY: early requests 0-2", long_turn, 5000, {"readFiles": ["a.py"], "modifiedFiles": []}, from_hook=False
        )
        for r in range(12):
            b.assistant(f"step {r}", [("read", {"path": "b.py"})])
            b.results("z" * 400)

    path, s = _write(tmp_path, "split.jsonl", build)
    (theirs,) = _oracle(run_node, tmp_path, [{"op": "prepare", "file": str(path), "keeps": [300], "compact": True}])
    pi_summary = theirs[0]["result"]["summary"]
    assert pi_summary.startswith("No prior history.") and "PREVIOUS SUMMARY" not in pi_summary
    ours = asyncio.run(compact(prepare_compaction(s.raw_branch(), CompactionSettings(keep_recent_tokens=300)), HashSummarizer()))
    assert ours.summary.startswith("PREVIOUS SUMMARY: early requests 0-2\n\n---\n\n**Turn Context (split turn):**")
    assert ours.first_kept_entry_id == theirs[0]["result"]["firstKeptEntryId"] and "pi-10.11" in ours.deviations


def test_pi_10_12a_pi_reads_a_clean_turn_boundary_as_a_split_turn(run_node: Any, tmp_path: Path) -> None:
    """pi-design §10 item 12: the thinking_level_change before the kept user message makes pi
    summarize the previous turn as a "turn prefix"."""
    marks: dict[str, str] = {}

    def build(s: Session, b: Builder) -> None:
        b.turn("earlier request", rounds=1)
        s.append_thinking_level_change("high")
        marks["u"] = b.user("kept request " + "w " * 200)
        b.assistant("answer " * 100)

    path, s = _write(tmp_path, "settings.jsonl", build)
    branch = s.raw_branch()
    keep = sum(estimate_tokens_pi(e["message"]) for e in branch[[e["id"] for e in branch].index(marks["u"]) :] if e["type"] == "message")
    (theirs,) = _oracle(run_node, tmp_path, [{"op": "prepare", "file": str(path), "keeps": [keep], "compact": True}])
    assert theirs[0]["preparation"]["isSplitTurn"] and theirs[0]["preparation"]["messagesToSummarizeCount"] == 0
    assert theirs[0]["result"]["summary"].startswith("No prior history.")
    fixed = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=keep))
    assert fixed.first_kept_entry_id == theirs[0]["preparation"]["firstKeptEntryId"]
    assert not fixed.is_split_turn and fixed.deviations == ("pi-10.12a",)


def test_pi_10_12b_pi_summarizes_nothing_before_a_huge_last_tool_result(run_node: Any, tmp_path: Path) -> None:
    """pi-design §10 item 12: no cut point after the budget crossing, so pi keeps everything."""

    def build(s: Session, b: Builder) -> None:
        for i in range(4):
            b.turn(f"request {i}", rounds=1)
        b.user("read the big log")
        b.assistant("reading", [("read", {"path": "big.log"})])
        b.results("log line\n" * 3000)

    path, s = _write(tmp_path, "biglog.jsonl", build)
    (theirs,) = _oracle(run_node, tmp_path, [{"op": "prepare", "file": str(path), "keeps": [1000]}])
    pp = theirs[0]["preparation"]
    assert pp["messagesToSummarizeCount"] == 0 and pp["turnPrefixMessagesCount"] == 0
    fixed = prepare_compaction(s.raw_branch(), CompactionSettings(keep_recent_tokens=1000))
    # pi 1.6 fixed it as we do: the default, which chooses as current pi, no longer deviates
    assert fixed.messages_to_summarize and fixed.deviations == ()
