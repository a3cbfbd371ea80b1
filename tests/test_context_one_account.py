"""One account of what is sent: the context lens, ``%pi context`` and the request agree, and notices are about this turn.

A user overflows the window, forgets the prompt that was too long (``%pi forget``), and goes on in a
new cell: the cell opens clean (no stale "Compaction failed" from the refused request), and the tree's
lens, ``%pi context`` and the request the model receives count the same messages. A compaction that
would not make the context smaller is refused and says so; the tree draws a compaction's before and
after by one estimate, so it never shows one that grew.
"""

from __future__ import annotations

import asyncio
import glob
import json
import re
from pathlib import Path

import pytest
from kernel_client import Kernel

from pi_jupyter import Agent, Session
from pi_jupyter.compaction import CompactionWouldGrow
from pi_jupyter.notebook.context_view import context_report
from pi_jupyter.views.lens import context_lens

SETUP = """
%load_ext pi_jupyter
from pi_jupyter.providers import register_model, offline_model
register_model(offline_model("small", context_window=8000))
%config PiMagics.model = "offline/small"
%config PiMagics.thinking = "off"
"""

CONTEXT_LINE = re.compile(r"^(\d+) messages, about ([\d,]+) tokens", re.M)


def _everything(execution) -> str:
    return json.dumps(execution.outputs, ensure_ascii=False)


@pytest.mark.kernel
def test_forget_after_an_overflow_then_a_new_cell_every_view_counts_the_same(tmp_path: Path) -> None:
    kernel = Kernel(str(tmp_path), env={"JPY_SESSION_NAME": str(tmp_path / "n.ipynb"), "PI_JUPYTER_CONFIG": str(tmp_path / "none")})
    try:
        assert kernel.run(SETUP).status == "ok"
        assert kernel.run("%%pi\nhi", cell_id="c1").status == "ok"
        assert kernel.run("%%pi\n" + "gamma " * 1500, cell_id="c2").status == "ok"
        # a short history: its summary would be longer than what it replaces, so the compaction is refused
        refused = kernel.run("%pi compact", cell_id="c3")
        assert refused.error is not None and "compaction refused" in refused.error["evalue"]
        assert "nothing was written" in refused.error["evalue"] and "Traceback" not in refused.stderr
        for i in range(2):
            assert kernel.run(f"%%pi\nturn {i} " + "delta " * 1200, cell_id=f"t{i}").status == "ok"
        overflow = kernel.run("%%pi\n" + "beta " * 9000, cell_id="big")
        assert overflow.error is not None and overflow.error["ename"] == "CellFailed"
        prompt_id = re.search(r"%pi forget (\w+)", "\n".join(overflow.error["traceback"])).group(1)
        assert kernel.run(f"%pi forget {prompt_id}", cell_id="f").status == "ok"

        after = kernel.run("%%pi\nhello again", cell_id="next")
        assert after.status == "ok", after.error
        shown = _everything(after)
        assert "You said: hello again" in shown
        # the refused request and its recovery belong to the cell that ran them, not to this one
        assert "Compaction failed" not in shown and "Compacting context" not in shown

        report = kernel.run("%pi context", cell_id="ctx")
        counted = CONTEXT_LINE.search(report.data("text/plain")[-1])
        lens_probe = kernel.run(
            "view = get_ipython().run_line_magic('pi', 'tree')\n"
            "view.show_lens(None)\n"
            "print(view.last_lens.sent_messages, view.last_lens.sent_tokens)\n"
            "print(view.lens['headline'])",
            cell_id="tree",
        )
        sent, tokens = lens_probe.stdout.splitlines()[0].split()
        assert (int(sent), int(tokens)) == (int(counted.group(1)), int(counted.group(2).replace(",", ""))), lens_probe.stdout
        assert "1 message forgotten" in lens_probe.stdout
        tree = kernel.run("%pi tree --text", cell_id="text").data("text/plain")[-1]
    finally:
        kernel.close()

    # a reader of the file (the CLI, a reopened notebook) tells the same story
    (path,) = glob.glob(str(tmp_path / "**" / "*.jsonl"), recursive=True)
    s = Session.open(path, readonly=True)
    lens = context_lens(s)
    assert lens.sent_messages == int(sent)
    assert lens.state_of(prompt_id) == "dropped" and lens.counts()["dropped"] == 1
    compactions = [e for e in s.raw_branch() if e["type"] == "compaction"]
    assert compactions, tree  # the overflow was compacted before the prompt itself was found too long
    assert lens.compaction_id == compactions[-1]["id"]
    kept_from = next(i for i, e in enumerate(s.raw_branch()) if e["id"] == compactions[-1]["firstKeptEntryId"])
    replaced = [e["id"] for e in s.raw_branch()[:kept_from] if e["type"] == "message"]
    assert replaced and all(lens.state_of(e) == "replaced" for e in replaced)  # replaced, never "dropped"
    # every compaction drawn shrank the context, by the same estimate before and after
    figures = re.findall(r"≈([\d.]+)(k?) → ≈([\d.]+)(k?) tokens", tree)
    assert len(figures) == len(compactions), tree
    for before, bk, after, ak in figures:
        assert float(after) * (1000 if ak else 1) < float(before) * (1000 if bk else 1), tree
    assert "did not shrink" not in tree


