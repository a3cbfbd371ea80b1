"""Static rendering: time to render a long branch, and the bytes a ``%%pi`` cell adds to a notebook.

Printed:

* the time to render a 200-turn branch (a generated session, tool calls and compactions
  included) to the durable HTML and Markdown of :mod:`pi_jupyter.views.static_html`, and to
  export a branchy session as one self-contained page (:mod:`pi_jupyter.views.export.page`);
* the bytes a finished ``%%pi`` cell leaves in the ``.ipynb`` (its final bundle, JSON-encoded
  as nbformat writes it: ``text/html`` + ``text/markdown`` + ``text/plain``) for a short
  answer, a tool-heavy answer (the real Agent with the offline model calling ``python`` eight
  times) and a 10,000-delta answer, next to the answer's own size.

Usage: ``python bench/bench_static_render.py [--turns 200] [--deltas 10000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "browser"))

from fake_agent import full_run  # noqa: E402

from pi_jupyter import Agent, Session  # noqa: E402
from pi_jupyter.notebook.agent_view.view import AgentView  # noqa: E402
from pi_jupyter.views import sample_session  # noqa: E402
from pi_jupyter.views.export.page import export_html  # noqa: E402
from pi_jupyter.views.static_html import RunStatus, render_html, render_markdown  # noqa: E402


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_branch(turns: int) -> None:
    entries = turns * 5
    while True:  # a turn is 4 to 6 entries: grow the session until the branch has ``turns`` prompts
        session = sample_session(entries, seed=1, branching=0.0, compact_every=60)
        if sum(1 for e in session.raw_branch() if e.get("type") == "message" and e["message"].get("role") == "user") >= turns:
            break
        entries += turns // 2
    messages = session.context().messages  # what the current branch shows (after its last compaction)
    branch = [e["message"] for e in session.raw_branch() if e.get("type") == "message"]
    status = RunStatus(model="anthropic/claude-sonnet-4-5", state="done", input_tokens=123_456, output_tokens=7_890, seconds=42.0)
    html = render_html(branch, status=status)
    seconds = _best(lambda: render_html(branch, status=status))
    md_seconds = _best(lambda: render_markdown(branch, status=status))
    users = sum(1 for m in branch if m.get("role") == "user")
    print(
        f"render a {users}-turn branch ({len(branch):,} messages) to HTML: {seconds * 1000:.1f} ms, {len(html) / 1024:.0f} KiB; "
        f"to Markdown: {md_seconds * 1000:.1f} ms (context after compaction: {len(messages)} messages)"
    )
    branchy = sample_session(1000, seed=2)
    page = export_html(branchy)
    seconds = _best(lambda: export_html(branchy), repeat=1)
    print(f"export a 1,000-entry branchy session as one page: {seconds * 1000:.0f} ms, {len(page) / 1024:.0f} KiB (tree SVG included)")


def _cell_bytes(view: AgentView) -> tuple[int, dict[str, int]]:
    bundle = view.final_bundle()
    output = {"output_type": "display_data", "data": bundle, "metadata": {}}
    parts = {k: len(json.dumps(v, ensure_ascii=False).encode()) for k, v in bundle.items()}
    return len(json.dumps(output, ensure_ascii=False, indent=1).encode()), parts


def _agent_cell(prompt: str) -> AgentView:
    agent = Agent(Session.in_memory(), model="offline/echo", tools=["python"])
    view = AgentView(title="bench", model="offline/echo")
    view.set_actions(agent.session.id, "t" * 32)  # as in a notebook: the buttons' script rides along
    agent.subscribe(view.handle)
    asyncio.run(agent.prompt(prompt))
    return view


def bench_cells(deltas: int) -> None:
    rows = []
    view = _agent_cell("What is a durable output?")
    rows.append(("short answer", view, sum(len(m.text) for m in view.messages if m.role == "assistant")))
    calls = " and ".join(f'call python with {{"code": "print(sum(range({n} * 1000)))"}}' for n in range(1, 9))
    view = _agent_cell(f"Please {calls}.")
    rows.append(("tool-heavy answer (8 python calls)", view, sum(len(m.text) for m in view.messages if m.role == "assistant")))
    answer = ("The loss diverges because the learning rate is too high for this batch size. " * (deltas * 2 // 77 + 1))[: deltas * 2]
    view = AgentView(title="bench", model="offline/fake")
    view.set_actions("bench-session", "t" * 32)
    for ev in full_run(answer=answer, chunk=2):
        view.handle(ev)
    rows.append((f"{deltas:,}-delta answer", view, len(answer)))
    for name, view, answer_chars in rows:
        total, parts = _cell_bytes(view)
        detail = ", ".join(f"{k} {v:,}" for k, v in parts.items())
        print(f"bytes per %%pi cell, {name}: {total:,} B (answer text {answer_chars:,} chars; {detail})")
        view.close()


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--deltas", type=int, default=10_000)
    args = parser.parse_args()
    bench_branch(args.turns)
    bench_cells(args.deltas)


if __name__ == "__main__":
    main()
