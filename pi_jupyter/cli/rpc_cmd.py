"""``pi-jupyter rpc``: drive the agent from another program with JSON lines (pi's RPC mode)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

from .agent_args import add_agent_arguments, agent_settings, chosen_model, open_session, tool_names
from .common import CliError

DESCRIPTION = """\
Read commands from stdin, one JSON object per line, and write responses and the event
stream to stdout, one compact JSON object per line, in pi's RPC shapes (pi --mode rpc).

  -> {"id":"1","type":"prompt","message":"Hello"}
  <- {"id":"1","type":"response","command":"prompt","success":true}
  <- {"type":"agent_start"} ... {"type":"agent_end","messages":[...]}

Commands: prompt{message, images?, streamingBehavior?}, steer{message}, follow_up{message},
abort, new_session{parentSession?}, get_state, get_messages, set_model{provider, modelId},
set_thinking_level{level}, set_steering_mode{mode}, set_follow_up_mode{mode},
compact{customInstructions?}, fork{entryId}, switch_session{sessionPath}, get_session_stats,
set_session_name{name}, get_last_assistant_text, get_fork_messages, get_tree,
get_entries{since?}, bash{command, excludeFromContext?}, abort_bash, abort_retry,
clear_queue, clone, cycle_model, cycle_thinking_level, export_html{outputPath?},
get_available_models, get_available_thinking_levels, get_commands,
set_auto_compaction{enabled}, set_auto_retry{enabled} (pi 1.6's commands, in its shapes:
get_tree answers pi's nested {tree: [{entry, children, label?, labelTimestamp?}], leafId});
and, beyond pi, get_tree{flat: true} (the tree as flat JSON: {leafId, path, roots, nodes})
checkout{entryId, summarize?, customInstructions?, replaceInstructions?, label?, rewind?, force?}
-> {leafId, line} (rewind: "both", "conversation" or "world": what moves; the line says it),
and set_max_turns{maxTurns} (the turn limit of the next runs, as --max-turns; 0: no limit).

Every command is answered once, with its own id and command name; a failure is
{"id", "type":"response", "command", "success":false, "error"}. (One exception: should a
prompt's run crash after its success was sent, a bug rather than a model failure, which
ends as an assistant message with stopReason "error", a failure with the same id follows.)
A line that is not a command gets an error response (command "parse" when no type could be
read) and the server goes on; a missing or mistyped field is refused naming it, where pi
sometimes goes on with it; an "extension_ui_response" line is taken silently, as pi takes
it. Commands are handled one at a time, in order; "prompt" is answered when its run
starts, and the run continues in the background while its events stream. During a run,
"prompt" needs "streamingBehavior": "steer" or "followUp" (as in pi); "bash" runs and is
recorded when the run ends; "abort" and "abort_bash" are
handled at once, never behind other commands, and "abort" drops prompts still waiting in the
queue. new_session, fork, switch_session and compact abort a running run first; the
aborted answer is kept in the session file. checkout during a run is refused.

Framing is strict: lines end with LF (one trailing CR is removed); U+2028 and U+2029 are
ordinary characters. Blank lines are ignored. At end of input the server waits for the
current run to finish (and be saved), then exits 0. SIGTERM/SIGINT abort the run, save it
and exit 143/130. Anything else the process writes to stdout goes to stderr, so stdout
carries only protocol lines. Secrets (API keys) are redacted from every line.

Extensions installed in the `pi_jupyter.extensions` entry point group are loaded for every
session the server works on; one that fails is reported as an extension_error line
({"type":"extension_error","extensionPath","event","error"}) and the server goes on.

The session, model and tool options are those of `pi-jupyter prompt`: without --session the
session goes to pi's folder for this project; without --model the built-in offline model
answers (a note on stderr says so). --base-url applies to every model of --model's
provider (set_model included).

Events are pi 1.6's (its toJsonEvent, the same as `--mode json`): "message_update" is
{type, usage, assistantMessageEvent} without the partial message; compaction is
compaction_start{reason} / compaction_end{reason, result, aborted, willRetry, errorMessage?};
agent_end has willRetry; agent_settled ends each prompt; entry_appended{entry},
session_info_changed{name}, thinking_level_changed{level}, bash_execution_update{id, delta}
and queue_update{steering, followUp} as pi sends them. --full-updates puts the whole partial
message back into "message_update" (pi 0.73's shape; a long answer then costs O(n^2) output).

exit status: 0 end of input, 2 bad arguments (unknown model, missing key, unusable file),
129/130/143 stopped by SIGHUP/SIGINT/SIGTERM."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rpc``."""
    add_agent_arguments(parser)
    parser.add_argument("--full-updates", action="store_true", help="message_update lines with the whole partial message (pi 0.73's shape)")
    # the default since pi 1.6 made it its shape; still accepted so older command lines work
    parser.add_argument("--delta-only", action="store_true", help=argparse.SUPPRESS)


def _take_stdout() -> object:
    """The protocol stream: the real stdout, kept aside; fd 1 and ``sys.stdout`` then point at stderr.

    A tool, a library or a child process that prints cannot break the protocol this way
    (pi's output guard does the same).
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb", buffering=1 << 16)


def _refuse_all(message: str, code: int) -> int:
    """The session cannot be used: say so once on stderr, answer every command with the error, exit ``code``.

    A client that writes its commands before reading still gets one response per command,
    each with its own id, rather than a closed pipe.
    """
    from .rpc_protocol import BadCommand, encode_line, failure, parse_command

    print(f"pi-jupyter: error: {message}", file=sys.stderr, flush=True)
    out = sys.stdout
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
        if not line.strip():
            continue
        try:
            command = parse_command(line)
            cid, kind = command.id, command.type
        except BadCommand as exc:
            cid, kind = exc.id, exc.command
        out.write(encode_line(failure(cid, kind, message)) + "\n")
        out.flush()
    return code


def run(args: argparse.Namespace) -> int:
    """Serve until end of input; see :data:`DESCRIPTION`."""
    from .rpc_server import AgentFactory, Output, RpcServer

    model = chosen_model(args)
    tools = tool_names(args)
    cwd = os.getcwd()
    factory = AgentFactory(tools=tools, cwd=cwd, base_url=args.base_url, base_provider=model.provider if model else None)
    try:
        session = open_session(args)
    except CliError as exc:
        return _refuse_all(str(exc), exc.code)
    try:
        agent = factory.make(session, model, args.thinking, agent_settings(args))
    except ValueError as exc:
        session.close()
        raise CliError(str(exc)) from None
    factory.start_model = agent.model
    if model is None and agent.model.provider == "offline":
        print(f"pi-jupyter: using {agent.model.ref}, the built-in offline model (no --model given)", file=sys.stderr)
    if agent.session.path:
        print(f"pi-jupyter: session {agent.session.path}", file=sys.stderr)
    stream = _take_stdout()
    output = Output(stream)  # type: ignore[arg-type]
    server = RpcServer(agent, factory, output, full_updates=args.full_updates)
    output.on_broken = lambda: server.terminate(0)
    try:
        return asyncio.run(server.serve(sys.stdin.fileno()))
    finally:
        with contextlib.suppress(OSError, ValueError):
            stream.close()  # type: ignore[attr-defined]
