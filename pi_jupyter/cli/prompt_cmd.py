"""``pi-jupyter prompt "TEXT"``: run one prompt and print the answer (or every event as JSON)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from .agent_args import add_agent_arguments, chosen_model, open_session, tool_names
from .common import CliError

NAME = "prompt"
HELP = "run one prompt through the agent and print the answer"
DESCRIPTION = """\
Run one prompt and print the answer. The session is kept: in FILE with --session (created
when missing), else in pi's folder for this project (~/.pi/agent/sessions/--<cwd>--/);
--no-session keeps it in memory only.

Without --model (and without $PI_JUPYTER_MODEL) the built-in offline model answers, and a
note on stderr says so; it is a deterministic stand-in, not a language model. A model whose
provider needs a key fails with exit status 2 when the key is missing.

--json prints every event as one JSON line in pi's JSON-mode shape, the session header first.

tools: read, ls, grep and find by default (read-only, confined to the working directory);
--tools picks others (e.g. read,bash,edit,write), --no-tools none.

exit status: 0 the answer is complete, 1 the model failed or the run was aborted, 2 bad
input (missing key, unknown model, unusable session file), 130 interrupted."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``prompt``."""
    parser.add_argument("text", metavar="TEXT", help="the prompt ('-' reads it from stdin)")
    add_agent_arguments(parser)
    parser.add_argument("--json", action="store_true", help="every event as one JSON line (pi's JSON mode)")


def run(args: argparse.Namespace) -> int:
    """Run the prompt; see :data:`DESCRIPTION`."""
    from ..agent.agent import Agent

    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        raise CliError("the prompt is empty")
    model = chosen_model(args)
    tools = tool_names(args)
    session = open_session(args)
    try:
        agent = Agent(session, model=model, thinking=args.thinking, tools=tools, cwd=os.getcwd())
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if model is None:
        print(f"pi-jupyter: using {agent.model.ref}, the built-in offline model (no --model given)", file=sys.stderr)
    if args.json:
        print(json.dumps(session.header.to_dict(), ensure_ascii=False, separators=(",", ":")), flush=True)
        agent.log_events(sys.stdout)
    elif session.path:
        print(f"pi-jupyter: session {session.path}", file=sys.stderr)

    async def go() -> Any:
        task = asyncio.ensure_future(agent.prompt(text))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            agent.abort()
            return await task

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        print("pi-jupyter: interrupted", file=sys.stderr)
        return 130
    finally:
        session.close()
    if not args.json:
        if result.text:
            print(result.text)
        if not result.ok:
            print(f"pi-jupyter: {result.stop_reason}: {result.error_message or ''}".rstrip(": "), file=sys.stderr)
    return 0 if result.ok else 1