def test_lens_context_and_the_request_count_the_same_messages(wire, tmp_path: Path, monkeypatch) -> None:
    """A failed reply, a forgotten tool result (a placeholder is sent), a compaction and a forgotten prompt."""
    from wire.helpers import wire_model
    from wire.server import http_error, openai_reply, tool_call

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wire-0000000000000000000000")
    agent = Agent(Session.open(tmp_path / "s.jsonl", create=True), model=wire_model(wire), thinking="off", tools=["ls"])
    wire.queue(
        "openai",
        openai_reply("first answer " * 200),
        openai_reply("second answer " * 200),
        openai_reply("## Goal\nshort summary"),
        openai_reply(tool_calls=[tool_call("ls", {"path": "."})]),
        openai_reply("listed " * 200),
        http_error(400, "bad request"),
        openai_reply("third answer " * 200),
    )

    async def talk() -> None:
        await agent.prompt("first question " * 200)
        await agent.prompt("second question " * 200)
        await agent.compact(keep_recent_tokens=2000)
        await agent.prompt("use ls on .")
        await agent.prompt("this one fails")
        await agent.prompt("third question " * 200)

    asyncio.run(talk())
    entries = agent.session.raw_branch()
    tool_result = next(e["id"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult")
    third = next(e["id"] for e in entries if e["type"] == "message" and "third question" in json.dumps(e["message"]["content"]))
    agent.edit_context(tool_result, None)
    agent.edit_context(third, None)

    counted = int(CONTEXT_LINE.search(context_report(agent)).group(1))
    live = context_lens(agent.session)
    reread = context_lens(Session.open(agent.session.path, readonly=True))
    assert live.sent_messages == reread.sent_messages == counted
    assert [e.state for e in live.entries] == [e.state for e in reread.entries]
    failed = [e for e in live.entries if e.note]
    assert len(failed) == 1 and failed[0].role == "assistant"  # the failed reply: kept, never sent

    wire.queue_default("openai", openai_reply("fourth answer"))
    wire.requests.clear()
    asyncio.run(agent.prompt("fourth question"))
    body = wire.requests[-1].body
    conversation = [m for m in body["messages"] if m["role"] not in ("system", "developer")]
    assert len(conversation) == counted + 1  # what the lens and %pi context counted, and the new prompt
    assert "third question" not in json.dumps(body)


def test_a_summary_that_would_grow_the_context_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """An extension's summary (or a model's) longer than the history it replaces: refused, the file untouched."""

    class Verbose:
        def before_compact(self, request, ctx):
            return "a very long summary " * 400

    agent = Agent(Session.open(tmp_path / "s.jsonl", create=True), model="offline/echo", thinking="off")
    agent.extensions.add(Verbose())
    for i in range(4):
        asyncio.run(agent.prompt(f"question {i} " + "word " * 50))
    before = Path(agent.session.path).read_bytes()
    with pytest.raises(CompactionWouldGrow) as info:
        asyncio.run(agent.compact(keep_recent_tokens=50))
    assert info.value.after >= info.value.before
    assert "nothing was written" in str(info.value)
    assert Path(agent.session.path).read_bytes() == before
