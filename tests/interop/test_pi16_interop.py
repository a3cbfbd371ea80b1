"""pi 1.6's new entries, written by pi 1.6 itself, read here as pi 1.6 reads them.

pi's own ``SessionManager`` (``@earendil-works/pi-coding-agent`` 1.6.0, through node) writes
sessions with system messages (``appendMessage``), context edits (``appendContextEdit``),
usage entries (``appendUsage``), a compaction with its system snapshot (``appendCompaction``)
and branches; we compare our context with pi's at every leaf, and the request each of our three
APIs would send with the one pi-ai's own adapter builds for the same file. pi 0.73.1 reads the
same files too: we state what it makes of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_jupyter.providers import LlmRequest, Model, StreamOptions, anthropic_messages, openai_completions, openai_responses
from pi_jupyter.providers.transcript import collapse_request
from pi_jupyter.session import Session

from .test_session_interop import assert_same, ours

pytestmark = pytest.mark.interop

SECRET = "sk-live-PASTED0123456789"
PRIVATE = "the door code is 4711"
READ = {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
BASH = {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}
USAGE = {
    "input": 100,
    "output": 20,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 120,
    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3},
}
PROMPT = {"preamble": "You help.", "cwd": "<cwd>\n/w\n</cwd>"}
PATCH = {"cwd": None, "skills": "<skills/>"}


def _user(text: Any, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def _assistant(text: str, ts: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": USAGE,
        "stopReason": "stop",
        "timestamp": ts,
    }


def _system(ts: int, **fields: Any) -> dict[str, Any]:
    return {"role": "system", "content": fields.pop("content", ""), **fields, "timestamp": ts}


STEPS: list[dict[str, Any]] = [
    {"call": "appendModelChange", "args": ["anthropic", "claude-test"]},
    {
        "call": "appendMessage",
        "args": [_system(1, sections=PROMPT, toolsAdded=[READ, BASH])],
    },
    {"call": "appendMessage", "args": [_user(f"deploy with {SECRET}", 2)], "as": "u1"},
    {"call": "appendMessage", "args": [_assistant(f"Deploying with {SECRET}.", 3)], "as": "a1"},
    {"call": "appendContextEdit", "args": ["$u1", None], "as": "forget"},
    {"call": "appendContextEdit", "args": ["$a1", {"content": "Deploying."}]},
    {"call": "appendUsage", "args": ["cache_warming", "anthropic", "claude-test", USAGE, "warm"]},
    {
        "call": "appendMessage",
        "args": [_system(4, content="Extra rule.", sections=PATCH, toolsRemoved=[{"name": "bash"}])],
    },
    {"call": "appendMessage", "args": [_user("and now?", 5)], "as": "u2"},
    {"call": "appendMessage", "args": [_assistant("Done.", 6)], "as": "a2"},
    {"call": "appendContextEdit", "args": ["$u2", {"content": [{"type": "text", "text": "and now, please?"}]}]},
    {"call": "appendContextEdit", "args": ["$u2", {"content": "latest wins"}], "as": "beforeCompaction"},
    {"call": "appendCompaction", "args": ["Summary of the deploy.", "$u2", 5000, None, False, USAGE], "as": "c1"},
    {"call": "appendMessage", "args": [_user(None, 7)], "as": "nullContent"},
    {"call": "appendMessage", "args": [_assistant("after compaction", 8)], "as": "tip"},
    # a sibling branch from a1: the edits made on the main branch do not apply there
    {"call": "branch", "args": ["$a1"]},
    {"call": "appendMessage", "args": [_user("other branch", 9)], "as": "other"},
    {"call": "appendCustomMessageEntry", "args": ["note", "a custom note", True], "as": "custom"},
    {"call": "appendContextEdit", "args": ["$custom", {"content": "edited note"}]},
    {"call": "appendMessage", "args": [_system(10, toolsAdded=[{**READ, "description": "Read any file"}])], "as": "otherTip"},
]
LEAVES = ["u1", "forget", "u2", "beforeCompaction", "c1", "nullContent", "tip", "other", "otherTip"]


@pytest.fixture(scope="module")
def pi16(run_node16, tmp_path_factory):
    """``pi16(script, jobs) -> results`` with pi 1.6."""
    folder = tmp_path_factory.mktemp("pi16-jobs")

    def ask(script: str, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        job_file = folder / f"jobs-{len(list(folder.iterdir()))}.json"
        job_file.write_text(json.dumps(jobs))
        results = [json.loads(line) for line in run_node16(script, str(job_file)).rstrip("\n").split("\n")]
        for result in results:
            assert result["ok"], result.get("error")
        return results

    return ask


@pytest.fixture(scope="module")
def written(pi16, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A session written by pi 1.6's own SessionManager, and the ids of its named steps."""
    out = tmp_path_factory.mktemp("pi16-written") / "pi16.jsonl"
    [result] = pi16("pi_session_oracle.mjs", [{"op": "write", "out": str(out), "cwd": "/w", "steps": STEPS}])
    assert result["written"]
    return out, result["names"]


