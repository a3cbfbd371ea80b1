"""``pi-jupyter context FILE [--leaf ID] [--json]``: the rebuilt context of a branch."""

from __future__ import annotations

import argparse
from typing import Any

from ..messages import convert_to_llm
from ..session import CycleError, Session
from .common import CURRENT, CliError, note_problems, open_session, resolve_leaf, safe_stdout, status, write_json
from .render import render_messages

NAME = "context"
HELP = "print the rebuilt context of the current branch (or of --leaf)"
DESCRIPTION = """\
Print what a model would be given on the current branch: pi's buildSessionContext
(the latest compaction summary, the kept and later messages, custom messages and branch
summaries), the thinking level and the model. The file is opened read-only.

--json prints one object: {"messages": [...], "thinkingLevel": ..., "model": ..., "llm": [...]},
where messages are exactly pi's JSON shape and llm is convert_to_llm's output."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``context``."""
    parser.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    parser.add_argument(
        "--leaf",
        metavar="ID",
        help="the branch to rebuild: an entry id, a unique id prefix, a label, or 'null' (before the first entry)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


_PASS_THROUGH = ("user", "assistant", "toolResult")


def context_json(session: Session, leaf: Any = CURRENT) -> dict[str, Any]:
    """``{"messages", "thinkingLevel", "model", "llm"}`` for the branch ending at ``leaf``."""
    ctx = session.context() if leaf is CURRENT else session.context(leaf)
    out = ctx.to_pi_json()
    llm: list[Any] = []
    for message in ctx.raw_messages:
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str):
            continue  # not a message at all: pi's convertToLlm drops it (or, for null, fails)
        if role in _PASS_THROUGH:
            # convert_to_llm passes these on unchanged: write them as read, byte for byte
            llm.append(message)
        else:
            # never raises for what a file holds; a summary without a valid time keeps "timestamp": null
            llm.extend(m.to_dict() for m in convert_to_llm([message]))
    out["llm"] = llm
    return out


def cycle_message(session: Session, exc: CycleError, hint: str = "--leaf ID rebuilds another one") -> str:
    """``FILE:LINE: parent cycle ...``, with the line where the load report found the cycle, and what to do."""
    cycles = [p for p in session.load_report.problems if p.kind == "cycle"]
    hit = next((p for p in cycles if p.entry_id in exc.loop), cycles[0] if cycles else None)
    where = f"{session.path}:{hit.line}" if hit is not None and hit.line else str(session.path)
    return f"{where}: {exc}; this branch has no root ({hint})"


def run(args: argparse.Namespace) -> int:
    """Print the context; the exit status follows the file's load report."""
    session = open_session(args.file)
    leaf = resolve_leaf(session, args.leaf)
    try:
        payload = context_json(session, leaf)
    except CycleError as exc:
        raise CliError(cycle_message(session, exc)) from None
    note_problems(session)
    if args.json:
        write_json(payload)
        return status(session)
    safe_stdout()
    leaf_id = session.leaf_id if leaf is CURRENT else leaf
    model = payload.get("model")
    model_text = f"{model.get('provider')}/{model.get('modelId')}" if model else "none"
    print(
        f"context of {session.path} at leaf {leaf_id or 'null (before the first entry)'}: "
        f"{len(payload['messages'])} messages, {len(payload['llm'])} sent to the model, "
        f"thinking level {payload.get('thinkingLevel')}, model {model_text}"
    )
    if payload["messages"]:
        print(render_messages(payload["messages"]))
    return status(session)
