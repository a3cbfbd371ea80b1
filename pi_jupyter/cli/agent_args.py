"""What ``prompt`` and ``rpc`` share: the session, model and tool options, and their checks."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .common import CliError

CLI_DEFAULT_TOOLS = ("read", "ls", "grep", "find")
"""Tools of a command-line run unless told otherwise: read-only, confined to the working folder."""


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """``--session/--no-session``, ``--model``, ``--base-url``, ``--thinking``, ``--max-turns``, ``--tools/--no-tools``."""
    parser.add_argument("--session", metavar="FILE", help="session file to continue (created when missing)")
    parser.add_argument("--no-session", action="store_true", help="keep the session in memory only")
    parser.add_argument("--model", metavar="PROVIDER/MODEL", help="e.g. anthropic/claude-sonnet-4-5, openai/gpt-4.1, offline/echo")
    parser.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible server (llama.cpp, Ollama, vLLM, OpenRouter)")
    parser.add_argument("--thinking", metavar="LEVEL", help="off, minimal, low, medium, high, xhigh")
    parser.add_argument(
        "--max-turns", metavar="N", type=_turns, default=None, help="most model calls in one run (default 100; 0: no limit)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--tools", metavar="LIST", help="comma-separated tool names (default: read,ls,grep,find)")
    group.add_argument("--no-tools", action="store_true", help="no tools at all")


def _turns(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a number of turns (0 for no limit), not {text!r}")
    return int(text)


def agent_settings(args: argparse.Namespace) -> Any:
    """The :class:`~pi_jupyter.agent.settings.AgentSettings` the options ask for (``--max-turns``)."""
    from ..agent.settings import AgentSettings

    return AgentSettings() if args.max_turns is None else AgentSettings(max_turns=args.max_turns)


def open_session(args: argparse.Namespace) -> Any:
    """The session the options name: ``--session FILE``, in memory, or a new one in pi's folder."""
    from ..session import CycleError, Session, SessionError
    from .context_cmd import cycle_message

    if args.session and args.no_session:
        raise CliError("--session and --no-session exclude each other")
    try:
        if args.no_session:
            return Session.in_memory()
        if args.session:
            if os.path.isdir(args.session):
                raise CliError(f"{args.session}: is a folder, not a session file")
            session = Session.open(args.session, create=True)
            try:
                session.branch_ids()  # a leaf on a parent cycle has no context to continue from
            except CycleError as exc:
                session.close()
                hint = "the agent cannot continue it; `pi-jupyter tree FILE` shows the branches, or use another --session"
                raise CliError(cycle_message(session, exc, hint)) from None
            return session
        return Session.create()
    except (SessionError, OSError) as exc:
        raise CliError(str(exc)) from None


def chosen_model(args: argparse.Namespace, *, from_env: bool = False) -> Any:
    """The ``--model`` (``None``: the default), checked for a key before anything runs.

    With ``from_env``, ``$PI_JUPYTER_MODEL`` stands in for a missing ``--model`` and is
    checked the same way. ``--thinking`` is checked here too, so a bad option never leaves
    a session file behind.
    """
    from .. import providers
    from ..messages import THINKING_LEVELS
    from ..providers.keys import env_key_names

    if args.thinking is not None and args.thinking not in THINKING_LEVELS:
        raise CliError(f"--thinking {args.thinking}: unknown thinking level; choose one of {', '.join(THINKING_LEVELS)}")
    ref, source = args.model, "--model"
    if not ref and from_env and os.environ.get("PI_JUPYTER_MODEL", "").strip():
        ref, source = os.environ["PI_JUPYTER_MODEL"].strip(), "$PI_JUPYTER_MODEL"
    try:
        model = providers.resolve_model(ref, base_url=args.base_url) if ref else None
    except (providers.ModelNotFoundError, ValueError) as exc:
        raise CliError(str(exc) if source == "--model" else f"{source}: {exc}") from None
    if model is None and args.base_url:
        raise CliError("--base-url needs --model (the model name the server serves)")
    if model is not None and providers.api_key_for(model) is None:
        names = " or ".join(env_key_names(model.provider)) or "the provider's key variable"
        instead = "leave out --model" if source == "--model" else "unset PI_JUPYTER_MODEL"
        raise CliError(f"no API key for {model.provider} ({source} {model.ref}): set {names}, or {instead} to use the offline model")
    return model


def tool_names(args: argparse.Namespace) -> list[str]:
    """The tools the options ask for; an unknown name is a :class:`CliError` (before any file is written)."""
    if args.no_tools:
        return []
    if args.tools is None:
        return list(CLI_DEFAULT_TOOLS)
    from ..agent.toolbox import resolve_tool_names

    names = [t.strip() for t in args.tools.split(",") if t.strip()]
    try:
        resolve_tool_names(names)
    except ValueError as exc:
        raise CliError(f"--tools {args.tools}: {exc}") from None
    return names