def test_pi16_files_rebuild_the_same_context_at_every_leaf(pi16, written):
    path, names = written
    assert SECRET in path.read_text()  # pi keeps the original in the file
    jobs = [{"op": "context", "file": str(path), "leaf": names[leaf]} for leaf in LEAVES]
    jobs.append({"op": "context", "file": str(path)})
    results = pi16("pi_session_oracle.mjs", jobs)
    for leaf, pi in zip([*LEAVES, None], results, strict=True):
        mine = ours(path, names[leaf]) if leaf else ours(path)
        assert_same(mine, pi, f"leaf {leaf}")
        sent = json.dumps(mine["llm"])
        if leaf not in ("u1", "forget", "other", "otherTip", None):  # before both edits, or on the sibling branch
            assert SECRET not in sent, f"leaf {leaf}: the forgotten secret is still sent"
    session = Session.open(path, readonly=True)
    assert session.load_report.ok, str(session.load_report)


def _model(api: str) -> dict[str, Any]:
    provider = "anthropic" if api == "anthropic-messages" else "openai"
    model_id = "claude-test" if provider == "anthropic" else "gpt-test"
    base = "http://127.0.0.1:9" if provider == "anthropic" else "http://127.0.0.1:9/v1"
    return {
        "id": model_id,
        "name": model_id,
        "api": api,
        "provider": provider,
        "baseUrl": base,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 4096,
    }


