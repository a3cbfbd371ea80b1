"""A synthetic session with the shapes real ones have, to try the graph and the TreeView offline.

:func:`sample_session` writes turns with tool calls, token usage and cost, re-runs of notebook
cells (sibling branches), labels, errors, aborts, compactions, branch summaries and model
changes, through the ordinary :class:`~pi_jupyter.session.Session` API. It is deterministic
for a given ``seed``. Tests and ``bench/bench_graph.py`` use it; so can a demo notebook.
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

from ..messages import AssistantMessage, Cost, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage
from ..session import Session
from .digest import CELL_TYPE

_TOPICS = [
    "Why does the loss diverge after epoch 3?",
    "Plot the learning-rate schedule",
    "Load sales.csv and summarise the columns",
    "Fit a linear model to price ~ area",
    "Which features matter most?",
    "Try a smaller batch size",
    "Explain the warning from pandas",
    "Write a test for parse_dates",
    "Compare Adam and SGD on this data",
    "Clean the missing values in 'region'",
]
_ANSWERS = [
    "The gradient norm explodes once the warm-up ends; clipping at 1.0 keeps it stable.",
    "Done: the schedule warms up for 500 steps and then decays with a cosine.",
    "There are 12 columns; 'date' parses as a datetime and 'region' has 4% missing values.",
    "The slope is 1.8k per square metre (R² = 0.71).",
    "Area and location dominate; the rest add less than 2% each.",
    "With batch size 32 the validation loss is 0.41, down from 0.47.",
]
_TOOLS = ["python", "read", "bash", "edit"]


def sample_session(
    entries: int = 200,
    *,
    seed: int = 0,
    path: str | os.PathLike[str] | None = None,
    branching: float = 0.12,
    errors: float = 0.03,
    compact_every: int = 40,
    model: str = "anthropic/claude-sonnet-4-5",
) -> Session:
    """A session of about ``entries`` entries (in memory, or written to ``path``).

    ``branching`` is the chance that a turn is a re-run of an earlier cell (a sibling branch),
    ``errors`` the chance that a turn ends in an error or an abort; a compaction is written
    about every ``compact_every`` turns on a branch (0: never).
    """
    if entries < 1:
        raise ValueError(f"sample_session: entries must be at least 1, got {entries}")
    rng = random.Random(seed)
    session = Session.open(path, create=True, durability="never") if path is not None else Session.in_memory()
    provider, _, model_id = model.partition("/")
    session.append_model_change(provider, model_id)
    session.append_thinking_level_change("medium")
    cells: list[tuple[str, str | None]] = []  # (cell id, where its last run started)
    turn = 0
    depth_since_compaction = 0
    labels = 0
    while len(session) < entries:
        turn += 1
        cell_id, forked = _choose_cell(rng, cells, branching)
        if forked is not None:
            if rng.random() < 0.15 and session.leaf_id is not None:
                session.branch_with_summary(
                    forked,
                    "The user explored a different conversation branch before returning here.\n"
                    "Summary of that exploration:\n\nTried a larger learning rate; it diverged.",
                )
            else:
                session.checkout(forked)
        if rng.random() < 0.02:
            session.append_model_change("openai", rng.choice(["gpt-5", "gpt-4.1"]))
        start = session.leaf_id
        produced = _turn(session, rng, turn, errors, provider, model_id)
        record = {"cellId": cell_id, "startedFrom": start, "produced": produced, "end": session.leaf_id, "executionCount": turn}
        session.append_custom(CELL_TYPE, record)
        cells.append((cell_id, start))
        depth_since_compaction += 1
        if compact_every and depth_since_compaction >= compact_every and len(session) < entries:
            depth_since_compaction = 0
            branch = session.branch_ids()
            kept = branch[max(0, len(branch) - 6)]
            session.append_compaction(
                f"## Goal\nAnalyse the data (turns 1-{turn}).\n\n## Progress\n- Loaded the data\n- Fitted a model",
                kept,
                40_000 + 900 * turn,
            )
        if rng.random() < 0.08 and labels < 50:
            labels += 1
            session.label(produced[0], f"try-{labels}")
    return session


def _choose_cell(rng: random.Random, cells: list[tuple[str, str | None]], branching: float) -> tuple[str, str | None]:
    if cells and rng.random() < branching:
        cell_id, start = cells[rng.randrange(max(0, len(cells) - 30), len(cells))]
        if start is not None:
            return cell_id, start
    return str(uuid.UUID(int=rng.getrandbits(128), version=4)), None


def _turn(session: Session, rng: random.Random, turn: int, errors: float, provider: str, model_id: str) -> list[str]:
    produced = [session.append_message(UserMessage.text(f"{rng.choice(_TOPICS)} (#{turn})"))]
    for step in range(rng.choice([0, 0, 1, 1, 2, 3])):
        call = ToolCall(id=f"call_{turn}_{step}", name=rng.choice(_TOOLS), arguments={"code": f"df.describe()  # {turn}.{step}"})
        produced.append(session.append_message(_assistant(rng, provider, model_id, [call], "toolUse")))
        failed = rng.random() < 0.05
        result = ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[
                TextContent(
                    text="Traceback: KeyError 'region'" if failed else f"count  {rng.randrange(100, 999)}\nmean   {rng.random():.3f}"
                )
            ],
            is_error=failed,
        )
        produced.append(session.append_message(result))
    roll = rng.random()
    if roll < errors / 2:
        message = _assistant(rng, provider, model_id, [], "error")
        message.error_message = "429 rate limit exceeded"
    elif roll < errors:
        message = _assistant(rng, provider, model_id, [TextContent(text="Let me look at the")], "aborted")
    else:
        message = _assistant(rng, provider, model_id, [TextContent(text=rng.choice(_ANSWERS))], "stop")
    produced.append(session.append_message(message))
    return produced


def _assistant(rng: random.Random, provider: str, model_id: str, content: list[Any], stop: str) -> AssistantMessage:
    inp, out = rng.randrange(800, 30_000), rng.randrange(20, 900)
    cost = Cost(input=inp * 3e-6, output=out * 15e-6)
    cost.total = cost.input + cost.output
    usage = Usage(input=inp, output=out, total_tokens=inp + out, cost=cost)
    return AssistantMessage(content=content, api="anthropic-messages", provider=provider, model=model_id, usage=usage, stop_reason=stop)  # type: ignore[arg-type]


def write_turn(
    session: Session,
    prompt: str,
    answer: str = "Done.",
    *,
    tools: int = 0,
    tokens: int = 1000,
    cost: float = 0.001,
    stop: str = "stop",
    error: str | None = None,
    tool_error: bool = False,
    model: str = "anthropic/claude-sonnet-4-5",
) -> list[str]:
    """Append one turn to ``session``: the prompt, ``tools`` tool calls with their results, the answer.

    Every assistant message reports ``tokens`` tokens and ``cost`` dollars; the last one stops
    with ``stop`` (``error`` sets its error message). Returns the new entry ids in order.
    """
    provider, _, model_id = model.partition("/")
    usage = Usage(input=tokens - tokens // 10, output=tokens // 10, total_tokens=tokens, cost=Cost(total=cost))
    ids = [session.append_message(UserMessage.text(prompt))]
    for i in range(tools):
        call = ToolCall(id=f"call_{len(session)}_{i}", name="python", arguments={"code": f"step({i})"})
        ids.append(
            session.append_message(AssistantMessage(content=[call], provider=provider, model=model_id, usage=usage, stop_reason="toolUse"))
        )
        failed = tool_error and i == tools - 1
        result = ToolResultMessage(tool_call_id=call.id, tool_name="python", content=[TextContent(text=f"result {i}")], is_error=failed)
        ids.append(session.append_message(result))
    content = [TextContent(text=answer)] if answer else []
    final = AssistantMessage(content=content, provider=provider, model=model_id, usage=usage, stop_reason=stop, error_message=error)  # type: ignore[arg-type]
    ids.append(session.append_message(final))
    return ids
