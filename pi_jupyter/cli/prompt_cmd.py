"""``pi-jupyter prompt "TEXT"``: run one prompt and print the answer (or every event as JSON)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

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

CLI_DEFAULT_TOOLS = ("read", "ls", "grep", "find")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``prompt``."""
    parser.add_argument("text", metavar="TEXT", help="the prompt ('-' reads it from stdin)")
    parser.add_argument("--session", metavar="FILE", help="session file to continue (created when missing)")
    parser.add_argument("--no-session", action="store_true", help="keep the session in memory only")
    parser.add_argument("--model", metavar="PROVIDER/MODEL", help="e.g. anthropic/claude-sonnet-4-5, openai/gpt-4.1, offline/echo")
    parser.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible server (llama.cpp, Ollama, vLLM, OpenRouter)")
    parser.add_argument("--thinking", metavar="LEVEL", help="off, minimal, low, medium, high, xhigh")
    parser.add_argument("--json", action="store_true", help="every event as one JSON line (pi's JSON mode)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--tools", metavar="LIST", help="comma-separated tool names")
    group.add_argument("--no-tools", action="store_true", help="no tools at all")


def _session(args: argparse.Namespace) -> Any:
    from ..session import Session, SessionError

    if args.session and args.no_session:
        raise CliError("--session and --no-session exclude each other")
    try:
        if args.no_session:
            return Session.in_memory()
        if args.session:
            return Session.open(args.session, create=True)
        return Session.create()
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    except (SessionError, OSError) as exc:
        raise CliError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Run the prompt; see :data:`DESCRIPTION`."""
    from .. import providers
    from ..agent.agent import Agent

    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        raise CliError("the prompt is empty")
    try:
        model = providers.resolve_model(args.model, base_url=args.base_url) if args.model else None
    except (providers.ModelNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if model is None and args.base_url:
        raise CliError("--base-url needs --model (the model name the server serves)")
    if model is not None and providers.api_key_for(model) is None:
        names = " or ".join(providers.keys.env_key_names(model.provider)) or "the provider's key variable"
        raise CliError(f"no API key for {model.provider}: set {names}, or leave out --model to use the offline model")
    if args.no_tools:
        tools: list[str] = []
    elif args.tools is not None:
        tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    else:
        tools = list(CLI_DEFAULT_TOOLS)
    session = _session(args)
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