def _our_body(api: str, session: Session, leaf: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request our adapter for ``api`` builds at ``leaf`` for the model ``spec`` describes (default: ``_model(api)``)."""
    spec = spec or _model(api)
    fields = {"id": spec["id"], "provider": spec["provider"], "base_url": spec["baseUrl"], "max_tokens": spec["maxTokens"]}
    model = Model(api=api, input=tuple(spec["input"]), **fields)
    request = collapse_request(LlmRequest(messages=session.context(leaf).llm()))
    if api == "anthropic-messages":
        return anthropic_messages.build_params(model, request, StreamOptions())
    if api == "openai-completions":
        return openai_completions.build_params(model, request, StreamOptions())[0]
    return openai_responses.build_params(model, request, StreamOptions())


def _comparable(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the model is told: prompt, tools, messages (request options and item ids left out)."""
    if api == "anthropic-messages":
        tools = [(t["name"], t.get("description"), t.get("input_schema")) for t in body.get("tools", [])]
        return {"system": body.get("system"), "tools": tools, "messages": body["messages"]}
    if api == "openai-completions":
        tools = [(t["function"]["name"], t["function"].get("description"), t["function"].get("parameters")) for t in body.get("tools", [])]
        return {"tools": tools, "messages": body["messages"]}
    items = [{k: v for k, v in item.items() if k != "id"} for item in body["input"]]
    tools = [(t["name"], t.get("description"), t.get("parameters")) for t in body.get("tools", [])]
    return {"tools": tools, "input": items}


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions", "openai-responses"])
def test_requests_for_system_messages_and_edits_match_pi_ai(pi16, written, tmp_path, api):
    path, names = written
    session = Session.open(path, readonly=True)
    for leaf in ("u2", "tip", "otherTip"):
        copy = tmp_path / f"{leaf}.jsonl"
        copy.write_text(path.read_text())
        pi_leaf = Session.open(copy)
        pi_leaf.checkout(names[leaf])  # pi resumes at the last line: our checkout marker hangs below the leaf
        pi_leaf.close()
        [pi] = pi16("pi_request_oracle.mjs", [{"file": str(copy), "api": api, "model": _model(api)}])
        mine = _our_body(api, session, names[leaf])
        assert _comparable(api, mine) == _comparable(api, pi["body"]), f"{api} at {leaf}"
        assert SECRET not in json.dumps(mine) or leaf == "otherTip"


def test_what_pi_0_73_1_makes_of_pi16_files(run_node, written, tmp_path):
    """pi 0.73.1 opens pi 1.6 files without error but ignores what it does not know: context edits do
    not apply (a forgotten secret is sent again), system messages are dropped by its convertToLlm (its
    own prompt and tools are used), the compaction snapshot is ignored. The manual says so (docs/session-file.md, pi versions)."""
    path, names = written
    jobs = [{"op": "context", "file": str(path), "leaf": names["u2"]}, {"op": "context", "file": str(path), "leaf": names["tip"]}]
    job_file = tmp_path / "jobs.json"
    job_file.write_text(json.dumps(jobs))
    at_u2, at_tip = (json.loads(line) for line in run_node("pi_session_oracle.mjs", str(job_file)).rstrip("\n").split("\n"))
    assert SECRET in json.dumps(at_u2["llm"])  # the edits are ignored
    assert "system" in [m["role"] for m in at_u2["messages"]] and "system" not in [m["role"] for m in at_u2["llm"]]
    assert [m["role"] for m in at_tip["messages"]][0] == "compactionSummary"  # no snapshot before the summary
    mine = ours(path, names["u2"])
    assert SECRET not in json.dumps(mine["llm"])  # we read them as pi 1.6 does


def test_pi16_resumes_our_recorded_session_with_the_same_prompt_tools_and_context(pi16, tmp_path):
    import asyncio

    from pi_jupyter import Agent, AgentSettings

    settings = AgentSettings(record_system_prompt=True)
    agent = Agent(Session.create(tmp_path), model="offline/echo", settings=settings, tools=["read", "bash"], thinking="off")
    asyncio.run(agent.prompt("first, with my key sk-ours-123"))
    user_id, echo_id = agent.session.branch_ids()[-2:]
    agent.session.edit_context(user_id, None)  # forget the prompt with the key, and the echo of it
    agent.session.edit_context(echo_id, "(echo)")
    agent.reload()
    agent.tools = [t for t in agent.tools if t.name == "read"]
    asyncio.run(agent.prompt("second"))
    path = Path(agent.session.path)
    [pi] = pi16("pi_session_oracle.mjs", [{"op": "context", "file": str(path)}])
    assert_same(ours(path), pi, "our recorded session")
    for api in ("anthropic-messages", "openai-completions", "openai-responses"):
        [request] = pi16("pi_request_oracle.mjs", [{"file": str(path), "api": api, "model": _model(api)}])
        mine = _our_body(api, Session.open(path, readonly=True), agent.session.leaf_id)
        assert _comparable(api, mine) == _comparable(api, request["body"]), api
        sent = json.dumps(request["body"])
        assert json.dumps(agent.system_prompt)[1:-1] in sent and "sk-ours-123" not in sent


def test_rerun_cells_share_the_recorded_prompt_and_pi16_resumes_with_one(pi16, tmp_path):
    """A notebook re-runs its first cell and a cell that narrows the tools: each re-run goes through the
    system message its first run recorded (no second copy), and pi 1.6 resumes the file with one prompt."""
    from kernel_client import Kernel

    kernel = Kernel(str(tmp_path))
    try:
        setup = "%load_ext pi_jupyter\n%config PiMagics.session_dir = {!r}\n%config PiMagics.model = 'offline/echo'\n"
        assert kernel.run(setup.format(str(tmp_path / "sessions"))).status == "ok"
        narrow = "%%pi --tools read\n"
        cells = [("%%pi\nHello.", "a"), ("%%pi\nHello again.", "a"), (narrow + "Read it.", "b"), (narrow + "Read it now.", "b")]
        for code, cell in cells:
            run = kernel.run(code, cell_id=cell)
            assert run.status == "ok", run.error
    finally:
        kernel.close()
    [path] = (tmp_path / "sessions").glob("*.jsonl")
    session = Session.open(path, readonly=True)
    recorded = [e for e in session.raw_entries() if e["type"] == "message" and e["message"]["role"] == "system"]
    assert len(recorded) == 2  # the leading prompt, and cell b's narrowed tool set, each written once
    lead, narrowed = recorded
    assert len(session.child_ids(lead["id"])) == 2 and len(session.child_ids(narrowed["id"])) == 2  # the re-runs are siblings
    [pi] = pi16("pi_session_oracle.mjs", [{"op": "context", "file": str(path)}])
    assert_same(ours(path, pi["leafId"]), pi, "notebook with re-run cells")  # pi resumes at the last line: the cell record
    assert [m["role"] for m in pi["messages"]] == ["system", "user", "assistant", "system", "user", "assistant"]
    [request] = pi16("pi_request_oracle.mjs", [{"file": str(path), "api": "anthropic-messages", "model": _model("anthropic-messages")}])
    system = request["body"]["system"]
    prompt = lead["message"]["sections"]["preamble"]
    assert json.dumps(system).count(json.dumps(prompt)[1:40]) == 1  # one prompt, not one per re-run
    assert [t["name"] for t in request["body"]["tools"]] == ["read"]


def test_what_pi_0_73_1_makes_of_the_files_we_write(run_node, tmp_path):
    """pi 0.73.1 (``SessionManager.open`` + ``buildSessionContext`` + ``convertToLlm``, what ``pi --resume``
    runs) opens a session we write today without an error and skips what it does not know: our recorded
    system messages stay in its context list but its ``convertToLlm`` drops them (it sends its own prompt
    and tools), ``usage`` and ``context_edit`` entries give nothing (a forgotten secret is sent again), a
    compaction's ``systemMessage`` snapshot and ``usage`` are ignored. Its compaction prepares without error,
    and our ``pi_compatible=True`` mode gives the same cut on such a file."""
    import asyncio

    from pi_jupyter import Agent, AgentSettings
    from pi_jupyter.compaction import CompactionSettings, prepare_compaction

    agent = Agent(Session.create(tmp_path), model="offline/echo", settings=AgentSettings(record_system_prompt=True), tools=["read", "bash"])
    asyncio.run(agent.prompt(f"{PRIVATE} " + "detail " * 200))
    prompt_id, echo_id = agent.session.branch_ids()[-2:]
    agent.session.edit_context(prompt_id, None)  # forget the prompt with the private detail, and its echo
    agent.session.edit_context(echo_id, "(echo)")
    agent.session.append_usage("judge", "offline", "echo", USAGE, "a score")
    agent.reload()
    agent.tools = [t for t in agent.tools if t.name == "read"]
    for i in range(3):
        asyncio.run(agent.prompt(f"question {i} " + "detail " * 200))
    asyncio.run(agent.compact(keep_recent_tokens=500))
    asyncio.run(agent.prompt("after the compaction " + "detail " * 200))
    path = Path(agent.session.path)
    kinds = {e["type"] for e in agent.session.raw_entries()}
    assert {"context_edit", "usage", "compaction"} <= kinds

    job_file = tmp_path / "jobs.json"
    leaf_before = agent.session.raw_entries()[-4]["id"]  # before the compaction: the forgotten prompt is in the context
    job_file.write_text(json.dumps([{"op": "context", "file": str(path)}, {"op": "context", "file": str(path), "leaf": leaf_before}]))
    at_end, before = (json.loads(line) for line in run_node("pi_session_oracle.mjs", str(job_file)).rstrip("\n").split("\n"))
    assert at_end["ok"] and before["ok"]
    roles = [m["role"] for m in at_end["messages"]]
    assert roles[0] == "compactionSummary"  # the snapshot is ignored
    assert "system" not in [m["role"] for m in at_end["llm"]]  # nothing of our recorded prompt reaches the model
    assert "system" in [m["role"] for m in before["messages"]] and "system" not in [m["role"] for m in before["llm"]]
    assert PRIVATE in json.dumps(before["llm"])  # the edit is not applied: pi 0.73.1 sends what was forgotten
    assert PRIVATE not in json.dumps(ours(path, leaf_before)["llm"])  # we (and pi 1.6) do not

    branch = Session.open(path, readonly=True).raw_branch(leaf_before)
    job_file.write_text(json.dumps([{"op": "prepare", "file": str(path), "leaf": leaf_before, "keeps": [1, 300, 800, 5000]}]))
    [results] = json.loads(run_node("pi_compaction_oracle.mjs", str(job_file)))
    for one in results:
        if not one["prepared"]:
            continue
        mine = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=one["keep"]), pi_compatible=True)
        pp = one["preparation"]
        assert (mine.first_kept_entry_id, mine.is_split_turn, mine.tokens_before) == (
            pp["firstKeptEntryId"],
            pp["isSplitTurn"],
            pp["tokensBefore"],
        )
        assert len(mine.messages_to_summarize) == pp["messagesToSummarizeCount"]
