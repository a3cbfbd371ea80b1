"""``pi-jupyter prompt "TEXT"``: run one prompt and print the answer (or every event as JSON)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from .agent_args import add_agent_arguments, agent_settings, chosen_model, open_session, tool_names
from .common import CliError

DESCRIPTION = """\
Run one prompt and print the answer. The session is kept: in FILE with --session (created
when missing), else in pi's folder for this project (~/.pi/agent/sessions/--<cwd>--/);
--no-session keeps it in memory only.

Without --model (and without $PI_JUPYTER_MODEL) the built-in offline model answers, and a
note on stderr says so (also in a session recorded with another model); it is a
deterministic stand-in, not a language model. A model whose provider needs a key fails
with exit status 2 when the key is missing.

--json prints every event as one JSON line in pi's JSON-mode shape, the session header first.
Without it, the answer goes to stdout and notes to stderr (a retry after a transient error,
a compaction).

tools: read, ls, grep and find by default (read-only, confined to the working directory);
--tools picks others (e.g. read,bash,edit,write), --no-tools none.

Extensions installed in the `pi_jupyter.extensions` entry point group are loaded, as in a
notebook and in rpc mode: their tools are offered next to these, and their setup rebuilds
their state from the session. One that fails is reported (a note on stderr, an
extension_error line with --json) and the prompt goes on without it.

--max-turns N stops a run after N model calls (default 100; 0: no limit): a model still
calling tools then ends with "Turn limit reached" (stop reason error, exit status 1).

exit status: 0 the answer is complete, 1 the model failed or the run was aborted, 2 bad
input (missing key, unknown model, unusable session file), 130 interrupted."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``prompt``."""
    parser.add_argument("text", metavar="TEXT", help="the prompt ('-' reads it from stdin)")
    add_agent_arguments(parser)
    parser.add_argument("--json", action="store_true", help="every event as one JSON line (pi's JSON mode)")


def _note_unseen(event: Any) -> None:
    """One stderr line for what the answer does not show: a retry, a compaction, a failed extension."""
    kind = event.type
    if kind == "extension_error":
        from ..agent.redact import redact

        note = redact(f"extension {event.extension_path} failed ({event.event}): {event.error}")
    elif kind == "auto_retry_start":
        asked = "" if event.retry_after_ms is None else f" (the server asked for {event.retry_after_ms / 1000:g}s)"
        note = f"{event.error_message}; retry {event.attempt}/{event.max_attempts} in {event.delay_ms / 1000:g}s{asked}"
    elif kind == "auto_retry_end" and not event.success:
        note = "retry cancelled" if event.final_error == "Retry cancelled" else f"gave up retrying after {event.attempt} attempts"
    elif kind == "auto_compaction_start":
        note = f"compacting the session ({event.reason})"
    elif kind == "auto_compaction_end" and event.error_message:
        note = event.error_message
    else:
        return
    print(f"pi-jupyter: {note}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the prompt; see :data:`DESCRIPTION`."""
    from ..agent.agent import Agent

    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        raise CliError("the prompt is empty")
    from .. import providers

    model = chosen_model(args, from_env=True)
    tools = tool_names(args)
    offline = model is None
    if offline:
        # Never the session's recorded vendor model: without --model nothing leaves the machine.
        model = providers.get_model("offline/echo")
    session = open_session(args)
    try:
        agent = Agent(session, model=model, thinking=args.thinking, tools=tools, cwd=os.getcwd(), settings=agent_settings(args))
    except ValueError as exc:
        session.close()
        raise CliError(str(exc)) from None
    if offline:
        print(f"pi-jupyter: using {agent.model.ref}, the built-in offline model (no --model given)", file=sys.stderr)
    elif not args.model:
        print(f"pi-jupyter: using {agent.model.ref} (from $PI_JUPYTER_MODEL)", file=sys.stderr)
    if args.json:
        print(json.dumps(session.header.to_dict(), ensure_ascii=False, separators=(",", ":")), flush=True)
        from .json_events import write_pi_events

        write_pi_events(agent, sys.stdout)  # pi 1.6's --mode json events (its toJsonEvent)
    else:
        if session.path:
            print(f"pi-jupyter: session {session.path}", file=sys.stderr)
        agent.subscribe(_note_unseen)
    # After the subscribers, so a plugin that cannot be loaded is reported like any other failure.
    agent.extensions.load_entry_points()

    interrupted = False

    async def go() -> Any:
        nonlocal interrupted
        task = asyncio.ensure_future(agent.prompt(text))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:  # Ctrl-C: stop the run, keep (and persist) the partial answer
            interrupted = True
            agent.abort()
            return await task

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        print("pi-jupyter: interrupted", file=sys.stderr)
        return 130
    finally:
        session.close()
    if args.json:  # pi 1.6's last event: the run, its retries and compactions are over
        print(json.dumps({"type": "agent_settled", "aborted": result.stop_reason == "aborted"}), flush=True)
    if interrupted:
        if not args.json and result.text:
            print(result.text)
        kept = " (the partial answer is kept as aborted)" if session.path and result.stop_reason == "aborted" else ""
        print(f"pi-jupyter: interrupted{kept}", file=sys.stderr)
        return 130
    if not args.json:
        if result.text:
            print(result.text)
        if not result.ok:
            print(f"pi-jupyter: {result.stop_reason}: {result.error_message or ''}".rstrip(": "), file=sys.stderr)
    return 0 if result.ok else 1
