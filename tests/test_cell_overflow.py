"""A context that does not fit the model's window: the cell ends in an error that points at the fix.

A prompt larger than the window names that entry and offers ``%pi forget ID`` (and a short follow-up
names the same entry, not itself); the cell ends in an error so Run All stops; the widget's status
line ends in "error"; a long prompt is kept once in the cell's outputs. A branch far too long to
compact is said to be so at once, with its size, without a summary request that cannot fit.
Run in IPython's own shell, with the offline model (its window: 128,000 tokens).
"""

from __future__ import annotations

import asyncio

import pytest
from test_notebook_magics import ip  # noqa: F401 - the fixture

from pi_jupyter import Agent, Session
from pi_jupyter.notebook.agent_view.view import AgentView
from pi_jupyter.notebook.failure import CellFailed
from pi_jupyter.providers import stream as offline_stream
from pi_jupyter.providers.offline import offline_model

BIG = "word " * 200_000  # a million characters: about 250,000 tokens, twice the offline model's window


def cell(shell, path, text: str, cell_id: str):
    shell._pi_cell_id = cell_id
    return shell.run_cell_magic("pi", f"--session {path}", text)


def failure(shell, path, text: str, cell_id: str) -> CellFailed:
    with pytest.raises(CellFailed) as info:
        cell(shell, path, text, cell_id)
    return info.value


def test_a_prompt_larger_than_the_window_is_named_and_forget_makes_the_next_cell_work(ip, tmp_path):  # noqa: F811
    path = tmp_path / "study.jsonl"
    cell(ip, path, "hello", "c1")
    failed = failure(ip, path, BIG, "c2")
    session = Session.open(path, readonly=True)
    prompts = [e for e in session.raw_entries() if e["type"] == "message" and e["message"]["role"] == "user"]
    big = next(e["id"] for e in prompts if e["message"]["content"][0]["text"] == BIG.strip())
    text = "\n".join(failed._render_traceback_())
    assert f"%pi forget {big}" in text and "a user prompt" in text and "window 128,000 tokens" in text
    assert str(tmp_path) not in text and "study.jsonl" in text  # the session's name, not a path
    assert "Traceback" not in text

    # a short follow-up fails on the same entry: the message blames it, not the follow-up
    again = "\n".join(failure(ip, path, "a short follow-up", "c3")._render_traceback_())
    assert f"%pi forget {big}" in again and "latest turn" not in again

    ip.run_line_magic("pi", f"forget {big}")
    answer = cell(ip, path, "and now?", "c4")
    assert answer.stop_reason == "stop" and "and now?" in answer.text


def test_the_status_line_ends_in_error_and_a_long_prompt_is_kept_once(tmp_path):
    agent = Agent(Session.create(path=tmp_path / "s.jsonl"), model="offline/echo")
    view = AgentView(title="s", model=agent.model.ref)
    agent.subscribe(view.handle)
    result = asyncio.run(agent.prompt(BIG))
    assert result.stop_reason == "error"
    assert view.state == "error"  # not "running": the failed recovery came after the run ended
    bundle = view.final_bundle()
    assert bundle["text/html"].count("word word word") > 0 and len(bundle["text/html"]) > len(BIG)
    assert len(bundle["text/markdown"]) < 20_000 and len(bundle["text/plain"]) < 20_000
    assert "characters omitted" in bundle["text/markdown"] and "characters omitted" in bundle["text/plain"]
    view.close()


def _long_branch(path, messages: int) -> Session:
    s = Session.create(path=path)
    s.append_model_change("offline", "small")
    for i in range(messages):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"turn {i} " + "some words of the work done " * 40
        if role == "user":
            s.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": i})
        else:
            s.append_message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text}],
                    "api": "offline",
                    "provider": "offline",
                    "model": "small",
                    "stopReason": "stop",
                    "timestamp": i,
                    "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                }
            )
    return s


def test_a_branch_too_long_to_compact_fails_at_once_with_its_size(tmp_path):
    requests = []

    def counting(model, request, options):
        requests.append(len(request.messages))
        return offline_stream(model, request, options)

    small = offline_model("small", context_window=20_000)
    session = _long_branch(tmp_path / "long.jsonl", 600)  # about 170,000 tokens
    agent = Agent(session, model=small, stream=counting)
    result = asyncio.run(agent.prompt("one more question"))
    assert result.stop_reason == "error" and "prompt is too long" in (result.error_message or "")
    too_large = agent.context_too_large
    assert too_large is not None and too_large.reason == "summary"
    assert too_large.size.entries >= 600 and too_large.size.tokens > 100_000
    assert len(requests) == 1  # the prompt; no summary request that could not fit either
    assert not any(e["type"] == "compaction" for e in Session.open(session.path, readonly=True).raw_entries())
    assert "never compacted" in str(too_large) and "in one request" in str(too_large)
